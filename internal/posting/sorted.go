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
	dst = append(dst, tagV1)
	if len(add) == 0 {
		dst = binary.AppendUvarint(dst, 0)
	} else {
		dst = binary.AppendUvarint(dst, uint64(sortedSize(add)))
		dst = appendSortedBitmap(dst, add)
	}
	if len(remove) > 0 {
		dst = appendSortedBitmap(dst, remove)
	}
	return dst
}

// containers calls fn for each run of ids sharing their high 16 bits.
func containers(ids []uint32, fn func(high uint16, low []uint32)) {
	for len(ids) > 0 {
		h := ids[0] >> 16
		n := 1
		for n < len(ids) && ids[n]>>16 == h {
			n++
		}
		fn(uint16(h), ids[:n])
		ids = ids[n:]
	}
}

// containerBytes is the size of a container of card ids.
func containerBytes(card int) int {
	if card > arrayMaxSize {
		return bitmapBytes
	}
	return 2 * card
}

// sortedSize is the size of the portable serialization of ids.
func sortedSize(ids []uint32) int {
	size := 8 // cookie, container count
	containers(ids, func(_ uint16, low []uint32) {
		size += 8 + containerBytes(len(low)) // key, cardinality, offset, data
	})
	return size
}

// appendSortedBitmap appends the portable serialization (no run
// containers) of the increasing ids.
func appendSortedBitmap(dst []byte, ids []uint32) []byte {
	n := 0
	containers(ids, func(uint16, []uint32) { n++ })
	dst = binary.LittleEndian.AppendUint32(dst, serialCookieNoRun)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	containers(ids, func(high uint16, low []uint32) {
		dst = binary.LittleEndian.AppendUint16(dst, high)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(low)-1))
	})
	off := 8 + 8*n // offsets count from the start of the bitmap
	containers(ids, func(_ uint16, low []uint32) {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(off))
		off += containerBytes(len(low))
	})
	containers(ids, func(_ uint16, low []uint32) {
		if len(low) <= arrayMaxSize {
			for _, id := range low {
				dst = binary.LittleEndian.AppendUint16(dst, uint16(id))
			}
			return
		}
		var words [bitmapBytes / 8]uint64
		for _, id := range low {
			v := uint16(id)
			words[v/64] |= 1 << (v % 64)
		}
		for _, w := range words {
			dst = binary.LittleEndian.AppendUint64(dst, w)
		}
	})
	return dst
}
