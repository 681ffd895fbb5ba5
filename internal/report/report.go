package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fpdb/fpdb/internal/evidence"
)

// MatrixMembers is the most members a cluster's picture shows: a larger
// cluster's picture shows its first MatrixMembers members, and says so.
const MatrixMembers = 40

// Report is a near-duplicate report of a database at one threshold, for
// WriteReport.
type Report struct {
	// Database names the database (its directory).
	Database string
	// Threshold is the least estimated resemblance of a pair.
	Threshold float64
	// Mode says how the clusters were made, in words (e.g. "connected
	// components of the pairs").
	Mode string
	// Generated is the time printed as the report's date; zero: none.
	Generated time.Time
	// K is the fingerprint length in bits; ShingleWidth the words per
	// shingle.
	K, ShingleWidth int
	// Documents is the number of stored documents.
	Documents int
	// Clusters are the clusters shown, largest first (WriteReport keeps
	// the given order among clusters of equal size).
	Clusters []Cluster
	// OmittedClusters, OmittedDocuments and OmittedPairs count the
	// clusters found but not shown, their members and their pairs.
	OmittedClusters, OmittedDocuments, OmittedPairs int
	// MaxClusters, MaxPairs and MaxPassages are the limits the report was
	// made with (0: none), and MinWords the shortest passage reported;
	// the page states them.
	MaxClusters, MaxPairs, MaxPassages, MinWords int
}

// Cluster is one cluster of a Report.
type Cluster struct {
	// Members are the cluster's documents, in the order the picture and
	// its legend show them (the center first, say).
	Members []string
	// Center is the member Cohesion is measured from; Kept says that it
	// is the document to keep.
	Center string
	Kept   bool
	// Cohesion is the least estimated resemblance of a member to Center.
	Cohesion float64
	// TotalPairs is the number of pairs inside the cluster; Pairs are
	// those shown (WriteReport sorts them, most similar first).
	TotalPairs int
	Pairs      []ClusterPair
	// Matrix holds the estimated resemblance of Members[i] and Members[j]
	// at [i][j], for i and j below len(Matrix) (at most len(Members)): the
	// picture's cells. A shorter Matrix than Members (or one longer than
	// MatrixMembers, which is cut) is noted on the page.
	Matrix [][]float64
}

// ClusterPair is a pair of near duplicates in a cluster.
type ClusterPair struct {
	// A and B are the documents' ids.
	A, B string
	// Similarity is the estimated resemblance and Hamming the Hamming
	// distance of the fingerprints; Exact reports identical normalized
	// texts.
	Similarity float64
	Hamming    int
	Exact      bool
	// Evidence is the comparison of the two stored texts (NewEvidence);
	// nil when it was not made, and NoText then says why.
	Evidence *Evidence
	NoText   string
	// EstContainedA and EstContainedB, when HasEstimate, are the shares
	// of A in B and of B in A estimated from Similarity and the
	// documents' shingle counts: shown without Evidence.
	EstContainedA, EstContainedB float64
	HasEstimate                  bool
}

// Evidence is what a report shows of one comparison: its figures and the
// excerpts of its longest passages, without the texts themselves.
type Evidence struct {
	// Figures are the comparison's figures; its Passages are dropped.
	Figures evidence.Comparison
	// Passages is the number of shared passages found.
	Passages int
	rows     []passageRow
}

// NewEvidence keeps of a comparison of textA and textB what a report
// shows: the figures, and excerpts of the longest maxPassages passages
// (0: all) in both texts, of what they show (evidence.Readable: for a
// markup side, c.A.Markup or c.B.Markup, the text a reader sees).
func NewEvidence(textA, textB []byte, c *evidence.Comparison, maxPassages int) (*Evidence, error) {
	if c == nil {
		return nil, fmt.Errorf("report: no figures")
	}
	if maxPassages < 0 {
		return nil, fmt.Errorf("report: negative passage limit %d", maxPassages)
	}
	if err := checkSpans(textA, textB, c.Passages); err != nil {
		return nil, err
	}
	ps := c.Passages
	if maxPassages > 0 && len(ps) > maxPassages {
		ps = ps[:maxPassages]
	}
	e := &Evidence{Figures: *c, Passages: len(c.Passages), rows: passageRows(textA, textB, c.A.Markup, c.B.Markup, ps, reportExcerpt)}
	e.Figures.Passages = nil
	return e, nil
}

