package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// checkDB opens the database in dir and fails the test unless Check
// passes.
func checkDB(t *testing.T, dir string) {
	t.Helper()
	d, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Check(context.Background()); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

// corpusPairs are the planted near duplicates of testdata/corpus at 0.5.
var corpusPairs = [][2]string{
	{"bees-edited.txt", "bees.txt"},
	{"bread-edited.txt", "bread.txt"},
	{"chess-revised.txt", "chess.txt"},
	{"volcano-copy.txt", "volcano.txt"},
}

func TestLifecycleUsageErrors(t *testing.T) {
	dir := dbDir(t)
	for name, args := range map[string][]string{
		"bulk reject":       {"add", "--bulk", "--reject", corpus},
		"bulk threshold":    {"add", "--bulk", "--threshold", "0.8", corpus},
		"bulk batch":        {"add", "--bulk", "--batch", "0", corpus},
		"pairs no thresh":   {"pairs"},
		"pairs bad thresh":  {"pairs", "--threshold", "2"},
		"pairs arg":         {"pairs", "--threshold", "0.9", "x"},
		"clusters keep":     {"clusters", "--threshold", "0.9", "--keep", "latest"},
		"clusters max-size": {"clusters", "--threshold", "0.9", "--max-size", "5"},
		"export arg":        {"export", "x"},
		"import no arg":     {"import"},
		"compact arg":       {"compact", "x"},
		"delete both":       {"delete", "--prefix", "a", "--older-than", "1h"},
		"delete prefix ids": {"delete", "--prefix", "a", "b"},
		"delete empty pfx":  {"delete", "--prefix", ""},
		"delete bad age":    {"delete", "--older-than", "soon"},
		"delete stdin ids":  {"delete", "-", "x"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runFPDB(t, "", append([]string{"--db", dir}, args...)...).mustCode(t, exitFailure)
			if !strings.HasPrefix(r.stderr, "fpdb: ") || !strings.Contains(r.stderr, "--help") {
				t.Errorf("stderr lacks the error or the hint:\n%s", r.stderr)
			}
		})
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a usage error created the database directory (stat: %v)", err)
	}
}

