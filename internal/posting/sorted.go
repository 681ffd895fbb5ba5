package posting

import (
	"encoding/binary"
)

// AppendSorted appends the encoding of the operand "remove the ids of
// remove, add the ids of add" to dst and returns the extended slice. Both
// lists must be strictly increasing and disjoint. It writes roaring's
// portable format directly (array containers, or bitmap containers above
// 4 096 ids), without building bitmaps: the fast path for the many small
// operands of a bulk write. Decode reads it like the output of Encode.
func AppendSorted(dst []byte, add, remove []uint32) []byte {
	var stack [64]span
	dst = append(dst, tagV1)
	if len(add) == 0 {
		dst = binary.AppendUvarint(dst, 0)
	} else {
		sp := spans(stack[:0], add)
		dst = binary.AppendUvarint(dst, uint64(sortedSize(sp)))
		dst = appendSortedBitmap(dst, add, sp)
	}
	if len(remove) > 0 {
		dst = appendSortedBitmap(dst, remove, spans(stack[:0], remove))
	}
	return dst
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

// sortedSize is the size of the portable serialization of the ids whose
// containers are sp.
func sortedSize(sp []span) int {
	size := 8 // cookie, container count
	for _, c := range sp {
		size += 8 + containerBytes(c.hi-c.lo) // key, cardinality, offset, data
	}
	return size
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
