package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupCommand: fpdb backup writes a copy that passes check and
// answers queries as the original; an existing target or a missing
// argument is refused.
func TestBackupCommand(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus).mustCode(t, exitDuplicates)
	to := filepath.Join(t.TempDir(), "copy")
	r := runFPDB(t, "", "--db", dir, "backup", to).mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "backed up ") || !strings.Contains(r.stdout, to) {
		t.Fatalf("backup:\n%s", r.stdout)
	}
	runFPDB(t, "", "--db", to, "check").mustCode(t, exitOK)
	q := corpus + "bees.txt"
	a := runFPDB(t, "", "--db", dir, "query", q).mustCode(t, exitOK)
	b := runFPDB(t, "", "--db", to, "query", q).mustCode(t, exitOK)
	if a.stdout != b.stdout || !strings.Contains(b.stdout, q) {
		t.Fatalf("query of the copy:\n%s\noriginal:\n%s", b.stdout, a.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "backup", to).mustCode(t, exitFailure)
	if want := "fpdb: backup " + to + ": file already exists (the destination must not exist)\n"; r.stderr != want {
		t.Fatalf("backup onto an existing directory: stderr %q, want %q", r.stderr, want)
	}
	inside := filepath.Join(dir, "copy")
	r = runFPDB(t, "", "--db", dir, "backup", inside).mustCode(t, exitFailure)
	if want := "fpdb: backup " + inside + ": the destination is inside the database directory " + dir + "\n"; r.stderr != want {
		t.Fatalf("backup into the database: stderr %q, want %q", r.stderr, want)
	}
	runFPDB(t, "", "--db", dir, "backup").mustCode(t, exitFailure)
}
