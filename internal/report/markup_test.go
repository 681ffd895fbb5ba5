package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/fpdb/fpdb/internal/evidence"
	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/normalize"
)

// proposalPages returns internal/evidence's testdata/proposal-a.html and
// proposal-b.html: one proposal as two web pages, whose heading and first
// paragraph are one passage across the </h1> <p> boundary (with a script
// inside it in A), their budget line another; they write the same
// characters with other references (&amp; and &#38;, &rsquo; and &#8217;).
func proposalPages(t *testing.T) (a, b string) {
	t.Helper()
	dir := filepath.Join("..", "evidence", "testdata")
	pa, errA := os.ReadFile(filepath.Join(dir, "proposal-a.html"))
	pb, errB := os.ReadFile(filepath.Join(dir, "proposal-b.html"))
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	return string(pa), string(pb)
}

const (
	// sharedShown is what the passage across the heading shows in both.
	sharedShown = "Rest & Refuel Stations for Migrating Receivers The consortium’s plan is to build rest & refuel stations " +
		"along the alpine flyway, with light loggers on every bird we ring over three seasons — and to publish the data under an open licence"
)

// markupComparison compares pageA and pageB, read as markup.
func markupComparison(t *testing.T) *evidence.Comparison {
	pageA, pageB := proposalPages(t)
	t.Helper()
	p := fingerprint.DefaultParams()
	a, err := evidence.Analyze(p, []byte(pageA), normalize.FormatMarkup, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := evidence.Analyze(p, []byte(pageB), normalize.FormatMarkup, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := evidence.Compare(a, b, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Passages) != 2 || !c.A.Markup || !c.B.Markup {
		t.Fatalf("%d passages, sides %+v and %+v", len(c.Passages), c.A, c.B)
	}
	return c
}

// checkShown fails unless s, a passage's text as a page or a terminal
// shows it, holds no markup (a tag, a character reference, script) and
// its characters decoded.
func checkShown(t *testing.T, what, s string) {
	t.Helper()
	for _, bad := range []string{"<", ">", "&amp;", "&rsquo;", "&#", "&mdash;", "track", "class=", "lead"} {
		if strings.Contains(s, bad) {
			t.Errorf("%s shows %q: %q", what, bad, s)
		}
	}
}

// wantAt fails unless s reports the position of the text that starts
// with first in text: its byte offset and line:column.
func wantAt(t *testing.T, text string, s evidence.Span, first string) {
	t.Helper()
	if !strings.HasPrefix(text[s.Start:], first) {
		t.Errorf("passage at %d starts with %q, want %q", s.Start, text[s.Start:min(int(s.Start)+len(first), len(text))], first)
	}
	before := text[:s.Start]
	line := strings.Count(before, "\n") + 1
	col := utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
	if line != s.Line || col != s.Col {
		t.Errorf("passage at %d: at %d:%d, reported %d:%d", s.Start, line, col, s.Line, s.Col)
	}
}

// TestWriteCompareMarkup: the compare page of two HTML pages shows, in its
// passage table and in both texts, what a reader sees of them, while the
// positions it prints are those of the stored texts.
func TestWriteCompareMarkup(t *testing.T) {
	pageA, pageB := proposalPages(t)
	c := markupComparison(t)
	wantAt(t, pageA, c.Passages[0].A, "Rest &amp; Refuel")
	wantAt(t, pageB, c.Passages[0].B, "Rest &#38; Refuel")
	var buf bytes.Buffer
	if err := WriteCompare(&buf, Pair{NameA: "a.html", NameB: "b.html", TextA: []byte(pageA), TextB: []byte(pageB), Figures: c, K: 512}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"&lt;/h1&gt;", "&lt;p", "&amp;amp;", "&amp;rsquo;", "&amp;#", "track("} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	doc, err := html.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	cells := byClass(byID(t, doc, "passages"), "span", "ptext")
	if len(cells) != 4 {
		t.Fatalf("%d passage excerpts, want 4", len(cells))
	}
	for i, cell := range cells {
		checkShown(t, fmt.Sprintf("excerpt %d", i+1), textOf(cell))
	}
	if got := textOf(cells[0]); !strings.HasPrefix(got, "Rest & Refuel Stations for Migrating Receivers The consortium’s plan") ||
		!strings.HasSuffix(got, "— and to publish the data under an open licence") {
		t.Errorf("passage 1 in A shows %q", got)
	}
	if got, want := textOf(cells[2]), "Budget: travel & loggers, one technician for two years, and a workshop in Chamonix"; got != want {
		t.Errorf("passage 2 in A shows %q, want %q", got, want)
	}
	// The positions printed are the stored texts'.
	pos := byClass(byID(t, doc, "passages"), "span", "pos")
	if p := c.Passages[0].A; textOf(pos[0]) != fmt.Sprintf("%d:%d–%d:%d", p.Line, p.Col, p.EndLine, p.EndCol) {
		t.Errorf("passage 1 in A at %q, want %+v", textOf(pos[0]), p)
	}
	// Both texts as they read, each passage's marks holding what it shows.
	for side, text := range map[string]string{"text-a": pageA, "text-b": pageB} {
		whole := textOf(byID(t, doc, side))
		checkShown(t, side, whole)
		if !strings.Contains(whole, "Receivers\n\nThe consortium’s") {
			t.Errorf("%s reads %q", side, whole)
		}
		for i, p := range c.Passages {
			s := p.A
			if side == "text-b" {
				s = p.B
			}
			want := evidence.Readable([]byte(text), true, [][2]int64{{s.Start, s.End}})[0]
			var got strings.Builder
			for _, m := range find(byID(t, doc, side), func(m *html.Node) bool { return m.Data == "mark" && attr(m, "data-p") == fmt.Sprint(i+1) }) {
				got.WriteString(textOf(m))
			}
			if got.String() != want {
				t.Errorf("passage %d in %s: marks hold %q, want %q", i+1, side, got.String(), want)
			}
		}
	}
}

// TestNewEvidenceMarkup: a report's passage excerpts of HTML pages are
// what a reader sees; a plain-text side is shown as it is.
func TestNewEvidenceMarkup(t *testing.T) {
	pageA, pageB := proposalPages(t)
	c := markupComparison(t)
	ev, err := NewEvidence([]byte(pageA), []byte(pageB), c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.rows) != 2 {
		t.Fatalf("%d rows", len(ev.rows))
	}
	for _, r := range ev.rows {
		checkShown(t, "report excerpt A", r.AText)
		checkShown(t, "report excerpt B", r.BText)
	}
	if ev.rows[0].AText != sharedShown || ev.rows[0].BText != sharedShown {
		t.Errorf("passage 1 shows\n%q\n%q, want\n%q", ev.rows[0].AText, ev.rows[0].BText, sharedShown)
	}
	r := Report{Database: "db", Threshold: 0.8, K: 512, ShingleWidth: 4, Documents: 2, MinWords: 8,
		Clusters: []Cluster{{Members: []string{"a", "b"}, Center: "a", Cohesion: 0.8, TotalPairs: 1,
			Pairs: []ClusterPair{{A: "a", B: "b", Similarity: 0.8, Evidence: ev}}}}}
	page, _ := render(t, r)
	for _, bad := range []string{"&lt;/h1&gt;", "&lt;p", "&amp;rsquo;", "&amp;amp;", "&amp;#"} {
		if strings.Contains(page, bad) {
			t.Errorf("report holds %q", bad)
		}
	}
	if !strings.Contains(page, "Rest &amp; Refuel Stations for Migrating Receivers The consortium’s plan") {
		t.Error("report does not show the passage as it reads")
	}

	// The same texts compared as plain text show their markup.
	plain := *c
	plain.A.Markup, plain.B.Markup = false, false
	ev, err = NewEvidence([]byte(pageA), []byte(pageB), &plain, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.rows[1].AText; got != "Budget: travel &amp; loggers, one technician for two years, and a workshop in Chamonix" {
		t.Errorf("plain text shows %q", got)
	}
}

// TestExcerptsMarkup: a terminal's excerpts of an HTML page, with their
// context, show what a reader sees; those of a plain text are Excerpt's.
func TestExcerptsMarkup(t *testing.T) {
	pageA, _ := proposalPages(t)
	c := markupComparison(t)
	spans := []evidence.Span{c.Passages[0].A, c.Passages[1].A}
	got := Excerpts([]byte(pageA), true, spans, 1<<20, 30)
	if len(got) != 2 {
		t.Fatalf("%d excerpts", len(got))
	}
	for i, e := range got {
		checkShown(t, fmt.Sprintf("excerpt %d", i+1), e.Before+e.Passage+e.After)
	}
	if got[0].Passage != sharedShown {
		t.Errorf("passage 1 shows %q", got[0].Passage)
	}
	// The context is what the page shows around the passages: the
	// title (of the head), the end of a paragraph (the break before the
	// next one a space, as Excerpt makes it).
	if got[0].Before != "Proposal 17 – Alpine flyway " || got[0].After != ". Budget: travel & loggers, on…" {
		t.Errorf("passage 1 in context: before %q, after %q", got[0].Before, got[0].After)
	}
	if got[1].Before != "…e data under an open licence. " || got[1].After != "." {
		t.Errorf("passage 2 in context: before %q, after %q", got[1].Before, got[1].After)
	}

	// Plain text: the passage is Excerpt's, the context too.
	text := []byte("Intro words of the text, then the passage itself, and after it the rest of the text to its very end.")
	s := evidence.Span{Start: int64(bytes.Index(text, []byte("the passage"))), End: int64(bytes.Index(text, []byte(", and after")))}
	e := Excerpts(text, false, []evidence.Span{s, {Start: -4, End: 1 << 40}}, 160, 10)
	if e[0].Passage != "the passage itself" || e[0].Before != "…ext, then " || e[0].After != ", and afte…" {
		t.Errorf("plain excerpt %+v", e[0])
	}
	if e[1].Passage != Excerpt(text, 160) || e[1].Before != "" || e[1].After != "" {
		t.Errorf("a span beyond the text: %+v", e[1])
	}
	// Any length and context: no panic.
	for _, n := range []int{-3, 0, 1, 2} {
		for _, markup := range []bool{false, true} {
			e := Excerpts([]byte(pageA), markup, spans, n, n)
			if len(e) != 2 || len([]rune(e[0].Passage)) > 2 || len([]rune(e[0].Before)) > 3 {
				t.Errorf("length %d: %+v", n, e)
			}
		}
		if got := Excerpt(text, n); len([]rune(got)) > max(n, 1) {
			t.Errorf("Excerpt(…, %d) = %q", n, got)
		}
	}
}
