package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeBackupRootFlag: a --backup-root that is not a directory, or
// given with --cluster, is a usage error, found before the database is
// opened: none is created.
func TestServeBackupRootFlag(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backup-root", filepath.Join(base, "missing")}, "invalid --backup-root: stat " + filepath.Join(base, "missing") + ": no such file or directory"},
		{[]string{"--backup-root", file}, "invalid --backup-root " + file + ": not a directory"},
		{[]string{"--backup-root", base, "--cluster", "n1@127.0.0.1"}, "--backup-root is for a single server"},
	} {
		r := runFPDB(t, "", append([]string{"--db", dir, "serve", "--addr", "127.0.0.1:0"}, c.args...)...).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("serve %q: stderr %q, want %q", c.args, r.stderr, c.want)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused --backup-root created the database: %v", err)
	}
}

// TestServeBackupRoot: "fpdb serve --backup-root DIR" writes a backup
// whose destination is relative inside DIR, and answers 403 for one
// outside it, writing nothing there.
func TestServeBackupRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fpdb and runs a server process (not with -short)")
	}
	bin := buildFPDB(t)
	base := t.TempDir()
	root, outside := filepath.Join(base, "backups"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv := startServeWith(t, bin, filepath.Join(base, "db"), http.DefaultClient, "http", "--backup-root", root)
	post := func(dir string) (int, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(map[string]string{"dir": dir})
		resp, err := http.Post(srv.url+"/v1/backup", "application/json", strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		body, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("backup to %s: %d %q", dir, resp.StatusCode, body)
		}
		return resp.StatusCode, out
	}
	if st, out := post("nightly/1"); st != 200 || out["dir"] != filepath.Join(root, "nightly", "1") {
		t.Errorf("backup to a relative destination: %d %v", st, out)
	}
	if m, _ := filepath.Glob(filepath.Join(root, "nightly", "1", "MANIFEST-*")); len(m) == 0 {
		t.Error("no copy in the root")
	}
	for _, dir := range []string{filepath.Join(outside, "copy"), "../outside/copy"} {
		st, out := post(dir)
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if st != http.StatusForbidden || !strings.Contains(msg, "is outside the server's backup root") ||
			strings.Contains(strings.ReplaceAll(msg, fmt.Sprintf("%q", dir), ""), root) {
			t.Errorf("backup to %s: %d %v, want 403 without the root's path", dir, st, out)
		}
	}
	if left, _ := os.ReadDir(outside); len(left) > 0 {
		t.Errorf("a refused backup wrote %s", left[0].Name())
	}
}
