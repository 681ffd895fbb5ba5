package plot

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SVG layout, in pixels.
const (
	svgPlotW    = 560.0 // width of the plot area
	svgPlotH    = 360.0 // height of the plot area
	svgCharW    = 7.0   // estimated width of a 12px sans-serif character
	svgMaxTicks = 11    // most ticks on either axis
	svgLegendDY = 20.0  // vertical distance between legend entries
	svgSwatchW  = 28.0  // length of a legend line sample
)

// seriesColor returns the stroke colour of series i: the Okabe–Ito
// colour-blind-friendly palette, yellow last, repeated once exhausted.
func seriesColor(i int) string {
	palette := [...]string{
		"#0072B2", // blue
		"#D55E00", // vermillion
		"#009E73", // bluish green
		"#CC79A7", // reddish purple
		"#E69F00", // orange
		"#56B4E9", // sky blue
		"#000000", // black
		"#F0E442", // yellow
	}
	return palette[i%len(palette)]
}

// SVG validates c and writes it to w as a standalone SVG document: a white
// background, a light grid, axes with tick labels, the title and axis
// labels, one polyline per series (more if the series leaves the plot area
// and comes back), each Mark as a dashed vertical line with its label, and
// a legend of the named series at the right. It writes nothing if c is
// invalid.
func (c *Chart) SVG(w io.Writer) error {
	if w == nil {
		return errors.New("plot: nil writer")
	}
	b, err := c.resolve()
	if err != nil {
		return err
	}
	xt := niceTicks(b.xmin, b.xmax, svgMaxTicks)
	yt := niceTicks(b.ymin, b.ymax, svgMaxTicks)
	xl, yl := xt.labels(), yt.labels()

	// Layout.
	yLabelW := 0
	for _, s := range yl {
		yLabelW = max(yLabelW, utf8.RuneCountInString(s))
	}
	left := 22 + float64(yLabelW)*svgCharW
	if c.YLabel != "" {
		left += 22
	}
	left = math.Ceil(left)
	top := 20.0
	if c.Title != "" {
		top = 44
	}
	bottom := 36.0
	if c.XLabel != "" {
		bottom = 58
	}
	var legend []int // indices of named series
	nameW := 0
	for i, s := range c.Series {
		if s.Name != "" {
			legend = append(legend, i)
			nameW = max(nameW, utf8.RuneCountInString(s.Name))
		}
	}
	right := 20.0
	if len(legend) > 0 {
		right = math.Ceil(20 + svgSwatchW + 6 + float64(nameW)*svgCharW + 10)
	}
	width := left + svgPlotW + right
	height := max(top+svgPlotH+bottom, top+10+svgLegendDY*float64(len(legend))+10)
	x0, y0 := left, top // top-left corner of the plot area
	px := func(u float64) float64 { return x0 + u*svgPlotW }
	py := func(v float64) float64 { return y0 + (1-v)*svgPlotH }

	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="12">`+"\n",
		num(width), num(height), num(width), num(height))
	if c.Title != "" {
		fmt.Fprintf(&sb, "<title>%s</title>\n", escape(c.Title))
	}
	fmt.Fprintf(&sb, `<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>`+"\n", num(width), num(height))

	// Grid.
	sb.WriteString(`<g stroke="#e5e5e5" stroke-width="1">` + "\n")
	for _, v := range xt.values {
		x := num(px(unit(b.normX(v))))
		fmt.Fprintf(&sb, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", x, num(y0), x, num(y0+svgPlotH))
	}
	for _, v := range yt.values {
		y := num(py(unit(b.normY(v))))
		fmt.Fprintf(&sb, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", num(x0), y, num(x0+svgPlotW), y)
	}
	sb.WriteString("</g>\n")

	// Axes: the frame of the plot area, tick marks and tick labels.
	fmt.Fprintf(&sb, `<rect id="plot-area" x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#333333" stroke-width="1"/>`+"\n",
		num(x0), num(y0), num(svgPlotW), num(svgPlotH))
	sb.WriteString(`<g stroke="#333333" stroke-width="1">` + "\n")
	for _, v := range xt.values {
		x := num(px(unit(b.normX(v))))
		fmt.Fprintf(&sb, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", x, num(y0+svgPlotH), x, num(y0+svgPlotH+5))
	}
	for _, v := range yt.values {
		y := num(py(unit(b.normY(v))))
		fmt.Fprintf(&sb, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", num(x0-5), y, num(x0), y)
	}
	sb.WriteString("</g>\n")
	sb.WriteString(`<g fill="#333333">` + "\n")
	for i, v := range xt.values {
		writeText(&sb, px(unit(b.normX(v))), y0+svgPlotH+20, "middle", "", xl[i])
	}
	for i, v := range yt.values {
		writeText(&sb, x0-8, py(unit(b.normY(v)))+4, "end", "", yl[i])
	}
	sb.WriteString("</g>\n")

	// Title and axis labels.
	if c.Title != "" {
		writeText(&sb, x0+svgPlotW/2, 28, "middle", ` font-size="16" font-weight="bold"`, c.Title)
	}
	if c.XLabel != "" {
		writeText(&sb, x0+svgPlotW/2, y0+svgPlotH+46, "middle", ` font-size="13"`, c.XLabel)
	}
	if c.YLabel != "" {
		cx, cy := 18.0, y0+svgPlotH/2
		writeText(&sb, cx, cy, "middle", fmt.Sprintf(` font-size="13" transform="rotate(-90 %s %s)"`, num(cx), num(cy)), c.YLabel)
	}

	// Marks.
	for i, m := range c.Marks {
		u := b.normX(m.X)
		if !(u >= 0 && u <= 1) {
			continue
		}
		x := px(u)
		fmt.Fprintf(&sb, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#444444" stroke-width="1.5" stroke-dasharray="4 3"/>`+"\n",
			num(x), num(y0), num(x), num(y0+svgPlotH))
		if m.Label != "" {
			ly := y0 + 14 + 14*float64(i%4)
			if u > 0.7 {
				writeText(&sb, x-4, ly, "end", ` fill="#444444"`, m.Label)
			} else {
				writeText(&sb, x+4, ly, "start", ` fill="#444444"`, m.Label)
			}
		}
	}

	// Series.
	for i, s := range c.Series {
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		for _, run := range b.runs(s) {
			fmt.Fprintf(&sb, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round" stroke-linecap="round"%s points="`,
				seriesColor(i), dash)
			for j, p := range run {
				if j > 0 {
					sb.WriteByte(' ')
				}
				sb.WriteString(num(px(p.x)))
				sb.WriteByte(',')
				sb.WriteString(num(py(p.y)))
			}
			sb.WriteString(`"/>` + "\n")
		}
	}

	// Legend.
	lx := x0 + svgPlotW + 20
	for k, i := range legend {
		s := c.Series[i]
		ly := y0 + 10 + svgLegendDY*float64(k)
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&sb, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`+"\n",
			num(lx), num(ly), num(lx+svgSwatchW), num(ly), seriesColor(i), dash)
		writeText(&sb, lx+svgSwatchW+6, ly+4, "start", "", s.Name)
	}

	sb.WriteString("</svg>\n")
	if _, err := io.WriteString(w, sb.String()); err != nil {
		return fmt.Errorf("plot: writing SVG: %w", err)
	}
	return nil
}

// writeText writes a <text> element at (x, y) with the given anchor, extra
// attributes (written as given) and escaped content s.
func writeText(sb *strings.Builder, x, y float64, anchor, attrs, s string) {
	fmt.Fprintf(sb, `<text x="%s" y="%s" text-anchor="%s"%s>%s</text>`+"\n", num(x), num(y), anchor, attrs, escape(s))
}

// escape returns s escaped for XML character data. Invalid UTF-8 and
// characters XML does not allow become U+FFFD.
func escape(s string) string {
	var sb strings.Builder
	_ = xml.EscapeText(&sb, []byte(s)) // strings.Builder never fails
	return sb.String()
}

// num formats a coordinate compactly: at most two decimals, no trailing
// zeros, no negative zero.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// unit clamps a normalized coordinate into [0, 1].
func unit(u float64) float64 {
	return min(max(u, 0), 1)
}
