package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progressInterval is the minimum time between two progress lines.
const progressInterval = 200 * time.Millisecond

// progress draws a "\rN docs, R docs/s" line on a terminal. A nil *progress
// draws nothing.
type progress struct {
	w     io.Writer
	now   func() time.Time
	start time.Time
	last  time.Time
	line  string // the current progress line
	width int    // length of the line on screen; 0 when none is shown
}

// newProgress returns a progress line on w; now is the clock.
func newProgress(w io.Writer, now func() time.Time) *progress {
	t := now()
	return &progress{w: w, now: now, start: t, last: t}
}

// update records that n documents are done and redraws the line, at most
// every progressInterval.
func (p *progress) update(n int) {
	if p == nil {
		return
	}
	t := p.now()
	if t.Sub(p.last) < progressInterval {
		return
	}
	p.last = t
	rate := 0.0
	if s := t.Sub(p.start).Seconds(); s > 0 {
		rate = float64(n) / s
	}
	p.line = fmt.Sprintf("%d docs, %.0f docs/s", n, rate)
	p.draw()
}

// draw writes the current line over the one on screen.
func (p *progress) draw() {
	pad := ""
	if len(p.line) < p.width {
		pad = strings.Repeat(" ", p.width-len(p.line))
	}
	fmt.Fprintf(p.w, "\r%s%s", p.line, pad)
	p.width = len(p.line)
}

// hide erases the line from the screen, so that other output can be
// written to the terminal; show draws it again.
func (p *progress) hide() {
	if p == nil || p.width == 0 {
		return
	}
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
	p.width = 0
}

// show draws the line again after hide.
func (p *progress) show() {
	if p == nil || p.width != 0 || p.line == "" {
		return
	}
	p.draw()
}

// clear erases the line for good.
func (p *progress) clear() {
	if p == nil {
		return
	}
	p.hide()
	p.line = ""
}

// isTerminal reports whether w is a terminal: a character device other than
// the null device.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