// reportPage is what the "report" template renders.
type reportPage struct {
	Report
	Date      string
	Threshold string
	InCluster int // documents in the clusters shown
	Pairs     int // pairs in the clusters shown
	Clusters  []clusterView
	Top       int // clusters shown
	Found     int // clusters found
}

type clusterView struct {
	N int
	Cluster
	Chains   bool // cohesion below the threshold
	Pairs    []pairItem
	Omitted  int // pairs left out
	Picture  *matrix
	Pictured int      // members in the picture
	Listed   []string // members in the legend
	Unlisted int      // members left out of it
}

type pairItem struct {
	ClusterPair
	ID   string
	View pairView // with Evidence
}

// WriteReport writes the HTML page of r to w: one self-contained file
// (styles inline, pictures as inline SVG, no external resource), readable
// without JavaScript. The same r gives the same bytes.
func WriteReport(w io.Writer, r Report) error {
	page := reportPage{Report: r, Threshold: strconv.FormatFloat(r.Threshold, 'f', -1, 64)}
	if !r.Generated.IsZero() {
		page.Date = r.Generated.UTC().Format(dateLayout)
	}
	clusters := slices.Clone(r.Clusters)
	slices.SortStableFunc(clusters, func(a, b Cluster) int { return cmp.Compare(len(b.Members), len(a.Members)) })
	for i, c := range clusters {
		v, err := clusterPage(i+1, shownIDs(c), r)
		if err != nil {
			return err
		}
		page.InCluster += len(c.Members)
		page.Pairs += c.TotalPairs
		page.Clusters = append(page.Clusters, v)
	}
	page.Top = len(page.Clusters)
	page.Found = page.Top + r.OmittedClusters
	return pages.ExecuteTemplate(w, "report", page)
}

// shownIDs returns c with its ids as the page shows them (ShownID; a
// copy: c's slices are the caller's).
func shownIDs(c Cluster) Cluster {
	id := ShownID
	c.Members = slices.Clone(c.Members)
	for i, m := range c.Members {
		c.Members[i] = id(m)
	}
	c.Center = id(c.Center)
	c.Pairs = slices.Clone(c.Pairs)
	for i := range c.Pairs {
		c.Pairs[i].A, c.Pairs[i].B = id(c.Pairs[i].A), id(c.Pairs[i].B)
	}
	return c
}

// ShownID returns an id (or a path, a name) as a page or a line of text
// shows it: as it is, unless it starts with a double quote or holds an
// Unsafe character (a control or a bidirectional formatting character) or
// invalid UTF-8, when it is Go-quoted (strconv.Quote: "a\u202efdp.exe").
// An id holding U+202E (right-to-left override) would otherwise show
// reversed, "report\u202Efdp.exe" as "reportexe.pdf", and reorder the text
// around it; quoted, it stays one id that can be given back (fpdb delete -
// unquotes such a line).
func ShownID(id string) string {
	if strings.HasPrefix(id, `"`) || strings.ContainsFunc(id, Unsafe) || !utf8.ValidString(id) {
		return strconv.Quote(id)
	}
	return id
}

