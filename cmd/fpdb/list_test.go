package main

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestList: "fpdb list" prints one line per document, sorted by id — id,
// time added (RFC 3339), size, source — with ids holding a tab quoted;
// --prefix selects ids, --json prints objects, -0 prints NUL-terminated
// ids that "fpdb delete - -0" reads back.
func TestList(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"railway.txt", corpus+"coffee.txt", corpus+"bees.txt").mustCode(t, exitOK)
	text, err := os.ReadFile(corpus + "tides.txt")
	if err != nil {
		t.Fatal(err)
	}
	runFPDB(t, string(text), "--db", dir, "add", "--id", "tab\there", "--source", "http://x/y", "-").mustCode(t, exitOK)

	r := runFPDB(t, "", "--db", dir, "list").mustCode(t, exitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	var ids []string
	for _, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 4 {
			t.Fatalf("line %q has %d fields, want 4", l, len(f))
		}
		id := f[0]
		if strings.HasPrefix(id, `"`) {
			if id, err = strconv.Unquote(id); err != nil {
				t.Fatalf("bad quoted id in %q: %v", l, err)
			}
		}
		ids = append(ids, id)
		added, err := time.Parse(time.RFC3339, f[1])
		if err != nil || time.Since(added) > time.Hour || time.Until(added) > time.Hour {
			t.Errorf("line %q: added %q (%v)", l, f[1], err)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("line %q: size: %v", l, err)
		}
		want := corpus + strings.TrimPrefix(id, "testdata/corpus/")
		if id == "tab\there" {
			want = corpus + "tides.txt"
			if f[3] != "http://x/y" {
				t.Errorf("source of %q: %q", id, f[3])
			}
		} else if f[3] != want {
			t.Errorf("source of %q: %q", id, f[3])
		}
		if fi, err := os.Stat(want); err != nil || fi.Size() != size {
			t.Errorf("size of %q: %d, the file %v", id, size, fi.Size())
		}
	}
	wantIDs := []string{"tab\there", "testdata/corpus/bees.txt", "testdata/corpus/coffee.txt", "testdata/corpus/railway.txt"}
	if !slices.Equal(ids, wantIDs) {
		t.Errorf("ids %q, want %q (sorted)", ids, wantIDs)
	}
	if !strings.HasPrefix(lines[0], `"tab\there"`+"\t") {
		t.Errorf("id with a tab not quoted: %q", lines[0])
	}

	r = runFPDB(t, "", "--db", dir, "list", "--prefix", "testdata/corpus/b").mustCode(t, exitOK)
	if strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, "testdata/corpus/bees.txt\t") {
		t.Errorf("list --prefix:\n%s", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "list", "--prefix", "nothing/").mustCode(t, exitOK)
	if r.stdout != "" {
		t.Errorf("list --prefix of nothing: %q", r.stdout)
	}

	r = runFPDB(t, "", "--db", dir, "list", "--json").mustCode(t, exitOK)
	objs := jsonLines(t, r.stdout)
	if len(objs) != 4 || objs[0]["id"] != "tab\there" || objs[0]["source"] != "http://x/y" || objs[0]["size"] != float64(len(text)) {
		t.Fatalf("list --json:\n%s", r.stdout)
	}
	if _, err := time.Parse(time.RFC3339, objs[1]["added"].(string)); err != nil || objs[1]["id"] != "testdata/corpus/bees.txt" {
		t.Errorf("list --json: %v (%v)", objs[1], err)
	}

	r = runFPDB(t, "", "--db", dir, "list", "-0").mustCode(t, exitOK)
	if want := strings.Join(wantIDs, "\x00") + "\x00"; r.stdout != want {
		t.Errorf("list -0: %q, want %q", r.stdout, want)
	}
	r = runFPDB(t, "", "--db", dir, "list", "-0", "--prefix", "tab").mustCode(t, exitOK)
	runFPDB(t, r.stdout, "--db", dir, "delete", "-", "-0").mustCode(t, exitOK)
	r = runFPDB(t, "", "--db", dir, "list", "-0").mustCode(t, exitOK)
	if want := strings.Join(wantIDs[1:], "\x00") + "\x00"; r.stdout != want {
		t.Errorf("after list -0 | delete - -0: %q", r.stdout)
	}

	// Read-only: a missing database is an error, and is not created.
	missing := dbDir(t)
	r = runFPDB(t, "", "--db", missing, "list").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("list of a missing database: %q", r.stderr)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("list created the database")
	}
}

// TestVersionFlag: "fpdb --version" prints what "fpdb version" prints.
func TestVersionFlag(t *testing.T) {
	want := runFPDB(t, "", "version").mustCode(t, exitOK).stdout
	r := runFPDB(t, "", "--version").mustCode(t, exitOK)
	if r.stdout != want || !strings.HasPrefix(r.stdout, "fpdb "+version) {
		t.Errorf("fpdb --version printed %q, fpdb version %q", r.stdout, want)
	}
	r = runFPDB(t, "", "--help").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "--version") {
		t.Errorf("--version not in the help:\n%s", r.stdout)
	}
}
