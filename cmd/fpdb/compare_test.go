package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/report"
)

// comparedJSON runs compare --json and decodes its object.
func comparedJSON(t *testing.T, stdin string, args ...string) api.Comparison {
	t.Helper()
	r := runFPDB(t, stdin, append(args[:len(args):len(args)], "--json")...).mustCode(t, exitOK)
	var j api.Comparison
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatalf("bad JSON %v:\n%s", err, r.stdout)
	}
	return j
}

func TestCompareCommand(t *testing.T) {
	dir := dbDir(t)
	a, b := corpus+"bees.txt", corpus+"bees-edited.txt"
	textA, _ := os.ReadFile(a)
	textB, _ := os.ReadFile(b)

	// Two files, no database: nothing is created.
	files := comparedJSON(t, "", "--db", dir, "compare", a, b)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("compare of two files created the database (stat: %v)", err)
	}
	if len(files.Passages) == 0 || files.Jaccard <= 0 || files.Jaccard >= 1 || files.K != 512 {
		t.Fatalf("comparison %+v", files)
	}
	for _, p := range files.Passages {
		pa, pb := strings.Fields(string(textA[p.A.Start:p.A.End])), strings.Fields(string(textB[p.B.Start:p.B.End]))
		if len(pa) != p.A.Words || strings.Join(pa, " ") != strings.Join(pb, " ") || p.A.Words < 8 {
			t.Fatalf("passage %+v: A %q, B %q", p, pa, pb)
		}
	}

	// The query's similarity is the estimate; a stored id compares through
	// its stored text.
	runFPDB(t, "", "--db", dir, "add", "--id", "stored-bees", a).mustCode(t, exitOK)
	q := jsonLines(t, runFPDB(t, "", "--db", dir, "query", "--json", "--threshold", "0.1", b).mustCode(t, exitOK).stdout)
	stored := comparedJSON(t, "", "--db", dir, "compare", b, "stored-bees")
	if !stored.B.Stored || stored.A.Stored || stored.Estimated != q[0]["similarity"] || stored.Jaccard != files.Jaccard {
		t.Fatalf("stored comparison %+v, query %v, files %+v", stored, q[0], files)
	}
	// Standard input.
	stdin := comparedJSON(t, string(textA), "--db", dir, "compare", "-", b)
	if stdin.Jaccard != files.Jaccard || len(stdin.Passages) != len(files.Passages) {
		t.Fatalf("stdin comparison %+v", stdin)
	}

	// Terminal output and the HTML page.
	html := filepath.Join(t.TempDir(), "c.html")
	r := runFPDB(t, "", "--db", dir, "compare", "--html", html, "--passages", "1", a, "stored-bees").mustCode(t, exitOK)
	for _, want := range []string{"estimated resemblance  1.000", "exact resemblance      1.000", "A found in B           100.0 %", "1 shared passage, longest first", "[1] "} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), "Comparison of "+a+" and stored stored-bees") {
		t.Fatalf("html page (%v):\n%.300s", err, page)
	}
	r = runFPDB(t, "", "--db", dir, "compare", "--html", "-", a, b).mustCode(t, exitOK)
	if !strings.HasPrefix(r.stdout, "<!DOCTYPE html>") {
		t.Fatalf("--html - wrote %.100q", r.stdout)
	}
}