// clusterPage checks c and prepares it for the page as cluster n.
func clusterPage(n int, c Cluster, r Report) (clusterView, error) {
	v := clusterView{N: n, Cluster: c, Chains: c.Cohesion < r.Threshold}
	if len(c.Pairs) > c.TotalPairs {
		return v, fmt.Errorf("report: cluster %d: %d pairs shown of %d", n, len(c.Pairs), c.TotalPairs)
	}
	v.Omitted = c.TotalPairs - len(c.Pairs)
	v.Listed = c.Members[:min(len(c.Members), ListMembers)]
	v.Unlisted = len(c.Members) - len(v.Listed)
	pairs := slices.Clone(c.Pairs)
	slices.SortFunc(pairs, func(a, b ClusterPair) int {
		if d := cmp.Compare(b.Similarity, a.Similarity); d != 0 {
			return d
		}
		if d := cmp.Compare(a.A, b.A); d != 0 {
			return d
		}
		return cmp.Compare(a.B, b.B)
	})
	for j, p := range pairs {
		it := pairItem{ClusterPair: p, ID: fmt.Sprintf("c%d-p%d", n, j+1)}
		if e := p.Evidence; e != nil {
			it.View = pairView{Prefix: it.ID + "-", Figures: &e.Figures, K: r.K, Rows: e.rows, Omitted: e.Passages - len(e.rows)}
		}
		v.Pairs = append(v.Pairs, it)
	}
	m, err := newMatrix(c, r.Threshold)
	if err != nil {
		return v, fmt.Errorf("report: cluster %d: %w", n, err)
	}
	v.Picture = m
	if m != nil {
		v.Pictured = m.N
	}
	return v, nil
}

// matrix is the picture of a cluster: a heat map of the estimated
// resemblance of every two members, as inline SVG.
type matrix struct {
	N             int
	Size          int // width and height of the SVG
	Margin        int // room for the member numbers
	Labels        []label
	Cells         []cell
	Font, CellFnt float64
}

type label struct {
	N    int
	X, Y float64
	Top  bool
}

type cell struct {
	X, Y, W   int
	Fill      string
	Ink       string // the value's colour
	Title     string
	Value     string // printed in the cell when it is large enough
	Pair      bool   // at or above the threshold
	Self      bool   // the diagonal
	Row, Col  int
	TextX     float64
	TextY     float64
	ShowValue bool
}

// newMatrix returns the picture of c, or nil when c has no Matrix.
func newMatrix(c Cluster, threshold float64) (*matrix, error) {
	n := len(c.Matrix)
	if n == 0 {
		return nil, nil
	}
	if n > len(c.Members) {
		return nil, fmt.Errorf("a matrix of %d members for %d", n, len(c.Members))
	}
	n = min(n, MatrixMembers)
	for i := range n {
		if len(c.Matrix[i]) < n {
			return nil, fmt.Errorf("matrix row %d has %d values, want %d", i+1, len(c.Matrix[i]), n)
		}
		for j := range n {
			if x := c.Matrix[i][j]; math.IsNaN(x) || x < 0 || x > 1 {
				return nil, fmt.Errorf("matrix value %v at %d, %d is not in [0, 1]", x, i+1, j+1)
			}
		}
	}
	w := min(max(520/n, 12), 44)
	m := &matrix{N: n, Margin: 30, Font: math.Min(11, float64(w)*0.75), CellFnt: math.Min(12, float64(w)*0.32)}
	m.Size = m.Margin + n*w + 2
	for i := range n {
		at := float64(m.Margin) + float64(i*w) + float64(w)/2
		m.Labels = append(m.Labels, label{N: i + 1, X: at, Y: float64(m.Margin) - 6, Top: true}, label{N: i + 1, X: float64(m.Margin) - 4, Y: at + m.Font/3})
	}
	for i := range n {
		for j := range n {
			x := c.Matrix[i][j]
			ce := cell{
				X: m.Margin + j*w, Y: m.Margin + i*w, W: w, Row: i + 1, Col: j + 1,
				Self: i == j, Pair: i != j && x >= threshold, Value: share(x, 1, 2, MaxDecimals),
				TextX: float64(m.Margin+j*w) + float64(w)/2, TextY: float64(m.Margin+i*w) + float64(w)/2 + m.CellFnt/3,
				ShowValue: w >= 30 && i != j,
			}
			ce.Fill, ce.Ink = heat(x)
			if ce.Self {
				ce.Fill = "#d9d9d9"
				ce.Title = fmt.Sprintf("%d: %s", i+1, c.Members[i])
			} else {
				ce.Title = fmt.Sprintf("%d × %d: %s and %s, estimated resemblance %s", i+1, j+1, c.Members[i], c.Members[j], Fraction(x))
			}
			m.Cells = append(m.Cells, ce)
		}
	}
	return m, nil
}

