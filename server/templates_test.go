package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
)

func TestTemplateEndpoints(t *testing.T) {
	ts, d := testServer(t, nil)
	ctx := context.Background()
	fill(t, d, 2, 2, 3, 100)
	var list api.Templates
	if st := call(t, "GET", ts.URL+"/v1/templates", "", nil, &list); st != 200 || list.Templates == nil || len(list.Templates) != 0 {
		t.Fatalf("no templates: %d %+v", st, list)
	}
	var res api.TemplateResult
	req := api.TemplateRequest{Name: "call/2026", Text: text(1000, 60)}
	if st := call(t, "POST", ts.URL+"/v1/templates", "application/json", jsonBody(req), &res); st != 201 ||
		res.Replaced || res.Template.Name != "call/2026" || res.Template.Shingles == 0 || res.Documents != d.Len() || res.Excluded == 0 {
		t.Fatalf("add: %d %+v", st, res)
	}
	req.Text = text(1001, 80)
	if st := call(t, "POST", ts.URL+"/v1/templates", "application/json", jsonBody(req), &res); st != 200 || !res.Replaced {
		t.Fatalf("replace: %d %+v", st, res)
	}
	if st := call(t, "GET", ts.URL+"/v1/templates", "", nil, &list); st != 200 || len(list.Templates) != 1 {
		t.Fatalf("list: %d %+v", st, list)
	}
	ts2, err := d.Templates(ctx)
	if err != nil || len(ts2) != 1 || list.Templates[0] != apiconv.Template(ts2[0]) {
		t.Fatalf("served %+v, db %+v (%v)", list.Templates, ts2, err)
	}
	wantError(t, "POST", ts.URL+"/v1/templates", "application/json", `{"text": "a b c d"}`, 400, "name")
	wantError(t, "POST", ts.URL+"/v1/templates", "application/json", `{"name": "x", "text": "a b c d", "format": "pdf"}`, 400, "pdf")
	// The answer to a removal describes the template removed, as listed.
	res = api.TemplateResult{}
	if st := call(t, "DELETE", ts.URL+"/v1/templates/"+url.PathEscape("call/2026"), "", nil, &res); st != 200 || res.Template != list.Templates[0] || res.Template.Bytes == 0 {
		t.Fatalf("remove: %d %+v, want the template %+v", st, res, list.Templates[0])
	}
	if got, _ := d.Templates(ctx); len(got) != 0 {
		t.Fatalf("templates left: %+v", got)
	}
	wantError(t, "DELETE", ts.URL+"/v1/templates/call%2F2026", "", "", 404, "template")
}

// TestBackupUnderAdds: the docs of a backup's answer are the documents of
// the copy, not of the database, which adds go on changing meanwhile.
func TestBackupUnderAdds(t *testing.T) {
	ts, d := testServer(t, nil)
	fill(t, d, 0, 0, 20, 30)
	var stop atomic.Bool
	added := make(chan int)
	go func() {
		n := 0
		for ; n < 100_000 && (!stop.Load() || n < 50); n++ {
			if _, err := d.Add(context.Background(), db.Input{ID: fmt.Sprint("w", n), Text: []byte(text(uint64(20_000+n), 30))}, nil); err != nil {
				t.Error(err)
				break
			}
		}
		added <- n
	}()
	dir := filepath.Join(t.TempDir(), "copy")
	var res api.BackupResult
	st := call(t, "POST", ts.URL+"/v1/backup", "application/json", jsonBody(api.BackupRequest{Dir: dir}), &res)
	stop.Store(true)
	n := <-added
	if st != 200 {
		t.Fatalf("backup: %d %+v", st, res)
	}
	b, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if res.Docs != b.Len() {
		t.Errorf("backup answered docs %d, the copy holds %d (%d in the database, %d added meanwhile)", res.Docs, b.Len(), d.Len(), n)
	}
	if b.Len() < 20 || d.Len() != 20+n {
		t.Errorf("the copy holds %d documents, the database %d, want at least 20 and %d", b.Len(), d.Len(), 20+n)
	}
}

func TestBackupEndpoint(t *testing.T) {
	ts, d := testServer(t, nil)
	fill(t, d, 2, 2, 3, 50)
	dir := filepath.Join(t.TempDir(), "copy")
	var res api.BackupResult
	if st := call(t, "POST", ts.URL+"/v1/backup", "application/json", jsonBody(api.BackupRequest{Dir: dir}), &res); st != 200 || res.Dir != dir || res.Docs != d.Len() {
		t.Fatalf("backup: %d %+v", st, res)
	}
	b, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != d.Len() {
		t.Errorf("the copy has %d documents, want %d", b.Len(), d.Len())
	}
	b.Close()
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link into the database directory reaches inside it too.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(d.Dir(), link); err != nil {
		t.Fatal(err)
	}
	// A symbolic link to nothing exists too (its rename failed, a 500).
	dangling := filepath.Join(t.TempDir(), "dangling")
	if err := os.Symlink(filepath.Join(t.TempDir(), "nothing"), dangling); err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		`{"dir": ` + quote(dangling) + `}`:                      "exists (a symbolic link): the destination must not exist",
		`{"dir": ` + quote(notDir) + `}`:                        "exists (a file): the destination must not exist",
		`{"dir": ` + quote(filepath.Join(link, "x", "y")) + `}`: "inside",
		`{"dir": "relative/copy"}`:                              "absolute",
		`{"dir": ""}`:                                           "absolute",
		`{"dir": ` + quote(dir) + `}`:                           "the destination must not exist",
		`{"dir": ` + quote(filepath.Join(d.Dir(), "x")) + `}`:   "inside",
		`{"path": "/x"}`:                                        "path",
		// A parent that is a file cannot hold the copy.
		`{"dir": ` + quote(filepath.Join(notDir, "copy")) + `}`: "not a directory",
	}
	if fi, err := os.Stat("/proc/self"); err == nil && fi.IsDir() {
		// Linux's /proc holds no directory a backup could make: the
		// request's fault too, not a 500.
		bad[`{"dir": "/proc/fpdb-backup"}`] = "/proc/fpdb-backup"
	}
	for body, msg := range bad {
		wantError(t, "POST", ts.URL+"/v1/backup", "application/json", body, 400, msg)
	}
	if _, err := os.Stat(filepath.Join(d.Dir(), "x")); err == nil {
		t.Fatal("a backup was written inside the database")
	}
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

