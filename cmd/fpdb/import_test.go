package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportErrors: an import that fails names the export at fault, what
// to do about a target that holds documents, and, after a batch was
// stored, what the target holds.
func TestImportErrors(t *testing.T) {
	src := dbDir(t)
	runFPDB(t, "", "--db", src, "add", "--no-texts", "--no-log", corpus+"bees.txt").mustCode(t, exitOK)
	exp := runFPDB(t, "", "--db", src, "export").mustCode(t, exitOK).stdout
	header, doc, _ := strings.Cut(exp, "\n")
	tmp := t.TempDir()

	bad := writeFile(t, tmp, "bad.jsonl", []byte("{bad\n"))
	r := runFPDB(t, "", "--db", dbDir(t), "import", bad).mustCode(t, exitFailure)
	if want := "fpdb: import " + bad + ": invalid export: header:"; !strings.HasPrefix(r.stderr, want) {
		t.Errorf("a bad header: stderr %q, want it to start %q", r.stderr, want)
	}

	r = runFPDB(t, exp, "--db", src, "import", "-").mustCode(t, exitFailure)
	if want := "holds 1 document (import makes a new database: give --db a directory that holds none)"; !strings.Contains(r.stderr, want) {
		t.Errorf("into a database that holds documents: stderr %q, want %q", r.stderr, want)
	}

	// A database whose documents were all deleted is no new one either.
	runFPDB(t, "", "--db", src, "delete", corpus+"bees.txt").mustCode(t, exitOK)
	r = runFPDB(t, exp, "--db", src, "import", "-").mustCode(t, exitFailure)
	if want := src + " has held documents (deleted since) (import makes"; !strings.Contains(r.stderr, want) {
		t.Errorf("into a database whose documents were deleted: stderr %q, want %q", r.stderr, want)
	}

	// More documents than one batch of 10 000, then a line cut short.
	var b strings.Builder
	b.WriteString(strings.Replace(header, `"docs":1`, `"docs":10002`, 1) + "\n")
	for i := range 10001 {
		b.WriteString(strings.Replace(doc, `"id":"`+corpus+`bees.txt"`, fmt.Sprintf(`"id":"doc-%d"`, i), 1))
	}
	b.WriteString(doc[:40])
	cut := filepath.Join(tmp, "cut.jsonl")
	if err := os.WriteFile(cut, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := dbDir(t)
	r = runFPDB(t, "", "--db", dst, "import", cut).mustCode(t, exitFailure)
	for _, want := range []string{"fpdb: import " + cut + ": invalid export: line 10003:",
		"; " + dst + " holds the 10000 documents imported before it: remove it and import again"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("a truncated export: stderr %q, want %q", r.stderr, want)
		}
	}
	if st := runFPDB(t, "", "--db", dst, "stats", "--json").mustCode(t, exitOK); !strings.Contains(st.stdout, `"docs":10000,`) {
		t.Errorf("after the failed import: %.80s", st.stdout)
	}
}
