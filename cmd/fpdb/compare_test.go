package main

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"strconv"
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
	// A database named but missing (a mistyped --db) is said on standard
	// error: its templates and parameters are not those compared with.
	if r := runFPDB(t, "", "--db", dir, "compare", a, b).mustCode(t, exitOK); !strings.Contains(r.stderr, "warning: no database at "+dir) {
		t.Errorf("compare with a missing --db: stderr %q, want the warning", r.stderr)
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
	// A file name holding an override is quoted once, on the page as on
	// the terminal.
	spoof := filepath.Join(work, "a\u202eb.txt")
	if err := os.WriteFile(spoof, []byte("Intro one. "+hostile+" end.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	quoted := strconv.Quote(spoof)
	named := runFPDB(t, "", "--db", dir, "compare", spoof, b).mustCode(t, exitOK).stdout
	namedPage := runFPDB(t, "", "--db", dir, "compare", "--html", "-", spoof, b).mustCode(t, exitOK).stdout
	if !strings.Contains(named, quoted) || !strings.Contains(namedPage, html.EscapeString(quoted)) || strings.Contains(namedPage, `\&#34;`) {
		t.Errorf("the name %q is not shown quoted once: terminal %v, page %v", spoof, strings.Contains(named, quoted), strings.Contains(namedPage, html.EscapeString(quoted)))
	}
	for name, out := range map[string]string{"text": text, "--html -": page, "named": named, "named --html -": namedPage} {
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
		// Each side says it was read as markup.
		if n := strings.Count(o, "read as markup (HTML/XML)"); n != 2 {
			t.Errorf("%s: %d sides say they were read as markup, want 2:\n%s", name, n, o)
		}
	}
	// A text file is not.
	if o := runFPDB(t, "", "--db", dbDir(t), "compare", "--format", "text", a, b).mustCode(t, exitOK).stdout; strings.Contains(o, "read as markup") {
		t.Errorf("--format text: %s", o)
	}
}

// nearlyIdentical writes n1.txt, 3000 distinct words, and n2.txt, the same
// and one word more, to a new directory: 2997 of their 2998 shingles are
// shared, a resemblance of 0.99967 that 3 decimals round to 1.000.
func nearlyIdentical(t *testing.T) (n1, n2 string) {
	t.Helper()
	dir := t.TempDir()
	words := make([]string, 3000)
	for i := range words {
		words[i] = "w" + string(rune('a'+i/26/26%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i%26)) + "x"
	}
	text := strings.Join(words, " ")
	n1, n2 = filepath.Join(dir, "n1.txt"), filepath.Join(dir, "n2.txt")
	if err := os.WriteFile(n1, []byte(text+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n2, []byte(text+" added\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	return n1, n2
}

// figureLines returns the figures of compare's terminal output: each
// label's value, white space runs made one space.
func figureLines(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		for _, label := range []string{"estimated resemblance", "exact resemblance", "A found in B", "B found in A"} {
			if rest, ok := strings.CutPrefix(line, label+" "); ok {
				m[label] = strings.Join(strings.Fields(rest), " ")
			}
		}
	}
	return m
}

// TestCompareNeverRoundsToOne: two texts that differ by one word are not
// shown identical, on the terminal, on the --html page or in the report;
// exactly 1 stays 1.000 and 100.0 %; JSON keeps the numbers.
func TestCompareNeverRoundsToOne(t *testing.T) {
	n1, n2 := nearlyIdentical(t)
	dir := dbDir(t)
	j := comparedJSON(t, "", "--db", dir, "compare", n1, n2)
	if j.Shared != 2997 || j.Jaccard != 2997.0/2998 || j.ContainedA != 1 || j.ContainedB != 2997.0/2998 {
		t.Fatalf("comparison %+v", j)
	}
	r := runFPDB(t, "", "--db", dir, "compare", n1, n2).mustCode(t, exitOK)
	got := figureLines(r.stdout)
	for label, want := range map[string]string{
		"exact resemblance": "0.9997 (Jaccard: 2997 of 2998 shingles shared)",
		"A found in B":      "100.0 %",
		"B found in A":      "99.97 %",
	} {
		if got[label] != want {
			t.Errorf("%s: %q, want %q\n%s", label, got[label], want, r.stdout)
		}
	}
	if est := strings.Fields(got["estimated resemblance"]); len(est) == 0 || (est[0] == "1.000") != (j.Hamming == 0) {
		t.Errorf("estimated resemblance %q with Hamming %d", got["estimated resemblance"], j.Hamming)
	}

	html := filepath.Join(t.TempDir(), "c.html")
	runFPDB(t, "", "--db", dir, "compare", "--html", html, n1, n2).mustCode(t, exitOK)
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	page := parsePage(t, string(b))
	for id, want := range map[string]string{"jaccard": "0.9997", "contained-a": "100.0 %", "contained-b": "99.97 %"} {
		if got := page.text(id); got != want {
			t.Errorf("--html: #%s shows %q, want %q", id, got, want)
		}
	}

	runFPDB(t, "", "--db", dir, "add", n1).mustCode(t, exitOK)
	runFPDB(t, "", "--db", dir, "add", n2).mustCode(t, exitDuplicates)
	out := filepath.Join(t.TempDir(), "r.html")
	runFPDB(t, "", "--db", dir, "report", "--threshold", "0.9", "--out", out).mustCode(t, exitOK)
	if b, err = os.ReadFile(out); err != nil {
		t.Fatal(err)
	}
	page = parsePage(t, string(b))
	id := "c1-p1-"
	if page.text(id+"jaccard") != "0.9997" || page.text(id+"contained-a")+page.text(id+"contained-b") != "100.0 %99.97 %" &&
		page.text(id+"contained-a")+page.text(id+"contained-b") != "99.97 %100.0 %" {
		t.Errorf("report: exact %q, A in B %q, B in A %q", page.text(id+"jaccard"), page.text(id+"contained-a"), page.text(id+"contained-b"))
	}

	// Identical texts: exactly 1.
	r = runFPDB(t, "", "--db", dir, "compare", n1, n1).mustCode(t, exitOK)
	got = figureLines(r.stdout)
	if !strings.HasPrefix(got["exact resemblance"], "1.000 ") || got["A found in B"] != "100.0 %" || got["B found in A"] != "100.0 %" {
		t.Errorf("identical texts: %q", got)
	}
}

// TestCompareHTMLNotAnInput: --html FILE naming A or B, by its path or
// through a link, or lying in the database, is refused before anything is
// read or written; an id that names no file is no input file.
func TestCompareHTMLNotAnInput(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "gg1.txt"), filepath.Join(tmp, "g2.txt")
	for _, f := range []string{a, b} {
		text, err := os.ReadFile(corpus + "bees.txt")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, append(text, f...), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	symlink, hardlink := filepath.Join(tmp, "link.html"), filepath.Join(tmp, "hard.html")
	if err := os.Symlink(a, symlink); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(tmp, "x"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(b, hardlink); err != nil {
		t.Fatal(err)
	}
	textA, _ := os.ReadFile(a)
	textB, _ := os.ReadFile(b)
	dir := dbDir(t)
	for _, tc := range []struct {
		html, want string
		args       []string
	}{
		{a, a + " is the same file as A (" + a + ")", []string{a, b}},
		{b, b + " is the same file as B (" + b + ")", []string{a, b}},
		{tmp + "/./x/../gg1.txt", tmp + "/./x/../gg1.txt is the same file as B (" + a + ")", []string{b, a}},
		{symlink, symlink + " is the same file as A (" + a + ")", []string{a, b}},
		{hardlink, hardlink + " is the same file as B (" + b + ")", []string{a, b}},
		{hardlink, hardlink + " is the same file as B (" + b + ")", []string{"-", b}},
	} {
		args := append([]string{"--db", dir, "compare", "--html", tc.html}, tc.args...)
		r := runFPDB(t, string(textA), args...).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, "fpdb: --html "+tc.want) || !strings.Contains(r.stderr, "--help") {
			t.Errorf("%q: stderr %q lacks %q", args, r.stderr, tc.want)
		}
		if r.stdout != "" {
			t.Errorf("%q: wrote %q", args, r.stdout)
		}
		if ga, _ := os.ReadFile(a); string(ga) != string(textA) {
			t.Fatalf("%q: A was overwritten", args)
		}
		if gb, _ := os.ReadFile(b); string(gb) != string(textB) {
			t.Fatalf("%q: B was overwritten", args)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused compare made the database (%v)", err)
	}

	// A stored id is no file: --html may have its name (an existing file
	// of that name would be the input: refused above).
	runFPDB(t, "", "--db", dir, "add", a).mustCode(t, exitOK)
	id := filepath.Join(tmp, "page.html")
	runFPDB(t, "", "--db", dir, "add", "--id", id, b).mustCode(t, exitDuplicates)
	runFPDB(t, "", "--db", dir, "compare", "--html", id, a, id).mustCode(t, exitOK)
	if page, err := os.ReadFile(id); err != nil || !strings.HasPrefix(string(page), "<!DOCTYPE html>") {
		t.Fatalf("--html named as a stored id: %v %.40q", err, page)
	}
	// Not in the database, even through a link to it.
	dblink := filepath.Join(tmp, "dblink")
	if err := os.Symlink(dir, dblink); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{filepath.Join(dir, "page.html"), filepath.Join(dblink, "page.html"), dir} {
		r := runFPDB(t, "", "--db", dir, "compare", "--html", out, a, b).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, "--html "+out+" is inside the database "+dir) {
			t.Errorf("--html %s: %q", out, r.stderr)
		}
		if _, err := os.Lstat(filepath.Join(dir, "page.html")); !os.IsNotExist(err) {
			t.Fatalf("--html %s wrote in the database (%v)", out, err)
		}
	}
	runFPDB(t, "", "--db", dir, "check").mustCode(t, exitOK)
}

// TestCompareRemotePassageLimit: through a server, texts sharing more
// passages than it answers with are compared with a warning that says so;
// locally every passage is printed.
func TestCompareRemotePassageLimit(t *testing.T) {
	files := t.TempDir()
	same := writeFile(t, files, "same.txt", []byte(strings.Repeat("same ", 3000)))
	dir := dbDir(t)
	url := serveDir(t, dir, nil, nil)
	r := runFPDB(t, "", "--server", url, "compare", "--json", "--min-words", "0", same, same).mustCode(t, exitOK)
	var c api.Comparison
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Passages) != api.MaxComparePassages || !strings.Contains(r.stderr, "warning: the server answers with the longest 1000 passages; the texts share more") {
		t.Errorf("through the server: %d passages, stderr %q", len(c.Passages), r.stderr)
	}
	local := runFPDB(t, "", "compare", "--json", "--min-words", "0", same, same).mustCode(t, exitOK)
	if err := json.Unmarshal([]byte(local.stdout), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Passages) <= api.MaxComparePassages || strings.Contains(local.stderr, "server") {
		t.Errorf("locally: %d passages, stderr %q", len(c.Passages), local.stderr)
	}
}