func TestCompareCommandErrors(t *testing.T) {
	dir := dbDir(t)
	a := corpus + "bees.txt"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"compare", a}, exitFailure, "want two documents"},
		{[]string{"compare", "-", "-"}, exitFailure, "given twice"},
		{[]string{"compare", "--min-words", "-1", a, a}, exitFailure, "--min-words"},
		{[]string{"compare", a, "no-such-id"}, exitInput, "no database"},
		{[]string{"compare", a, corpus}, exitInput, "is a directory"},
		{[]string{"compare", a, bad + "binary.bin"}, exitInput, "fpdb: compare " + bad + "binary.bin: "},
		{[]string{"compare", bad + "empty.txt", a}, exitInput, "fpdb: compare " + bad + "empty.txt: "},
	} {
		r := runFPDB(t, "", append([]string{"--db", dir}, tc.args...)...).mustCode(t, tc.code)
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, r.stderr, tc.want)
		}
		noDoubledCompare(t, r.stderr)
	}
	runFPDB(t, "", "--db", dir, "add", "--id", "x", a).mustCode(t, exitOK)
	r := runFPDB(t, "", "--db", dir, "compare", a, "no-such-id").mustCode(t, exitInput)
	if !strings.Contains(r.stderr, "no-such-id: no such file or stored document") {
		t.Errorf("unknown id: %q", r.stderr)
	}
	// Ids no file can have: a path through a file ("bees.txt/chapter-1")
	// and one longer than a file name may be are looked up as ids.
	for _, id := range []string{a + "/chapter-1", strings.Repeat("x", 300)} {
		runFPDB(t, "", "--db", dir, "add", "--id", id, a).mustCode(t, exitDuplicates)
		if r := runFPDB(t, "", "--db", dir, "compare", id, a).mustCode(t, exitOK); !strings.Contains(r.stdout, "stored ") {
			t.Errorf("compare of the stored id %.40q…: %q", id, r.stdout)
		}
	}
	// A database created without texts: ids need files.
	plain := dbDir(t)
	runFPDB(t, "", "--db", plain, "add", "--no-texts", "--id", "x", a).mustCode(t, exitOK)
	r = runFPDB(t, "", "--db", plain, "compare", a, "x").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "give the document's file instead") || !strings.HasPrefix(r.stderr, `fpdb: compare document "x": `) {
		t.Errorf("no texts: %q", r.stderr)
	}
	noDoubledCompare(t, r.stderr)
	runFPDB(t, "", "--db", plain, "compare", a, a).mustCode(t, exitOK)
}

func TestQueryContainment(t *testing.T) {
	dir := dbDir(t)
	full := corpus + "bees.txt"
	text, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	runFPDB(t, "", "--db", dir, "add", full, corpus+"coffee.txt", corpus+"tides.txt").mustCode(t, exitOK)
	// The first half of a stored text: little resemblance, fully contained.
	words := strings.Fields(string(text))
	half := strings.Join(words[:len(words)/2], " ")
	runFPDB(t, half, "--db", dir, "query", "--threshold", "0.7", "-").mustCode(t, exitNoMatch)
	r := runFPDB(t, half, "--db", dir, "query", "--containment", "0.9", "--json", "-").mustCode(t, exitOK)
	ms := jsonLines(t, r.stdout)
	if len(ms) != 1 || ms[0]["id"] != full || ms[0]["query_in_doc"].(float64) < 0.9 || ms[0]["similarity"].(float64) > 0.7 {
		t.Fatalf("containment query: %v", ms)
	}
	if d := ms[0]["doc_in_query"].(float64); d < 0.3 || d > 0.7 {
		t.Fatalf("share of the document in the half: %v", d)
	}
	// With --threshold too, both bounds hold.
	runFPDB(t, half, "--db", dir, "query", "--containment", "0.9", "--threshold", "0.8", "-").mustCode(t, exitNoMatch)
	for _, bad := range [][]string{{"--containment", "0"}, {"--containment", "1.5"}, {"--containment", "0.5", "--plan", "probe"}} {
		runFPDB(t, half, append([]string{"--db", dir, "query"}, append(bad, "-")...)...).mustCode(t, exitFailure)
	}
}

func TestClustersCenters(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus).mustCode(t, exitDuplicates)
	r := runFPDB(t, "", "--db", dir, "clusters", "--threshold", "0.5", "--centers", "--keep", "longest", "--json").mustCode(t, exitOK)
	cs := jsonLines(t, r.stdout)
	if len(cs) == 0 {
		t.Fatal("no clusters")
	}
	for _, c := range cs {
		if c["center"] != c["keep"] || c["cohesion"].(float64) < 0.5 {
			t.Fatalf("center cluster %v", c)
		}
	}
	r = runFPDB(t, "", "--db", dir, "clusters", "--threshold", "0.5", "--centers", "--max-size", "2").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "cluster 1: 2 documents") || !strings.Contains(r.stdout, "  keep ") {
		t.Fatalf("--max-size 2:\n%s", r.stdout)
	}
}

func TestCompareEmptyArgument(t *testing.T) {
	r := runFPDB(t, "", "--db", dbDir(t), "compare", corpus+"bees.txt", "").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "empty argument") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

