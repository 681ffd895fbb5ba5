package report

import (
	"cmp"
	"container/heap"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fpdb/fpdb/internal/evidence"
)

// Pair is one comparison to render.
type Pair struct {
	// NameA and NameB name the texts (a path, "stored document ID"), as
	// the caller shows them: an id or a path holding an unsafe character
	// quoted by ShownID (WriteCompare replaces one left by U+FFFD).
	NameA, NameB string
	// TextA and TextB are the texts compared (UTF-8); the passages'
	// offsets are in them.
	TextA, TextB []byte
	// Figures are the comparison's results. A side read as markup
	// (Figures.A.Markup, Figures.B.Markup) is shown as the text a reader
	// sees (evidence.Readable), whole and in the passage table.
	Figures *evidence.Comparison
	// K is the fingerprint length in bits (for "Hamming h of K").
	K int
	// Generated is the time printed as the report's date; zero: none.
	Generated time.Time
}

// segment is a run of text with the passage it belongs to (0: none).
type segment struct {
	Text    string // as the page shows it (evidence.Readable, pageText)
	Passage int
	// First: the segment starts its passage (which owns it); the page
	// puts the passage's anchor (id "aN" or "bN") and number on it.
	First bool
	// Anchors are the other passages that start where the segment does,
	// inside it: an earlier passage covering them owns the text. The page
	// puts their anchors and numbers at the segment's start.
	Anchors []int
}

type comparePage struct {
	Pair
	View pairView
	SegA []segment
	SegB []segment
	Date string
}

// WriteCompare writes the HTML page of p to w.
func WriteCompare(w io.Writer, p Pair) error {
	if p.Figures == nil {
		return fmt.Errorf("report: no figures")
	}
	if err := checkSpans(p.TextA, p.TextB, p.Figures.Passages); err != nil {
		return err
	}
	// The names are the callers' (ShownID quotes an id or a path that
	// needs it); an unsafe character left in one is replaced, as in
	// excerpts, not quoted again.
	p.NameA, p.NameB = strings.Map(shown, p.NameA), strings.Map(shown, p.NameB)
	page := comparePage{Pair: p, View: pairView{
		Figures: p.Figures, K: p.K, Link: true,
		Rows: passageRows(p.TextA, p.TextB, p.Figures.A.Markup, p.Figures.B.Markup, p.Figures.Passages, compareExcerpt),
	}}
	if !p.Generated.IsZero() {
		page.Date = p.Generated.UTC().Format(dateLayout)
	}
	spansA := make([]evidence.Span, len(p.Figures.Passages))
	spansB := make([]evidence.Span, len(p.Figures.Passages))
	for i, ps := range p.Figures.Passages {
		spansA[i], spansB[i] = ps.A, ps.B
	}
	page.SegA = segments(p.TextA, p.Figures.A.Markup, spansA)
	page.SegB = segments(p.TextB, p.Figures.B.Markup, spansB)
	return pages.ExecuteTemplate(w, "compare", page)
}

func inside(s evidence.Span, text []byte) bool {
	return s.Start >= 0 && s.Start <= s.End && s.End <= int64(len(text))
}

// segments cuts text (markup: read as markup, shown as evidence.Readable
// shows it) at the passages' boundaries; each piece belongs to the first
// (longest) passage covering it. Every passage starts a segment, as its
// owner (First) or as one of its Anchors, so that each passage has
// exactly one anchor, at its start, even when an earlier passage covers
// all of it. One sweep over the boundaries, with the passages covering the
// current piece in a heap by index.
func segments(text []byte, markup bool, spans []evidence.Span) []segment {
	type event struct {
		at    int64
		start bool
		p     int // passage index + 1
	}
	events := make([]event, 0, 2*len(spans))
	for i, s := range spans {
		events = append(events, event{s.Start, true, i + 1}, event{s.End, false, i + 1})
	}
	slices.SortFunc(events, func(x, y event) int { return cmp.Compare(x.at, y.at) })
	// The pieces of text between the boundaries, as shown, in order.
	var ranges [][2]int64
	var at int64
	for _, e := range events {
		if e.at > at {
			ranges = append(ranges, [2]int64{at, e.at})
			at = e.at
		}
	}
	if n := int64(len(text)); n > at {
		ranges = append(ranges, [2]int64{at, n})
	}
	pieces := evidence.Readable(text, markup, ranges)
	var active intHeap
	ended := map[int]bool{}
	top := func() int {
		for len(active) > 0 && ended[active[0]] {
			heap.Pop(&active)
		}
		if len(active) == 0 {
			return 0
		}
		return active[0]
	}
	var out []segment
	// emit appends the next piece (when lo < hi: text[lo:hi], as shown),
	// owned by p, which starts the passages in starts (in order); an
	// empty piece only to carry their anchors.
	emit := func(lo, hi int64, p int, starts []int) {
		var piece string
		if lo < hi {
			piece, pieces = pieces[0], pieces[1:]
		}
		if piece == "" && len(starts) == 0 {
			return
		}
		seg := segment{Text: pageText(piece), Passage: p}
		slices.Sort(starts)
		for _, q := range starts {
			if q == p {
				seg.First = true
			} else {
				seg.Anchors = append(seg.Anchors, q)
			}
		}
		if n := len(out); n > 0 && out[n-1].Passage == p && len(starts) == 0 {
			out[n-1].Text += seg.Text
			return
		}
		out = append(out, seg)
	}
	at = 0
	var starts []int // the passages starting at at
	for i := 0; i < len(events); {
		next := events[i].at
		if next > at {
			emit(at, next, top(), starts)
			at, starts = next, nil
		}
		for ; i < len(events) && events[i].at == next; i++ {
			if e := events[i]; e.start {
				heap.Push(&active, e.p)
				starts = append(starts, e.p)
			} else {
				ended[e.p] = true
			}
		}
	}
	emit(at, int64(len(text)), top(), starts)
	return out
}

