package report

import (
	"cmp"
	"container/heap"
	"fmt"
	"html/template"
	"io"
	"slices"
	"time"

	"github.com/fpdb/fpdb/internal/evidence"
)

// Pair is one comparison to render.
type Pair struct {
	// NameA and NameB name the texts (a path, "stored document ID").
	NameA, NameB string
	// TextA and TextB are the texts compared (UTF-8); the passages'
	// offsets are in them.
	TextA, TextB []byte
	// Figures are the comparison's results.
	Figures *evidence.Comparison
	// K is the fingerprint length in bits (for "Hamming h of K").
	K int
	// Generated is the time printed as the report's date; zero: none.
	Generated time.Time
}

// segment is a run of text with the passage it belongs to (0: none).
type segment struct {
	Text    string
	Passage int
	First   bool // the first segment of its passage in this text
}

// passageRow is a line of the passage table.
type passageRow struct {
	N          int
	Words      int
	AWords     int
	BWords     int
	APos, BPos string
	Excerpt    string
}

type comparePage struct {
	Pair
	Passages []passageRow
	SegA     []segment
	SegB     []segment
	Date     string
	Figures  *evidence.Comparison
}

// WriteCompare writes the HTML page of p to w.
func WriteCompare(w io.Writer, p Pair) error {
	if p.Figures == nil {
		return fmt.Errorf("report: no figures")
	}
	for i, ps := range p.Figures.Passages {
		if !inside(ps.A, p.TextA) || !inside(ps.B, p.TextB) {
			return fmt.Errorf("report: passage %d lies outside its texts", i+1)
		}
	}
	page := comparePage{Pair: p, Figures: p.Figures}
	if !p.Generated.IsZero() {
		page.Date = p.Generated.UTC().Format("2006-01-02 15:04 UTC")
	}
	spansA := make([]evidence.Span, len(p.Figures.Passages))
	spansB := make([]evidence.Span, len(p.Figures.Passages))
	for i, ps := range p.Figures.Passages {
		spansA[i], spansB[i] = ps.A, ps.B
		page.Passages = append(page.Passages, passageRow{
			N: i + 1, Words: ps.A.Words, AWords: ps.A.Words, BWords: ps.B.Words,
			APos:    fmt.Sprintf("%d:%d–%d:%d", ps.A.Line, ps.A.Col, ps.A.EndLine, ps.A.EndCol),
			BPos:    fmt.Sprintf("%d:%d–%d:%d", ps.B.Line, ps.B.Col, ps.B.EndLine, ps.B.EndCol),
			Excerpt: Excerpt(p.TextA[ps.A.Start:ps.A.End], 160),
		})
	}
	page.SegA = segments(p.TextA, spansA)
	page.SegB = segments(p.TextB, spansB)
	return compareTemplate.Execute(w, page)
}

func inside(s evidence.Span, text []byte) bool {
	return s.Start >= 0 && s.Start <= s.End && s.End <= int64(len(text))
}

