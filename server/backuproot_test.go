package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
)

// TestBackupRoot: with Options.BackupRoot, POST /v1/backup writes a
// relative destination inside the root and an absolute one inside it,
// and refuses (403, naming the root) one outside it, named directly,
// through "..", or through a symbolic link in the root; nothing is
// written outside. A root that is not a directory is refused by New.
func TestBackupRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "backups")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "in")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var logBuf syncBuffer
	ts, d := testServer(t, &Options{BackupRoot: root, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	fill(t, d, 1, 2, 3, 40)

	for dir, want := range map[string]string{
		"rel/copy":                 filepath.Join(root, "rel", "copy"),
		filepath.Join(root, "abs"): filepath.Join(root, "abs"),
		"x/../y":                   filepath.Join(root, "y"),
		"in/copy":                  filepath.Join(root, "in", "copy"), // a link inside the root, to a directory inside it
	} {
		var res api.BackupResult
		if st := call(t, "POST", ts.URL+"/v1/backup", "application/json", jsonBody(api.BackupRequest{Dir: dir}), &res); st != 200 || res.Dir != want || res.Docs != 5 {
			t.Errorf("backup to %q: %d %+v, want 200 into %s", dir, st, res, want)
			continue
		}
		b, err := db.Open(want, &db.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if b.Len() != 5 {
			t.Errorf("the copy in %s holds %d documents", want, b.Len())
		}
		b.Close()
	}

	for _, dir := range []string{
		filepath.Join(outside, "copy"),
		"../outside/copy",
		"a/../../outside/copy",
		"out/copy",
		filepath.Join(root, "out", "new", "copy"),
		".",
		root,
		"/",
	} {
		msg := wantErrorMessage(t, ts.URL+"/v1/backup", string(jsonDir(dir)), http.StatusForbidden,
			"is outside the server's backup root")
		if strings.Contains(strings.ReplaceAll(msg, fmt.Sprintf("%q", dir), ""), base) { // the dir given aside
			t.Errorf("backup to %q: the 403 names the backup root: %s", dir, msg)
		}
	}
	if !strings.Contains(logBuf.String(), "backup_root="+root) {
		t.Errorf("the refusals' log lines do not name the backup root %s:\n%s", root, logBuf.String())
	}
	if left, _ := os.ReadDir(outside); len(left) > 0 {
		t.Errorf("a refused backup wrote %s in %s", left[0].Name(), outside)
	}
	if msg := wantErrorMessage(t, ts.URL+"/v1/backup", `{"dir": ""}`, http.StatusBadRequest, "want a path inside the server's backup root"); strings.Contains(msg, base) {
		t.Errorf("an empty dir: the 400 names the backup root: %s", msg)
	}

	for _, bad := range []string{filepath.Join(base, "missing"), file} {
		if _, err := New(d, &Options{BackupRoot: bad}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("New with the backup root %s: %v, want ErrInvalidOptions", bad, err)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing backup root was made: %v", err)
	}
}

// TestBackupWithoutRoot: without a backup root a relative destination is
// refused as before, and the destination may be anywhere.
func TestBackupWithoutRoot(t *testing.T) {
	ts, d := testServer(t, nil)
	fill(t, d, 1, 2, 0, 40)
	wantError(t, "POST", ts.URL+"/v1/backup", "application/json", `{"dir": "rel/copy"}`, http.StatusBadRequest, "want an absolute path")
	dir := filepath.Join(t.TempDir(), "anywhere", "copy")
	var res api.BackupResult
	if st := call(t, "POST", ts.URL+"/v1/backup", "application/json", jsonBody(api.BackupRequest{Dir: dir}), &res); st != 200 || res.Dir != dir {
		t.Fatalf("backup to %s: %d %+v", dir, st, res)
	}
}

// wantErrorMessage posts body to url and checks the answer: status, and
// an error message holding msg, which it returns.
func wantErrorMessage(t *testing.T, url, body string, status int, msg string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e api.ErrorBody
	if resp.StatusCode != status || json.Unmarshal(b, &e) != nil || !strings.Contains(e.Error.Message, msg) {
		t.Errorf("POST %s %s: %d %s, want %d and a message with %q", url, body, resp.StatusCode, b, status, msg)
	}
	return e.Error.Message
}

// syncBuffer is a bytes.Buffer safe for concurrent use (a log's).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestBackupDestResolved: with a backup root, the backup goes to the
// destination as it was found inside the root, its symbolic links
// resolved, not to the path named through them, which the backup would
// walk again (a link changed meanwhile could take it out of the root);
// the answer names the path the client gave, cleaned.
func TestBackupDestResolved(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "backups")
	if err := os.MkdirAll(filepath.Join(root, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "in")); err != nil {
		t.Fatal(err)
	}
	d, err := db.Open(t.TempDir(), &db.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s, err := New(d, &Options{BackupRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/v1/backup", nil)
	for dir, want := range map[string][2]string{
		"in/copy":                      {filepath.Join(root, "real", "copy"), filepath.Join(root, "in", "copy")},
		filepath.Join(root, "in", "x"): {filepath.Join(root, "real", "x"), filepath.Join(root, "in", "x")},
		"real/new/../copy":             {filepath.Join(root, "real", "copy"), filepath.Join(root, "real", "copy")},
		filepath.Join(root, "plain/a"): {filepath.Join(root, "plain", "a"), filepath.Join(root, "plain", "a")},
	} {
		to, answer, err := s.backupDest(r, dir)
		if err != nil || to != want[0] || answer != want[1] {
			t.Errorf("backupDest(%q): %q, %q, %v; want the backup into %q, the answer naming %q", dir, to, answer, err, want[0], want[1])
		}
	}
}
