package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/db"
)

// queryDB returns a database holding bees.txt, bread.txt and coffee.txt.
func queryDB(t *testing.T) string {
	t.Helper()
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt", corpus+"bread.txt", corpus+"coffee.txt").mustCode(t, exitOK)
	return dir
}

// copyFiles copies corpus files into a new directory, under the names given
// (name → corpus file, or raw content for a name starting with "raw:").
func copyFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, src := range files {
		var b []byte
		if raw, ok := strings.CutPrefix(src, "raw:"); ok {
			b = []byte(raw)
		} else {
			var err error
			if b, err = os.ReadFile(src); err != nil {
				t.Fatal(err)
			}
		}
		writeFile(t, root, name, b)
	}
	return root
}

// TestQueryMany: several inputs (files, a directory walked as add walks it,
// standard input) are queried in one run; each match is one line INPUT TAB
// ID TAB SIMILARITY TAB HAMMING [TAB exact], grouped by input in order; an
// input without a match prints nothing; --json names the input in "query".
func TestQueryMany(t *testing.T) {
	dir := queryDB(t)
	bees, err := os.ReadFile(corpus + "bees.txt")
	if err != nil {
		t.Fatal(err)
	}
	r := runFPDB(t, string(bees), "--db", dir, "query", corpus+"bread-edited.txt", corpus+"railway.txt", "-", corpus+"bees-edited.txt").mustCode(t, exitOK)
	line := regexp.MustCompile(`^([^\t]+)\t([^\t]+)\t(0\.\d{3}|1\.000)\t(\d+)(\texact)?$`)
	var got []string
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q is not INPUT TAB ID TAB SIMILARITY TAB HAMMING [TAB exact]", l)
		}
		got = append(got, m[1]+" -> "+m[2]+m[5])
	}
	// railway.txt has no match: no line.
	want := []string{
		corpus + "bread-edited.txt -> testdata/corpus/bread.txt",
		"- -> testdata/corpus/bees.txt\texact",
		corpus + "bees-edited.txt -> testdata/corpus/bees.txt",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("query of 4 inputs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// awk reads the fields as the help says.
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		f := strings.Split(l, "\t")
		if s, err := strconv.ParseFloat(f[2], 64); err != nil || s < 0.7 || s > 1 {
			t.Errorf("similarity field of %q: %v", l, err)
		}
	}

	// A directory: its files, in sorted order, hidden ones skipped; the
	// multi-input format even when it holds one file.
	root := copyFiles(t, map[string]string{
		"b/coffee.txt": corpus + "coffee.txt",
		"a/bees.txt":   corpus + "bees-edited.txt",
		".hidden.txt":  corpus + "bread.txt",
		"z.txt":        corpus + "railway.txt",
	})
	r = runFPDB(t, "", "--db", dir, "query", root).mustCode(t, exitOK)
	lines := strings.Split(r.stdout, "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], filepath.Join(root, "a/bees.txt")+"\ttestdata/corpus/bees.txt\t0.") ||
		lines[1] != filepath.Join(root, "b/coffee.txt")+"\ttestdata/corpus/coffee.txt\t1.000\t0\texact" {
		t.Errorf("query of a directory:\n%s", r.stdout)
	}
	one := copyFiles(t, map[string]string{"only.txt": corpus + "coffee.txt"})
	r = runFPDB(t, "", "--db", dir, "query", one).mustCode(t, exitOK)
	if want := filepath.Join(one, "only.txt") + "\ttestdata/corpus/coffee.txt\t1.000\t0\texact\n"; r.stdout != want {
		t.Errorf("query of a directory with one file: %q, want %q", r.stdout, want)
	}
	// --exclude applies to the walk.
	r = runFPDB(t, "", "--db", dir, "query", "--exclude", "coffee.txt", root).mustCode(t, exitOK)
	if strings.Contains(r.stdout, "coffee") || !strings.Contains(r.stdout, "bees") {
		t.Errorf("query --exclude:\n%s", r.stdout)
	}

	// JSON: the usual objects, each naming its input; --explain adds one
	// object per input after its matches.
	r = runFPDB(t, "", "--db", dir, "query", "--json", "--explain", corpus+"coffee.txt", corpus+"railway.txt").mustCode(t, exitOK)
	objs := jsonLines(t, r.stdout)
	if len(objs) != 3 || objs[0]["query"] != corpus+"coffee.txt" || objs[0]["id"] != "testdata/corpus/coffee.txt" ||
		objs[1]["query"] != corpus+"coffee.txt" || objs[1]["explain"] == nil ||
		objs[2]["query"] != corpus+"railway.txt" || objs[2]["explain"] == nil {
		t.Errorf("query --json --explain of 2 inputs:\n%s", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "query", "--explain", corpus+"coffee.txt", corpus+"railway.txt").mustCode(t, exitOK)
	if strings.Count(r.stderr, "input ") != 2 || strings.Count(r.stderr, "plan ") != 2 {
		t.Errorf("query --explain of 2 inputs, stderr:\n%s", r.stderr)
	}

	// One input: today's format, unchanged.
	r = runFPDB(t, "", "--db", dir, "query", corpus+"coffee.txt").mustCode(t, exitOK)
	if r.stdout != "testdata/corpus/coffee.txt  similarity 1.000  hamming 0  contained 1.000  exact\n" {
		t.Errorf("query of one file: %q", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "query", "--json", "--explain", corpus+"coffee.txt").mustCode(t, exitOK)
	if objs := jsonLines(t, r.stdout); len(objs) != 2 || len(objs[1]) != 1 || objs[1]["explain"] == nil {
		t.Errorf("query --json --explain of one file:\n%s", r.stdout)
	}
}

// TestQueryExitStatus: query exits as grep does — 0 when an input has a
// match, 1 when none has — and 3 when an input could not be read or
// fingerprinted (after querying the others), 2 for a database error
// (which wins over 3).
func TestQueryExitStatus(t *testing.T) {
	dir := queryDB(t)
	runFPDB(t, "", "--db", dir, "query", corpus+"railway.txt").mustCode(t, exitNoMatch)
	runFPDB(t, "", "--db", dir, "query", corpus+"railway.txt", corpus+"tides.txt").mustCode(t, exitNoMatch)
	runFPDB(t, "", "--db", dir, "query", corpus+"railway.txt", corpus+"bees.txt").mustCode(t, exitOK)

	// A crawl directory with an image in it: exit 3, the texts queried.
	png := "raw:\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
	crawl := copyFiles(t, map[string]string{
		"a.txt":     corpus + "bees.txt",
		"logo.png":  png,
		"z.txt":     corpus + "bread-edited.txt",
		"blank.txt": "raw: \n\t\n",
	})
	r := runFPDB(t, "", "--db", dir, "query", crawl).mustCode(t, exitInput)
	if strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stdout, "z.txt\ttestdata/corpus/bread.txt\t") {
		t.Errorf("the texts of the directory were not all queried:\n%s", r.stdout)
	}
	for _, want := range []string{"fpdb: query " + filepath.Join(crawl, "logo.png") + ": ", "binary", "fpdb: query " + filepath.Join(crawl, "blank.txt") + ": ", "no words", "2 of 4 inputs failed"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	// Input errors win over "no match", and a missing file is one.
	runFPDB(t, "", "--db", dir, "query", corpus+"railway.txt", corpus+"missing.txt").mustCode(t, exitInput)
	r = runFPDB(t, "", "--db", dir, "query", corpus+"missing.txt").mustCode(t, exitInput)
	if r.stderr != "fpdb: query testdata/corpus/missing.txt: no such file or directory\n" {
		t.Errorf("query of a missing file: %q", r.stderr)
	}
	runFPDB(t, "", "--db", dir, "query", bad+"empty.txt").mustCode(t, exitInput)
	runFPDB(t, "\x00\x01", "--db", dir, "query", "-").mustCode(t, exitInput)
	if os.Getuid() != 0 { // root reads anything
		noread := copyFiles(t, map[string]string{"secret.txt": corpus + "bees.txt"})
		if err := os.Chmod(filepath.Join(noread, "secret.txt"), 0); err != nil {
			t.Fatal(err)
		}
		runFPDB(t, "", "--db", dir, "query", filepath.Join(noread, "secret.txt")).mustCode(t, exitInput)
	}

	// Database and flag errors stay 2, whatever the inputs.
	runFPDB(t, "", "--db", dbDir(t), "query", corpus+"bees.txt").mustCode(t, exitFailure)
	runFPDB(t, "", "--db", dir, "query", "--plan", "probe", "--tau", "0", bad+"empty.txt", corpus+"bees.txt").mustCode(t, exitFailure)
	runFPDB(t, "", "--db", dir, "query", "--limit", "-1", bad+"empty.txt").mustCode(t, exitFailure)
}

// TestQueryPlanFlags: --recall is refused unless --plan approx; --plan
// probe without --tau runs the smallest exact radius; a radius below it is
// refused with a message naming the radii that work.
func TestQueryPlanFlags(t *testing.T) {
	dir := queryDB(t)
	q := corpus + "bees-edited.txt"
	r := runFPDB(t, "", "--db", dir, "query", "--recall", "0.99", q).mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "--recall") || !strings.Contains(r.stderr, "--plan approx") {
		t.Errorf("--recall without --plan approx: %q", r.stderr)
	}
	runFPDB(t, "", "--db", dir, "query", "--plan", "approx", "--recall", "0.99", q).mustCode(t, exitOK)

	d, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	taus := map[string]int{}
	for _, thr := range []string{"0.7", "0.9"} {
		f, _ := strconv.ParseFloat(thr, 64)
		if taus[thr], err = d.ExactTau(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	scan := runFPDB(t, "", "--db", dir, "query", "--plan", "scan", q).mustCode(t, exitOK)
	for thr, tau := range taus {
		r := runFPDB(t, "", "--db", dir, "query", "--threshold", thr, "--plan", "probe", "--explain", q)
		if r.code != exitOK && r.code != exitNoMatch {
			t.Fatalf("--plan probe without --tau at %s: exit %d\n%s", thr, r.code, r.stderr)
		}
		if want := fmt.Sprintf("probe tau=%d\n", tau); !strings.Contains(r.stderr, want) {
			t.Errorf("--plan probe at %s: explain lacks %q:\n%s", thr, want, r.stderr)
		}
		if thr == "0.7" && r.stdout != scan.stdout {
			t.Errorf("--plan probe: %q, the scan %q", r.stdout, scan.stdout)
		}
		if tau == 0 {
			continue
		}
		r = runFPDB(t, "", "--db", dir, "query", "--threshold", thr, "--tau", strconv.Itoa(tau-1), q).mustCode(t, exitFailure)
		if want := fmt.Sprintf("tau %d or more is exact", tau); !strings.Contains(r.stderr, want) {
			t.Errorf("--tau %d at %s: %q lacks %q", tau-1, thr, r.stderr, want)
		}
	}
}

// TestInputErrorClass: which errors are an input's own.
func TestInputErrorClass(t *testing.T) {
	path := "crawl/a.png"
	for _, c := range []struct {
		err   error
		input bool
	}{
		{fmt.Errorf("fpdb: query: %w", db.ErrBinary), true},
		{fmt.Errorf("fpdb: add: %w", db.ErrNoWords), true},
		{fmt.Errorf("fpdb: add: %w", db.ErrInvalidID), true},
		{&fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}, true},
		{&fs.PathError{Op: "open", Path: "db/FPDB.LOCK", Err: fs.ErrPermission}, false},
		{asInputError(errors.New("read -: broken pipe")), true},
		{fmt.Errorf("fpdb: query: %w", db.ErrCorrupt), false},
		{db.ErrLocked, false},
	} {
		if got := isInputError(c.err, path); got != c.input {
			t.Errorf("isInputError(%v) = %v", c.err, got)
		}
	}
	var f inputFailures
	if f.count() != 0 || f.failure(nil).code != exitFailure {
		t.Error("no failures")
	}
	f.note(path, db.ErrBinary)
	if ee := f.failure(errors.New("x")); ee.code != exitInput || ee.err == nil {
		t.Errorf("input failures only: %+v", ee)
	}
	f.note(path, db.ErrCorrupt)
	if f.count() != 2 || f.failure(nil).code != exitFailure {
		t.Errorf("an input and a database failure: %+v", f)
	}
	if failure(asInputError(errors.New("x"))).code != exitInput || failure(errors.New("x")).code != exitFailure {
		t.Error("failure does not map marked input errors to exit status 3")
	}
}

// TestExplainVerified: query --explain reports the db's own counts, once:
// "verified" is the db's QueryStats.Verified for the same query; a probe
// plan verifies at most its candidates, a scan every document.
func TestExplainVerified(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus).mustCode(t, exitDuplicates)
	text, err := os.ReadFile(corpus + "bees.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		plan db.Plan
	}{
		{[]string{"--plan", "probe", "--tau", "2"}, db.Plan{Kind: db.PlanProbe, Tau: 2}},
		{[]string{"--plan", "scan"}, db.Plan{Kind: db.PlanScan}},
	} {
		args := append([]string{"--db", dir, "query", "--explain", "--json"}, c.args...)
		r := runFPDB(t, "", append(args, corpus+"bees.txt")...).mustCode(t, exitOK)
		lines := jsonLines(t, r.stdout)
		ex, ok := lines[len(lines)-1]["explain"].(map[string]any)
		if !ok {
			t.Fatalf("%v: no explain object:\n%s", c.args, r.stdout)
		}
		verified, candidates := int(ex["verified"].(float64)), int(ex["candidates"].(float64))
		d, err := db.Open(dir, &db.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		res, err := d.Query(context.Background(), text, db.QueryOptions{Threshold: 0.7, Plan: c.plan})
		docs := d.Len()
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		if verified != res.Stats.Verified || candidates != res.Stats.Candidates {
			t.Errorf("%v: explain says %d verified of %d candidates, the db %d of %d", c.args, verified, candidates, res.Stats.Verified, res.Stats.Candidates)
		}
		if c.plan.Kind == db.PlanProbe && (verified > candidates || verified == 0) {
			t.Errorf("%v: %d verified of %d candidates", c.args, verified, candidates)
		}
		if c.plan.Kind == db.PlanScan && verified != docs {
			t.Errorf("%v: a scan verified %d of %d documents", c.args, verified, docs)
		}
	}
}
