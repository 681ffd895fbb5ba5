package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// pageNode is a parsed HTML page and its elements by id.
type pageNode struct {
	root *html.Node
	ids  map[string]*html.Node
}

func parsePage(t *testing.T, page string) *pageNode {
	t.Helper()
	root, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	p := &pageNode{root: root, ids: map[string]*html.Node{}}
	for _, n := range elements(root, func(*html.Node) bool { return true }) {
		if id := htmlAttr(n, "id"); id != "" {
			if p.ids[id] != nil {
				t.Fatalf("two elements with id %q", id)
			}
			p.ids[id] = n
		}
	}
	return p
}

// text returns the text of the element with id, white space runs made one
// space ("" when there is none).
func (p *pageNode) text(id string) string {
	if n := p.ids[id]; n != nil {
		return strings.Join(strings.Fields(nodeText(n)), " ")
	}
	return ""
}

func elements(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if n.Type == html.ElementNode && match(n) {
		out = append(out, n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, elements(c, match)...)
	}
	return out
}

func htmlAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func nodeText(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(nodeText(c))
	}
	return b.String()
}

func tagged(n *html.Node, tag string) []*html.Node {
	return elements(n, func(m *html.Node) bool { return m.Data == tag })
}

// reportCorpus builds a database of the test corpus and a third version of
// bees.txt (a cluster of three), and returns its directory.
func reportCorpus(t *testing.T, flags ...string) string {
	t.Helper()
	dir := dbDir(t)
	runFPDB(t, "", append(append([]string{"--db", dir, "add"}, flags...), corpus)...).mustCode(t, exitDuplicates)
	bees, err := os.ReadFile(corpus + "bees.txt")
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(string(bees))
	third := strings.Join(words[:len(words)*9/10], " ") + " The last part of this version was written anew by another applicant entirely."
	runFPDB(t, third, append(append([]string{"--db", dir, "add"}, flags...), "--id", "bees <third>", "-")...).mustCode(t, exitDuplicates)
	return dir
}

// pairKey names a pair whatever its order.
func pairKey(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return a + "\x00" + b
}

