package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
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
		"; " + dst + " holds the 10000 documents imported before it: import the same export again to finish (it resumes), or remove it"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("a truncated export: stderr %q, want %q", r.stderr, want)
		}
	}
	if st := runFPDB(t, "", "--db", dst, "stats", "--json").mustCode(t, exitOK); !strings.Contains(st.stdout, `"docs":10000,`) || !strings.Contains(st.stdout, `"import_incomplete":true`) {
		t.Errorf("after the failed import: %s", st.stdout)
	}
	// The database says it is unfinished and takes no other write.
	if st := runFPDB(t, "", "--db", dst, "stats").mustCode(t, exitOK); !regexp.MustCompile(`(?m)^import +unfinished: `).MatchString(st.stdout) {
		t.Errorf("stats of an unfinished import: %s", st.stdout)
	}
	// Queries answer from what is stored, and say that it is not all.
	r = runFPDB(t, "", "--db", dst, "query", "--threshold", "0.5", corpus+"bees.txt")
	if want := "fpdb: warning: an import into " + dst + " did not finish: it holds the first 10000 documents of an export"; !strings.Contains(r.stderr, want) {
		t.Errorf("a query of an unfinished import: stderr %q, want %q", r.stderr, want)
	}
	r = runFPDB(t, "", "--db", dst, "check").mustCode(t, exitProblems)
	if strings.Contains(r.stderr, "warning") {
		t.Errorf("check warns as well as it says: %q", r.stderr)
	}
	if want := "problem: check " + dst + ": an import into the database did not finish: it holds the first 10000 documents of an export"; !strings.Contains(r.stdout, want) {
		t.Errorf("check of an unfinished import: stdout %q, want %q", r.stdout, want)
	}
	r = runFPDB(t, "", "--db", dst, "add", "--no-texts", corpus+"bees.txt")
	if r.code == exitOK || !strings.Contains(r.stderr, "an import into the database did not finish") {
		t.Errorf("add into an unfinished import: exit %d, stderr %q", r.code, r.stderr)
	}
	// Another export is refused, with one thing to do.
	r = runFPDB(t, exp, "--db", dst, "import", "-").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "holds part of another export") || strings.Contains(r.stderr, "import makes a new database") {
		t.Errorf("another export into an unfinished import: stderr %q", r.stderr)
	}
	// The export mended, the import resumes and finishes.
	whole := strings.TrimSuffix(b.String(), doc[:40]) + strings.Replace(doc, `"id":"`+corpus+`bees.txt"`, `"id":"doc-last"`, 1)
	if err := os.WriteFile(cut, []byte(whole), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runFPDB(t, "", "--db", dst, "import", cut).mustCode(t, exitOK)
	if want := "imported 10002 documents into " + dst; !strings.Contains(r.stdout, want) {
		t.Errorf("the resumed import: stdout %q, want %q", r.stdout, want)
	}
	runFPDB(t, "", "--db", dst, "check").mustCode(t, exitOK)
}

// TestImportRefusesDamagedText: a line of an export whose text was edited
// (or whose fingerprint lost a digit) is refused, naming the export, the
// line, the id and what does not match; nothing is stored, and no
// database is left. Before, the import took it: the query of the old text
// answered "similarity 1.000 ... exact" for a document holding another.
func TestImportRefusesDamagedText(t *testing.T) {
	src := dbDir(t)
	runFPDB(t, "", "--db", src, "add", "--quiet", corpus).mustCode(t, exitDuplicates)
	exp := runFPDB(t, "", "--db", src, "export").mustCode(t, exitOK).stdout
	lines := strings.SplitAfter(exp, "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[3]), &rec); err != nil {
		t.Fatal(err)
	}
	id := rec["id"].(string)
	for _, tc := range []struct {
		name string
		edit func(rec map[string]any)
		want string
	}{
		{"text", func(rec map[string]any) {
			rec["text"] = "other words than those the document was stored with, " + rec["text"].(string)[:40]
		},
			"content_hash "},
		{"fingerprint", func(rec map[string]any) {
			fp := []byte(rec["fingerprint"].(string))
			fp[3] = map[bool]byte{true: '1', false: '0'}[fp[3] == '0']
			rec["fingerprint"] = string(fp)
		}, "fingerprint differs from the text's in "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r map[string]any
			if err := json.Unmarshal([]byte(lines[3]), &r); err != nil {
				t.Fatal(err)
			}
			tc.edit(r)
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			bad := append(slices.Clone(lines[:3]), string(b)+"\n")
			path := writeFile(t, t.TempDir(), "bad.jsonl", []byte(strings.Join(append(bad, lines[4:]...), "")))
			dst := dbDir(t)
			r2 := runFPDB(t, "", "--db", dst, "import", path).mustCode(t, exitFailure)
			for _, want := range []string{fmt.Sprintf("fpdb: import %s: invalid export: line 4: %q: the record does not match its text", path, id), tc.want} {
				if !strings.Contains(r2.stderr, want) {
					t.Errorf("stderr %q, want %q", r2.stderr, want)
				}
			}
			if names, _ := os.ReadDir(dst); len(names) > 1 {
				t.Errorf("the refused import left %d files in %s", len(names), dst)
			}
		})
	}
}

// TestImportWaits: import waits (--wait) for a database another process
// holds, as other commands do; it failed at once.
func TestImportWaits(t *testing.T) {
	src := dbDir(t)
	runFPDB(t, "", "--db", src, "add", "--no-texts", "--no-log", corpus+"bees.txt").mustCode(t, exitOK)
	exp := runFPDB(t, "", "--db", src, "export").mustCode(t, exitOK).stdout
	dst := filepath.Join(t.TempDir(), "db")
	held, err := db.Open(dst, nil) // an empty database, held
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(1500 * time.Millisecond)
		if err := held.Close(); err != nil {
			t.Error(err)
		}
	}()
	r := runFPDB(t, exp, "--db", dst, "--wait", "20s", "import", "-").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "imported 1 document into "+dst) {
		t.Errorf("import after waiting: stdout %q stderr %q", r.stdout, r.stderr)
	}
}
