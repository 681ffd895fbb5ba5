package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/bitvec"
)

// tuneJSON runs fpdb tune --json with args and decodes its object into v.
func tuneJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	r := runFPDB(t, "", append([]string{"tune", "--json"}, args...)...).mustCode(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("tune %v: %v\n%s", args, err, r.stdout)
	}
}

// TestTuneCurve: the curve's figures are db.DetectionCurve's, the caught
// resemblances rise with the probability, and --plot writes an SVG with the
// threshold marked.
func TestTuneCurve(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "curve.svg")
	var rep jsonCurve
	tuneJSON(t, &rep, "--db", filepath.Join(t.TempDir(), "none"), "--k", "512", "--threshold", "0.7", "--plot", svg)
	c, err := db.DetectionCurve(512, 0.7)
	if err != nil {
		t.Fatal(err)
	}
	if rep.K != 512 || rep.Radius != 76 || rep.Radius != c.Radius || len(rep.Caught) != 4 || len(rep.Below) != 2 || len(rep.Curve) != 101 {
		t.Fatalf("report %+v", rep)
	}
	for i, x := range rep.Caught {
		if got := c.Probability(x.Resemblance); got < x.Probability {
			t.Errorf("caught %+v: probability there %v", x, got)
		}
		if i > 0 && x.Resemblance <= rep.Caught[i-1].Resemblance {
			t.Errorf("caught resemblances do not rise: %+v", rep.Caught)
		}
	}
	if rep.Below[0].Resemblance != 0.6 || rep.Below[0].Probability != c.Probability(0.6) || rep.Below[1].Resemblance != 0.5 {
		t.Errorf("below: %+v", rep.Below)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, b, "threshold 0.7", "K = 512 bits")
	// Text: the figures and a plot with the legend.
	r := runFPDB(t, "", "--db", filepath.Join(t.TempDir(), "none"), "tune", "--k", "256").mustCode(t, exitOK)
	for _, want := range []string{"threshold 0.7 at K = 256 bits", "99.9 %", "reported with probability", "| threshold 0.7"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tune --k 256 lacks %q:\n%s", want, r.stdout)
		}
	}
}

// checkSVG checks that b is well-formed XML holding each of texts.
func checkSVG(t *testing.T, b []byte, texts ...string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(string(b)))
	var chars strings.Builder
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		if cd, ok := tok.(xml.CharData); ok {
			chars.Write(cd)
		}
	}
	for _, s := range texts {
		if !strings.Contains(chars.String(), s) {
			t.Errorf("SVG lacks %q", s)
		}
	}
}

// TestTuneCatch: the recommended threshold meets the goal and the next
// higher one does not; on a database the query plan and measured times
// are reported.
func TestTuneCatch(t *testing.T) {
	var rep jsonCatch
	tuneJSON(t, &rep, "--db", filepath.Join(t.TempDir(), "none"), "--k", "512", "--catch", "0.8", "--with", "0.99")
	c, _ := db.DetectionCurve(512, rep.Threshold)
	if rep.Threshold != 0.734 || c.Radius != rep.Radius || c.Probability(0.8) < 0.99 || rep.Probability != c.Probability(0.8) {
		t.Errorf("catch 0.8 with 0.99: %+v", rep)
	}
	tighter := db.Curve{K: 512, Radius: rep.Radius - 1}
	if tighter.Probability(0.8) >= 0.99 {
		t.Errorf("radius %d also meets the goal", rep.Radius-1)
	}
	if rep.Query != nil || rep.Below[0].Resemblance != 0.7 {
		t.Errorf("without a database: %+v", rep)
	}
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus).mustCode(t, exitDuplicates)
	tuneJSON(t, &rep, "--db", dir, "--catch", "0.9")
	if q := rep.Query; q == nil || q.Docs != 12 || q.Plan == "" || q.MeasuredOnDocs != 12 || q.MeasuredP50MS <= 0 || q.MeasuredMaxMS < q.MeasuredP50MS {
		t.Errorf("query cost on a database: %+v", rep.Query)
	}
	r := runFPDB(t, "", "--db", dir, "tune", "--catch", "0.9").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "--threshold ") || !strings.Contains(r.stdout, "12 documents") {
		t.Errorf("tune --catch text:\n%s", r.stdout)
	}
	// An unreachable goal is an error that says so.
	r = runFPDB(t, "", "--db", dir, "tune", "--k", "64", "--catch", "0.05", "--with", "0.999").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "no positive threshold") {
		t.Errorf("unreachable goal: %s", r.stderr)
	}
}