// intHeap is a min-heap of ints (container/heap).
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Excerpt returns text shortened to about max characters: its start and
// its end around an ellipsis, white space runs (space, tab, line feed,
// carriage return, form feed, vertical tab) made one space.
//
// An excerpt is safe to print on a terminal: every other control
// character (unicode.IsControl: ESC, BEL, NUL, DEL, the C1 controls such
// as CSI U+009B) and every bidirectional formatting character (U+202A–
// U+202E, U+2066–U+2069) is shown as U+FFFD (�), as is invalid UTF-8. A
// crafted text thus cannot set a terminal's title, clear its screen or
// reorder the characters shown around it.
func Excerpt(text []byte, max int) string {
	return excerpt(string(text), max)
}

// excerpt is Excerpt for a string. A max below 1 counts as 1.
func excerpt(text string, max int) string {
	if max < 1 {
		max = 1
	}
	rs := make([]rune, 0, len(text))
	space := false
	for _, r := range text {
		switch r {
		case ' ', '\n', '\t', '\r', '\f', '\v':
			if !space && len(rs) > 0 {
				rs = append(rs, ' ')
			}
			space = true
			continue
		}
		space = false
		rs = append(rs, shown(r))
	}
	if len(rs) <= max {
		return string(rs)
	}
	head := max * 2 / 3
	tail := max - head - 1
	return string(rs[:head]) + "…" + string(rs[len(rs)-tail:])
}

// Unsafe reports whether r is a control character or a bidirectional
// formatting character (U+202A–U+202E, U+2066–U+2069): the characters that
// could drive a terminal or reorder the text shown around them.
func Unsafe(r rune) bool {
	return unicode.IsControl(r) || 0x202A <= r && r <= 0x202E || 0x2066 <= r && r <= 0x2069
}

// shown returns r, or U+FFFD when it is Unsafe.
func shown(r rune) rune {
	if Unsafe(r) {
		return utf8.RuneError
	}
	return r
}

// InContext is a passage's excerpt with the text around it, as a
// terminal shows it (Excerpts).
type InContext struct {
	// Before and After are the last and first characters of the text
	// before and after the passage, each with an ellipsis (…) where the
	// text goes on; Passage is the passage's excerpt.
	Before, Passage, After string
}

// Excerpts returns the excerpts of spans of text, of what they show
// (evidence.Readable; markup says text is markup, evidence.Side.Markup),
// as Excerpt makes them: each passage shortened to about maxLen
// characters, with at most context characters (at most 2^20) of the text
// before and after it. The text is read once. The part of a span outside
// text shows nothing; Excerpts never fails. Every string is safe to print
// on a terminal, as Excerpt's.
func Excerpts(text []byte, markup bool, spans []evidence.Span, maxLen, context int) []InContext {
	context = min(max(context, 0), 1<<20)
	// The bytes read around a passage for its context: what a markup
	// text shows may be far shorter than its bytes.
	window := 4 * int64(context)
	if markup {
		window = 64 * int64(context)
	}
	n := int64(len(text))
	ranges := make([][2]int64, 0, 3*len(spans))
	cutBefore := make([]bool, len(spans))
	cutAfter := make([]bool, len(spans))
	for i, s := range spans {
		start, end := min(max(s.Start, 0), n), min(max(s.End, 0), n)
		end = max(start, end)
		lo := max(start-window, 0)
		for lo > 0 && !utf8.RuneStart(text[lo]) {
			lo--
		}
		hi := min(end+window, n)
		for hi < n && !utf8.RuneStart(text[hi]) {
			hi++
		}
		cutBefore[i], cutAfter[i] = lo > 0, hi < n
		ranges = append(ranges, [2]int64{lo, start}, [2]int64{start, end}, [2]int64{end, hi})
	}
	shown := evidence.Readable(text, markup, ranges)
	out := make([]InContext, len(spans))
	for i := range spans {
		before := []rune(excerpt(shown[3*i], 1<<30))
		if len(before) > context || cutBefore[i] {
			before = append([]rune("…"), before[max(len(before)-context, 0):]...)
		}
		after := []rune(excerpt(shown[3*i+2], 1<<30))
		if len(after) > context || cutAfter[i] {
			after = append(after[:min(len(after), context)], '…')
		}
		out[i] = InContext{Before: string(before), Passage: excerpt(shown[3*i+1], maxLen), After: string(after)}
	}
	return out
}