// segments cuts text at the passages' boundaries; each piece belongs to
// the first (longest) passage covering it. One sweep over the boundaries,
// with the passages covering the current piece in a heap by index.
func segments(text []byte, spans []evidence.Span) []segment {
	type event struct {
		at    int64
		start bool
		p     int // passage index + 1
	}
	events := make([]event, 0, 2*len(spans))
	for i, s := range spans {
		if s.Start < s.End {
			events = append(events, event{s.Start, true, i + 1}, event{s.End, false, i + 1})
		}
	}
	slices.SortFunc(events, func(x, y event) int { return cmp.Compare(x.at, y.at) })
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
	seen := make([]bool, len(spans)+1)
	emit := func(lo, hi int64, p int) {
		if lo >= hi {
			return
		}
		seg := segment{Text: string(text[lo:hi]), Passage: p}
		if p > 0 && !seen[p] {
			seg.First, seen[p] = true, true
		}
		if n := len(out); n > 0 && out[n-1].Passage == p && !seg.First {
			out[n-1].Text += seg.Text
			return
		}
		out = append(out, seg)
	}
	var at int64
	for i := 0; i < len(events); {
		next := events[i].at
		emit(at, next, top())
		at = next
		for ; i < len(events) && events[i].at == next; i++ {
			if e := events[i]; e.start {
				heap.Push(&active, e.p)
			} else {
				ended[e.p] = true
			}
		}
	}
	emit(at, int64(len(text)), top())
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
// its end around an ellipsis, white space runs made one space.
func Excerpt(text []byte, max int) string {
	rs := make([]rune, 0, len(text))
	space := false
	for _, r := range string(text) {
		if r == ' ' || r == '\n' || r == '\t' || r == '\r' {
			if !space && len(rs) > 0 {
				rs = append(rs, ' ')
			}
			space = true
			continue
		}
		space = false
		rs = append(rs, r)
	}
	if len(rs) <= max {
		return string(rs)
	}
	head := max * 2 / 3
	tail := max - head - 1
	return string(rs[:head]) + "…" + string(rs[len(rs)-tail:])
}

func percent(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }

var compareTemplate = template.Must(template.New("compare").Funcs(template.FuncMap{
	"percent": percent,
	"fixed":   func(x float64) string { return fmt.Sprintf("%.3f", x) },
	"color":   func(p int) int { return (p - 1) % 8 },
}).Parse(compareHTML))

const compareHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fpdb compare: {{.NameA}} and {{.NameB}}</title>
<style>
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d1d1f; background: #fff; }
header, section { padding: 0 1.5rem; }
h1 { font-size: 1.35rem; margin: 1rem 0 .3rem; }
h2 { font-size: 1.1rem; margin: 1.2rem 0 .4rem; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: .2rem .8rem .2rem 0; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.figures td:first-child { color: #555; }
.cols { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; padding: 0 1.5rem 2rem; }
.col h2 { position: sticky; top: 0; background: #fff; padding: .3rem 0; margin: 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.5 ui-monospace, "SF Mono", Menlo, Consolas, monospace;
      border: 1px solid #ddd; border-radius: 4px; padding: .6rem; margin: 0; max-height: 80vh; overflow-y: auto; }
mark { color: inherit; border-radius: 2px; cursor: pointer; }
mark:focus { outline: 2px solid #000; }
sup.n { font: bold 10px sans-serif; background: #333; color: #fff; border-radius: 3px; padding: 0 3px; margin-right: 2px; }
.c0 { background: #ffe58a; } .c1 { background: #b8e1ff; } .c2 { background: #c8f0c0; } .c3 { background: #ffc9de; }
.c4 { background: #e0d0ff; } .c5 { background: #ffd8b0; } .c6 { background: #b9f0ec; } .c7 { background: #e8e8a0; }
.none { color: #666; }
@media print { pre { max-height: none; } .cols { display: block; } }
</style>
</head>
<body>
<header>
<h1>Comparison of {{.NameA}} and {{.NameB}}</h1>
{{if .Date}}<p class="none">Generated by fpdb on {{.Date}}.</p>{{end}}
</header>
<section>
<table class="figures" id="figures">
<tr><td>Estimated resemblance (fingerprints)</td><td class="num" id="estimated">{{fixed .Figures.Estimated}}</td><td>Hamming distance {{.Figures.Hamming}}{{if .K}} of {{.K}} bits{{end}}</td></tr>
<tr><td>Exact resemblance (Jaccard of shingle sets)</td><td class="num" id="jaccard">{{fixed .Figures.Jaccard}}</td><td>{{.Figures.Shared}} shingles shared</td></tr>
<tr><td>Share of A found in B</td><td class="num" id="contained-a">{{percent .Figures.ContainedA}}</td><td>A: {{.Figures.A.Words}} words, {{.Figures.A.Shingles}} distinct shingles</td></tr>
<tr><td>Share of B found in A</td><td class="num" id="contained-b">{{percent .Figures.ContainedB}}</td><td>B: {{.Figures.B.Words}} words, {{.Figures.B.Shingles}} distinct shingles</td></tr>
</table>
<h2>Shared passages</h2>
{{if .Passages}}
<table id="passages">
<tr><th>#</th><th>Words</th><th>In A (line:column)</th><th>In B (line:column)</th><th>Text</th></tr>
{{range .Passages}}<tr><td><a href="#a{{.N}}">{{.N}}</a></td><td class="num">{{.Words}}</td><td>{{.APos}}</td><td>{{.BPos}}</td><td>{{.Excerpt}}</td></tr>
{{end}}</table>
{{else}}<p class="none" id="passages">No shared passage.</p>{{end}}
</section>
<div class="cols">
<div class="col"><h2>A: {{.NameA}}</h2><pre id="text-a">{{range .SegA}}{{if .Passage}}<mark class="c{{color .Passage}}" data-p="{{.Passage}}" tabindex="0"{{if .First}} id="a{{.Passage}}"{{end}}>{{if .First}}<sup class="n">{{.Passage}}</sup>{{end}}{{.Text}}</mark>{{else}}{{.Text}}{{end}}{{end}}</pre></div>
<div class="col"><h2>B: {{.NameB}}</h2><pre id="text-b">{{range .SegB}}{{if .Passage}}<mark class="c{{color .Passage}}" data-p="{{.Passage}}" tabindex="0"{{if .First}} id="b{{.Passage}}"{{end}}>{{if .First}}<sup class="n">{{.Passage}}</sup>{{end}}{{.Text}}</mark>{{else}}{{.Text}}{{end}}{{end}}</pre></div>
</div>
<script>
// Clicking (or Enter on) a passage in one text scrolls the other to it.
function jump(m) {
  var other = m.closest("pre").id === "text-a" ? "b" : "a";
  var t = document.getElementById(other + m.dataset.p);
  if (t) { t.scrollIntoView({block: "center"}); t.focus({preventScroll: true}); }
}
document.querySelectorAll("mark[data-p]").forEach(function (m) {
  m.addEventListener("click", function () { jump(m); });
  m.addEventListener("keydown", function (e) { if (e.key === "Enter") jump(m); });
});
</script>
</body>
</html>
`