func TestBulkPairsClusters(t *testing.T) {
	dir := dbDir(t)
	r := runFPDB(t, "", "--db", dir, "add", "--bulk", "--batch", "5", corpus, bad).mustCode(t, exitInput)
	// The summary is the last line of standard error; nothing on standard
	// output.
	if !strings.Contains(r.stderr, "\nbulk: 12 stored (0 replaced), 0 unchanged, 4 skipped (2 binary or not UTF-8, 2 no words) in ") || r.stdout != "" {
		t.Errorf("summary:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if strings.Count(r.stderr, "fpdb: add "+bad) != 4 {
		t.Errorf("skipped inputs not reported:\n%s", r.stderr)
	}
	// Again: every document unchanged, JSON summary, exit 0; with
	// --replace, every one replaced.
	r = runFPDB(t, "", "--db", dir, "add", "--bulk", "--json", corpus).mustCode(t, exitOK)
	if s := jsonLines(t, r.stdout); len(s) != 1 || s[0]["stored"] != 0.0 || s[0]["unchanged"] != 12.0 || s[0]["skipped"] != 0.0 {
		t.Errorf("JSON summary: %s", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "add", "--bulk", "--replace", "--json", corpus).mustCode(t, exitOK)
	if s := jsonLines(t, r.stdout); len(s) != 1 || s[0]["stored"] != 12.0 || s[0]["replaced"] != 12.0 || s[0]["skipped"] != 0.0 {
		t.Errorf("JSON summary: %s", r.stdout)
	}

	r = runFPDB(t, "", "--db", dir, "pairs", "--threshold", "0.5").mustCode(t, exitOK)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	slices.Sort(lines)
	if len(lines) != len(corpusPairs) {
		t.Fatalf("pairs:\n%s", r.stdout)
	}
	for i, p := range corpusPairs {
		f := strings.Split(lines[i], "\t")
		if len(f) < 4 || f[0] != corpus+p[0] || f[1] != corpus+p[1] || !isNumber(f[2]) || !isNumber(f[3]) {
			t.Errorf("pair %d: %q", i, lines[i])
		}
		if exact := strings.HasSuffix(lines[i], "\texact"); exact != (p[0] == "volcano-copy.txt") {
			t.Errorf("pair %d exact flag: %q", i, lines[i])
		}
	}
	r = runFPDB(t, "", "--db", dir, "pairs", "--threshold", "0.5", "--json").mustCode(t, exitOK)
	js := jsonLines(t, r.stdout)
	if len(js) != len(corpusPairs) {
		t.Fatalf("pairs --json:\n%s", r.stdout)
	}
	for _, p := range js {
		if p["similarity"].(float64) < 0.5 || p["a"] == p["b"] {
			t.Errorf("pair %v", p)
		}
	}
	// Every pair is also what query finds.
	for _, p := range corpusPairs {
		q := runFPDB(t, "", "--db", dir, "query", "--threshold", "0.5", corpus+p[1]).mustCode(t, exitOK)
		if !strings.Contains(q.stdout, corpus+p[0]) {
			t.Errorf("query %s does not find %s:\n%s", p[1], p[0], q.stdout)
		}
	}

	r = runFPDB(t, "", "--db", dir, "clusters", "--threshold", "0.5", "--keep", "first").mustCode(t, exitOK)
	if strings.Count(r.stdout, "cluster ") != 4 || strings.Count(r.stdout, "  keep ") != 4 || strings.Count(r.stdout, "  drop ") != 4 {
		t.Fatalf("clusters:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "  keep "+corpus+"bees-edited.txt\n  drop "+corpus+"bees.txt\n") {
		t.Errorf("keep first is not the smallest id:\n%s", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "clusters", "--threshold", "0.5", "--json").mustCode(t, exitOK)
	for _, c := range jsonLines(t, r.stdout) {
		if c["size"] != 2.0 || c["pairs"] != 1.0 || c["keep"] != nil {
			t.Errorf("cluster %v", c)
		}
	}
	// Low thresholds join nothing more; a threshold of 1 leaves the exact copy.
	r = runFPDB(t, "", "--db", dir, "clusters", "--threshold", "1").mustCode(t, exitOK)
	if r.stdout != "cluster 1: 2 documents, 1 pair, cohesion 1.000\n  "+corpus+"volcano-copy.txt\n  "+corpus+"volcano.txt\n" {
		t.Errorf("clusters at 1:\n%s", r.stdout)
	}
	checkDB(t, dir)
}

func TestExportImportCLI(t *testing.T) {
	src := dbDir(t)
	runFPDB(t, "", "--db", src, "add", corpus).mustCode(t, exitDuplicates)
	runFPDB(t, "", "--db", src, "delete", corpus+"tides.txt").mustCode(t, exitOK)
	exp := runFPDB(t, "", "--db", src, "export").mustCode(t, exitOK).stdout
	if n := strings.Count(exp, "\n"); n != 12+13 { // header + 11 documents + 13 audit-log entries (12 adds, 1 delete)
		t.Fatalf("export has %d lines:\n%s", n, exp)
	}
	file := filepath.Join(t.TempDir(), "export.jsonl")
	r := runFPDB(t, "", "--db", src, "export", "-o", file).mustCode(t, exitOK)
	if b, err := os.ReadFile(file); err != nil || string(b) != exp || !strings.Contains(r.stderr, "exported 11 documents") {
		t.Fatalf("export -o: %v, %q", err, r.stderr)
	}

	// -o - is standard output, as everywhere.
	if r := runFPDB(t, "", "--db", src, "export", "-o", "-").mustCode(t, exitOK); r.stdout != exp {
		t.Fatalf("export -o -: %d bytes on standard output, want %d (%q)", len(r.stdout), len(exp), r.stderr)
	}

	dst := dbDir(t)
	r = runFPDB(t, exp, "--db", dst, "import", "-").mustCode(t, exitOK)
	if !strings.HasPrefix(r.stdout, "imported 11 documents") {
		t.Errorf("import: %q", r.stdout)
	}
	for _, f := range []string{"bees.txt", "chess-revised.txt", "volcano.txt", "tides.txt"} {
		a := runFPDB(t, "", "--db", src, "query", "--threshold", "0.3", "--json", corpus+f)
		b := runFPDB(t, "", "--db", dst, "query", "--threshold", "0.3", "--json", corpus+f)
		if a.code != b.code || a.code > exitNoMatch {
			t.Errorf("%s: query exit codes %d and %d (%s%s)", f, a.code, b.code, a.stderr, b.stderr)
		}
		if a.stdout != b.stdout {
			t.Errorf("%s: query answers differ:\n%s\nvs\n%s", f, a.stdout, b.stdout)
		}
	}
	// The target must be empty; a bad export is refused.
	runFPDB(t, exp, "--db", dst, "import", "-").mustCode(t, exitFailure)
	r = runFPDB(t, "{}\n", "--db", dbDir(t), "import", "-").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "invalid export") {
		t.Errorf("bad export: %q", r.stderr)
	}
	runFPDB(t, "", "--db", dbDir(t), "import", filepath.Join(t.TempDir(), "missing")).mustCode(t, exitFailure)
	checkDB(t, dst)
}

func TestRetentionCompactStats(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", "--bulk", corpus).mustCode(t, exitOK)
	r := runFPDB(t, corpus+"bees.txt\n"+corpus+"bread.txt\r\n\nnope\n", "--db", dir, "delete", "-").mustCode(t, exitFailure)
	if r.stdout != "2 documents deleted\n" || r.stderr != "fpdb: delete \"nope\": document not found\n" {
		t.Errorf("delete -: %q %q", r.stdout, r.stderr)
	}
	// The latest delete's tombstones are still there (in the WAL).
	r = runFPDB(t, "", "--db", dir, "stats", "--json").mustCode(t, exitOK)
	if dnc := jsonLines(t, r.stdout)[0]["deleted_not_compacted"].(float64); dnc < 1 || dnc > 2 {
		t.Errorf("after deleting 2: deleted_not_compacted = %v", dnc)
	}
	r = runFPDB(t, "", "--db", dir, "delete", "--prefix", corpus+"c").mustCode(t, exitOK)
	if r.stdout != "3 documents deleted\n" { // chess, chess-revised, coffee
		t.Errorf("delete --prefix: %q", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "delete", "--older-than", "30d").mustCode(t, exitOK)
	if r.stdout != "0 documents deleted\n" {
		t.Errorf("delete --older-than 30d: %q", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "stats", "--json").mustCode(t, exitOK)
	st := jsonLines(t, r.stdout)[0]
	// Pebble may already have dropped tombstones (with the records they
	// delete) when it flushed and compacted at a later open.
	dnc := st["deleted_not_compacted"].(float64)
	if st["docs"] != 7.0 || dnc > 5 || st["bytes_per_doc"].(float64) <= 0 ||
		st["posting_ids"] != 7.0*32 || len(st["posting_lengths"].([]any)) == 0 {
		t.Errorf("stats: %s", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "compact").mustCode(t, exitOK)
	if !strings.HasPrefix(r.stdout, "compacted in ") {
		t.Errorf("compact: %q", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "stats").mustCode(t, exitOK)
	for _, want := range []string{"deleted, not compacted  0\n", "bytes per doc", "posting lists", "  length 1 "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stats lacks %q:\n%s", want, r.stdout)
		}
	}
	// A zero or negative age would delete everything: refused.
	for _, age := range []string{"0s", "0", "0d", "-5m"} {
		runFPDB(t, "", "--db", dir, "delete", "--older-than", age).mustCode(t, exitFailure)
	}
	time.Sleep(5 * time.Millisecond)
	r = runFPDB(t, "", "--db", dir, "delete", "--older-than", "1ms", "--dry-run").mustCode(t, exitOK)
	if got := strings.Count(r.stdout, "\n"); got != 7 || !strings.Contains(r.stderr, "7 documents would be deleted (dry run: nothing changed)") {
		t.Errorf("delete --dry-run: %q %q", r.stdout, r.stderr)
	}
	r = runFPDB(t, "", "--db", dir, "delete", "--older-than", "1ms").mustCode(t, exitOK)
	if r.stdout != "7 documents deleted\n" {
		t.Errorf("delete --older-than 1ms: %q", r.stdout)
	}
	checkDB(t, dir)
	runFPDB(t, "", "--db", dbDir(t), "compact").mustCode(t, exitFailure) // no database
}

// isNumber reports whether s is a decimal number.
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// TestExportHelpHeader: the header line "fpdb export --help" shows is the
// one export writes for a new database: the same fields, and the same
// export and format versions; the document line shows every field too.
func TestExportHelpHeader(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt").mustCode(t, exitOK)
	out := runFPDB(t, "", "--db", dir, "export").mustCode(t, exitOK).stdout
	lines := jsonLines(t, out)
	header := lines[0]
	help := runFPDB(t, "", "export", "--help").mustCode(t, exitOK).stdout
	for key := range lines[1] {
		if !strings.Contains(help, `"`+key+`"`) {
			t.Errorf("export --help does not show the document field %q", key)
		}
	}
	for key, v := range header {
		if !strings.Contains(help, `"`+key+`"`) {
			t.Errorf("export --help does not show the header field %q", key)
		}
		if n, ok := v.(float64); ok && (key == "fpdb_export" || key == "format_version") {
			if want := fmt.Sprintf(`"%s": %d`, key, int(n)); !strings.Contains(help, want) {
				t.Errorf("export --help does not show %s (the header written)", want)
			}
		}
	}
	if int(header["fpdb_export"].(float64)) != db.ExportVersion {
		t.Errorf("a new database exports version %v, want db.ExportVersion %d", header["fpdb_export"], db.ExportVersion)
	}
}
