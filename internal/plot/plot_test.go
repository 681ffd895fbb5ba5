package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// detectionChart is a detection curve with a threshold mark.
func detectionChart() *Chart {
	var xs, ys []float64
	for i := 0; i <= 20; i++ {
		x := float64(i) / 20
		xs = append(xs, x)
		ys = append(ys, 1/(1+math.Exp(-20*(x-0.7))))
	}
	return &Chart{
		Title:  "Detection curve",
		XLabel: "resemblance",
		YLabel: "P(reported)",
		XMin:   0, XMax: 1, YMin: 0, YMax: 1,
		Series: []Series{{Name: "detection", X: xs, Y: ys}},
		Marks:  []Mark{{X: 0.7, Label: "threshold 0.700"}},
	}
}

// prChart is precision and recall against threshold.
func prChart() *Chart {
	var xs, p, r []float64
	for i := 0; i <= 10; i++ {
		x := float64(i) / 10
		xs = append(xs, x)
		r = append(r, 1-x*x)
		p = append(p, x)
	}
	return &Chart{
		Title:  "Precision and recall",
		XLabel: "threshold",
		YLabel: "rate",
		XMin:   0, XMax: 1, YMin: 0, YMax: 1,
		Series: []Series{{Name: "recall", X: xs, Y: r}, {Name: "precision", X: xs, Y: p, Dashed: true}},
		Marks:  []Mark{{X: 0.5, Label: "threshold 0.500"}},
	}
}

// svgDoc is what the tests read back from an SVG document.
type svgDoc struct {
	root      xml.StartElement
	polylines [][][2]float64
	texts     []string // character data of <text> and <title> elements
	area      [4]float64
	hasArea   bool
}

// parseSVG decodes every token of doc, failing the test on malformed XML.
func parseSVG(t *testing.T, doc []byte) svgDoc {
	t.Helper()
	var out svgDoc
	d := xml.NewDecoder(bytes.NewReader(doc))
	depth := 0
	var inText bool
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				out.root = tok.Copy()
			}
			depth++
			switch tok.Name.Local {
			case "text", "title":
				inText = true
				text.Reset()
			case "polyline":
				out.polylines = append(out.polylines, parsePoints(t, attr(tok, "points")))
			case "rect":
				if attr(tok, "id") == "plot-area" {
					out.hasArea = true
					for i, name := range []string{"x", "y", "width", "height"} {
						out.area[i] = parseNum(t, attr(tok, name))
					}
				}
			}
		case xml.EndElement:
			depth--
			if inText && (tok.Name.Local == "text" || tok.Name.Local == "title") {
				out.texts = append(out.texts, text.String())
				inText = false
			}
		case xml.CharData:
			if inText {
				text.Write(tok)
			}
		}
	}
	if out.root.Name.Local != "svg" {
		t.Fatalf("root element is %q, want svg", out.root.Name.Local)
	}
	if !out.hasArea {
		t.Fatal("no rect with id plot-area")
	}
	return out
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func parseNum(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("bad number %q: %v", s, err)
	}
	return v
}

func parsePoints(t *testing.T, s string) [][2]float64 {
	t.Helper()
	var pts [][2]float64
	for _, f := range strings.Fields(s) {
		x, y, ok := strings.Cut(f, ",")
		if !ok {
			t.Fatalf("bad point %q in %q", f, s)
		}
		pts = append(pts, [2]float64{parseNum(t, x), parseNum(t, y)})
	}
	return pts
}

func renderSVG(t *testing.T, c *Chart) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := c.SVG(&buf); err != nil {
		t.Fatalf("SVG: %v", err)
	}
	return buf.Bytes()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestSVGStructure(t *testing.T) {
	for _, c := range []*Chart{detectionChart(), prChart()} {
		t.Run(c.Title, func(t *testing.T) {
			doc := parseSVG(t, renderSVG(t, c))
			if got := attr(doc.root, "xmlns"); got != "http://www.w3.org/2000/svg" {
				t.Errorf("xmlns = %q", got)
			}
			w, h := attr(doc.root, "width"), attr(doc.root, "height")
			if w == "" || h == "" || attr(doc.root, "viewBox") != "0 0 "+w+" "+h {
				t.Errorf("width %q height %q viewBox %q", w, h, attr(doc.root, "viewBox"))
			}
			if len(doc.polylines) != len(c.Series) {
				t.Errorf("%d polylines, want %d", len(doc.polylines), len(c.Series))
			}
			want := []string{c.Title, c.XLabel, c.YLabel}
			for _, m := range c.Marks {
				want = append(want, m.Label)
			}
			for _, s := range c.Series {
				want = append(want, s.Name)
			}
			for _, s := range want {
				if !contains(doc.texts, s) {
					t.Errorf("no text %q in %q", s, doc.texts)
				}
			}
			// Tick labels of [0, 1].
			for _, s := range []string{"0.0", "0.5", "1.0"} {
				if !contains(doc.texts, s) {
					t.Errorf("no tick label %q in %q", s, doc.texts)
				}
			}
		})
	}
}