// TestTunePairs: labelled pairs of stored ids and of files, in TSV (with a
// header) and JSON lines, are scored; every count agrees with the Hamming
// distances fpdb query reports; errors name the file and line.
func TestTunePairs(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt", corpus+"bread.txt", corpus+"chess.txt", corpus+"coffee.txt", corpus+"volcano.txt").mustCode(t, exitOK)
	tmp := t.TempDir()
	write := func(name, text string) string { return writeFile(t, tmp, name, []byte(text)) }
	id := func(s string) string { return "testdata/corpus/" + s + ".txt" }
	lines := []struct {
		a, b string
		dup  bool
	}{
		{id("bees"), corpus + "bees-edited.txt", true}, // a file not stored
		{id("bread"), corpus + "bread-edited.txt", true},
		{id("chess"), corpus + "chess-revised.txt", true},
		{id("volcano"), corpus + "volcano-copy.txt", true},
		{id("bees"), id("coffee"), false},
		{id("bread"), id("chess"), false},
		{id("coffee"), corpus + "tides.txt", false},
	}
	var tsv, jsonl strings.Builder
	tsv.WriteString("a\tb\tlabel\n")
	for _, l := range lines {
		label := map[bool]string{true: "dup", false: "not"}[l.dup]
		tsv.WriteString(l.a + "\t" + l.b + "\t" + label + "\n")
		js, _ := json.Marshal(map[string]any{"a": l.a, "b": l.b, "label": label})
		jsonl.Write(append(js, '\n'))
	}
	// The Hamming distance of each pair, from the db package: a stored
	// document's fingerprint, or a file's.
	dist := make([]int, len(lines))
	d, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	fp := func(ref string) []uint64 {
		if doc, err := d.Get(context.Background(), ref); err == nil {
			return doc.Fingerprint
		}
		f, err := os.Open(ref)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		v, err := d.Fingerprint(context.Background(), f, db.TextOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for i, l := range lines {
		dist[i] = bitvec.Hamming(fp(l.a), fp(l.b))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{write("pairs.tsv", tsv.String()), write("pairs.jsonl", jsonl.String())} {
		var rep jsonPairsReport
		tuneJSON(t, &rep, "--db", dir, "--pairs", file)
		if rep.Pairs != len(lines) || rep.Duplicates != 4 || len(rep.Scores) != 256 {
			t.Fatalf("%s: %d pairs, %d duplicates, %d scores", file, rep.Pairs, rep.Duplicates, len(rep.Scores))
		}
		for _, s := range rep.Scores {
			var tp, fp int
			for i, l := range lines {
				if dist[i] <= s.Radius {
					if l.dup {
						tp++
					} else {
						fp++
					}
				}
			}
			if s.TP != tp || s.FP != fp || s.FN != 4-tp || s.TN != 3-fp {
				t.Fatalf("%s: threshold %v: %+v, want tp %d fp %d", file, s.Threshold, s, tp, fp)
			}
			if math.IsNaN(s.F1) || s.F1 > rep.Best.F1 {
				t.Errorf("%s: threshold %v has F1 %v above the best %v", file, s.Threshold, s.F1, rep.Best.F1)
			}
		}
		// The best sits in the run of thresholds that count the pairs
		// as it does, two standard deviations of the distance below the
		// run's top (at K 512), or at the run's end.
		top, last := -1, -1
		for i, s := range rep.Scores {
			same := s.TP == rep.Best.TP && s.FP == rep.Best.FP
			if same && top < 0 {
				top = i
			}
			if same {
				last = i
			} else if top >= 0 {
				break
			}
		}
		if top < 0 || rep.SameCounts != [2]float64{rep.Scores[top].Threshold, rep.Scores[last].Threshold} {
			t.Fatalf("%s: same counts %v, want the thresholds of scores %d to %d", file, rep.SameCounts, top, last)
		}
		p := float64(max(rep.Scores[top].Radius, 1)) / 512
		want := min(rep.Scores[last].Radius, rep.Scores[top].Radius+int(math.Ceil(2*math.Sqrt(512*p*(1-p)))))
		if rep.Best.Radius != want || rep.Best.Radius == rep.Scores[top].Radius {
			t.Errorf("%s: best radius %d, want %d (the run of its counts is radii %d to %d)", file, rep.Best.Radius, want, rep.Scores[top].Radius, rep.Scores[last].Radius)
		}
	}
	r := runFPDB(t, "", "--db", dir, "tune", "--pairs", filepath.Join(tmp, "pairs.tsv")).mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "The same counts hold from --threshold ") || !strings.Contains(r.stdout, "two standard deviations of the estimate below") {
		t.Errorf("tune --pairs text does not explain the margin:\n%s", r.stdout)
	}
	// Text with --min-recall, and a plot.
	svg := filepath.Join(tmp, "pr.svg")
	r = runFPDB(t, "", "--db", dir, "tune", "--pairs", filepath.Join(tmp, "pairs.tsv"), "--min-recall", "1", "--plot", svg).mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "7 pairs labelled") || !strings.Contains(r.stdout, "Recommended: --threshold ") || !strings.Contains(r.stdout, "recall ≥ 1") {
		t.Errorf("tune --pairs text:\n%s", r.stdout)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, b, "precision", "recall", "recommended")

	// Errors name the input and the line.
	for _, c := range []struct{ text, want string }{
		{id("bees") + "\t" + id("coffee") + "\tmaybe\n", "bad.tsv:1: label \"maybe\""},
		{"a\tb\tlabel\n" + id("bees") + "\tnowhere.txt\tdup\n", "bad.tsv:2: \"nowhere.txt\" is neither a stored id nor a readable file"},
		{id("bees") + "\n", "bad.tsv:1: want A<TAB>B<TAB>LABEL"},
		{"{\"a\": \"x\"}\n", "bad.tsv:1: a JSON pair needs"},
		{"\n", "bad.tsv: no labelled pairs"},
	} {
		r := runFPDB(t, "", "--db", dir, "tune", "--pairs", write("bad.tsv", c.text)).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: stderr %q, want %q", c.text, r.stderr, c.want)
		}
	}
	// Standard input.
	r = runFPDB(t, tsv.String(), "--db", dir, "tune", "--pairs", "-").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "labelled in standard input") {
		t.Errorf("--pairs -:\n%s", r.stdout)
	}
}

