package report

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"golang.org/x/net/html"

	"github.com/fpdb/fpdb/internal/evidence"
	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/normalize"
)

const (
	textA = "Intro of A.\nWe propose to measure the migration of alpine swifts over three seasons with light loggers.\n" +
		"<script>alert(1)</script> & more text here, then a second shared part: the budget covers travel and loggers and one technician for two years.\n"
	textB = "B starts differently, the budget covers travel and loggers and one technician for two years. " +
		"Then: we propose to measure the migration of alpine swifts over three seasons with light loggers! End."
)

// compareTexts compares two texts with the default parameters.
func compareTexts(t *testing.T, textA, textB string) *evidence.Comparison {
	t.Helper()
	p := fingerprint.DefaultParams()
	a, err := evidence.Analyze(p, []byte(textA), normalize.FormatText, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := evidence.Analyze(p, []byte(textB), normalize.FormatText, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := evidence.Compare(a, b, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func comparison(t *testing.T) *evidence.Comparison {
	t.Helper()
	c := compareTexts(t, textA, textB)
	if len(c.Passages) != 2 {
		t.Fatalf("%d passages, want 2", len(c.Passages))
	}
	return c
}

// textOf returns the text of n without the passage numbers.
func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "sup" {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// find returns the elements for which match holds, in document order.
func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if n.Type == html.ElementNode && match(n) {
		out = append(out, n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, find(c, match)...)
	}
	return out
}

func byID(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	ns := find(doc, func(n *html.Node) bool { return attr(n, "id") == id })
	if len(ns) != 1 {
		t.Fatalf("%d elements with id %q", len(ns), id)
	}
	return ns[0]
}

func TestWriteCompare(t *testing.T) {
	c := comparison(t)
	var buf bytes.Buffer
	err := WriteCompare(&buf, Pair{NameA: "a.txt", NameB: "stored <b>", TextA: []byte(textA), TextB: []byte(textB),
		Figures: c, K: 512, Generated: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"<script>alert", "http://", "https://", "src="} {
		if strings.Contains(page, bad) {
			t.Fatalf("page holds %q", bad)
		}
	}
	doc, err := html.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// Both texts whole, in order.
	if got := textOf(byID(t, doc, "text-a")); got != textA {
		t.Fatalf("text A on the page:\n%q\nwant\n%q", got, textA)
	}
	if got := textOf(byID(t, doc, "text-b")); got != textB {
		t.Fatalf("text B on the page:\n%q", got)
	}
	// Each passage's marks hold exactly its text, in both texts.
	for i, p := range c.Passages {
		n := strconv.Itoa(i + 1)
		for side, want := range map[string]string{"text-a": textA[p.A.Start:p.A.End], "text-b": textB[p.B.Start:p.B.End]} {
			marks := find(byID(t, doc, side), func(m *html.Node) bool { return m.Data == "mark" && attr(m, "data-p") == n })
			var got strings.Builder
			for _, m := range marks {
				got.WriteString(textOf(m))
			}
			if got.String() != want {
				t.Fatalf("passage %s in %s: %q, want %q", n, side, got.String(), want)
			}
		}
	}
	for id, want := range map[string]string{
		"estimated": strconv.FormatFloat(c.Estimated, 'f', 3, 64), "jaccard": strconv.FormatFloat(c.Jaccard, 'f', 3, 64),
		"contained-a": strconv.FormatFloat(100*c.ContainedA, 'f', 1, 64) + " %",
	} {
		if got := textOf(byID(t, doc, id)); got != want {
			t.Fatalf("%s shows %q, want %q", id, got, want)
		}
	}
	rows := find(byID(t, doc, "passages"), func(n *html.Node) bool { return n.Data == "tr" })
	if len(rows) != 1+len(c.Passages) {
		t.Fatalf("%d passage rows", len(rows))
	}
	if title := textOf(find(doc, func(n *html.Node) bool { return n.Data == "title" })[0]); !strings.Contains(title, "stored <b>") {
		t.Fatalf("title %q", title)
	}
}

func TestWriteCompareRefusesBadSpans(t *testing.T) {
	c := comparison(t)
	if err := WriteCompare(&bytes.Buffer{}, Pair{TextA: []byte("short"), TextB: []byte(textB), Figures: c}); err == nil {
		t.Fatal("passages outside the text were rendered")
	}
	if err := WriteCompare(&bytes.Buffer{}, Pair{}); err == nil {
		t.Fatal("no figures rendered")
	}
}

func TestExcerpt(t *testing.T) {
	if got := Excerpt([]byte("a  b\n\tc"), 10); got != "a b c" {
		t.Fatalf("%q", got)
	}
	long := strings.Repeat("x", 50) + strings.Repeat("y", 50)
	got := Excerpt([]byte(long), 30)
	if len([]rune(got)) != 30 || !strings.HasPrefix(got, "xxxx") || !strings.HasSuffix(got, "yyy") || !strings.Contains(got, "…") {
		t.Fatalf("%q", got)
	}
}

// hostile is a shared passage holding what would drive a terminal (an OSC
// setting the title, BEL, a CSI clearing the screen, the 8-bit CSI, NUL,
// DEL) and bidirectional overrides and isolates.
const hostile = "the budget covers travel \x1b]0;PWNED\x07\x1b[2J and \u009b31m loggers \x00\x7f and \u202eone technician\u202c " +
	"\u2066for\u2069 two years"

// unsafeRune reports a rune no excerpt may hold: a control character but
// the space or a bidirectional formatting character.
func unsafeRune(r rune) bool {
	return r != ' ' && unicode.IsControl(r) || 0x202A <= r && r <= 0x202E || 0x2066 <= r && r <= 0x2069
}

func TestExcerptControls(t *testing.T) {
	for _, max := range []int{1 << 20, 40} {
		got := Excerpt([]byte(hostile+"\f\v end"), max)
		if i := strings.IndexFunc(got, unsafeRune); i >= 0 {
			t.Fatalf("max %d: excerpt %q holds %U", max, got, []rune(got[i:])[0])
		}
		if max > 40 {
			want := "the budget covers travel \ufffd]0;PWNED\ufffd\ufffd[2J and \ufffd31m loggers \ufffd\ufffd and \ufffdone technician\ufffd " +
				"\ufffdfor\ufffd two years end"
			if got != want {
				t.Fatalf("excerpt\n%q, want\n%q", got, want)
			}
		}
	}
}

func TestWriteCompareControls(t *testing.T) {
	h := strings.ReplaceAll(hostile, "\x00", "") // a NUL makes a text binary
	ta, tb := "Intro of A. "+h+", then more of A.", "B: "+h+". End of B."
	c := compareTexts(t, ta, tb)
	if len(c.Passages) != 1 {
		t.Fatalf("%d passages, want 1", len(c.Passages))
	}
	var buf bytes.Buffer
	// The names too (a stored id holding a right-to-left override).
	if err := WriteCompare(&buf, Pair{NameA: "stored a\u202efdp.exe", NameB: "b\x1b[2J", TextA: []byte(ta), TextB: []byte(tb), Figures: c}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if i := strings.IndexFunc(page, func(r rune) bool { return r != '\n' && unsafeRune(r) }); i >= 0 {
		t.Fatalf("page holds %U: %q", []rune(page[i:])[0], page[max(i-80, 0):min(i+80, len(page))])
	}
	// In the passage table and in both texts.
	if n := strings.Count(page, "\ufffd]0;PWNED\ufffd\ufffd[2J"); n != 4 {
		t.Fatalf("the replaced escape sequences are on the page %d times, want 4", n)
	}
}

// twenty is a passage of twenty words: r1 holds it once, r2 twice, so that
// both passages of r1 and r2 cover the same words of r1.
const twenty = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"

// offsets returns the byte offset in the text under n (without the passage
// numbers) of every element with an id there.
func offsets(n *html.Node) map[string]int {
	out := map[string]int{}
	at := 0
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "sup" {
			return
		}
		if id := attr(n, "id"); n.Type == html.ElementNode && id != "" {
			out[id] = at
		}
		if n.Type == html.TextNode {
			at += len(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c)
	}
	return out
}

// TestWriteCompareAnchors: every link of the page leads to an element, every
// id is unique, and each passage N has its anchors aN and bN at its start
// in both texts, also when another passage covers it whole.
func TestWriteCompareAnchors(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"Start of r1. " + twenty + " End of r1.\n", "Head of r2. " + twenty + " Middle part of r2 differs. " + twenty + " Tail.\n"},
		{"Head of r2. " + twenty + " Middle part of r2 differs. " + twenty + " Tail.\n", "Start of r1. " + twenty + " End of r1.\n"},
		{textA, textB},
	} {
		c := compareTexts(t, tc.a, tc.b)
		var buf bytes.Buffer
		if err := WriteCompare(&buf, Pair{NameA: "r1.txt", NameB: "r2.txt", TextA: []byte(tc.a), TextB: []byte(tc.b), Figures: c}); err != nil {
			t.Fatal(err)
		}
		doc, err := html.Parse(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]int{}
		for _, n := range find(doc, func(n *html.Node) bool { return attr(n, "id") != "" }) {
			ids[attr(n, "id")]++
		}
		for id, n := range ids {
			if n != 1 {
				t.Errorf("id %q on %d elements", id, n)
			}
		}
		links := find(doc, func(n *html.Node) bool { return strings.HasPrefix(attr(n, "href"), "#") })
		if len(links) != len(c.Passages) {
			t.Errorf("%d links for %d passages", len(links), len(c.Passages))
		}
		for _, n := range links {
			if target := strings.TrimPrefix(attr(n, "href"), "#"); ids[target] == 0 {
				t.Errorf("link to #%s: no such id", target)
			}
		}
		at := map[string]map[string]int{"a": offsets(byID(t, doc, "text-a")), "b": offsets(byID(t, doc, "text-b"))}
		for i, p := range c.Passages {
			for side, start := range map[string]int64{"a": p.A.Start, "b": p.B.Start} {
				id := side + strconv.Itoa(i+1)
				if got, ok := at[side][id]; !ok || int64(got) != start {
					t.Errorf("passage %d: anchor %s at %d (%v), want %d", i+1, id, got, ok, start)
				}
			}
		}
		// Every element the script jumps from or to names its passage.
		for _, side := range []string{"a", "b"} {
			pre := byID(t, doc, "text-"+side)
			for _, n := range find(pre, func(n *html.Node) bool { return n != pre && attr(n, "id") != "" }) {
				if id := attr(n, "id"); id != side+attr(n, "data-p") || attr(n, "tabindex") == "" {
					t.Errorf("element %s with id %q, data-p %q, tabindex %q", n.Data, id, attr(n, "data-p"), attr(n, "tabindex"))
				}
			}
		}
	}
}

// TestSegmentsAnchors: a passage starting inside an earlier one gets its
// anchor at its start, not where it first owns the text; an empty one
// gets one too.
func TestSegmentsAnchors(t *testing.T) {
	text := []byte("0123456789abcdefghij")
	spans := []evidence.Span{{Start: 0, End: 10}, {Start: 5, End: 15}, {Start: 2, End: 4}, {Start: 12, End: 12}, {Start: 20, End: 20}}
	got := segments(text, false, spans)
	want := []segment{
		{Text: "01", Passage: 1, First: true},
		{Text: "234", Passage: 1, Anchors: []int{3}},
		{Text: "56789", Passage: 1, Anchors: []int{2}},
		{Text: "ab", Passage: 2},
		{Text: "cde", Passage: 2, Anchors: []int{4}},
		{Text: "fghij"},
		{Anchors: []int{5}},
	}
	if !slices.EqualFunc(got, want, func(x, y segment) bool {
		return x.Text == y.Text && x.Passage == y.Passage && x.First == y.First && slices.Equal(x.Anchors, y.Anchors)
	}) {
		t.Fatalf("segments\n%+v, want\n%+v", got, want)
	}
}