func TestSVGDistinctColoursAndDash(t *testing.T) {
	out := string(renderSVG(t, prChart()))
	if !strings.Contains(out, `stroke="`+seriesColor(0)+`"`) || !strings.Contains(out, `stroke="`+seriesColor(1)+`"`) {
		t.Error("series colours missing")
	}
	if seriesColor(0) == seriesColor(1) {
		t.Error("first two colours equal")
	}
	if !strings.Contains(out, `stroke-dasharray="6 4" points=`) {
		t.Error("dashed series has no stroke-dasharray")
	}
}

func TestSVGEscaping(t *testing.T) {
	c := detectionChart()
	c.Title = `a<b & c>d "q"`
	c.Series[0].Name = "<series>"
	c.Marks[0].Label = "t&m"
	out := renderSVG(t, c)
	if bytes.Contains(out, []byte("a<b")) || bytes.Contains(out, []byte("<series>")) || bytes.Contains(out, []byte("t&m")) {
		t.Errorf("unescaped text in output:\n%s", out)
	}
	doc := parseSVG(t, out)
	for _, s := range []string{c.Title, "<series>", "t&m"} {
		if !contains(doc.texts, s) {
			t.Errorf("text %q does not round-trip; texts %q", s, doc.texts)
		}
	}
	// Invalid UTF-8 and control characters must not break the XML.
	c.Title = "bad\xff\x01title"
	parseSVG(t, renderSVG(t, c))
}

// within reports whether (x, y) is inside the plot area, allowing for the
// two-decimal rounding of coordinates.
func within(area [4]float64, p [2]float64) bool {
	const tol = 0.006
	return p[0] >= area[0]-tol && p[0] <= area[0]+area[2]+tol &&
		p[1] >= area[1]-tol && p[1] <= area[1]+area[3]+tol
}

func TestSVGPointsInsidePlotArea(t *testing.T) {
	cases := []*Chart{detectionChart(), prChart()}
	// Data far outside a narrow explicit range must be clipped.
	wild := prChart()
	wild.XMin, wild.XMax, wild.YMin, wild.YMax = 0.2, 0.6, 0.3, 0.5
	wild.Series = append(wild.Series, Series{Name: "wild", X: []float64{-5, 0.4, 7, 0.3}, Y: []float64{-3, 0.4, 9, -1e300}})
	cases = append(cases, wild)
	for i, c := range cases {
		doc := parseSVG(t, renderSVG(t, c))
		if len(doc.polylines) == 0 {
			t.Errorf("case %d: no polylines", i)
		}
		for _, pl := range doc.polylines {
			if len(pl) < 2 {
				t.Errorf("case %d: polyline with %d points", i, len(pl))
			}
			for _, p := range pl {
				if !within(doc.area, p) {
					t.Errorf("case %d: point %v outside plot area %v", i, p, doc.area)
				}
			}
		}
	}
}

func TestSVGSeriesLeavingPlotArea(t *testing.T) {
	c := &Chart{
		XMin: 0, XMax: 1, YMin: 0, YMax: 1,
		Series: []Series{{Name: "spike", X: []float64{0, 0.5, 1}, Y: []float64{0.5, 1.5, 0.5}}},
	}
	doc := parseSVG(t, renderSVG(t, c))
	if len(doc.polylines) != 2 {
		t.Fatalf("%d polylines, want 2 (the series leaves the top and comes back): %v", len(doc.polylines), doc.polylines)
	}
	top := doc.area[1]
	first, second := doc.polylines[0], doc.polylines[1]
	if end := first[len(first)-1]; math.Abs(end[1]-top) > 0.01 {
		t.Errorf("first run ends at %v, want the top edge y=%v", end, top)
	}
	if start := second[0]; math.Abs(start[1]-top) > 0.01 {
		t.Errorf("second run starts at %v, want the top edge y=%v", start, top)
	}
	// Exit at x=0.25 and re-entry at x=0.75 of the plot width.
	x0, w := doc.area[0], doc.area[2]
	if got := first[len(first)-1][0]; math.Abs(got-(x0+w/4)) > 0.01 {
		t.Errorf("exit at x=%v, want %v", got, x0+w/4)
	}
	if got := second[0][0]; math.Abs(got-(x0+3*w/4)) > 0.01 {
		t.Errorf("re-entry at x=%v, want %v", got, x0+3*w/4)
	}
}

