package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progressNow is the clock of the progress lines of commands; tests set it.
var progressNow = time.Now

// progressInterval is the minimum time between two progress lines.
const progressInterval = 200 * time.Millisecond

// progressLogInterval is the minimum time between two progress lines when
// they are not drawn over each other (the output is not a terminal).
const progressLogInterval = 2 * time.Second

// progress draws a "\rN docs, R docs/s" line on a terminal, or, when the
// total is known, "\rN/T docs (P%), R docs/s, ETA D". When the output is
// not a terminal (--progress), each line is written on its own, ending in
// a newline, at most every progressLogInterval. A nil *progress draws
// nothing.
type progress struct {
	w     io.Writer
	now   func() time.Time
	start time.Time
	last  time.Time
	total int    // documents to do; 0 when unknown
	log   bool   // write whole lines, not redrawn ones
	line  string // the current progress line
	width int    // length of the line on screen; 0 when none is shown
}

// newProgress returns a progress line on w; now is the clock.
func newProgress(w io.Writer, now func() time.Time) *progress {
	t := now()
	return &progress{w: w, now: now, start: t, last: t}
}

// withTotal sets the number of documents to do, so that the line shows a
// percentage and an estimate of the time left, and returns p.
func (p *progress) withTotal(total int) *progress {
	if p != nil {
		p.total = total
	}
	return p
}

// asLog makes p write whole lines (for an output that is not a terminal)
// and returns p.
func (p *progress) asLog() *progress {
	if p != nil {
		p.log = true
	}
	return p
}

// update records that n documents are done and redraws the line, at most
// every progressInterval.
func (p *progress) update(n int) {
	p.updateLine(func(el time.Duration) string {
		rate := 0.0
		if s := el.Seconds(); s > 0 {
			rate = float64(n) / s
		}
		if p.total <= 0 {
			return fmt.Sprintf("%d docs, %.0f docs/s", n, rate)
		}
		return fmt.Sprintf("%d/%d docs (%d%%), %.0f docs/s, ETA %s", n, p.total, 100*n/p.total, rate, eta(n, p.total, rate))
	})
}

// updateLine redraws the line as line(time since the start) says, at most
// every progressInterval.
func (p *progress) updateLine(line func(time.Duration) string) {
	if p == nil {
		return
	}
	t := p.now()
	interval := progressInterval
	if p.log {
		interval = progressLogInterval
	}
	if t.Sub(p.last) < interval {
		return
	}
	p.last = t
	p.line = line(t.Sub(p.start))
	if p.log {
		fmt.Fprintln(p.w, p.line)
		return
	}
	p.draw()
}

// eta returns the time left to do total documents when n are done at
// rate documents per second, rounded to the second, or "?" before any is
// done.
func eta(n, total int, rate float64) string {
	if n >= total {
		return "0s"
	}
	if rate <= 0 || n == 0 {
		return "?"
	}
	left := time.Duration(float64(total-n) / rate * float64(time.Second))
	return left.Round(time.Second).String()
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
	if p == nil || p.log || p.width == 0 {
		return
	}
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
	p.width = 0
}

// show draws the line again after hide.
func (p *progress) show() {
	if p == nil || p.log || p.width != 0 || p.line == "" {
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
