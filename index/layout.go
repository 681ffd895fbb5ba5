package index

import (
	"errors"
	"fmt"
	"math"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/minhash"
)

// ErrLayout is returned for an invalid group layout.
var ErrLayout = errors.New("index: invalid group layout")

// MaxGroupWidth is the widest group supported, in bits.
const MaxGroupWidth = 24

// MaxGroups is the largest number of groups supported (hit counters are
// one byte per document).
const MaxGroups = 255

// Layout splits K-bit fingerprints into m groups and merges the group values
// into one key space (docs/algorithm.md §2.1): group i covers bits
// [Start[i], Start[i]+Width[i]) and its value A_i maps to the merged value
// y_i = Offset[i] + A_i, with Offset[0] = 0 and
// Offset[i+1] = Offset[i] + 2^Width[i].
type Layout struct {
	K      int
	Widths []int
	Starts []int
	Offset []uint32

	stats *layoutStats // shared by copies; see plan.go
}

// SplitWidths splits k bits into m groups as equal as possible (the first
// groups take the extra bits). It returns nil unless 0 < m ≤ k.
func SplitWidths(k, m int) []int {
	if m <= 0 || m > k {
		return nil
	}
	ws := make([]int, m)
	for i := range ws {
		ws[i] = k / m
		if i < k%m {
			ws[i]++
		}
	}
	return ws
}

// NewLayout checks widths against k and returns the layout.
func NewLayout(k int, widths []int) (*Layout, error) {
	if k <= 0 || k%64 != 0 {
		return nil, fmt.Errorf("%w: K = %d is not a positive multiple of 64", ErrLayout, k)
	}
	l := &Layout{K: k, Widths: append([]int(nil), widths...), stats: new(layoutStats)}
	var off uint64
	start := 0
	for i, w := range widths {
		if w < 1 || w > MaxGroupWidth {
			return nil, fmt.Errorf("%w: group %d has width %d, want 1..%d", ErrLayout, i, w, MaxGroupWidth)
		}
		l.Starts = append(l.Starts, start)
		l.Offset = append(l.Offset, uint32(off))
		start += w
		off += 1 << w
		if off > math.MaxUint32 {
			return nil, fmt.Errorf("%w: merged key space exceeds 2^32", ErrLayout)
		}
	}
	if len(widths) > MaxGroups {
		return nil, fmt.Errorf("%w: %d groups, at most %d", ErrLayout, len(widths), MaxGroups)
	}
	if start != k {
		return nil, fmt.Errorf("%w: widths %v sum to %d, want K = %d", ErrLayout, widths, start, k)
	}
	return l, nil
}

// Space returns the size of the merged key space: Σ 2^Width[i].
func (l *Layout) Space() uint64 {
	m := len(l.Widths) - 1
	return uint64(l.Offset[m]) + 1<<l.Widths[m]
}

// M returns the number of groups.
func (l *Layout) M() int { return len(l.Widths) }

// Value returns the merged value y_i of group i of fingerprint fp.
func (l *Layout) Value(fp []uint64, i int) uint32 {
	return l.Offset[i] + bitvec.Bits(fp, l.Starts[i], l.Widths[i])
}

// Group returns the group that merged value y falls in, or -1.
func (l *Layout) Group(y uint32) int {
	lo, hi := 0, len(l.Offset)
	for lo < hi {
		mid := (lo + hi) / 2
		if l.Offset[mid] <= y {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	g := lo - 1
	if g < 0 || uint64(y) >= uint64(l.Offset[g])+1<<l.Widths[g] {
		return -1
	}
	return g
}

// Radius returns the Hamming radius of threshold r for k-bit fingerprints:
// the largest h with Similarity(k, h) ≥ r, or -1 when there is none (see
// minhash.Radius).
func Radius(k int, r float64) int { return minhash.Radius(k, r) }

// Similarity returns the estimated resemblance 1 − 2h/k of two k-bit
// fingerprints at Hamming distance h.
func Similarity(k, h int) float64 { return minhash.Similarity(k, h) }