func TestSVGCornerMapping(t *testing.T) {
	c := &Chart{
		XMin: -2, XMax: 3, YMin: 10, YMax: 20,
		Series: []Series{{Name: "diag", X: []float64{-2, 3}, Y: []float64{10, 20}}},
	}
	doc := parseSVG(t, renderSVG(t, c))
	if len(doc.polylines) != 1 || len(doc.polylines[0]) != 2 {
		t.Fatalf("polylines %v, want one of two points", doc.polylines)
	}
	x, y, w, h := doc.area[0], doc.area[1], doc.area[2], doc.area[3]
	if w <= 0 || h <= 0 {
		t.Fatalf("plot area %v", doc.area)
	}
	bl, tr := doc.polylines[0][0], doc.polylines[0][1]
	if bl != [2]float64{x, y + h} {
		t.Errorf("(XMin, YMin) maps to %v, want bottom-left %v", bl, [2]float64{x, y + h})
	}
	if tr != [2]float64{x + w, y} {
		t.Errorf("(XMax, YMax) maps to %v, want top-right %v", tr, [2]float64{x + w, y})
	}
	// A middle point maps to the middle.
	c.Series[0] = Series{X: []float64{0.5, 0.5}, Y: []float64{15, 15}}
	doc = parseSVG(t, renderSVG(t, c))
	if got, want := doc.polylines[0][0], [2]float64{x + w/2, y + h/2}; math.Abs(got[0]-want[0]) > 0.01 || math.Abs(got[1]-want[1]) > 0.01 {
		t.Errorf("centre maps to %v, want %v", got, want)
	}
}

func TestSVGDeterministic(t *testing.T) {
	a := renderSVG(t, prChart())
	b := renderSVG(t, prChart())
	if !bytes.Equal(a, b) {
		t.Error("two renderings of the same chart differ")
	}
	var ta, tb bytes.Buffer
	if err := prChart().Text(&ta, 50, 12); err != nil {
		t.Fatal(err)
	}
	if err := prChart().Text(&tb, 50, 12); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ta.Bytes(), tb.Bytes()) {
		t.Error("two text renderings of the same chart differ")
	}
}

func TestValidateErrors(t *testing.T) {
	good := func() Series { return Series{Name: "s", X: []float64{0, 1}, Y: []float64{0, 1}} }
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name  string
		chart *Chart
		want  string // substring of the error
	}{
		{"nil chart", nil, "nil chart"},
		{"no series", &Chart{}, "no series"},
		{"length mismatch", &Chart{Series: []Series{{X: []float64{0, 1}, Y: []float64{0}}}}, "2 X values but 1 Y values"},
		{"no points", &Chart{Series: []Series{{Name: "e"}}}, "has no points"},
		{"NaN X", &Chart{Series: []Series{{X: []float64{0, nan}, Y: []float64{0, 1}}}}, "X[1] is NaN"},
		{"Inf Y", &Chart{Series: []Series{{X: []float64{0, 1}, Y: []float64{inf, 1}}}}, "Y[0] is +Inf"},
		{"NaN mark", &Chart{Series: []Series{good()}, Marks: []Mark{{X: nan, Label: "m"}}}, "mark 0"},
		{"NaN XMax", &Chart{XMax: nan, Series: []Series{good()}}, "XMax is NaN"},
		{"Inf YMin", &Chart{YMin: math.Inf(-1), Series: []Series{good()}}, "YMin is -Inf"},
		{"inverted X", &Chart{XMin: 1, XMax: 0, Series: []Series{good()}}, "X range is inverted"},
		{"inverted Y", &Chart{YMin: 1, YMax: 0.5, Series: []Series{good()}}, "Y range is inverted"},
		{"empty X from data", &Chart{Series: []Series{{X: []float64{2, 2}, Y: []float64{0, 1}}}}, "X range is empty"},
		{"empty Y from data", &Chart{Series: []Series{{X: []float64{0, 1}, Y: []float64{3, 3}}}}, "Y range is empty"},
		{"too wide", &Chart{Series: []Series{{X: []float64{-math.MaxFloat64, math.MaxFloat64}, Y: []float64{0, 1}}}}, "too wide"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.chart.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want error containing %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), "plot: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %q, want prefix \"plot: \" and %q", err, tc.want)
			}
			// SVG and Text refuse the chart too, writing nothing.
			var buf bytes.Buffer
			if err := tc.chart.SVG(&buf); err == nil || buf.Len() != 0 {
				t.Errorf("SVG: err %v, wrote %d bytes", err, buf.Len())
			}
			if err := tc.chart.Text(&buf, 40, 10); err == nil || buf.Len() != 0 {
				t.Errorf("Text: err %v, wrote %d bytes", err, buf.Len())
			}
		})
	}
}