func TestReportCommand(t *testing.T) {
	dir := reportCorpus(t)
	const threshold = "0.6"
	sims := map[string]float64{}
	for _, p := range jsonLines(t, runFPDB(t, "", "--db", dir, "pairs", "--threshold", threshold, "--json").mustCode(t, exitOK).stdout) {
		sims[pairKey(p["a"].(string), p["b"].(string))] = p["similarity"].(float64)
	}
	clusters := jsonLines(t, runFPDB(t, "", "--db", dir, "clusters", "--threshold", threshold, "--json").mustCode(t, exitOK).stdout)
	if len(clusters) != 4 || clusters[0]["size"].(float64) != 3 || clusters[0]["pairs"].(float64) != 3 {
		t.Fatalf("clusters of the corpus: %v", clusters)
	}

	out := filepath.Join(t.TempDir(), "r.html")
	r := runFPDB(t, "", "--db", dir, "report", "--threshold", threshold, "--out", out, "--max-pairs", "2", "--passages", "2").mustCode(t, exitOK)
	if r.stdout != "" || r.stderr != "" {
		t.Fatalf("report wrote %q and %q", r.stdout, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := parsePage(t, string(b))
	for id, want := range map[string]string{
		"database": dir, "threshold": threshold, "documents": "13", "clusters-shown": "4",
		"shown-counts": "(9 documents, 6 pairs)", "params": "k = 512 bits, shingles of 4 words",
		"limits": "at most 50 clusters; at most 2 pairs per cluster; at most 2 passages per pair; passages of at least 8 words",
	} {
		if got := page.text(id); got != want {
			t.Errorf("#%s: %q, want %q", id, got, want)
		}
	}
	rows := tagged(page.ids["summary"], "tr")[1:]
	if len(rows) != len(clusters) {
		t.Fatalf("%d summary rows for %d clusters", len(rows), len(clusters))
	}
	for i, c := range clusters {
		n := i + 1
		var cells []string
		for _, td := range tagged(rows[i], "td") {
			cells = append(cells, nodeText(td))
		}
		size, pairs := int(c["size"].(float64)), int(c["pairs"].(float64))
		want := []string{strconv.Itoa(n), strconv.Itoa(size), strconv.Itoa(pairs), c["center"].(string), fmt.Sprintf("%.3f", c["cohesion"].(float64))}
		if !slices.Equal(cells, want) {
			t.Errorf("summary row %d: %q, want %q", n, cells, want)
		}
		// The members, the center first; a picture of every two.
		var members []string
		for _, li := range tagged(page.ids[fmt.Sprintf("members-%d", n)], "li") {
			members = append(members, nodeText(li))
		}
		ids := c["ids"].([]any)
		if len(members) != len(ids) || members[0] != c["center"] {
			t.Errorf("cluster %d members %q, ids %v", n, members, ids)
		}
		for _, id := range ids {
			if !slices.Contains(members, id.(string)) {
				t.Errorf("cluster %d lacks %s", n, id)
			}
		}
		svg := page.ids[fmt.Sprintf("matrix-%d", n)]
		if svg == nil || len(tagged(svg, "rect")) != size*size {
			t.Errorf("cluster %d: no picture of %d cells", n, size*size)
		}
		// Its pairs: the most similar two, each with the figures compare
		// gives and at most two passages.
		shown := min(pairs, 2)
		if got := page.text(fmt.Sprintf("c%d-pairs-omitted", n)); (pairs > 2) != (got != "") {
			t.Errorf("cluster %d: pairs left out note %q", n, got)
		}
		prev := 2.0
		for m := 1; m <= shown+1; m++ {
			id := fmt.Sprintf("c%d-p%d", n, m)
			d := page.ids[id]
			if m > shown {
				if d != nil {
					t.Errorf("pair %s shown beyond the limit", id)
				}
				break
			}
			if d == nil {
				t.Fatalf("no pair %s", id)
			}
			names := elements(tagged(d, "summary")[0], func(e *html.Node) bool { return htmlAttr(e, "class") == "id" })
			a, b := nodeText(names[0]), nodeText(names[1])
			sim, ok := sims[pairKey(a, b)]
			if !ok || sim > prev {
				t.Fatalf("pair %s: %s and %s (%v) not a pair in order", id, a, b, sim)
			}
			prev = sim
			if got := page.text(id + "-similarity"); got != fmt.Sprintf("%.3f", sim) {
				t.Errorf("pair %s similarity %q, want %.3f", id, got, sim)
			}
			cmp := comparedJSON(t, "", "--db", dir, "compare", a, b)
			for suffix, want := range map[string]string{
				"-estimated": fmt.Sprintf("%.3f", cmp.Estimated), "-jaccard": fmt.Sprintf("%.3f", cmp.Jaccard),
				"-contained-a": fmt.Sprintf("%.1f %%", 100*cmp.ContainedA), "-contained-b": fmt.Sprintf("%.1f %%", 100*cmp.ContainedB),
			} {
				if got := page.text(id + suffix); got != want {
					t.Errorf("%s%s: %q, want %q", id, suffix, got, want)
				}
			}
			passages := tagged(page.ids[id+"-passages"], "tr")
			if len(passages) != 1+min(len(cmp.Passages), 2) || len(cmp.Passages) == 0 {
				t.Errorf("pair %s: %d passage rows for %d passages", id, len(passages), len(cmp.Passages))
			}
			if omitted := page.text(id + "-passages-omitted"); (len(cmp.Passages) > 2) != (omitted != "") {
				t.Errorf("pair %s: %d passages, note %q", id, len(cmp.Passages), omitted)
			}
		}
	}

	// Fewer clusters: the page says what it left out; standard output.
	r = runFPDB(t, "", "--db", dir, "report", "--threshold", threshold, "--max-clusters", "1").mustCode(t, exitOK)
	page = parsePage(t, r.stdout)
	if got, want := page.text("omitted-clusters"), "Left out: 3 smaller clusters (6 documents, 3 pairs) beyond the limit of 1 clusters."; got != want {
		t.Errorf("left out: %q, want %q", got, want)
	}
	if page.ids["cluster-2"] != nil || page.text("clusters-shown") != "1 of 4" {
		t.Errorf("--max-clusters 1 shows %q", page.text("clusters-shown"))
	}
	// At 1, the exact copy alone.
	r = runFPDB(t, "", "--db", dir, "report", "--threshold", "1", "--centers").mustCode(t, exitOK)
	page = parsePage(t, r.stdout)
	if got := page.text("c1-p1"); page.text("clusters-shown") != "1" || !strings.Contains(got, "volcano") || !strings.Contains(got, "identical text") {
		t.Errorf("at 1: %q", got)
	}
}

func TestReportCommandNoTexts(t *testing.T) {
	dir := reportCorpus(t, "--no-texts")
	r := runFPDB(t, "", "--db", dir, "report", "--threshold", "0.6", "--centers", "--keep", "longest").mustCode(t, exitOK)
	page := parsePage(t, r.stdout)
	if got := page.text("mode"); !strings.Contains(got, "--centers") || !strings.Contains(got, "longest") {
		t.Errorf("mode %q", got)
	}
	notes := 0
	for id := range page.ids {
		if strings.HasSuffix(id, "-notext") {
			notes++
			if !strings.Contains(page.text(id), "the database keeps no texts") {
				t.Errorf("%s: %q", id, page.text(id))
			}
			pair := strings.TrimSuffix(id, "-notext")
			if a := page.text(pair + "-contained-a"); !strings.HasSuffix(a, " %") {
				t.Errorf("%s: no estimated containment (%q)", pair, a)
			}
		}
	}
	if want := len(elements(page.root, func(n *html.Node) bool { return n.Data == "details" })); notes != want || notes < 4 {
		t.Errorf("%d pairs say the texts are missing, of %d", notes, want)
	}
}

func TestReportCommandErrors(t *testing.T) {
	dir := reportCorpus(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, `"threshold" not set`},
		{[]string{"report", "--threshold", "0"}, "--threshold"},
		{[]string{"report", "--threshold", "0.8", "--max-pairs", "-1"}, "invalid --max-pairs -1"},
		{[]string{"report", "--threshold", "0.8", "--passages", "-2"}, "invalid --passages -2"},
		{[]string{"report", "--threshold", "0.8", "--max-size", "3"}, "--max-size needs --centers"},
		{[]string{"report", "--threshold", "0.8", "--keep", "best"}, `invalid --keep "best"`},
		{[]string{"report", "--threshold", "0.8", "--out", ""}, "--out is empty"},
		{[]string{"report", "--threshold", "0.8", "--out", filepath.Join(t.TempDir(), "no", "such", "dir.html")}, "report: --out:"},
		{[]string{"report", "--threshold", "0.8", "extra"}, "takes no arguments"},
	} {
		r := runFPDB(t, "", append([]string{"--db", dir}, tc.args...)...).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, r.stderr, tc.want)
		}
	}
	r := runFPDB(t, "", "--db", filepath.Join(t.TempDir(), "none"), "report", "--threshold", "0.8").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "none") {
		t.Errorf("missing database: %q", r.stderr)
	}
}

// TestReportOutNotInDatabase: --out in the database's directory (or the
// directory itself), by its path or through a link, is refused before the
// page is made; the database is left as it was.
func TestReportOutNotInDatabase(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt", corpus+"coffee.txt").mustCode(t, exitOK)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() {
			files = append(files, e.Name())
		}
	}
	for _, out := range []string{filepath.Join(dir, "report.html"), filepath.Join(dir, files[0]), filepath.Join(link, files[len(files)-1]), dir, link, dir + "/sub/../r.html"} {
		before, _ := os.ReadDir(dir)
		r := runFPDB(t, "", "--db", dir, "report", "--threshold", "0.8", "--out", out).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, "fpdb: --out "+out+" is inside the database "+dir) {
			t.Errorf("--out %s: %q", out, r.stderr)
		}
		after, _ := os.ReadDir(dir)
		if len(after) != len(before) {
			t.Errorf("--out %s: the database's directory holds %d entries, was %d", out, len(after), len(before))
		}
	}
	runFPDB(t, "", "--db", dir, "check").mustCode(t, exitOK)
	// Beside it is fine.
	runFPDB(t, "", "--db", dir, "report", "--threshold", "0.8", "--out", dir+".html").mustCode(t, exitOK)
}
