package plot

import (
	"errors"
	"fmt"
	"math"
)

// Series is one line of a chart: the points (X[i], Y[i]) drawn in order and
// joined by straight lines.
type Series struct {
	// Name is the legend label; a series with an empty name is drawn but
	// left out of the legend.
	Name string
	// X and Y hold the coordinates of the points; they must have the same,
	// non-zero length and hold only finite values.
	X, Y []float64
	// Dashed draws the line dashed (SVG only).
	Dashed bool
}

// Mark is a vertical line across the plot area at X, with a label such as
// "threshold 0.700".
type Mark struct {
	// X is where the line is drawn, in data coordinates. A Mark outside an
	// explicit X range is not drawn.
	X float64
	// Label is shown next to the line (SVG) and in the legend (text).
	Label string
}

// Chart is a line chart: one or more series and any number of marks, with
// a title and axis labels.
type Chart struct {
	// Title, XLabel and YLabel are optional texts.
	Title, XLabel, YLabel string
	// XMin, XMax, YMin and YMax are the axis ranges. If XMin == XMax the X
	// range is taken from the data (all series X values and all Mark X
	// values); if YMin == YMax the Y range is taken from the series Y values.
	XMin, XMax, YMin, YMax float64
	// Series are the lines to draw; there must be at least one.
	Series []Series
	// Marks are vertical lines to draw.
	Marks []Mark
}

// bounds is a resolved pair of axis ranges, each of positive finite width.
type bounds struct {
	xmin, xmax, ymin, ymax float64
}

// Validate reports the first problem that keeps c from being drawn: a nil
// chart, no series, a series with no points or with X and Y of different
// lengths, a NaN or infinite value (in a series, a Mark or an axis limit),
// an axis minimum above its maximum, or an axis range that is empty (all
// data values equal) or too wide for float64 after the defaults are
// applied. It returns nil if the chart can be drawn.
func (c *Chart) Validate() error {
	_, err := c.resolve()
	return err
}

// resolve validates c and returns its axis ranges with defaults applied.
func (c *Chart) resolve() (bounds, error) {
	if c == nil {
		return bounds{}, errors.New("plot: nil chart")
	}
	if len(c.Series) == 0 {
		return bounds{}, errors.New("plot: chart has no series")
	}
	limits := [...]struct {
		name string
		v    float64
	}{{"XMin", c.XMin}, {"XMax", c.XMax}, {"YMin", c.YMin}, {"YMax", c.YMax}}
	for _, l := range limits {
		if !finite(l.v) {
			return bounds{}, fmt.Errorf("plot: %s is %v; axis limits must be finite", l.name, l.v)
		}
	}
	for i, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return bounds{}, fmt.Errorf("plot: series %d (%q) has %d X values but %d Y values", i, s.Name, len(s.X), len(s.Y))
		}
		if len(s.X) == 0 {
			return bounds{}, fmt.Errorf("plot: series %d (%q) has no points", i, s.Name)
		}
		for j := range s.X {
			if !finite(s.X[j]) {
				return bounds{}, fmt.Errorf("plot: series %d (%q): X[%d] is %v; values must be finite", i, s.Name, j, s.X[j])
			}
			if !finite(s.Y[j]) {
				return bounds{}, fmt.Errorf("plot: series %d (%q): Y[%d] is %v; values must be finite", i, s.Name, j, s.Y[j])
			}
		}
	}
	for i, m := range c.Marks {
		if !finite(m.X) {
			return bounds{}, fmt.Errorf("plot: mark %d (%q): X is %v; values must be finite", i, m.Label, m.X)
		}
	}

	b := bounds{c.XMin, c.XMax, c.YMin, c.YMax}
	xFromData, yFromData := c.XMin == c.XMax, c.YMin == c.YMax
	if xFromData {
		b.xmin, b.xmax = math.Inf(1), math.Inf(-1)
		for _, s := range c.Series {
			for _, v := range s.X {
				b.xmin, b.xmax = min(b.xmin, v), max(b.xmax, v)
			}
		}
		for _, m := range c.Marks {
			b.xmin, b.xmax = min(b.xmin, m.X), max(b.xmax, m.X)
		}
	}
	if yFromData {
		b.ymin, b.ymax = math.Inf(1), math.Inf(-1)
		for _, s := range c.Series {
			for _, v := range s.Y {
				b.ymin, b.ymax = min(b.ymin, v), max(b.ymax, v)
			}
		}
	}
	if err := checkRange("X", b.xmin, b.xmax, xFromData); err != nil {
		return bounds{}, err
	}
	if err := checkRange("Y", b.ymin, b.ymax, yFromData); err != nil {
		return bounds{}, err
	}
	return b, nil
}