func TestValidateOK(t *testing.T) {
	cases := map[string]*Chart{
		"detection":    detectionChart(),
		"pr":           prChart(),
		"single point": {XMin: 0, XMax: 1, YMin: 0, YMax: 1, Series: []Series{{X: []float64{0.5}, Y: []float64{0.5}}}},
		// The mark widens the X range taken from the data.
		"mark sets range": {Series: []Series{{X: []float64{1, 1}, Y: []float64{0, 1}}}, Marks: []Mark{{X: 0}}},
	}
	for name, c := range cases {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: Validate() = %v", name, err)
		}
	}
}

func TestRangeFromData(t *testing.T) {
	c := &Chart{Series: []Series{
		{X: []float64{0.6, 0.8}, Y: []float64{0.1, 0.4}},
		{X: []float64{0.7, 1.0}, Y: []float64{0.2, 0.3}},
	}}
	b, err := c.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if want := (bounds{0.6, 1.0, 0.1, 0.4}); b != want {
		t.Errorf("bounds %+v, want %+v", b, want)
	}
}

func renderText(t *testing.T, c *Chart, w, h int) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Text(&buf, w, h); err != nil {
		t.Fatalf("Text: %v", err)
	}
	out := buf.String()
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("output does not end in a newline: %q", out)
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// gridOf returns the plot-area cells of a text rendering: the height lines
// containing " |" (or " +" for the axis), cut at the axis column and padded
// to width.
func gridOf(t *testing.T, lines []string, w, h int) []string {
	t.Helper()
	axis := -1
	for i, l := range lines {
		if strings.Contains(l, "+---") {
			axis = i
			break
		}
	}
	if axis < h {
		t.Fatalf("no x axis after %d grid rows in\n%s", h, strings.Join(lines, "\n"))
	}
	col := strings.Index(lines[axis], "+")
	var grid []string
	for _, l := range lines[axis-h : axis] {
		if len(l) <= col || l[col] != '|' {
			t.Fatalf("row %q has no '|' at column %d", l, col)
		}
		cells := l[col+1:]
		grid = append(grid, cells+strings.Repeat(" ", w-len(cells)))
	}
	return grid
}

func TestTextCornersAndContinuity(t *testing.T) {
	const w, h = 41, 11
	c := &Chart{
		XMin: 0, XMax: 1, YMin: 0, YMax: 1,
		Series: []Series{{Name: "up", X: []float64{0, 0.3, 1}, Y: []float64{0, 0.2, 1}}},
	}
	lines := renderText(t, c, w, h)
	grid := gridOf(t, lines, w, h)
	if grid[h-1][0] != '*' {
		t.Errorf("bottom-left cell %q, want '*'\n%s", grid[h-1][0], strings.Join(lines, "\n"))
	}
	if grid[0][w-1] != '*' {
		t.Errorf("top-right cell %q, want '*'\n%s", grid[0][w-1], strings.Join(lines, "\n"))
	}
	// Continuity: every column and every row holds the series character.
	for col := range w {
		found := false
		for r := range h {
			found = found || grid[r][col] == '*'
		}
		if !found {
			t.Errorf("column %d has no '*'\n%s", col, strings.Join(lines, "\n"))
		}
	}
	for r := range h {
		if !strings.Contains(grid[r], "*") {
			t.Errorf("row %d has no '*'", r)
		}
	}
	// Y labels of the top and bottom rows.
	for _, r := range []struct {
		row  int
		want float64
	}{{0, 1}, {h - 1, 0}} {
		lab, _, _ := strings.Cut(lines[r.row], "|")
		if lab = strings.TrimSpace(lab); lab == "" || parseNum(t, lab) != r.want {
			t.Errorf("row %d %q: label %q, want %v", r.row, lines[r.row], lab, r.want)
		}
	}
	// X tick labels below the axis.
	fields := strings.Fields(lines[h+1])
	if len(fields) < 3 || parseNum(t, fields[0]) != 0 || parseNum(t, fields[len(fields)-1]) != 1 {
		t.Errorf("x tick labels %q, want 0 ... 1", lines[h+1])
	}
}

