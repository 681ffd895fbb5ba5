package posting

import (
	"math"
	"math/bits"
	"slices"
)

// Encoding says which encodings of a value a writer may use.
type Encoding uint8

const (
	// Roaring writes every set in roaring's portable format (tag 1): what
	// every version of fpdb reads.
	Roaring Encoding = iota
	// Compact writes a value's sets as gaps (tag 2) when that is shorter
	// than roaring's format, as for the sparse lists of random documents
	// (about 3 bytes per id against roaring's 10 when each id has a
	// container of its own); older fpdb builds cannot read it.
	Compact
)

// The compact set encoding (tag 2): the ids in increasing order, each as
// the uvarint of its gap, id − previous − 1 (the first id itself), up to
// the end of the set's bytes; no other framing. Strictly increasing by
// construction. A uvarint must be minimal (no trailing zero byte) and an
// id must fit in 32 bits.

// deltaSize returns the length of the compact encoding of the increasing
// ids.
func deltaSize(ids []uint32) int {
	n, next := 0, uint32(0)
	for _, id := range ids {
		n += uvarintLen(uint64(id - next))
		next = id + 1
	}
	return n
}

// runsMayWin reports whether roaring's run containers may make a set of
// count ids, at most maxSliceIDs (so in array containers: no bitmap
// ones), follow of which follow their predecessor, shorter than its
// compact encoding. A run container spends 4 bytes per run, so unless a
// quarter of the ids or more extend a run, the runs take more than 3
// bytes per id, and the array containers 2 and their headers: no less
// than the gaps of such a set, but for ids 2^14 or more apart.
func runsMayWin(count, follow int) bool { return count >= 8 && 4*follow >= count }

// uvarintLen is the length of the uvarint encoding of v.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// appendDelta appends the compact encoding of the increasing ids, which
// takes size bytes (deltaSize).
func appendDelta(dst []byte, ids []uint32, size int) []byte {
	dst = slices.Grow(dst, size)
	next := uint32(0)
	for _, id := range ids {
		v := id - next
		for v >= 0x80 {
			dst = append(dst, byte(v)|0x80)
			v >>= 7
		}
		dst = append(dst, byte(v))
		next = id + 1
	}
	return dst
}

// walkDelta validates b as a compact set and, if fn is not nil, calls fn
// for each id in increasing order. On error fn may already have been called
// for a prefix of the ids. It never allocates.
func walkDelta(b []byte, fn func(uint32)) error {
	next := uint64(0)
	for p := 0; p < len(b); {
		// A uvarint of at most 5 bytes: a sixth would hold bits beyond 2^35.
		var v uint64
		for k, shift := 0, 0; ; k, shift = k+1, shift+7 {
			if p >= len(b) {
				return corruptf("compact set: uvarint truncated")
			}
			c := b[p]
			p++
			v |= uint64(c&0x7f) << shift
			if c < 0x80 {
				if c == 0 && k > 0 {
					return corruptf("compact set: uvarint not minimal")
				}
				break
			}
			if k == 4 {
				return corruptf("compact set: id beyond 2^32 − 1")
			}
		}
		if next+v > math.MaxUint32 { // next ≤ 2^32, v < 2^35: no wrap
			return corruptf("compact set: id beyond 2^32 − 1")
		}
		id := next + v
		if fn != nil {
			fn(uint32(id))
		}
		next = id + 1
	}
	return nil
}

// walkSet validates the set b, of the value whose tag is tag, and calls fn
// (if not nil) for each of its ids in increasing order; an empty b is ∅.
func walkSet(tag byte, b []byte, fn func(uint32)) error {
	if len(b) == 0 {
		return nil
	}
	if tag == tagV2 {
		return walkDelta(b, fn)
	}
	return walk(b, fn)
}
