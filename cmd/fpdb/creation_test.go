package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/db"
)

// cliStats returns fpdb stats --json of dir.
func cliStats(t *testing.T, dir string) jsonStats {
	t.Helper()
	r := runFPDB(t, "", "--db", dir, "stats", "--json").mustCode(t, exitOK)
	var st jsonStats
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// storedText returns the text dir stores for id, or Text's error.
func storedText(t *testing.T, dir, id string) (string, error) {
	t.Helper()
	d, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, err := d.Text(context.Background(), id)
	if err != nil {
		return "", err
	}
	return string(st.Text), nil
}

// TestKeepTextsByDefault: a database add creates keeps the texts (add and
// add --bulk); stats says so and counts them; export carries them and
// import keeps them.
func TestKeepTextsByDefault(t *testing.T) {
	bees, err := os.ReadFile(corpus + "bees.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, bulk := range []bool{false, true} {
		dir := dbDir(t)
		args := []string{"--db", dir, "add", "--quiet"}
		if bulk {
			args = append(args, "--bulk")
		}
		runFPDB(t, "", append(args, corpus+"bees.txt", corpus+"chess.txt")...).mustCode(t, exitOK)
		st := cliStats(t, dir)
		if !st.KeepTexts || st.Texts != 2 || st.TextBytes <= 0 || st.TextRawBytes <= 0 || st.FormatVersion != 5 {
			t.Fatalf("bulk=%v: stats %+v: want 2 texts kept, format 5", bulk, st)
		}
		if got, err := storedText(t, dir, corpus+"bees.txt"); err != nil || got != string(bees) {
			t.Fatalf("bulk=%v: stored text %q, %v", bulk, got, err)
		}
		r := runFPDB(t, "", "--db", dir, "stats").mustCode(t, exitOK)
		if !strings.Contains(r.stdout, "texts kept") || !strings.Contains(r.stdout, "yes: 2 texts") {
			t.Errorf("stats does not say texts are kept:\n%s", r.stdout)
		}
	}

	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", "--quiet", corpus).mustCode(t, exitDuplicates)
	exp := filepath.Join(t.TempDir(), "export.jsonl")
	runFPDB(t, "", "--db", dir, "export", "-o", exp).mustCode(t, exitOK)
	b, err := os.ReadFile(exp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"keep_texts":true`) || strings.Count(string(b), `"text_format":"text"`) != cliStats(t, dir).Docs {
		t.Fatalf("export lacks the texts:\n%.500s", b)
	}
	restored := dbDir(t)
	runFPDB(t, "", "--db", restored, "import", exp).mustCode(t, exitOK)
	if st := cliStats(t, restored); !st.KeepTexts || st.Texts != st.Docs {
		t.Fatalf("imported: %+v", st)
	}
	if got, err := storedText(t, restored, corpus+"bees.txt"); err != nil || got != string(bees) {
		t.Fatalf("imported text %q, %v", got, err)
	}
	runFPDB(t, "", "--db", restored, "check").mustCode(t, exitOK)
}

// TestNoTextsFlag: add --no-texts creates a database without texts; on a
// database that keeps texts it is refused like any differing creation
// flag, changing nothing; a database without texts (made with --no-texts,
// or before texts) takes adds with or without the flag.
func TestNoTextsFlag(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", "--no-texts", corpus+"bees.txt").mustCode(t, exitOK)
	st := cliStats(t, dir)
	if st.KeepTexts || st.Texts != 0 || st.FormatVersion != 5 {
		t.Fatalf("--no-texts: %+v", st)
	}
	if _, err := storedText(t, dir, corpus+"bees.txt"); !errors.Is(err, db.ErrNoText) {
		t.Fatalf("Text on a --no-texts database: %v, want ErrNoText", err)
	}
	runFPDB(t, "", "--db", dir, "add", corpus+"bread.txt").mustCode(t, exitOK)
	runFPDB(t, "", "--db", dir, "add", "--no-texts", "--bulk", corpus+"chess.txt").mustCode(t, exitOK)
	if st := cliStats(t, dir); st.KeepTexts || st.Texts != 0 || st.Docs != 3 {
		t.Fatalf("adds to a --no-texts database: %+v", st)
	}
	r := runFPDB(t, "", "--db", dir, "stats").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "texts kept") || !strings.Contains(r.stdout, "no\n") {
		t.Errorf("stats does not say texts are not kept:\n%s", r.stdout)
	}

	keep := dbDir(t)
	runFPDB(t, "", "--db", keep, "add", corpus+"bees.txt").mustCode(t, exitOK)
	for _, extra := range [][]string{nil, {"--bulk"}, {"--group-bits", "16"}} {
		args := append(append([]string{"--db", keep, "add", "--no-texts"}, extra...), corpus+"bread.txt")
		r := runFPDB(t, "", args...).mustCode(t, exitFailure)
		want := "fpdb: the database keeps texts (it was created without --no-texts), but --no-texts was given"
		if !strings.HasPrefix(r.stderr, want) {
			t.Errorf("%v: stderr %q, want %q", args, r.stderr, want)
		}
	}
	if st := cliStats(t, keep); st.Docs != 1 || st.Texts != 1 {
		t.Errorf("a refused add changed the database: %+v", st)
	}

	// A database made before texts (by the library without KeepTexts).
	old := dbDir(t)
	d, err := db.Open(old, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	runFPDB(t, "", "--db", old, "add", corpus+"bees.txt").mustCode(t, exitOK)
	runFPDB(t, "", "--db", old, "add", "--no-texts", corpus+"bread.txt").mustCode(t, exitOK)
	if st := cliStats(t, old); st.KeepTexts || st.Docs != 2 {
		t.Fatalf("add to a database without texts: %+v", st)
	}
}

// TestCreationGroupLimit: a --k too long for the groups of --group-bits
// (more than db.MaxGroups of them: the index's limit, reported by the db
// package as a group layout or a key space "exceeding 2^32") is refused
// as a usage error naming the flags, the number of groups and what would
// do, before any database is made; the largest K it names is accepted.
func TestCreationGroupLimit(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "--k", "8192"}, "--k 8192 with 16-bit groups (the default --group-bits) makes 512 groups, at most 255: give --k 4032 or less, or --k 6080 or less with --group-bits 24\n"},
		{[]string{"add", "--k", "8192", "--group-bits", "24"}, "--k 8192 with --group-bits 24 makes 342 groups, at most 255: give --k 6080 or less\n"},
		{[]string{"add", "--k", "4096"}, "--k 4096 with 16-bit groups (the default --group-bits) makes 256 groups, at most 255: give --group-bits 17 or more, or --k 4032 or less\n"},
		{[]string{"add", "--group-bits", "1"}, "--k 512 (the default) with --group-bits 1 makes 512 groups, at most 255: give --group-bits 3 or more, or --k 192 or less\n"},
		{[]string{"template", "add", "--k", "65536"}, "--k 65536 with 16-bit groups (the default --group-bits) makes 4096 groups"},
	} {
		d := filepath.Join(dir, "db")
		r := runFPDB(t, "", append(append([]string{"--db", d}, c.args...), corpus+"bees.txt")...).mustCode(t, exitFailure)
		if !strings.HasPrefix(r.stderr, "fpdb: "+c.want) || strings.Contains(r.stderr, "GroupWidths") {
			t.Errorf("%v: stderr %q, want %q", c.args, r.stderr, c.want)
		}
		if r := runFPDB(t, "", "--db", d, "stats"); r.code != exitFailure || !strings.Contains(r.stderr, "does not exist") {
			t.Errorf("%v: a database was made: stats %d %s", c.args, r.code, r.stderr)
		}
	}
	runFPDB(t, "", "--db", filepath.Join(dir, "k4032"), "add", "--k", "4032", corpus+"bees.txt").mustCode(t, exitOK)
	runFPDB(t, "", "--db", filepath.Join(dir, "k6080"), "add", "--k", "6080", "--group-bits", "24", corpus+"bees.txt").mustCode(t, exitOK)
}
