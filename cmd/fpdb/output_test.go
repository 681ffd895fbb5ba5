package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOutputFile checks what -o does to the path it is given: a new file
// gets os.Create's permissions and is removed on failure; an existing
// file keeps its permissions and its old content on failure; a symlink
// stays a symlink to the file written; a directory is refused.
func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	write := func(path, text string, ok bool) {
		t.Helper()
		out, err := createOutput(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := out.WriteString(text); err != nil {
			t.Fatal(err)
		}
		if ok {
			if err := out.commit(); err != nil {
				t.Fatal(err)
			}
		} else {
			out.abort()
		}
		out.abort() // nothing after commit or abort
	}
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ref := filepath.Join(dir, "ref")
	f, err := os.Create(ref)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	refInfo, _ := os.Stat(ref)

	// A new file.
	path := filepath.Join(dir, "new.jsonl")
	write(path, "failed", false)
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("a failed output left %s: %v", path, err)
	}
	write(path, "one", true)
	if fi, err := os.Stat(path); err != nil || read(path) != "one" || fi.Mode() != refInfo.Mode() {
		t.Fatalf("new output: %v, %q, mode %v (os.Create gives %v)", err, read(path), fi.Mode(), refInfo.Mode())
	}

	// An existing file of mode 0600.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	write(path, "failed", false)
	if read(path) != "one" {
		t.Fatalf("a failed output changed the file: %q", read(path))
	}
	write(path, "two", true)
	if fi, _ := os.Stat(path); read(path) != "two" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("replaced output: %q, mode %v", read(path), fi.Mode())
	}

	// A symlink to it.
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	write(link, "three", true)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 || read(path) != "three" {
		t.Fatalf("output through a symlink: %v, mode %v, target %q", err, fi.Mode(), read(path))
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}

	// A directory refused. (A device is written in place: not tried on
	// this machine's /dev.)
	if _, err := createOutput(dir); err == nil {
		t.Fatal("a directory as the output: no error")
	}
}

// TestControlCharactersInIDs: text output writes an id holding a control
// character or a bidirectional override Go-quoted (as list and pairs write
// one holding a tab), so that a crafted id cannot send a terminal escape
// sequence; --json writes it exactly.
func TestControlCharactersInIDs(t *testing.T) {
	text, err := os.ReadFile(corpus + "bees.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"\x1b]0;title\x07", "a\u202eb", "c\u009bd"} {
		t.Run(strconv.Quote(id), func(t *testing.T) {
			dir := dbDir(t)
			quoted := strconv.Quote(id)
			raw := func(what string, r result) {
				t.Helper()
				if strings.Contains(r.stdout+r.stderr, id) || !strings.Contains(r.stdout, quoted) {
					t.Errorf("%s does not write %s quoted:\nstdout %q\nstderr %q", what, quoted, r.stdout, r.stderr)
				}
			}
			raw("add", runFPDB(t, string(text), "--db", dir, "add", "--id", id, "-").mustCode(t, exitOK))
			raw("add of a near duplicate", runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt").mustCode(t, exitDuplicates))
			raw("query", runFPDB(t, "", "--db", dir, "query", corpus+"bees.txt").mustCode(t, exitOK))
			raw("query of two inputs", runFPDB(t, "", "--db", dir, "query", corpus+"bees.txt", corpus+"tides.txt").mustCode(t, exitOK))
			raw("get", runFPDB(t, "", "--db", dir, "get", id).mustCode(t, exitOK))
			r := runFPDB(t, "", "--db", dir, "get", "--json", id).mustCode(t, exitOK)
			if got := jsonLines(t, r.stdout); len(got) != 1 || got[0]["id"] != id {
				t.Errorf("get --json: %q, want the id %q exactly", r.stdout, id)
			}
			r = runFPDB(t, "", "--db", dir, "query", "--json", corpus+"bees.txt").mustCode(t, exitOK)
			if got := jsonLines(t, r.stdout); len(got) == 0 || got[0]["id"] != id {
				t.Errorf("query --json: %q, want the id %q exactly", r.stdout, id)
			}
			raw("delete", runFPDB(t, "", "--db", dir, "delete", id).mustCode(t, exitOK))
		})
	}
}

// TestWriteOutput checks the whole-or-nothing writes of compare --html,
// report --out and tune --plot: a failed write leaves an existing file as
// it was and no new one; "-" is stdout unless there is none.
func TestWriteOutput(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.html")
	if err := os.WriteFile(old, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	fail := func(w io.Writer) error {
		io.WriteString(w, "partial")
		return errors.New("cut short")
	}
	for _, p := range []string{old, filepath.Join(dir, "new.html")} {
		if err := writeOutput(io.Discard, p, "--html", fail); err == nil || err.Error() != "--html: cut short" {
			t.Fatalf("%s: %v, want --html: cut short", p, err)
		}
	}
	if b, err := os.ReadFile(old); err != nil || string(b) != "keep" {
		t.Errorf("existing file after a failed write: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files left: %v", ents)
	}
	var stdout strings.Builder
	ok := func(w io.Writer) error { _, err := io.WriteString(w, "page"); return err }
	if err := writeOutput(&stdout, "-", "--html", ok); err != nil || stdout.String() != "page" {
		t.Errorf("-: %q, %v", stdout.String(), err)
	}
	t.Chdir(dir)
	if err := writeOutput(nil, "-", "--plot", ok); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "-")); err != nil || string(b) != "page" {
		t.Errorf("- without stdout: %q, %v", b, err)
	}
}