// TestTuneFlags: combinations that would be ignored are refused, and so is
// a missing database without --k.
func TestTuneFlags(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--with", "0.9"}, "--with goes with --catch"},
		{[]string{"--min-recall", "0.9"}, "go with --pairs"},
		{[]string{"--catch", "0.8", "--threshold", "0.7"}, "give only one of --threshold, --catch and --pairs"},
		{[]string{"--k", "100"}, `invalid value "100" for --k`},
		{[]string{"--catch", "1.5", "--k", "64"}, `invalid value "1.5" for --catch`},
		{[]string{"--catch", "0.8", "--with", "1", "--k", "64"}, `invalid value "1" for --with`},
		{[]string{"--threshold", "0"}, `invalid value "0" for --threshold`},
		{[]string{"--pairs", "x", "--k", "64"}, "--k does not apply"},
		{[]string{"extra"}, "takes no arguments"},
		{[]string{}, "give --k K to tune without a database"},
	} {
		r := runFPDB(t, "", append([]string{"--db", none, "tune"}, c.args...)...).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("tune %v: stderr %q, want %q", c.args, r.stderr, c.want)
		}
	}
	if _, err := os.Stat(none); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tune created the database directory: %v", err)
	}
	// No database named and none in ./fpdb-data: the default K; and
	// $FPDB_SERVER does not stop tune --k (it needs no database).
	t.Chdir(t.TempDir())
	t.Setenv(envDB, "")
	os.Unsetenv(envDB)
	if r := runFPDB(t, "", "tune", "--threshold", "0.8").mustCode(t, exitOK); !strings.HasPrefix(r.stdout, "threshold 0.8 at K = 512 bits") {
		t.Errorf("tune without a database: %q", r.stdout)
	}
	if _, err := os.Stat(defaultDBDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tune created %s: %v", defaultDBDir, err)
	}
	t.Setenv(envServer, "http://127.0.0.1:9")
	runFPDB(t, "", "tune", "--k", "256", "--threshold", "0.8").mustCode(t, exitOK)
	runFPDB(t, "", "tune", "--threshold", "0.8").mustCode(t, exitFailure) // K from a database: not through a server
}