func TestTextMarkAndLegend(t *testing.T) {
	const w, h = 41, 9
	c := prChart()
	lines := renderText(t, c, w, h)
	all := strings.Join(lines, "\n")
	if lines[0] != c.Title || lines[1] != c.YLabel {
		t.Errorf("first lines %q, want title and Y label", lines[:2])
	}
	grid := gridOf(t, lines, w, h)
	mid := (w - 1) / 2
	bars := 0
	for r := range h {
		if grid[r][mid] == '|' {
			bars++
		}
		for col := range w {
			if col != mid && grid[r][col] == '|' {
				t.Errorf("'|' at row %d column %d, off the mark", r, col)
			}
		}
	}
	// The two series cross the mark's column in at most two rows.
	if bars < h-2 {
		t.Errorf("middle column holds '|' in %d of %d rows\n%s", bars, h, all)
	}
	for _, ch := range []string{"*", "o"} {
		if !strings.Contains(strings.Join(grid, ""), ch) {
			t.Errorf("series character %q not drawn\n%s", ch, all)
		}
	}
	if want := "* recall  o precision  | threshold 0.500"; lines[len(lines)-1] != want {
		t.Errorf("legend %q, want %q", lines[len(lines)-1], want)
	}
	if !strings.Contains(all, c.XLabel) {
		t.Errorf("no X label in\n%s", all)
	}
	for i, l := range lines {
		if strings.HasSuffix(l, " ") {
			t.Errorf("line %d has trailing spaces: %q", i, l)
		}
		for _, r := range l {
			if r > 0x7e || r < 0x20 {
				t.Errorf("line %d has non-ASCII %q", i, r)
			}
		}
	}
}

