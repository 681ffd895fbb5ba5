package plot

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"
)

// Limits on the size of the text plot area, in characters.
const (
	minTextWidth  = 20
	minTextHeight = 5
	maxTextWidth  = 1000
	maxTextHeight = 1000
)

// seriesChars are the characters that draw series in text, by index,
// repeated once exhausted.
const seriesChars = "*o+x#@%&"

// markChar draws Marks in text.
const markChar = '|'

// Text validates c and writes it to w as plain ASCII lines: the title (if
// set), the Y label (if set), a grid of width × height character cells
// with Y tick labels at the left ("1.00 |"), the X axis with tick labels
// below it, the X label (if set), and a legend line such as
// "* recall  o precision  | threshold 0.700". Each series is drawn with its
// own character ('*', 'o', '+', 'x', ... by index) at the cell of each point
// and on the cells between consecutive points; each Mark is a column of
// '|'. No line ends in a space.
//
// width must be in [20, 1000] and height in [5, 1000]; the plot area's
// corners are the corners of the axis ranges. Text writes nothing if c is
// invalid.
func (c *Chart) Text(w io.Writer, width, height int) error {
	if w == nil {
		return errors.New("plot: nil writer")
	}
	if width < minTextWidth || width > maxTextWidth {
		return fmt.Errorf("plot: text width %d is outside [%d, %d]", width, minTextWidth, maxTextWidth)
	}
	if height < minTextHeight || height > maxTextHeight {
		return fmt.Errorf("plot: text height %d is outside [%d, %d]", height, minTextHeight, maxTextHeight)
	}
	b, err := c.resolve()
	if err != nil {
		return err
	}

	grid := make([][]byte, height)
	for r := range grid {
		grid[r] = []byte(strings.Repeat(" ", width))
	}
	// cell maps normalized coordinates to a column and a row (0 at top).
	cell := func(p point) (col, row float64) {
		return p.x * float64(width-1), (1 - p.y) * float64(height-1)
	}
	set := func(col, row float64, ch byte) {
		c, r := math.Round(col), math.Round(row)
		if c >= 0 && c < float64(width) && r >= 0 && r < float64(height) {
			grid[int(r)][int(c)] = ch
		}
	}

	var legend []string
	for i, s := range c.Series {
		if s.Name != "" {
			legend = append(legend, string(seriesChars[i%len(seriesChars)])+" "+clean(s.Name))
		}
	}
	for _, m := range c.Marks {
		u := b.normX(m.X)
		if u >= 0 && u <= 1 {
			col, _ := cell(point{u, 0})
			for r := range height {
				set(col, float64(r), markChar)
			}
		}
		if m.Label != "" {
			legend = append(legend, string(markChar)+" "+clean(m.Label))
		}
	}
	for i, s := range c.Series {
		ch := seriesChars[i%len(seriesChars)]
		for _, run := range b.runs(s) {
			for j := 0; j+1 < len(run); j++ {
				c0, r0 := cell(run[j])
				c1, r1 := cell(run[j+1])
				// Runs lie in the plot area, so n ≤ max(width, height);
				// the bound check guards the loop all the same.
				n := math.Ceil(max(math.Abs(c1-c0), math.Abs(r1-r0)))
				if !(n <= float64(width+height)) {
					continue
				}
				if n == 0 {
					set(c0, r0, ch)
					continue
				}
				for k := 0.0; k <= n; k++ {
					t := k / n
					set(c0+t*(c1-c0), r0+t*(r1-r0), ch)
				}
			}
		}
	}

	// Y tick labels, each on the row nearest its value.
	yt := niceTicks(b.ymin, b.ymax, max(2, height/3+1))
	rowLabel := make([]string, height)
	labelW := 0
	for i, s := range yt.labels() {
		_, row := cell(point{0, unit(b.normY(yt.values[i]))})
		r := int(math.Round(row))
		if r >= 0 && r < height && rowLabel[r] == "" {
			rowLabel[r] = s
			labelW = max(labelW, len(s))
		}
	}

	var lines []string
	if c.Title != "" {
		lines = append(lines, clean(c.Title))
	}
	if c.YLabel != "" {
		lines = append(lines, clean(c.YLabel))
	}
	for r := range height {
		lines = append(lines, fmt.Sprintf("%*s |%s", labelW, rowLabel[r], grid[r]))
	}

	// X axis: tick marks on the axis line, labels centred below them where
	// they do not collide.
	indent := labelW + 2 // column of the first grid cell
	axis := []byte(strings.Repeat(" ", labelW+1) + "+" + strings.Repeat("-", width))
	var under []byte
	xt := niceTicks(b.xmin, b.xmax, max(2, width/10+1))
	nextFree := 0
	for i, s := range xt.labels() {
		col, _ := cell(point{unit(b.normX(xt.values[i])), 0})
		at := indent + int(math.Round(col))
		axis[at] = '+'
		start := max(at-len(s)/2, 0)
		if start < nextFree {
			continue
		}
		for len(under) < start+len(s) {
			under = append(under, ' ')
		}
		copy(under[start:], s)
		nextFree = start + len(s) + 1
	}
	lines = append(lines, string(axis), string(under))
	if c.XLabel != "" {
		xl := clean(c.XLabel)
		pad := max(indent+(width-utf8.RuneCountInString(xl))/2, 0)
		lines = append(lines, strings.Repeat(" ", pad)+xl)
	}
	if len(legend) > 0 {
		lines = append(lines, strings.Join(legend, "  "))
	}

	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(strings.TrimRight(l, " "))
		sb.WriteByte('\n')
	}
	if _, err := io.WriteString(w, sb.String()); err != nil {
		return fmt.Errorf("plot: writing text: %w", err)
	}
	return nil
}

// clean replaces control characters (newlines, tabs, ...) in s by spaces so
// that a label stays on one line.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
}
