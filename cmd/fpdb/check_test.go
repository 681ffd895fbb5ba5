package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// damage deletes key from the Pebble store of the closed database in dir.
func damage(t *testing.T, dir string, key []byte) {
	t.Helper()
	rawUpdate(t, dir, func(p *pebble.DB) error { return p.Delete(key, pebble.Sync) })
}

// rawUpdate changes the Pebble store of the closed database in dir.
func rawUpdate(t *testing.T, dir string, fn func(p *pebble.DB) error) {
	t.Helper()
	p, err := pebble.Open(dir, &pebble.Options{Merger: posting.Merger(), FormatMajorVersion: pebble.FormatValueSeparation})
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(p); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckCommandStrayKey damages the store in a way Open refuses (a
// fingerprint key far beyond every stored id): every command fails with
// the reason, check reports it as a problem, check --repair drops the key,
// and a damaged meta record makes check --repair say why it cannot repair.
func TestCheckCommandStrayKey(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus).mustCode(t, exitDuplicates)
	rawUpdate(t, dir, func(p *pebble.DB) error {
		v, closer, err := p.Get(keys.Fingerprint(0))
		if err != nil {
			return err
		}
		defer closer.Close()
		return p.Set(keys.Fingerprint(0xFFFFFFF0), v, pebble.Sync)
	})
	const stray = "fingerprint 4294967280 is at or beyond the next internal id"
	r := runFPDB(t, "", "--db", dir, "query", corpus+"bees.txt").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, stray) {
		t.Fatalf("query of a damaged database:\n%s", r.stderr)
	}
	r = runFPDB(t, "", "--db", dir, "check").mustCode(t, exitProblems)
	if !strings.Contains(r.stdout, "problem: ") || !strings.Contains(r.stdout, stray) {
		t.Fatalf("check of a damaged database:\n%s", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "check", "--repair").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "dropped: internal id 4294967280: fingerprint without a document record") || !strings.Contains(r.stdout, "ok: ") {
		t.Fatalf("check --repair:\n%s", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "query", corpus+"bees.txt").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "bees.txt") {
		t.Fatalf("query after check --repair:\n%s", r.stdout)
	}

	rawUpdate(t, dir, func(p *pebble.DB) error { return p.Set(keys.Meta(), []byte("{}0000"), pebble.Sync) })
	r = runFPDB(t, "", "--db", dir, "check", "--repair").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "meta record") {
		t.Fatalf("check --repair with a damaged meta record:\n%s", r.stderr)
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

// TestCheckCommandDamagedText: check reads every stored text again and
// reports one that does not give its document's content hash (here two
// documents' texts swapped in the store); check --repair removes those
// texts, keeping the documents, and check passes.
func TestCheckCommandDamagedText(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus).mustCode(t, exitDuplicates)
	rawUpdate(t, dir, func(p *pebble.DB) error {
		var vs [2][]byte
		for i := range vs {
			v, closer, err := p.Get(keys.Text(uint32(i)))
			if err != nil {
				return err
			}
			vs[i] = slices.Clone(v)
			_ = closer.Close()
		}
		if err := p.Set(keys.Text(0), vs[1], pebble.Sync); err != nil {
			return err
		}
		return p.Set(keys.Text(1), vs[0], pebble.Sync)
	})
	r := runFPDB(t, "", "--db", dir, "check").mustCode(t, exitProblems)
	if n := strings.Count(r.stdout, "problem: text of document "); n != 2 || !strings.Contains(r.stdout, "does not give the document's content hash") {
		t.Fatalf("check after two texts were swapped (want 2 problems):\n%s", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "check", "--repair").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "repaired: ") || !strings.Contains(r.stdout, "0 dropped") || !strings.Contains(r.stdout, "ok: ") {
		t.Fatalf("check --repair:\n%s", r.stdout)
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

// TestExportSalvage: export --salvage writes a database's readable
// documents for import into a new one, lists what it left out (here a
// document whose fingerprint key was deleted), and refuses, naming the
// reason, when the meta record is gone.
func TestExportSalvage(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus).mustCode(t, exitDuplicates)
	id := corpus + "bees.txt"
	damage(t, dir, keys.Fingerprint(0))
	runFPDB(t, "", "--db", dir, "query", id).mustCode(t, exitFailure)
	out := filepath.Join(t.TempDir(), "rescued.jsonl")
	r := runFPDB(t, "", "--db", dir, "export", "--salvage", "-o", out).mustCode(t, exitOK)
	if !strings.Contains(r.stderr, "dropped: internal id 0: document") || !strings.Contains(r.stderr, "salvaged ") {
		t.Fatalf("export --salvage:\n%s", r.stderr)
	}
	fresh := dbDir(t)
	runFPDB(t, "", "--db", fresh, "import", out).mustCode(t, exitOK)
	runFPDB(t, "", "--db", fresh, "check").mustCode(t, exitOK)
	r = runFPDB(t, "", "--db", fresh, "query", id).mustCode(t, exitOK)
	if !strings.Contains(r.stdout, id) {
		t.Fatalf("query of the salvaged database:\n%s", r.stdout)
	}

	damage(t, dir, keys.Meta())
	r = runFPDB(t, "", "--db", dir, "export", "--salvage").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, dir) {
		t.Fatalf("export --salvage without a meta record:\n%s", r.stderr)
	}
}