func TestTextSizeLimits(t *testing.T) {
	c := prChart()
	for _, sz := range [][2]int{{19, 10}, {0, 10}, {-5, 10}, {40, 4}, {40, 0}, {1001, 10}, {40, 1001}} {
		var buf bytes.Buffer
		err := c.Text(&buf, sz[0], sz[1])
		if err == nil || !strings.HasPrefix(err.Error(), "plot: ") || buf.Len() != 0 {
			t.Errorf("Text(%d, %d) = %v, wrote %d bytes; want a plot: error and no output", sz[0], sz[1], err, buf.Len())
		}
	}
	for _, sz := range [][2]int{{20, 5}, {1000, 1000}} {
		if err := c.Text(io.Discard, sz[0], sz[1]); err != nil {
			t.Errorf("Text(%d, %d) = %v", sz[0], sz[1], err)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterErrors(t *testing.T) {
	c := prChart()
	if err := c.SVG(failWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("SVG to failing writer: %v", err)
	}
	if err := c.Text(failWriter{}, 40, 10); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Text to failing writer: %v", err)
	}
	if err := c.SVG(nil); err == nil {
		t.Error("SVG(nil) succeeded")
	}
	if err := c.Text(nil, 40, 10); err == nil {
		t.Error("Text(nil) succeeded")
	}
}

// TestOddInputs draws charts with extreme or degenerate values; they must
// render (or be refused) without panicking, and any SVG must parse.
func TestOddInputs(t *testing.T) {
	big := math.MaxFloat64 / 4
	cases := map[string]*Chart{
		"huge values":        {Series: []Series{{X: []float64{-big, big}, Y: []float64{-big, big}}}},
		"tiny range":         {Series: []Series{{X: []float64{1, math.Nextafter(1, 2)}, Y: []float64{1e16, 1e16 + 4}}}},
		"subnormal":          {Series: []Series{{X: []float64{0, 5e-324}, Y: []float64{0, 1e-310}}}},
		"outside huge":       {XMin: -1, XMax: 1, YMin: -1, YMax: 1, Series: []Series{{X: []float64{-math.MaxFloat64, math.MaxFloat64}, Y: []float64{math.MaxFloat64, -math.MaxFloat64}}}},
		"all outside":        {XMin: 0, XMax: 1, YMin: 0, YMax: 1, Series: []Series{{Name: "gone", X: []float64{2, 3}, Y: []float64{2, 3}}}},
		"single point":       {XMin: 0, XMax: 1, YMin: 0, YMax: 1, Series: []Series{{X: []float64{0.5}, Y: []float64{0.5}}}},
		"repeated points":    {XMin: 0, XMax: 1, YMin: 0, YMax: 1, Series: []Series{{X: []float64{0.5, 0.5, 0.5}, Y: []float64{0.2, 0.2, 0.2}}}},
		"mark outside":       {XMin: 0, XMax: 1, YMin: 0, YMax: 1, Series: []Series{{X: []float64{0, 1}, Y: []float64{0, 1}}}, Marks: []Mark{{X: 5, Label: "far"}}},
		"many series":        manySeries(20),
		"control characters": {Title: "a\nb\tc\x00", XLabel: "\xff", Series: []Series{{Name: "x\ny", X: []float64{0, 1}, Y: []float64{0, 1}}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := c.SVG(&buf); err == nil {
				parseSVG(t, buf.Bytes())
			}
			buf.Reset()
			if err := c.Text(&buf, 30, 8); err == nil {
				for i, l := range strings.Split(buf.String(), "\n") {
					if strings.HasSuffix(l, " ") {
						t.Errorf("line %d has trailing spaces: %q", i, l)
					}
				}
			}
		})
	}
}

func manySeries(n int) *Chart {
	c := &Chart{XMin: 0, XMax: 1, YMin: 0, YMax: float64(n)}
	for i := range n {
		c.Series = append(c.Series, Series{Name: "s" + strconv.Itoa(i), X: []float64{0, 1}, Y: []float64{float64(i), float64(i + 1)}})
	}
	return c
}

func TestNiceTicks(t *testing.T) {
	seq := func(lo, step float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = lo + float64(i)*step
		}
		return out
	}
	cases := []struct {
		lo, hi   float64
		maxTicks int
		want     []float64
		decimals int
	}{
		{0, 1, 6, seq(0, 0.2, 6), 1},
		{0, 1, 11, seq(0, 0.1, 11), 1},
		{0.6, 1, 6, seq(0.6, 0.1, 5), 1},
		{0.6, 1, 11, seq(0.6, 0.05, 9), 2},
		{0, 0.75, 4, seq(0, 0.25, 4), 2},
		{-1, 1, 5, seq(-1, 0.5, 5), 1},
		{0.13, 0.87, 5, seq(0.2, 0.2, 4), 1},
		{0, 100, 6, seq(0, 20, 6), 0},
		{3, 47, 5, []float64{20, 40}, 0}, // raw step 11 → 20
		{0, 1, 1, []float64{0, 1}, 0},    // maxTicks raised to 2
		{1, 1, 5, nil, 0},
		{math.NaN(), 1, 5, nil, 0},
	}
	for _, tc := range cases {
		got := niceTicks(tc.lo, tc.hi, tc.maxTicks)
		if len(got.values) != len(tc.want) {
			t.Errorf("niceTicks(%v, %v, %d) = %v, want %v", tc.lo, tc.hi, tc.maxTicks, got.values, tc.want)
			continue
		}
		for i := range tc.want {
			if math.Abs(got.values[i]-tc.want[i]) > 1e-12 {
				t.Errorf("niceTicks(%v, %v, %d) = %v, want %v", tc.lo, tc.hi, tc.maxTicks, got.values, tc.want)
				break
			}
		}
		if len(tc.want) > 0 && got.decimals != tc.decimals {
			t.Errorf("niceTicks(%v, %v, %d) decimals %d, want %d", tc.lo, tc.hi, tc.maxTicks, got.decimals, tc.decimals)
		}
		if len(got.values) > max(tc.maxTicks, 2) {
			t.Errorf("niceTicks(%v, %v, %d) gave %d ticks", tc.lo, tc.hi, tc.maxTicks, len(got.values))
		}
	}
}

func TestLabels(t *testing.T) {
	cases := []struct {
		v        float64
		decimals int
		want     string
	}{
		{0.3, 1, "0.3"},
		{0.25, 2, "0.25"},
		{-0.0, 2, "0.00"},
		{-1e-17, 2, "0.00"},
		{40, 0, "40"},
		{1e15, 0, "1e+15"},
		{1.5, 1, "1.5"},
	}
	for _, tc := range cases {
		if got := label(tc.v, tc.decimals); got != tc.want {
			t.Errorf("label(%v, %d) = %q, want %q", tc.v, tc.decimals, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    float64
		want string
	}{{1, "1"}, {0.5, "0.5"}, {12.345, "12.35"}, {-0.001, "0"}, {100.10, "100.1"}} {
		if got := num(tc.v); got != tc.want {
			t.Errorf("num(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