// TestTunePlotOutput: --plot replaces FILE whole and leaves the user's
// FILE.tmp alone; a directory is refused, named.
func TestTunePlotOutput(t *testing.T) {
	tmp := t.TempDir()
	svg := filepath.Join(tmp, "curve.svg")
	mine := []byte("the user's own file\n")
	writeFile(t, tmp, "curve.svg.tmp", mine)
	none := filepath.Join(tmp, "none")
	runFPDB(t, "", "--db", none, "tune", "--k", "512", "--threshold", "0.8", "--plot", svg).mustCode(t, exitOK)
	if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("--plot %s: %v, %.40q", svg, err, b)
	}
	if b, err := os.ReadFile(svg + ".tmp"); err != nil || !bytes.Equal(b, mine) {
		t.Errorf("%s.tmp: %v, %q: want it as it was", svg, err, b)
	}
	r := runFPDB(t, "", "--db", none, "tune", "--k", "512", "--threshold", "0.8", "--plot", tmp).mustCode(t, exitFailure)
	if want := "--plot: open " + tmp + ": is a directory"; !strings.Contains(r.stderr, want) {
		t.Errorf("--plot of a directory: stderr %q, want %q", r.stderr, want)
	}
}

// TestTuneOneSidedLabels: labelled pairs with no duplicate are refused
// whatever the goal (no "--threshold 1 … F1 0.000" recommendation), and
// with no non-duplicate --min-precision is refused while best F1 and
// --min-recall still recommend.
func TestTuneOneSidedLabels(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt", corpus+"bread.txt", corpus+"chess.txt", corpus+"coffee.txt").mustCode(t, exitOK)
	tmp := t.TempDir()
	id := func(s string) string { return "testdata/corpus/" + s + ".txt" }
	nots := writeFile(t, tmp, "nots.tsv", []byte(id("bees")+"\t"+id("coffee")+"\tnot\n"+id("bread")+"\t"+id("chess")+"\tnot\n"))
	dups := writeFile(t, tmp, "dups.tsv", []byte(id("bees")+"\t"+corpus+"bees-edited.txt\tdup\n"+id("bread")+"\t"+corpus+"bread-edited.txt\tdup\n"))
	for _, goal := range [][]string{nil, {"--min-recall", "0.9"}, {"--min-precision", "0.9"}} {
		r := runFPDB(t, "", append([]string{"--db", dir, "tune", "--pairs", nots}, goal...)...).mustCode(t, exitFailure)
		if want := "nots.tsv: invalid options: no pair is labelled a duplicate (all 2 are labelled not)"; !strings.Contains(r.stderr, want) || r.stdout != "" {
			t.Errorf("no duplicates %v: stdout %q, stderr %q; want %q", goal, r.stdout, r.stderr, want)
		}
	}
	r := runFPDB(t, "", "--db", dir, "tune", "--pairs", dups, "--min-precision", "0.9").mustCode(t, exitFailure)
	if want := "dups.tsv: invalid options: no pair is labelled not a duplicate (all 2 are labelled dup)"; !strings.Contains(r.stderr, want) {
		t.Errorf("no non-duplicates, --min-precision: stderr %q, want %q", r.stderr, want)
	}
	for _, goal := range [][]string{nil, {"--min-recall", "1"}} {
		r := runFPDB(t, "", append([]string{"--db", dir, "tune", "--pairs", dups}, goal...)...).mustCode(t, exitOK)
		if !strings.Contains(r.stdout, "Recommended: --threshold ") || !strings.Contains(r.stdout, "recall 1.000") {
			t.Errorf("no non-duplicates %v:\n%s", goal, r.stdout)
		}
	}
}
