package bench

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Series is one line of a chart.
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool
}

// Chart is a line chart rendered as SVG by hand (no plotting dependency).
type Chart struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	// YMin, YMax fix the y range when YMax > YMin.
	YMin, YMax float64
	Series     []Series
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22"}

// SVG renders the chart.
func (c *Chart) SVG() string {
	const W, H, L, R, T, B = 760.0, 440.0, 80.0, 190.0, 40.0, 55.0
	tx := func(v float64) float64 {
		if c.LogX {
			return math.Log10(v)
		}
		return v
	}
	ty := func(v float64) float64 {
		if c.LogY {
			return math.Log10(v)
		}
		return v
	}
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for i := range s.X {
			if !valid(s.X[i], c.LogX) || !valid(s.Y[i], c.LogY) {
				continue
			}
			xmin, xmax = math.Min(xmin, tx(s.X[i])), math.Max(xmax, tx(s.X[i]))
			ymin, ymax = math.Min(ymin, ty(s.Y[i])), math.Max(ymax, ty(s.Y[i]))
		}
	}
	if c.YMax > c.YMin {
		ymin, ymax = ty(c.YMin), ty(c.YMax)
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax, ymin, ymax = 0, 1, 0, 1
	}
	if c.LogY {
		ymin, ymax = math.Floor(ymin), math.Ceil(ymax)
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	if ymax == ymin {
		ymax = ymin + 1
	}
	px := func(v float64) float64 { return L + (tx(v)-xmin)/(xmax-xmin)*(W-L-R) }
	py := func(v float64) float64 { return H - B - (ty(v)-ymin)/(ymax-ymin)*(H-T-B) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15" text-anchor="middle">%s</text>`+"\n", (L+W-R)/2, esc(c.Title))
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", L, T, W-L-R, H-T-B)
	// Ticks.
	for _, t := range ticks(xmin, xmax, c.LogX) {
		x := L + (t-xmin)/(xmax-xmin)*(W-L-R)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/><text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x, T, x, H-B, x, H-B+16, tickLabel(t, c.LogX))
	}
	for _, t := range ticks(ymin, ymax, c.LogY) {
		y := H - B - (t-ymin)/(ymax-ymin)*(H-T-B)
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", L, y, W-R, y, L-6, y+4, tickLabel(t, c.LogY))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", (L+W-R)/2, H-12, esc(c.XLabel))
	fmt.Fprintf(&b, `<text x="18" y="%.0f" text-anchor="middle" transform="rotate(-90 18 %.0f)">%s</text>`+"\n", (T+H-B)/2, (T+H-B)/2, esc(c.YLabel))
	for si, s := range c.Series {
		col := palette[si%len(palette)]
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for i := range s.X {
			if valid(s.X[i], c.LogX) && valid(s.Y[i], c.LogY) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i])))
			}
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), col, dash)
			for _, p := range pts {
				xy := strings.Split(p, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", xy[0], xy[1], col)
			}
		}
		ly := T + 14 + float64(si)*18
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="2"%s/><text x="%.0f" y="%.0f">%s</text>`+"\n", W-R+10, ly, W-R+34, ly, col, dash, W-R+40, ly+4, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func valid(v float64, log bool) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!log || v > 0)
}

func esc(s string) string { return html.EscapeString(s) }

// ticks returns tick positions in transformed coordinates.
func ticks(lo, hi float64, log bool) []float64 {
	if log {
		var t []float64
		for e := math.Ceil(lo); e <= hi+1e-9; e++ {
			t = append(t, e)
		}
		return t
	}
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/4)))
	for (hi-lo)/step > 8 {
		step *= 2
	}
	var t []float64
	for v := math.Ceil(lo/step) * step; v <= hi+1e-9; v += step {
		t = append(t, v)
	}
	return t
}

func tickLabel(t float64, log bool) string {
	if log {
		v := math.Pow(10, t)
		switch {
		case v >= 1e5:
			return fmt.Sprintf("1e%.0f", t)
		case v >= 1:
			return fmt.Sprintf("%.0f", v)
		default:
			return fmt.Sprintf("%g", v)
		}
	}
	return fmt.Sprintf("%g", math.Round(t*1000)/1000)
}