// heat returns the fill colour of a resemblance x in [0, 1], from near
// white to dark blue, and the colour of text on it.
func heat(x float64) (fill, ink string) {
	lo := [3]float64{0xf7, 0xfb, 0xff}
	hi := [3]float64{0x08, 0x30, 0x6b}
	var c [3]int
	for i := range c {
		c[i] = int(math.Round(lo[i] + (hi[i]-lo[i])*x))
	}
	ink = "#1d1d1f"
	if x > 0.55 {
		ink = "#ffffff"
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2]), ink
}

// ListMembers is the most members a cluster's legend lists; the page says
// how many more there are.
const ListMembers = 1000

const reportHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fpdb report: {{.Database}} at threshold {{.Threshold}}</title>
<style>
` + baseCSS + `
table.meta th { font-weight: normal; color: #555; padding-right: 1.2rem; }
table.summary th, table.summary td { border-bottom: 1px solid #e4e4e4; padding: .25rem .9rem .25rem 0; }
section.cluster { border-top: 2px solid #1d1d1f; margin-top: 1.6rem; }
.picture { display: flex; flex-wrap: wrap; gap: 1.2rem; align-items: flex-start; }
.picture svg { flex: none; }
ol.members { margin: 0; padding-left: 2.2rem; font-size: 13px; max-height: 34rem; overflow-y: auto; overflow-wrap: anywhere; }
.id { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: 13px; overflow-wrap: anywhere; }
details.pair { border: 1px solid #d0d0d0; border-radius: 4px; margin: .4rem 0; }
details.pair > summary { cursor: pointer; padding: .35rem .6rem; background: #f5f6f8; }
details.pair[open] > summary { border-bottom: 1px solid #d0d0d0; }
details.pair > .body { padding: .3rem .8rem .6rem; }
.tag { font-size: 12px; border-radius: 3px; padding: 0 4px; background: #e6550d; color: #fff; }
.tag.notext { background: #777; }
.warn { color: #a33; }
dl.defs dt { font-weight: 600; margin-top: .5rem; }
dl.defs dd { margin-left: 1.2rem; }
#open-all { display: none; }
.js #open-all { display: inline-block; }
@media print { details.pair > summary { background: none; } ol.members { max-height: none; } }
</style>
</head>
<body>
<header>
<h1>Near duplicates in {{.Database}} at threshold {{.Threshold}}</h1>
{{if .Date}}<p class="none" id="date">Generated by fpdb on {{.Date}}.</p>{{end}}
<table class="meta" id="meta">
<tr><th>Database</th><td id="database" class="id">{{.Database}}</td></tr>
<tr><th>Threshold</th><td><span id="threshold">{{.Threshold}}</span> <span class="none">(a pair is reported when its estimated resemblance is at least this)</span></td></tr>
<tr><th>Clusters</th><td id="mode">{{.Mode}}</td></tr>
<tr><th>Stored documents</th><td id="documents">{{.Documents}}</td></tr>
<tr><th>Clusters shown</th><td><span id="clusters-shown">{{.Top}}{{if .OmittedClusters}} of {{.Found}}{{end}}</span> <span class="none" id="shown-counts">({{.InCluster}} documents, {{.Pairs}} pairs)</span></td></tr>
<tr><th>Fingerprints</th><td id="params">k = {{.K}} bits, shingles of {{.ShingleWidth}} words</td></tr>
<tr><th>Limits</th><td id="limits">{{if .MaxClusters}}at most {{.MaxClusters}} cluster{{if ne .MaxClusters 1}}s{{end}}{{else}}every cluster{{end}}; {{if .MaxPairs}}at most {{.MaxPairs}} pair{{if ne .MaxPairs 1}}s{{end}} per cluster{{else}}every pair{{end}}; {{if .MaxPassages}}at most {{.MaxPassages}} passage{{if ne .MaxPassages 1}}s{{end}} per pair{{else}}every passage{{end}}; passages of at least {{.MinWords}} word{{if ne .MinWords 1}}s{{end}}</td></tr>
</table>
<p><a href="#definitions">How to read this report</a> <button type="button" id="open-all">Open every pair</button></p>
</header>
<section>
<h2>Clusters</h2>
{{if .Clusters}}<table class="summary" id="summary">
<thead><tr><th>#</th><th>Documents</th><th>Pairs</th><th>Center</th><th>Cohesion</th></tr></thead>
<tbody>
{{range .Clusters}}<tr><td><a href="#cluster-{{.N}}">{{.N}}</a></td><td class="num">{{len .Members}}</td><td class="num">{{.TotalPairs}}</td><td class="id">{{.Center}}{{if .Kept}} (keep){{end}}</td><td class="num{{if .Chains}} warn{{end}}">{{fixed .Cohesion}}</td></tr>
{{end}}</tbody>
</table>{{else}}<p id="no-clusters">No two stored documents reach the threshold: no cluster.</p>{{end}}
{{if .OmittedClusters}}<p class="note" id="omitted-clusters">Left out: {{.OmittedClusters}} smaller cluster{{if ne .OmittedClusters 1}}s{{end}} ({{.OmittedDocuments}} documents, {{.OmittedPairs}} pairs) beyond the limit of {{.MaxClusters}} clusters.</p>{{end}}
</section>
{{range $c := .Clusters}}
<section class="cluster" id="cluster-{{.N}}">
<h2>Cluster {{.N}}: {{len .Members}} documents, {{.TotalPairs}} pair{{if ne .TotalPairs 1}}s{{end}}</h2>
<p>Center <span class="id">{{.Center}}</span>{{if .Kept}} (the document to keep){{end}}; cohesion <span id="c{{.N}}-cohesion">{{fixed .Cohesion}}</span>{{if .Chains}} <span class="warn">— below the threshold: this cluster chains, some members resemble the center only through other members</span>{{end}}.</p>
<div class="picture">
{{with .Picture}}<svg id="matrix-{{$c.N}}" class="matrix" width="{{.Size}}" height="{{.Size}}" viewBox="0 0 {{.Size}} {{.Size}}" role="img" aria-label="estimated resemblance of every two of the first {{.N}} members">
{{range .Labels}}<text x="{{.X}}" y="{{.Y}}" font-size="{{$c.Picture.Font}}" text-anchor="{{if .Top}}middle{{else}}end{{end}}" fill="#555">{{.N}}</text>
{{end}}{{range .Cells}}<rect class="cell{{if .Pair}} pair{{end}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.W}}" fill="{{.Fill}}"{{if .Pair}} stroke="#e6550d" stroke-width="2"{{else}} stroke="#ffffff" stroke-width="1"{{end}}><title>{{.Title}}</title></rect>{{if .ShowValue}}<text x="{{.TextX}}" y="{{.TextY}}" font-size="{{$c.Picture.CellFnt}}" text-anchor="middle" fill="{{.Ink}}">{{.Value}}</text>{{end}}
{{end}}</svg>{{end}}
<div>
<p class="note">Members{{if .Picture}} (the numbers of the picture: darker is more similar, outlined pairs reach the threshold){{end}}:</p>
<ol class="members" id="members-{{.N}}">{{range .Listed}}<li class="id">{{.}}</li>{{end}}</ol>
{{if .Unlisted}}<p class="note" id="c{{.N}}-members-omitted">Left out of this list: {{.Unlisted}} more members.</p>{{end}}
</div>
</div>
{{if lt .Pictured (len .Members)}}<p class="note" id="c{{.N}}-matrix-omitted">{{if .Pictured}}The picture shows the first {{.Pictured}} of the {{len .Members}} members.{{else}}No picture of this cluster.{{end}}</p>{{end}}
<h3>{{if .Omitted}}The {{len .Pairs}} most similar of its {{.TotalPairs}} pairs{{else}}Its pair{{if ne .TotalPairs 1}}s{{end}}{{end}}</h3>
{{range .Pairs}}<details class="pair" id="{{.ID}}">
<summary><span class="id">{{.A}}</span> and <span class="id">{{.B}}</span>: estimated resemblance <b id="{{.ID}}-similarity">{{fixed .Similarity}}</b>{{with .Evidence}}, exact {{fixed .Figures.Jaccard}}, A in B {{percent .Figures.ContainedA}}, B in A {{percent .Figures.ContainedB}}, {{.Passages}} shared passage{{if ne .Passages 1}}s{{end}}{{else}}{{if .HasEstimate}}, A in B ≈ {{percent .EstContainedA}}, B in A ≈ {{percent .EstContainedB}}{{end}} <span class="tag notext">no texts</span>{{end}}{{if .Exact}} <span class="tag">identical text</span>{{end}}</summary>
<div class="body">
<p>A = <span class="id">{{.A}}</span>, B = <span class="id">{{.B}}</span>.</p>
{{if .Evidence}}{{template "figures" .View}}
<h4>Shared passages, longest first</h4>
{{template "passages" .View}}{{else}}<table class="figures" id="{{.ID}}-figures">
<tr><td>Estimated resemblance (fingerprints)</td><td class="num" id="{{.ID}}-estimated">{{fixed .Similarity}}</td><td>Hamming distance {{.Hamming}}{{if $.K}} of {{$.K}} bits{{end}}</td></tr>
{{if .HasEstimate}}<tr><td>Share of A found in B (estimated)</td><td class="num" id="{{.ID}}-contained-a">{{percent .EstContainedA}}</td><td>from the resemblance and the numbers of shingles</td></tr>
<tr><td>Share of B found in A (estimated)</td><td class="num" id="{{.ID}}-contained-b">{{percent .EstContainedB}}</td><td></td></tr>{{end}}
</table>
<p class="note notext" id="{{.ID}}-notext">No exact resemblance and no shared passages for this pair: {{.NoText}}.</p>{{end}}
</div>
</details>
{{end}}{{if .Omitted}}<p class="note" id="c{{.N}}-pairs-omitted">Left out: {{.Omitted}} less similar pair{{if ne .Omitted 1}}s{{end}} of this cluster, beyond the limit of {{$.MaxPairs}} per cluster.</p>{{end}}
</section>
{{end}}
<section id="definitions">
<h2>How to read this report</h2>
<dl class="defs">
<dt>Shingles</dt><dd>Every run of {{.ShingleWidth}} consecutive words of a text, after normalization (case, Unicode forms, punctuation and markup removed).</dd>
<dt>Estimated resemblance</dt><dd>The share of shingles two texts have in common (Jaccard resemblance) as the documents' {{.K}}-bit fingerprints estimate it: 1 − 2·h/{{.K}} for fingerprints h bits apart. It is the figure the threshold applies to, and the one in the pictures.</dd>
<dt>Exact resemblance</dt><dd>The Jaccard resemblance computed from the two stored texts: shingles in both divided by shingles in either.</dd>
<dt>A in B, B in A</dt><dd>The share of A's distinct shingles found in B, and of B's in A: how much of one text the other contains. Marked ≈ when estimated from the fingerprints (no texts stored).</dd>
<dt>Rounding</dt><dd>Figures show 3 decimals (percentages 1). A figure below 1 is never rounded up to 1.000 or 100.0 %, nor one above 0 down to 0.000 or 0.0 %: it shows more decimals, as many as it takes (0.9997, 99.97 %). 1.000 and 100.0 % mean exactly 1.</dd>
<dt>Shared passages</dt><dd>Runs of text, at least {{.MinWords}} word{{if ne .MinWords 1}}s{{end}} long, that both texts hold word for word (after normalization), with their line:column positions; each is shown as it reads in A and in B.</dd>
<dt>Clusters and cohesion</dt><dd>{{.Mode}}. Near duplication is not transitive: a cluster's cohesion is the least estimated resemblance of a member to its center; below the threshold, some members resemble the center only through other members.</dd>
</dl>
</section>
<script>
// Printing opens every pair; the button does it on screen.
document.documentElement.className = "js";
function openAll() { document.querySelectorAll("details.pair").forEach(function (d) { d.open = true; }); }
document.getElementById("open-all").addEventListener("click", openAll);
window.addEventListener("beforeprint", openAll);
</script>
</body>
</html>
`
