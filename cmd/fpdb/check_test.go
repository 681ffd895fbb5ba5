package main

import (
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// damage deletes key from the Pebble store of the closed database in dir.
func damage(t *testing.T, dir string, key []byte) {
	t.Helper()
	p, err := pebble.Open(dir, &pebble.Options{Merger: posting.Merger(), FormatMajorVersion: pebble.FormatValueSeparation})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(key, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckCommand(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus).mustCode(t, exitDuplicates)
	r := runFPDB(t, "", "--db", dir, "check").mustCode(t, exitOK)
	if !strings.HasPrefix(r.stdout, "ok: ") {
		t.Fatalf("check of a sound database:\n%s", r.stdout)
	}
	runFPDB(t, "", "--db", dir, "check", "--repair").mustCode(t, exitOK)

	id := corpus + "bees.txt"
	damage(t, dir, keys.ExtID(id))
	r = runFPDB(t, "", "--db", dir, "check").mustCode(t, exitProblems)
	if !strings.Contains(r.stdout, `problem: document`) || !strings.Contains(r.stdout, `("`+id+`") has no ext-id entry`) ||
		!strings.Contains(r.stdout, "fpdb check --repair") {
		t.Fatalf("check of a damaged database:\n%s", r.stdout)
	}
	runFPDB(t, "", "--db", dir, "get", id).mustCode(t, exitFailure)

	r = runFPDB(t, "", "--db", dir, "check", "--repair").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "found: ") || !strings.Contains(r.stdout, "repaired: ") || !strings.Contains(r.stdout, "ok: ") {
		t.Fatalf("check --repair:\n%s", r.stdout)
	}
	runFPDB(t, "", "--db", dir, "check").mustCode(t, exitOK)
	r = runFPDB(t, "", "--db", dir, "get", id).mustCode(t, exitOK)
	if !strings.Contains(r.stdout, id) {
		t.Fatalf("get after repair:\n%s", r.stdout)
	}
}

func TestCheckCommandErrors(t *testing.T) {
	dir := dbDir(t)
	r := runFPDB(t, "", "--db", dir, "check").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "does not exist") {
		t.Fatalf("check of a missing database:\n%s", r.stderr)
	}
	runFPDB(t, "", "--db", dir, "check", "--repair").mustCode(t, exitFailure)
	runFPDB(t, "", "--db", dir, "check", "extra").mustCode(t, exitFailure)
}