// checkRange reports an axis range that cannot be drawn.
func checkRange(axis string, lo, hi float64, fromData bool) error {
	switch {
	case lo > hi:
		return fmt.Errorf("plot: %s range is inverted: min %v > max %v", axis, lo, hi)
	case lo == hi && fromData:
		return fmt.Errorf("plot: %s range is empty: every %s value is %v; set %sMin and %sMax", axis, axis, lo, axis, axis)
	case lo == hi:
		return fmt.Errorf("plot: %s range is empty: min = max = %v", axis, lo)
	case math.IsInf(hi-lo, 0):
		return fmt.Errorf("plot: %s range [%v, %v] is too wide", axis, lo, hi)
	}
	return nil
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}

// point is a position in normalized plot coordinates: (0, 0) is the
// bottom-left corner of the plot area and (1, 1) the top-right one.
type point struct {
	x, y float64
}

// norm maps a data point into normalized plot coordinates.
func (b bounds) norm(x, y float64) point {
	return point{(x - b.xmin) / (b.xmax - b.xmin), (y - b.ymin) / (b.ymax - b.ymin)}
}

// normX maps a data X value into normalized plot coordinates.
func (b bounds) normX(x float64) float64 {
	return (x - b.xmin) / (b.xmax - b.xmin)
}

// normY maps a data Y value into normalized plot coordinates.
func (b bounds) normY(y float64) float64 {
	return (y - b.ymin) / (b.ymax - b.ymin)
}

// inside reports whether p is finite and within the unit square.
func (p point) inside() bool {
	return finite(p.x) && finite(p.y) && p.x >= 0 && p.x <= 1 && p.y >= 0 && p.y <= 1
}

// runs returns the visible parts of series s, in normalized coordinates,
// as polylines of at least two points each. The series is clipped to the
// plot area; each time it leaves the area a new run begins. A series of a
// single point inside the area gives one run holding that point twice.
func (b bounds) runs(s Series) [][]point {
	if len(s.X) == 1 {
		if p := b.norm(s.X[0], s.Y[0]); p.inside() {
			return [][]point{{p, p}}
		}
		return nil
	}
	var out [][]point
	var cur []point
	flush := func() {
		if len(cur) >= 2 {
			out = append(out, cur)
		}
		cur = nil
	}
	for j := 0; j+1 < len(s.X); j++ {
		p, q := b.norm(s.X[j], s.Y[j]), b.norm(s.X[j+1], s.Y[j+1])
		a, e, t0, t1, ok := clipUnit(p, q)
		if !ok {
			flush()
			continue
		}
		if cur == nil || t0 > 0 {
			flush()
			cur = []point{a}
		}
		cur = append(cur, e)
		if t1 < 1 {
			flush()
		}
	}
	flush()
	return out
}

// clipUnit clips the segment p→q to the unit square (Liang–Barsky). It
// returns the visible part a→e, the segment parameters t0 ≤ t1 of its ends
// (0 and 1 when the ends are not clipped) and whether any part is visible.
func clipUnit(p, q point) (a, e point, t0, t1 float64, ok bool) {
	if !finite(p.x) || !finite(p.y) || !finite(q.x) || !finite(q.y) {
		return point{}, point{}, 0, 0, false
	}
	dx, dy := q.x-p.x, q.y-p.y
	t0, t1 = 0, 1
	edges := [4][2]float64{{-dx, p.x}, {dx, 1 - p.x}, {-dy, p.y}, {dy, 1 - p.y}}
	for _, pq := range edges {
		pk, qk := pq[0], pq[1]
		if pk == 0 {
			if qk < 0 {
				return point{}, point{}, 0, 0, false
			}
			continue
		}
		r := qk / pk
		if pk < 0 {
			if r > t1 {
				return point{}, point{}, 0, 0, false
			}
			t0 = max(t0, r)
		} else {
			if r < t0 {
				return point{}, point{}, 0, 0, false
			}
			t1 = min(t1, r)
		}
	}
	a, e = p, q
	if t0 > 0 {
		a = point{p.x + t0*dx, p.y + t0*dy}
	}
	if t1 < 1 {
		e = point{p.x + t1*dx, p.y + t1*dy}
	}
	if !finite(a.x) || !finite(a.y) || !finite(e.x) || !finite(e.y) {
		return point{}, point{}, 0, 0, false
	}
	a, e = a.clamp(), e.clamp()
	return a, e, t0, t1, true
}

// clamp moves p into the unit square, removing rounding error left by
// clipping.
func (p point) clamp() point {
	return point{min(max(p.x, 0), 1), min(max(p.y, 0), 1)}
}
