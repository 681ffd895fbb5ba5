package index

import (
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
	bytes     int           // calibrateBytes (tests lower it)
	mu        sync.Mutex    // one measurement at a time
	nsPerWord atomic.Uint64 // math.Float64bits; 0 until measured
}

// scanWordCost returns the scan's cost per 64-bit word on one core, in
// nanoseconds: measured once the index holds calibrateBytes of
// fingerprints, costScanWord before. The first query that needs it pays
// for one scan of calibrateBytes (7 to 22 ms). The caller holds mu
// (shared).
func (ix *Index) scanWordCost() float64 {
	if v := ix.scanCal.nsPerWord.Load(); v != 0 {
		return math.Float64frombits(v)
	}
	if ix.capacity() < ix.calibrateDocs() || !ix.scanCal.mu.TryLock() {
		return costScanWord
	}
	defer ix.scanCal.mu.Unlock()
	ns := ix.measureScan()
	ix.scanCal.nsPerWord.Store(math.Float64bits(ns))
	return ns
}

// calibrateDocs is the number of fingerprints in calibrateBytes.
func (ix *Index) calibrateDocs() int { return ix.scanCal.bytes / (8 * ix.stride) }

// measureScan times the one-goroutine scan of the first calibrateBytes of
// fingerprints and returns its time per word, kept within 1/8 and 4 times
// costScanWord.
func (ix *Index) measureScan() float64 {
	q := make([]uint64, ix.stride)
	n, words := ix.calibrateDocs(), 0
	start := time.Now()
	for from := 0; from < n; from += 1 << fpChunkBits {
		span := ix.fps.span(from, min(from+1<<fpChunkBits, n))
		bitvec.Scan(span, ix.stride, q, 0, func(int, int) {}) // few match the zero query
		words += len(span)
	}
	ns := float64(time.Since(start).Nanoseconds()) / float64(words)
	return min(max(ns, costScanWord/8), 4*costScanWord)
}