// TestCompareControlCharacters: a text's escape sequences and bidirectional
// overrides reach no terminal. Its shared passage sets the title (OSC,
// BEL), clears the screen (CSI, 8-bit CSI) and reverses the text shown.
func TestCompareControlCharacters(t *testing.T) {
	const hostile = "alpha bravo charlie delta echo foxtrot \x1b]0;PWNED\x07\x1b[2J \u009b2J golf hotel \u202eindia juliet\u202c " +
		"\u2067kilo\u2069 lima mike november oscar papa"
	unsafe := func(r rune) bool {
		return r != '\n' && unicode.IsControl(r) || 0x202A <= r && r <= 0x202E || 0x2066 <= r && r <= 0x2069
	}
	work := t.TempDir()
	a, b := filepath.Join(work, "e1.txt"), filepath.Join(work, "e3.txt")
	if err := os.WriteFile(a, []byte("Intro one. "+hostile+" end.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("Other start. "+hostile+" fin.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := dbDir(t)
	text := runFPDB(t, "", "--db", dir, "compare", a, b).mustCode(t, exitOK).stdout
	if !strings.Contains(text, "A: alpha bravo") || !strings.Contains(text, "\ufffd]0;PWNED\ufffd\ufffd[2J \ufffd2J") {
		t.Fatalf("output:\n%s", text)
	}
	page := runFPDB(t, "", "--db", dir, "compare", "--html", "-", a, b).mustCode(t, exitOK).stdout
	for name, out := range map[string]string{"text": text, "--html -": page} {
		if i := strings.IndexFunc(out, unsafe); i >= 0 {
			t.Errorf("%s output holds %U: %q", name, []rune(out[i:])[0], out[max(i-60, 0):min(i+60, len(out))])
		}
	}

	// On a terminal: the highlighting's escape sequences, and none of the
	// text's.
	raw, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(raw), "alpha")
	end := strings.Index(string(raw), " end.")
	got := excerpt(report.Excerpts(raw, false, []db.Span{{Start: int64(start), End: int64(end)}}, 160, excerptContext)[0], true)
	rest, ok := strings.CutPrefix(got, "Intro one. \x1b[1;33m")
	if ok {
		rest, ok = strings.CutSuffix(rest, "\x1b[0mend. ")
	}
	if !ok || strings.IndexFunc(rest, unsafe) >= 0 {
		t.Fatalf("terminal excerpt %q", got)
	}
}

// noDoubledCompare fails the test if an error message of compare says
// "compare" twice over ("compare: compare A: …").
func noDoubledCompare(t *testing.T, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "compare: compare") {
		t.Errorf("doubled prefix: %q", stderr)
	}
}

// TestCompareMarkupShowsText: the passages of HTML files are shown as
// their readable text (no tags, character references decoded), locally
// and through a server alike.
func TestCompareMarkupShowsText(t *testing.T) {
	files := t.TempDir()
	shared := "<h1>Rest &amp; Refuel</h1><p>Stations along the coast give walkers water, shade and a bench to rest on, every ten kilometres or so, all summer long.</p>"
	a := writeFile(t, files, "a.html", []byte("<html><body>"+shared+"<p>Our first proposal adds maps.</p></body></html>"))
	b := writeFile(t, files, "b.html", []byte("<html><body><p>Another text entirely about boats.</p>"+shared+"</body></html>"))
	dir := dbDir(t)
	out := runFPDB(t, "", "--db", dir, "compare", a, b).mustCode(t, exitOK).stdout
	url := serveDir(t, dir, nil, nil)
	remote := runFPDB(t, "", "--server", url, "compare", a, b).mustCode(t, exitOK).stdout
	for name, o := range map[string]string{"local": out, "server": remote} {
		var shown []string
		for _, line := range strings.Split(o, "\n") {
			if strings.HasPrefix(line, "    A: ") || strings.HasPrefix(line, "    B: ") {
				shown = append(shown, line)
			}
		}
		if len(shown) == 0 {
			t.Fatalf("%s: no passage:\n%s", name, o)
		}
		for _, line := range shown {
			if strings.ContainsAny(line, "<>") || strings.Contains(line, "&amp;") || !strings.Contains(line, "Rest & Refuel") {
				t.Errorf("%s: passage shown as %q, want its readable text", name, line)
			}
		}
	}
}
