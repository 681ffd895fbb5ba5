package index

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fpdb/fpdb/internal/bitvec"
)

// calibrateBytes is how many bytes of fingerprints the index needs before
// it measures its scan, and how many it scans to measure: several times
// what last-level caches hold, so that the scan reads memory, as a scan of
// a large index does (a measure of fingerprints just loaded, still in the
// caches, would make every scan look cheap). Below that the default cost
// stands: 2 M fingerprints at K = 512.
const calibrateBytes = 128 << 20

// scanCalibration is the measured cost of the scan on this machine.
type scanCalibration struct {
	bytes    int        // calibrateBytes (tests lower it)
	mu       sync.Mutex // one measurement at a time
	measured atomic.Pointer[scanSpeed]
}

// scanSpeed is what a calibration measured, refined by the scans that
// queries ran since (observeScan): the fastest seen of each, since a
// measurement taken while other work shared the cores (a garbage
// collection after a large build, another process) can only be slower
// than the machine's scan, and a scan estimated too slow makes the
// planner pick a probe that is slower than the scan.
type scanSpeed struct {
	nsPerWord float64 // one goroutine, per 64-bit word
	workers   int     // goroutines of the parallel scan measured
	speedup   float64 // its speed-up over one goroutine, in [1, workers]
	parNs     float64 // the parallel scan, per word (nsPerWord/speedup)
}

// near reports whether s's measurement is within 1/planDrift of was's,
// per goroutine and in parallel (both nil, or the same, also count).
func (s *scanSpeed) near(was *scanSpeed) bool {
	if s == was {
		return true
	}
	if s == nil || was == nil || s.workers != was.workers {
		return false
	}
	nearF := func(x, w float64) bool { return math.Abs(x-w) <= w/planDrift }
	return nearF(s.nsPerWord, was.nsPerWord) && nearF(s.parNs, was.parNs)
}

// withScan returns s refined by a scan of one goroutine (workers 1) or of
// s.workers goroutines that took nsPerWord per word, or nil when it is
// not faster than what s holds. It keeps parNs ≤ nsPerWord ≤ parNs ×
// workers (w goroutines are at most w times as fast as one): a parallel
// scan faster than that shows the one-goroutine measurement too slow, and
// lowers it.
func (s *scanSpeed) withScan(workers int, nsPerWord float64) *scanSpeed {
	c := *s
	switch {
	case workers == 1 && nsPerWord < s.nsPerWord:
		c.nsPerWord = nsPerWord
		c.parNs = min(c.parNs, nsPerWord)
	case workers == s.workers && workers > 1 && nsPerWord < s.parNs:
		c.parNs = nsPerWord
		c.nsPerWord = min(c.nsPerWord, nsPerWord*float64(workers))
	default:
		return nil
	}
	c.speedup = c.nsPerWord / c.parNs
	return &c
}

// observeScan records a completed query scan of n fingerprints on workers
// goroutines that took d, once the index has measured its scan: the
// planner then uses the fastest scan seen.
func (ix *Index) observeScan(n, workers int, d time.Duration) {
	if n < ix.calibrateDocs() || d <= 0 {
		return
	}
	perWord := float64(d.Nanoseconds()) / float64(n*ix.stride)
	for {
		s := ix.scanCal.measured.Load()
		if s == nil {
			return
		}
		c := s.withScan(workers, perWord)
		if c == nil || ix.scanCal.measured.CompareAndSwap(s, c) {
			return
		}
	}
}

// scanSpeedFor returns the scan's cost per word on one goroutine and the
// speed-up of w goroutines: measured (see measureScan) once the index
// holds calibrateBytes of fingerprints, else costScanWord and the model's
// 1 + (w − 1)/2. The first query that needs it pays for four scans of
// calibrateBytes (20 to 60 ms). The caller holds mu (shared).
func (ix *Index) scanSpeedFor(w int) (nsPerWord, speedup float64) {
	s := ix.scanCal.measured.Load()
	if s == nil && ix.capacity() >= ix.calibrateDocs() && ix.scanCal.mu.TryLock() {
		if s = ix.scanCal.measured.Load(); s == nil {
			s = ix.measureScan()
			ix.scanCal.measured.Store(s)
		}
		ix.scanCal.mu.Unlock()
	}
	if s == nil {
		return costScanWord, 1 + 0.5*float64(w-1)
	}
	if w == s.workers {
		return s.nsPerWord, s.speedup
	}
	return s.nsPerWord, 1 + (s.speedup-1)*float64(w-1)/float64(max(1, s.workers-1))
}

// calibrateDocs is the number of fingerprints in calibrateBytes.
func (ix *Index) calibrateDocs() int { return ix.scanCal.bytes / (8 * ix.stride) }

// measureScan times the scan of the first calibrateBytes of fingerprints,
// the best of two runs, on one goroutine (kept within 1/8 and 4 times
// costScanWord per word) and on the goroutines a scan of that size uses
// (withScan: a parallel scan more than that many times faster lowers the
// one-goroutine figure, measured in a slower moment).
func (ix *Index) measureScan() *scanSpeed {
	n := ix.calibrateDocs()
	q := make([]uint64, ix.stride)
	words := float64(n * ix.stride)
	best := func(run func()) float64 {
		d := time.Duration(1<<63 - 1)
		for range 2 {
			start := time.Now()
			run()
			d = min(d, time.Since(start))
		}
		return float64(d.Nanoseconds()) / words
	}
	one := best(func() {
		for from := 0; from < n; from += 1 << fpChunkBits {
			span := ix.fps.span(from, min(from+1<<fpChunkBits, n))
			bitvec.Scan(span, ix.stride, q, 0, func(int, int) {}) // few match the zero query
		}
	})
	s := &scanSpeed{nsPerWord: min(max(one, costScanWord/8), 4*costScanWord), workers: scanWorkers(n, ix.stride), speedup: 1}
	s.parNs = s.nsPerWord
	if s.workers > 1 {
		par := best(func() { _, _ = ix.scanRange(context.Background(), q, 0, 0, n, nil) })
		if c := s.withScan(s.workers, max(par, costScanWord/8/float64(s.workers))); c != nil {
			s = c
		}
	}
	return s
}
