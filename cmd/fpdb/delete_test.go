package main

import (
	"strings"
	"testing"
)

// TestDeleteDryRunIDs: a dry run of ids lists an id given twice once and
// exits as the delete would, 2 when an id is not stored; the delete then
// does what the dry run said.
func TestDeleteDryRunIDs(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt").mustCode(t, exitOK)
	id := corpus + "bees.txt"

	r := runFPDB(t, "", "--db", dir, "delete", "--dry-run", id, id).mustCode(t, exitOK)
	if r.stdout != id+"\n" || !strings.Contains(r.stderr, "1 document would be deleted") {
		t.Errorf("dry run of an id given twice: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	dry := runFPDB(t, "", "--db", dir, "delete", "--dry-run", "nope", id)
	del := runFPDB(t, "", "--db", dir, "delete", "nope", id)
	if dry.code != exitFailure || del.code != dry.code {
		t.Errorf("exit code %d with --dry-run, %d without; want %d both", dry.code, del.code, exitFailure)
	}
	if !strings.Contains(dry.stderr, `delete "nope": document not found`) || dry.stdout != id+"\n" {
		t.Errorf("dry run with an unknown id: stdout %q, stderr %q", dry.stdout, dry.stderr)
	}
	r = runFPDB(t, "nope\n", "--db", dir, "delete", "--dry-run", "-").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "0 documents would be deleted") {
		t.Errorf("dry run of standard input: stderr %q", r.stderr)
	}
}