// TestAccessOfNewRoutes: with tokens, every route needs one (but
// /metrics), and the writes need a read-write one.
func TestAccessOfNewRoutes(t *testing.T) {
	const ro, rw = "read-only-token-0123", "read-write-token-4567"
	toks, err := ParseTokens(strings.NewReader("ro " + ro + "\nrw " + rw + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts, d := testServer(t, &Options{Tokens: toks})
	fill(t, d, 1, 2, 0, 50)
	for _, c := range []struct {
		method, path, body string
		write              bool
	}{
		{"GET", "/v1/pairs?threshold=0.9", "", false},
		{"GET", "/v1/clusters?threshold=0.9", "", false},
		{"GET", "/v1/export", "", false},
		{"GET", "/v1/log", "", false},
		{"GET", "/v1/templates", "", false},
		{"POST", "/v1/compare", `{"a": {"id": "g0-0"}, "b": {"id": "g0-1"}}`, false},
		{"POST", "/v1/batch", `{"id": "new", "text": "a b c d e"}`, true},
		{"POST", "/v1/delete", `{"ids": ["g0-1"]}`, true},
		{"POST", "/v1/templates", `{"name": "t", "text": "a b c d e"}`, true},
		{"DELETE", "/v1/templates/t", "", true},
		{"POST", "/v1/backup", `{"dir": ` + quote(filepath.Join(t.TempDir(), "b")) + `}`, true},
	} {
		do := func(tok string) int {
			var hdr []string
			if tok != "" {
				hdr = []string{"Authorization", "Bearer " + tok}
			}
			return call(t, c.method, ts.URL+c.path, "application/json", strings.NewReader(c.body), nil, hdr...)
		}
		if st := do(""); st != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d", c.method, c.path, st)
		}
		st := do(ro)
		if c.write && st != http.StatusForbidden || !c.write && st != http.StatusOK {
			t.Errorf("%s %s with a read-only token: %d", c.method, c.path, st)
		}
		if c.write {
			if st := do(rw); st >= 300 {
				t.Errorf("%s %s with a read-write token: %d", c.method, c.path, st)
			}
		}
	}
	if st := call(t, "GET", ts.URL+"/metrics", "", nil, nil); st != 200 {
		t.Errorf("/metrics without a token: %d", st)
	}
	if d.Len() != 2 { // new stored, g0-1 deleted
		t.Errorf("%d documents", d.Len())
	}
}

// TestMkdirParents: a backup's missing parents are made, and removed again
// (only those it made) when the backup fails.
func TestMkdirParents(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	made, err := mkdirParents(filepath.Join(root, "a", "b", "c", "copy"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "a", "b", "c"), filepath.Join(root, "a", "b")}
	if !slices.Equal(made, want) {
		t.Fatalf("made %q, want %q", made, want)
	}
	if fi, err := os.Stat(want[0]); err != nil || !fi.IsDir() {
		t.Fatalf("parent not made: %v", err)
	}
	removeMade(made)
	if _, err := os.Stat(filepath.Join(root, "a", "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a made parent is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "a")); err != nil {
		t.Fatalf("a parent that existed was removed: %v", err)
	}

	// A parent that is a file: nothing is made, nothing is left.
	if err := os.WriteFile(filepath.Join(root, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := mkdirParents(filepath.Join(root, "f", "x", "copy")); err == nil {
		t.Fatal("a parent under a file was made")
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 2 {
		t.Fatalf("root holds %d entries, want a and f", len(entries))
	}
}

// TestBackupBadPath: a dir that cannot be a path here (a NUL byte, a name
// too long) is the request's fault: 400, and nothing is written, not even
// a parent.
func TestBackupBadPath(t *testing.T) {
	ts, d := testServer(t, nil)
	fill(t, d, 1, 2, 2, 30)
	base := t.TempDir()
	for _, dir := range []string{
		filepath.Join(base, "x\x00y"),
		filepath.Join(base, "new", "deeper", "x\x00y"),
		filepath.Join(base, "new", "x\x00y", "copy"),
		filepath.Join(base, "new", strings.Repeat("n", 300)),
		filepath.Join(base, "new", strings.Repeat("n", 300), "copy"),
	} {
		wantError(t, "POST", ts.URL+"/v1/backup", "application/json", string(jsonDir(dir)), 400, "dir")
		if left, _ := os.ReadDir(base); len(left) > 0 {
			t.Fatalf("backup to %q: %s left in %s", dir, left[0].Name(), base)
		}
	}
}

// jsonDir returns the JSON body of a backup into dir.
func jsonDir(dir string) []byte {
	b, _ := json.Marshal(api.BackupRequest{Dir: dir})
	return b
}
