package report

import (
	"fmt"
	"html/template"

	"github.com/fpdb/fpdb/internal/evidence"
)

// The pieces both pages render: the figures of one comparison and its
// shared passages, side by side. WriteCompare and WriteReport render them
// through the same templates ("figures" and "passages"), fed a pairView.

// dateLayout is how the pages print their date.
const dateLayout = "2006-01-02 15:04 UTC"

// Excerpt lengths, in characters: the compare page shows both texts whole
// besides its passage table; the report shows only the passages.
const (
	compareExcerpt = 160
	reportExcerpt  = 400
)

// passageRow is a line of the passage table: a passage's length, and where
// it is and what it says in each text.
type passageRow struct {
	N            int
	Words        int
	APos, BPos   string
	AText, BText string
}

// pairView is what the "figures" and "passages" templates render.
type pairView struct {
	// Prefix starts every element id, unique on the page.
	Prefix  string
	Figures *evidence.Comparison
	K       int
	Rows    []passageRow
	// Link makes each passage number a link to the passage in text A
	// (the compare page, which holds the texts).
	Link bool
	// Omitted is the number of shorter passages left out of Rows.
	Omitted int
}

// checkSpans returns an error unless every passage lies inside its texts.
func checkSpans(textA, textB []byte, ps []evidence.Passage) error {
	for i, p := range ps {
		if !inside(p.A, textA) || !inside(p.B, textB) {
			return fmt.Errorf("report: passage %d lies outside its texts", i+1)
		}
	}
	return nil
}

// passageRows returns the table rows of ps (checked by checkSpans), with
// excerpts of about excerptLen characters of what each passage shows
// (evidence.Readable: a markup text's readable text); markupA and
// markupB say whether textA and textB are markup (evidence.Side.Markup).
func passageRows(textA, textB []byte, markupA, markupB bool, ps []evidence.Passage, excerptLen int) []passageRow {
	ra := make([][2]int64, len(ps))
	rb := make([][2]int64, len(ps))
	for i, p := range ps {
		ra[i], rb[i] = [2]int64{p.A.Start, p.A.End}, [2]int64{p.B.Start, p.B.End}
	}
	shownA, shownB := evidence.Readable(textA, markupA, ra), evidence.Readable(textB, markupB, rb)
	rows := make([]passageRow, 0, len(ps))
	for i, p := range ps {
		rows = append(rows, passageRow{
			N: i + 1, Words: p.A.Words,
			APos:  position(p.A),
			BPos:  position(p.B),
			AText: excerpt(shownA[i], excerptLen),
			BText: excerpt(shownB[i], excerptLen),
		})
	}
	return rows
}

// position says where s is: "line:column–line:column".
func position(s evidence.Span) string {
	return fmt.Sprintf("%d:%d–%d:%d", s.Line, s.Col, s.EndLine, s.EndCol)
}

// percent and fixed show a share on the pages: see Fraction and Percent.
func percent(x float64) string { return Percent(x) }

func fixed(x float64) string { return Fraction(x) }

// pages holds every template: the pieces, "compare" and "report".
var pages = func() *template.Template {
	t := template.Must(template.New("pieces").Funcs(template.FuncMap{
		"percent": percent,
		"fixed":   fixed,
		"color":   func(p int) int { return (p - 1) % 8 },
	}).Parse(piecesHTML))
	template.Must(t.New("compare").Parse(compareHTML))
	template.Must(t.New("report").Parse(reportHTML))
	return t
}()

// baseCSS is the style both pages share.
const baseCSS = `body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d1d1f; background: #fff; }
header, section { padding: 0 1.5rem; }
h1 { font-size: 1.35rem; margin: 1rem 0 .3rem; }
h2 { font-size: 1.1rem; margin: 1.2rem 0 .4rem; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: .2rem .8rem .2rem 0; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.figures td:first-child { color: #555; }
table.passages { width: 100%; }
table.passages td.side { width: 46%; }
table.passages tr + tr td { border-top: 1px solid #e4e4e4; }
.pos { display: block; color: #555; font-size: 13px; }
.ptext { background: #fff3bf; border-radius: 2px; }
.none, .note { color: #666; }
`

// piecesHTML defines the templates both pages use. Element ids start with
// the view's prefix, so that a page may hold many comparisons.
const piecesHTML = `{{define "figures"}}<table class="figures" id="{{.Prefix}}figures">
<tr><td>Estimated resemblance (fingerprints)</td><td class="num" id="{{.Prefix}}estimated">{{fixed .Figures.Estimated}}</td><td>Hamming distance {{.Figures.Hamming}}{{if .K}} of {{.K}} bits{{end}}</td></tr>
<tr><td>Exact resemblance (Jaccard of shingle sets)</td><td class="num" id="{{.Prefix}}jaccard">{{fixed .Figures.Jaccard}}</td><td>{{.Figures.Shared}} shingles shared</td></tr>
<tr><td>Share of A found in B</td><td class="num" id="{{.Prefix}}contained-a">{{percent .Figures.ContainedA}}</td><td>A: {{.Figures.A.Words}} words, {{.Figures.A.Shingles}} distinct shingles</td></tr>
<tr><td>Share of B found in A</td><td class="num" id="{{.Prefix}}contained-b">{{percent .Figures.ContainedB}}</td><td>B: {{.Figures.B.Words}} words, {{.Figures.B.Shingles}} distinct shingles</td></tr>
</table>{{end}}
{{define "passages"}}{{if .Rows}}<table class="passages" id="{{.Prefix}}passages">
<thead><tr><th>#</th><th>Words</th><th>In A (line:column)</th><th>In B (line:column)</th></tr></thead>
<tbody>
{{range .Rows}}<tr><td>{{if $.Link}}<a href="#a{{.N}}">{{.N}}</a>{{else}}{{.N}}{{end}}</td><td class="num">{{.Words}}</td><td class="side"><span class="pos">{{.APos}}</span><span class="ptext">{{.AText}}</span></td><td class="side"><span class="pos">{{.BPos}}</span><span class="ptext">{{.BText}}</span></td></tr>
{{end}}</tbody>
</table>{{if .Omitted}}
<p class="note" id="{{.Prefix}}passages-omitted">Left out: {{.Omitted}} shorter shared passage{{if ne .Omitted 1}}s{{end}}.</p>{{end}}
{{else}}<p class="none" id="{{.Prefix}}passages">No shared passage.</p>{{end}}{{end}}
`
