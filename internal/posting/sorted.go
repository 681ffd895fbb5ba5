package posting

import (
	"encoding/binary"

	"github.com/RoaringBitmap/roaring/v2"
)

// AppendSorted appends the encoding of the operand "remove the ids of
// remove, add the ids of add" to dst and returns the extended slice. Both
// lists must be strictly increasing and disjoint. It writes roaring's
// portable format directly (array containers, or bitmap containers above
// 4 096 ids), without building bitmaps: the fast path for the many small
// operands of a bulk write; with enc Compact, the compact encoding instead
// when that is shorter; when roaring's run containers are the shortest, it
// writes them, through bitmaps. Decode reads it like the output of
// Encode.
func AppendSorted(dst []byte, add, remove []uint32, enc Encoding) []byte {
	pa, ra := roaringSizes(add)
	pr, rr := roaringSizes(remove)
	plain := uvarintLen(uint64(pa)) + pa + pr
	runs := uvarintLen(uint64(ra)) + ra + rr
	if enc == Compact {
		if da, dr, ok := compactShorter(add, remove, min(plain, runs)); ok {
			return appendCompact(dst, add, remove, da, dr)
		}
	}
	if runs < plain {
		// Roaring's run containers are shorter: through bitmaps.
		return appendOp(dst, roaring.BitmapOf(add...), roaring.BitmapOf(remove...), true, Roaring)
	}
	var stack [64]span
	sa := spans(stack[:0], add)
	dst = append(dst, tagV1)
	dst = binary.AppendUvarint(dst, uint64(pa))
	if len(add) > 0 {
		dst = appendSortedBitmap(dst, add, sa)
	}
	if len(remove) > 0 {
		dst = appendSortedBitmap(dst, remove, spans(stack[:0], remove))
	}
	return dst
}

// compactShorter reports whether the compact encoding of the operand
// (add, remove) is shorter than roar bytes (a roaring encoding's, after
// the tag), and the lengths of its sets (deltaSize) when it is.
func compactShorter(add, remove []uint32, roar int) (da, dr int, ok bool) {
	if len(add)+len(remove) >= roar { // a byte per id at least
		return 0, 0, false
	}
	da, dr = deltaSize(add), deltaSize(remove)
	return da, dr, uvarintLen(uint64(da))+da+dr < roar
}

// appendCompact appends the operand (add, remove) in the compact
// encoding, whose sets take da and dr bytes (deltaSize).
func appendCompact(dst []byte, add, remove []uint32, da, dr int) []byte {
	dst = binary.AppendUvarint(append(dst, tagV2), uint64(da))
	dst = appendDelta(dst, add, da)
	return appendDelta(dst, remove, dr)
}

// roaringBitmapMemory is what roaring takes a bitmap container to weigh
// when it decides on run containers (bitmapContainerSizeInBytes: the
// bitmap and, on 64-bit systems, the 32 bytes of its struct): a bitmap
// container of 2 048 runs or so becomes a run container a little larger
// than its serialized 8 192 bytes.
const roaringBitmapMemory = bitmapBytes + 32

// roaringSizes returns the sizes of the portable serialization of the
// increasing ids without run containers (plain, as appendSortedBitmap
// writes it) and with roaring's RunOptimize (run containers where its rule
// puts them): 0 for none. A run container takes 2 bytes and 4
// per run.
func roaringSizes(ids []uint32) (plain, withRuns int) {
	if len(ids) == 0 {
		return 0, 0
	}
	n, data, runData, anyRun := 0, 0, 0, false
	for lo := 0; lo < len(ids); {
		h := ids[lo] >> 16
		hi, runs := lo+1, 1
		for ; hi < len(ids) && ids[hi]>>16 == h; hi++ {
			if ids[hi] != ids[hi-1]+1 {
				runs++
			}
		}
		c := containerBytes(hi - lo)
		data += c
		// Roaring's rule (toEfficientContainer): runs when they take
		// less than the container as an array and as a bitmap in memory.
		if r := 2 + 4*runs; r < min(2*(hi-lo), roaringBitmapMemory) {
			runData += r
			anyRun = true
		} else {
			runData += c
		}
		n++
		lo = hi
	}
	plain = 8 + 8*n + data // cookie, count; key, cardinality, offset each
	if !anyRun {
		return plain, plain
	}
	withRuns = 4 + (n+7)/8 + 4*n + runData // cookie with the count, run flags, headers
	if n >= noOffsetThreshold {
		withRuns += 4 * n // offsets
	}
	return plain, withRuns
}

// span is a run of ids sharing their high 16 bits: a roaring container.
type span struct {
	high   uint16
	lo, hi int // ids[lo:hi]
}

// spans appends to dst the containers of the increasing ids.
func spans(dst []span, ids []uint32) []span {
	for lo := 0; lo < len(ids); {
		h := ids[lo] >> 16
		hi := lo + 1
		for hi < len(ids) && ids[hi]>>16 == h {
			hi++
		}
		dst = append(dst, span{high: uint16(h), lo: lo, hi: hi})
		lo = hi
	}
	return dst
}

// containerBytes is the size of a container of card ids.
func containerBytes(card int) int {
	if card > arrayMaxSize {
		return bitmapBytes
	}
	return 2 * card
}

// appendSortedBitmap appends the portable serialization (no run
// containers) of the increasing ids, whose containers are sp.
func appendSortedBitmap(dst []byte, ids []uint32, sp []span) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, serialCookieNoRun)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(sp)))
	for _, c := range sp {
		dst = binary.LittleEndian.AppendUint16(dst, c.high)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(c.hi-c.lo-1))
	}
	off := 8 + 8*len(sp) // offsets count from the start of the bitmap
	for _, c := range sp {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(off))
		off += containerBytes(c.hi - c.lo)
	}
	for _, c := range sp {
		low := ids[c.lo:c.hi]
		if len(low) <= arrayMaxSize {
			for _, id := range low {
				dst = binary.LittleEndian.AppendUint16(dst, uint16(id))
			}
			continue
		}
		var words [bitmapBytes / 8]uint64
		for _, id := range low {
			v := uint16(id)
			words[v/64] |= 1 << (v % 64)
		}
		for _, w := range words {
			dst = binary.LittleEndian.AppendUint64(dst, w)
		}
	}
	return dst
}