// pageText returns text as the compare page shows it: the characters
// Excerpt replaces (but tab, line feed, form feed and carriage return,
// which the page keeps) as U+FFFD, so that the page holds no escape
// sequence even when written to a terminal (--html -) and no
// bidirectional override that would reorder the text shown.
func pageText(text string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\f', '\r':
			return r
		}
		return shown(r)
	}, text)
}

const compareHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fpdb compare: {{.NameA}} and {{.NameB}}</title>
<style>
` + baseCSS + `
.cols { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; padding: 0 1.5rem 2rem; }
.col h2 { position: sticky; top: 0; background: #fff; padding: .3rem 0; margin: 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.5 ui-monospace, "SF Mono", Menlo, Consolas, monospace;
      border: 1px solid #ddd; border-radius: 4px; padding: .6rem; margin: 0; max-height: 80vh; overflow-y: auto; }
mark, .at { color: inherit; border-radius: 2px; cursor: pointer; }
mark:focus, .at:focus { outline: 2px solid #000; }
sup.n { font: bold 10px sans-serif; background: #333; color: #fff; border-radius: 3px; padding: 0 3px; margin-right: 2px; }
.c0 { background: #ffe58a; } .c1 { background: #b8e1ff; } .c2 { background: #c8f0c0; } .c3 { background: #ffc9de; }
.c4 { background: #e0d0ff; } .c5 { background: #ffd8b0; } .c6 { background: #b9f0ec; } .c7 { background: #e8e8a0; }
@media print { pre { max-height: none; } .cols { display: block; } }
</style>
</head>
<body>
<header>
<h1>Comparison of {{.NameA}} and {{.NameB}}</h1>
{{if .Date}}<p class="none">Generated by fpdb on {{.Date}}.</p>{{end}}
</header>
<section>
{{template "figures" .View}}
<h2>Shared passages</h2>
{{template "passages" .View}}
</section>
<div class="cols">
<div class="col"><h2>A: {{.NameA}}</h2><pre id="text-a">{{range .SegA}}{{if .Passage}}<mark class="c{{color .Passage}}" data-p="{{.Passage}}" tabindex="0"{{if .First}} id="a{{.Passage}}"{{end}}>{{if .First}}<sup class="n">{{.Passage}}</sup>{{end}}{{range .Anchors}}<span class="at" id="a{{.}}" data-p="{{.}}" tabindex="-1"><sup class="n">{{.}}</sup></span>{{end}}{{.Text}}</mark>{{else}}{{range .Anchors}}<span class="at" id="a{{.}}" data-p="{{.}}" tabindex="-1"><sup class="n">{{.}}</sup></span>{{end}}{{.Text}}{{end}}{{end}}</pre></div>
<div class="col"><h2>B: {{.NameB}}</h2><pre id="text-b">{{range .SegB}}{{if .Passage}}<mark class="c{{color .Passage}}" data-p="{{.Passage}}" tabindex="0"{{if .First}} id="b{{.Passage}}"{{end}}>{{if .First}}<sup class="n">{{.Passage}}</sup>{{end}}{{range .Anchors}}<span class="at" id="b{{.}}" data-p="{{.}}" tabindex="-1"><sup class="n">{{.}}</sup></span>{{end}}{{.Text}}</mark>{{else}}{{range .Anchors}}<span class="at" id="b{{.}}" data-p="{{.}}" tabindex="-1"><sup class="n">{{.}}</sup></span>{{end}}{{.Text}}{{end}}{{end}}</pre></div>
</div>
<script>
// Clicking (or Enter on) a passage in one text scrolls the other to it: to
// its anchor there, the mark starting it or, for a passage that starts
// inside another's mark, the numbered span (class "at") at its start. A
// click on such a span, inside the other passage's mark, is its own.
function jump(m) {
  var other = m.closest("pre").id === "text-a" ? "b" : "a";
  var t = document.getElementById(other + m.dataset.p);
  if (t) { t.scrollIntoView({block: "center"}); t.focus({preventScroll: true}); }
}
document.querySelectorAll("pre [data-p]").forEach(function (m) {
  m.addEventListener("click", function (e) { e.stopPropagation(); jump(m); });
  m.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.stopPropagation(); jump(m); } });
});
</script>
</body>
</html>
`
