package evidence

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/normalize"
)

// proposalPages returns testdata/proposal-a.html and proposal-b.html: one
// proposal as two web pages, a heading and a paragraph shared (a passage
// across the </h1> <p> boundary), written with other character references
// and tags; A holds a style sheet, a script in its head and one inside the
// shared paragraph, and a comment. internal/report's tests read them too.
func proposalPages(t *testing.T) (a, b string) {
	t.Helper()
	var pages [2]string
	for i, name := range []string{"proposal-a.html", "proposal-b.html"} {
		text, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		pages[i] = string(text)
	}
	return pages[0], pages[1]
}

// lineCol returns the line and column (from 1, in characters) of the
// character at off in text, counting line feeds.
func lineCol(text string, off int64) (int, int) {
	before := text[:off]
	nl := strings.LastIndexByte(before, '\n')
	return strings.Count(before, "\n") + 1, utf8.RuneCountInString(before[nl+1:]) + 1
}

// wordsOf returns the normalized words of text read as f.
func wordsOf(t *testing.T, text string, f normalize.Format) []string {
	t.Helper()
	var out []string
	tok := &normalize.Tokenizer{Format: f}
	if err := tok.Words(strings.NewReader(text), func(w []byte) { out = append(out, string(w)) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadableHTMLPair: the passages of two HTML pages show their
// readable text — no tag, no character reference, no script — while
// their offsets and line:column positions locate them in the stored
// texts, markup included.
func TestReadableHTMLPair(t *testing.T) {
	htmlA, htmlB := proposalPages(t)
	p := fingerprint.DefaultParams()
	var docs [2]*Doc
	for i, text := range []string{htmlA, htmlB} {
		d, err := Analyze(p, []byte(text), normalize.FormatAuto, nil) // sniffed as markup
		if err != nil {
			t.Fatal(err)
		}
		if !d.Markup() {
			t.Fatalf("text %d not read as markup", i)
		}
		docs[i] = d
	}
	c, err := Compare(docs[0], docs[1], Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !c.A.Markup || !c.B.Markup {
		t.Fatalf("sides %+v and %+v: not markup", c.A, c.B)
	}
	if len(c.Passages) != 2 {
		t.Fatalf("%d passages, want 2", len(c.Passages))
	}
	for _, side := range []struct {
		name  string
		text  string
		spans []Span
		first []string // what each passage starts with in the stored text
		shown []string // what each passage shows
	}{
		{"A", htmlA, []Span{c.Passages[0].A, c.Passages[1].A}, []string{"Rest &amp; Refuel", "Budget: travel"},
			[]string{"Rest & Refuel Stations for Migrating Receivers\n\nThe consortium’s plan is to build rest & refuel stations along the alpine flyway, " +
				"with light loggers on every bird we ring over three seasons — and to publish the data under an open licence",
				"Budget: travel & loggers, one technician for two years, and a workshop in Chamonix"}},
		{"B", htmlB, []Span{c.Passages[0].B, c.Passages[1].B}, []string{"Rest &#38; Refuel", "budget: travel"},
			[]string{"Rest & Refuel Stations for Migrating Receivers\n\nThe consortium’s plan is to build rest & refuel stations along the alpine flyway, " +
				"with light loggers on every bird we ring over three seasons — and to publish the data under an open licence",
				"budget: travel & loggers, one technician for two years, and a workshop in Chamonix"}},
	} {
		ranges := make([][2]int64, len(side.spans))
		for i, s := range side.spans {
			ranges[i] = [2]int64{s.Start, s.End}
			// The positions locate the passage in the stored text.
			if !strings.HasPrefix(side.text[s.Start:], side.first[i]) {
				t.Errorf("%s passage %d starts at %q, want %q", side.name, i+1, side.text[s.Start:min(s.Start+30, int64(len(side.text)))], side.first[i])
			}
			if l, col := lineCol(side.text, s.Start); l != s.Line || col != s.Col {
				t.Errorf("%s passage %d: starts at %d:%d, reported %d:%d", side.name, i+1, l, col, s.Line, s.Col)
			}
			last := s.End - 1 // the passages end with an ASCII letter
			if l, col := lineCol(side.text, last); l != s.EndLine || col != s.EndCol {
				t.Errorf("%s passage %d: ends at %d:%d, reported %d:%d", side.name, i+1, l, col, s.EndLine, s.EndCol)
			}
		}
		shown := Readable([]byte(side.text), true, ranges)
		for i, got := range shown {
			if got != side.shown[i] {
				t.Errorf("%s passage %d shows\n%q, want\n%q", side.name, i+1, got, side.shown[i])
			}
			for _, bad := range []string{"<", ">", "&amp;", "&rsquo;", "&#", "track", "class="} {
				if strings.Contains(got, bad) {
					t.Errorf("%s passage %d shows %q: %q", side.name, i+1, bad, got)
				}
			}
			// The same words as the stored passage.
			s := side.spans[i]
			if w, want := wordsOf(t, got, normalize.FormatText), wordsOf(t, side.text[s.Start:s.End], normalize.FormatMarkup); !slices.Equal(w, want) {
				t.Errorf("%s passage %d shows the words\n%q, want\n%q", side.name, i+1, w, want)
			}
		}
		// Plain text is shown as it is.
		raw := Readable([]byte(side.text), false, ranges)
		for i, s := range side.spans {
			if raw[i] != side.text[s.Start:s.End] {
				t.Errorf("%s passage %d as plain text: %q", side.name, i+1, raw[i])
			}
		}
	}
}

func TestReadable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<p>a &amp; b</p>", "a & b"},
		{"<h1>Title</h1><p>Body &rsquo;s</p>", "Title\n\nBody ’s"},
		{"one<br>two<br/>three", "one\ntwo\nthree"},
		{"<ul><li>x</li><li>y</li></ul>", "x\ny"},
		{"W<b>or</b>d and <a href='x'>link</a>", "Word and link"},
		{"<rss><item><title>T</title><link>L</link></item></rss>", "T\n\nL"}, // title: a block
		{"<feed><entry>T</entry><entry>L</entry></feed>", "T L"},             // XML elements: spaces
		{"a  \n\t b", "a b"},
		{"<pre>a  \n b</pre>c  d", "a  \n b\n\nc d"},
		{"a<script>x<y; if (a</b) {}</script>b", "ab"},
		{"a<SCRIPT type=x>x</scripts></Script >b", "ab"},
		{"a<script/>b", "ab"},
		{"a<style>p{}</style >b", "ab"},
		{"a<script>never ends", "a"},
		{"a<!-- c --> b<!---->c<!-->d", "a bcd"},
		{"a<!-- never ends", "a"},
		{"<!DOCTYPE html><?xml x?>a", "a"},
		// A declaration or a processing instruction separates words, as
		// the tokenizer reads them.
		{"study<?php echo 1; ?>the heat", "study the heat"},
		{"café<!x>kappa", "café kappa"},
		{"a < b and c <d", "a < b and c <d"},
		{"a <b <c> d", "a <b d"},
		{"x <" + strings.Repeat("y", normalize.MaxTagLen) + ">z", "x z"},
		{"x <" + strings.Repeat("y", normalize.MaxTagLen+1) + ">z", "x <" + strings.Repeat("y", normalize.MaxTagLen+1) + ">z"},
		{"AT&T &unknown; &#233;t&eacute; &amp &#x41;&#10;b", "AT&T &unknown; été & A b"},
		{"&" + strings.Repeat("a", 40) + ";", "&" + strings.Repeat("a", 40) + ";"},
		// A reference of normalize.MaxEntityLen bytes is decoded (&amp
		// without ';', as html.UnescapeString does), not a longer one.
		{"&amp" + strings.Repeat("x", 28) + " .", "&" + strings.Repeat("x", 28) + " ."},
		{"&amp" + strings.Repeat("x", 27) + "; .", "&" + strings.Repeat("x", 27) + "; ."},
		{"&amp" + strings.Repeat("x", 29) + " .", "&amp" + strings.Repeat("x", 29) + " ."},
		{"&#1b;&#;&;x &#27;", "&#1b;&#;&;x \x1b"}, // decoded as the tokenizer does, controls too
		{"  <html><body>\n<p> lead</p>\n</body></html>\n", "lead"},
		{"café<p>日本", "café\n\n日本"},
	} {
		got := Readable([]byte(tc.in), true, [][2]int64{{0, int64(len(tc.in))}})[0]
		if got != tc.want {
			t.Errorf("Readable(%q) = %q, want %q", tc.in, got, tc.want)
		}
		checkWordsShown(t, []byte(tc.in))
	}
}

// TestReadableCuts: cut at the words' boundaries, a text shows the same
// as whole, each word whole in its range; out-of-range and inverted
// ranges show nothing or the part in the text; any range of any input is
// shown without a panic.
func TestReadableCuts(t *testing.T) {
	htmlA, htmlB := proposalPages(t)
	for _, text := range []string{htmlA, htmlB} {
		whole := Readable([]byte(text), true, [][2]int64{{0, int64(len(text))}})[0]
		var bounds []int64
		tok := &normalize.Tokenizer{Format: normalize.FormatMarkup}
		var words []string
		var wordRanges [][2]int64
		err := tok.WordSpans(strings.NewReader(text), func(w []byte, start, end int64) {
			bounds = append(bounds, start, end)
			words = append(words, string(w))
			wordRanges = append(wordRanges, [2]int64{start, end})
		})
		if err != nil {
			t.Fatal(err)
		}
		bounds = append(append([]int64{0}, bounds...), int64(len(text)))
		bounds = slices.Compact(bounds)
		var ranges [][2]int64
		for i := 1; i < len(bounds); i++ {
			ranges = append(ranges, [2]int64{bounds[i-1], bounds[i]})
		}
		pieces := Readable([]byte(text), true, ranges)
		if got := strings.Join(pieces, ""); got != whole {
			t.Fatalf("cut at the words:\n%q, whole:\n%q", got, whole)
		}
		for i, w := range Readable([]byte(text), true, wordRanges) {
			if w == "" || w != strings.TrimSpace(w) {
				t.Errorf("word %q shows %q", words[i], w)
			}
		}
		got := Readable([]byte(text), true, [][2]int64{{-5, 3}, {10, 2}, {int64(len(text)) - 1, 1 << 40}, {1 << 40, 1 << 41}})
		if got[1] != "" || got[3] != "" {
			t.Errorf("empty ranges show %q, %q", got[1], got[3])
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	parts := []string{"<", ">", "&", ";", "#", "a", "B", " ", "\n", "<p>", "</p>", "<script>", "</script>", "<!--", "-->",
		"&amp;", "&#x", "é", "\xe6\x97", "\xa5", "<pre>", "</pre>", "/", "!", "?", "-", "\x00",
		"<!-", "</SCR", "ipt", "<style>", "</style", "<b>", "&lt", "1", "\t", "<?", "&#39"}
	for range 3000 {
		var b bytes.Buffer
		for range rng.IntN(40) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		text := b.Bytes()
		var ranges [][2]int64
		for range rng.IntN(6) {
			ranges = append(ranges, [2]int64{rng.Int64N(int64(len(text))+3) - 1, rng.Int64N(int64(len(text))+3) - 1})
		}
		for _, markup := range []bool{false, true} {
			if got := Readable(text, markup, ranges); len(got) != len(ranges) {
				t.Fatalf("%d results for %d ranges", len(got), len(ranges))
			}
		}
		checkWordsShown(t, text)
	}
}

// checkWordsShown fails unless each word the tokenizer reads in text (as
// markup) is shown in its span; text that is not (a NUL, invalid UTF-8)
// passes.
func checkWordsShown(t *testing.T, text []byte) {
	t.Helper()
	var words []string
	var wordRanges [][2]int64
	tok := &normalize.Tokenizer{Format: normalize.FormatMarkup}
	err := tok.WordSpans(bytes.NewReader(text), func(w []byte, start, end int64) {
		words = append(words, string(w))
		wordRanges = append(wordRanges, [2]int64{start, end})
	})
	if err != nil {
		return
	}
	for i, w := range Readable(text, true, wordRanges) {
		if got := wordsOf(t, w, normalize.FormatText); len(got) == 0 || got[0] != words[i] {
			t.Fatalf("%q: word %q shows %q", text, words[i], w)
		}
	}
}
