package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// walkTree makes a tree of texts: a.txt, sub/b.txt, notes.md, a hidden
// file, a .git directory, a symbolic link to a.txt and one to sub/, and
// returns its root.
func walkTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	texts, err := os.ReadDir(corpus)
	if err != nil {
		t.Fatal(err)
	}
	read := func(i int) []byte {
		b, err := os.ReadFile(filepath.Join(corpus, texts[i].Name()))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for i, f := range []string{"a.txt", "sub/b.txt", "notes.md", ".hidden.txt", ".git/objects/x.txt"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, read(2*i), 0o644); err != nil { // unrelated texts
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.txt", filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	return root
}

// storedIDs lists the ids in the database, relative to root.
func storedIDs(t *testing.T, dir, root string) []string {
	t.Helper()
	r := runFPDB(t, "", "--db", dir, "export").mustCode(t, exitOK)
	var ids []string
	lines := jsonLines(t, r.stdout)
	docs, _ := lines[0]["docs"].(float64) // the audit log follows the documents
	for _, js := range lines[1 : 1+int(docs)] {
		id, _ := js["id"].(string)
		rel, err := filepath.Rel(root, id)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, filepath.ToSlash(rel))
	}
	slices.Sort(ids)
	return ids
}

// TestAddWalk: a directory walk skips the database inside it (so adding
// "." twice works), hidden files, .git and, unless --follow, symbolic links
// (with a note); --exclude, --include and --files-from -0 select files; a
// path given twice is added once whatever --batch; re-adding unchanged
// files leaves them as they are.
func TestAddWalk(t *testing.T) {
	root := walkTree(t)
	dir := filepath.Join(root, "fpdb-data")
	r := runFPDB(t, "", "--db", dir, "add", "--threshold", "0.99", root).mustCode(t, exitOK)
	if !strings.Contains(r.stderr, "2 symbolic links skipped") {
		t.Errorf("no note of the skipped links:\n%s", r.stderr)
	}
	if got := storedIDs(t, dir, root); !slices.Equal(got, []string{"a.txt", "notes.md", "sub/b.txt"}) {
		t.Fatalf("stored %v", got)
	}
	// Again, with the database now inside the tree: nothing from it is
	// read, every file is unchanged.
	r = runFPDB(t, "", "--db", dir, "add", "--threshold", "0.99", root).mustCode(t, exitOK)
	if strings.Count(r.stdout, ": unchanged\n") != 3 || strings.Contains(r.stdout, "fpdb-data") {
		t.Fatalf("second add:\n%s\n%s", r.stdout, r.stderr)
	}
	r = runFPDB(t, "", "--db", dir, "add", "--replace", filepath.Join(root, "a.txt")).mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "stored (replaced the previous version)") {
		t.Fatalf("add --replace:\n%s", r.stdout)
	}

	for _, c := range []struct {
		args []string
		want []string
		code int
	}{
		// The links are copies: near duplicates (exit 1).
		{[]string{"--follow"}, []string{"a.txt", "link.txt", "linkdir/b.txt", "notes.md", "sub/b.txt"}, exitDuplicates},
		{[]string{"--exclude", "*.md"}, []string{"a.txt", "sub/b.txt"}, exitOK},
		{[]string{"--include", "*.md", "--include", "sub/*"}, []string{"notes.md", "sub/b.txt"}, exitOK},
		{[]string{"--exclude", "sub/*"}, []string{"a.txt", "notes.md"}, exitOK},
	} {
		d := dbDir(t)
		runFPDB(t, "", append(append([]string{"--db", d, "add", "--threshold", "0.99"}, c.args...), root)...).mustCode(t, c.code)
		if got := storedIDs(t, d, root); !slices.Equal(got, c.want) {
			t.Errorf("add %v: stored %v, want %v", c.args, got, c.want)
		}
	}

	d := dbDir(t)
	list := filepath.Join(root, "a.txt") + "\x00" + filepath.Join(root, "notes.md") + "\x00"
	runFPDB(t, list, "--db", d, "add", "--threshold", "0.99", "--files-from", "-", "-0").mustCode(t, exitOK)
	if got := storedIDs(t, d, root); !slices.Equal(got, []string{"a.txt", "notes.md"}) {
		t.Errorf("--files-from - -0: stored %v", got)
	}

	a := filepath.Join(root, "a.txt")
	for _, batch := range []string{"1", "10"} {
		d := dbDir(t)
		r := runFPDB(t, "", "--db", d, "add", "--bulk", "--batch", batch, a, a).mustCode(t, exitOK)
		if !strings.HasPrefix(r.stderr, "bulk: 1 stored (0 replaced), 0 unchanged, 0 skipped") {
			t.Errorf("--batch %s with a path given twice:\n%s%s", batch, r.stdout, r.stderr)
		}
	}
	runFPDB(t, "", "--db", dbDir(t), "add", "--batch", "0", a).mustCode(t, exitFailure)
	runFPDB(t, "", "--db", dbDir(t), "add", "-0", a).mustCode(t, exitFailure)
}

// TestAddFollowLoop: --follow does not walk a directory again through a
// link inside it to itself or to a directory above it (each file is added
// once), and still follows a link to another part of the tree (its files
// are copies under other names).
func TestAddFollowLoop(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "a.txt", []byte("the first text of this tree, in words of its own\n"))
	writeFile(t, root, "sub/b.txt", []byte("another text, about something else entirely\n"))
	for _, l := range []struct{ target, link string }{
		{"..", "sub/up"},       // the root, from below
		{"../sub", "sub/self"}, // its own directory
		{".", "sub/dot"},
		{"sub", "zcopy"}, // walked after sub: a copy
	} {
		if err := os.Symlink(l.target, filepath.Join(root, l.link)); err != nil {
			t.Fatal(err)
		}
	}
	d := dbDir(t)
	runFPDB(t, "", "--db", d, "add", "--threshold", "0.99", "--follow", root).mustCode(t, exitDuplicates)
	if got, want := storedIDs(t, d, root), []string{"a.txt", "sub/b.txt", "zcopy/b.txt"}; !slices.Equal(got, want) {
		t.Errorf("stored %v, want %v", got, want)
	}
}

// TestAddNonUTF8Name: a file whose name is not UTF-8 cannot be its own id;
// add says so, names it and says what to do, adds the other files, and
// adds it under --id.
func TestAddNonUTF8Name(t *testing.T) {
	tmp := t.TempDir()
	name := "caf\xe9.txt" // Latin-1
	if err := os.WriteFile(filepath.Join(tmp, name), []byte("words of a file named in Latin-1\n"), 0o644); err != nil {
		t.Skipf("this file system refuses a name that is not UTF-8: %v", err)
	}
	writeFile(t, tmp, "ok.txt", []byte("a file with a plain name and other words\n"))
	dir := dbDir(t)
	r := runFPDB(t, "", "--db", dir, "add", tmp).mustCode(t, exitInput)
	want := "is not valid UTF-8 (the path is the document's id: rename the file, or add it alone with --id ID)\n"
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stdout, "ok.txt: stored") {
		t.Errorf("add of a directory holding %q: stdout %q, stderr %q", name, r.stdout, r.stderr)
	}
	runFPDB(t, "", "--db", dir, "add", "--id", "cafe.txt", filepath.Join(tmp, name)).mustCode(t, exitOK)
}
