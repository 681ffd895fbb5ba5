package posting

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Roaring portable format constants
// (https://github.com/RoaringBitmap/RoaringFormatSpec).
const (
	serialCookieNoRun = 12346 // only array and bitmap containers
	serialCookie      = 12347 // run containers present: cookie | (n-1)<<16
	noOffsetThreshold = 4     // with serialCookie, offsets only if n >= 4
	arrayMaxSize      = 4096  // larger containers are bitmaps
	bitmapBytes       = 8192
)

// walk validates b as exactly one serialized roaring bitmap in the portable
// format and, if fn is not nil, calls fn for each element in increasing
// order. It accepts exactly what roaring's ReadFrom followed by Validate
// accepts, except that trailing bytes are an error. On error fn may already
// have been called for a prefix of the elements. It never allocates.
func walk(b []byte, fn func(uint32)) error {
	if len(b) < 4 {
		return corruptf("roaring header truncated (%d bytes)", len(b))
	}
	cookie := binary.LittleEndian.Uint32(b)
	p := 4
	var n int
	var runBitmap []byte
	switch {
	case cookie&0xFFFF == serialCookie:
		n = int(cookie>>16) + 1
		rb := (n + 7) / 8
		if len(b)-p < rb {
			return corruptf("roaring run bitmap truncated")
		}
		runBitmap = b[p : p+rb]
		p += rb
	case cookie == serialCookieNoRun:
		if len(b)-p < 4 {
			return corruptf("roaring container count truncated")
		}
		c := binary.LittleEndian.Uint32(b[p:])
		p += 4
		if c > 1<<16 {
			return corruptf("roaring container count %d > 65536", c)
		}
		n = int(c)
	default:
		return corruptf("bad roaring cookie %#x", cookie)
	}
	if len(b)-p < 4*n {
		return corruptf("roaring descriptive header truncated")
	}
	header := b[p : p+4*n]
	p += 4 * n
	if runBitmap == nil || n >= noOffsetThreshold {
		if len(b)-p < 4*n {
			return corruptf("roaring offset header truncated")
		}
		p += 4 * n // offsets are redundant with a sequential walk
	}
	prevKey := -1
	for i := 0; i < n; i++ {
		key := int(binary.LittleEndian.Uint16(header[4*i:]))
		card := int(binary.LittleEndian.Uint16(header[4*i+2:])) + 1
		if key <= prevKey {
			return corruptf("roaring keys not increasing (%d after %d)", key, prevKey)
		}
		prevKey = key
		hi := uint32(key) << 16
		switch {
		case runBitmap != nil && runBitmap[i/8]&(1<<(i%8)) != 0:
			if len(b)-p < 2 {
				return corruptf("roaring run count truncated")
			}
			nr := int(binary.LittleEndian.Uint16(b[p:]))
			p += 2
			if nr == 0 {
				return corruptf("empty roaring run container")
			}
			if len(b)-p < 4*nr {
				return corruptf("roaring run container truncated")
			}
			runs := b[p : p+4*nr]
			p += 4 * nr
			next := 0 // smallest allowed start: previous last + 2
			for r := 0; r < nr; r++ {
				start := int(binary.LittleEndian.Uint16(runs[4*r:]))
				last := start + int(binary.LittleEndian.Uint16(runs[4*r+2:]))
				if start < next || last > 0xFFFF {
					return corruptf("roaring runs overlapping, adjacent or out of range")
				}
				next = last + 2
				if fn != nil {
					for x := start; x <= last; x++ {
						fn(hi | uint32(x))
					}
				}
			}
		case card > arrayMaxSize:
			if len(b)-p < bitmapBytes {
				return corruptf("roaring bitmap container truncated")
			}
			words := b[p : p+bitmapBytes]
			p += bitmapBytes
			pc := 0
			for j := 0; j < bitmapBytes; j += 8 {
				pc += bits.OnesCount64(binary.LittleEndian.Uint64(words[j:]))
			}
			if pc != card {
				return corruptf("roaring bitmap container cardinality %d, header says %d", pc, card)
			}
			if fn != nil {
				for j := 0; j < bitmapBytes; j += 8 {
					w := binary.LittleEndian.Uint64(words[j:])
					base := hi | uint32(j*8)
					for w != 0 {
						fn(base | uint32(bits.TrailingZeros64(w)))
						w &= w - 1
					}
				}
			}
		default:
			if len(b)-p < 2*card {
				return corruptf("roaring array container truncated")
			}
			arr := b[p : p+2*card]
			p += 2 * card
			prev := -1
			for j := 0; j < len(arr); j += 2 {
				v := int(binary.LittleEndian.Uint16(arr[j:]))
				if v <= prev {
					return corruptf("roaring array container not increasing")
				}
				prev = v
				if fn != nil {
					fn(hi | uint32(v))
				}
			}
		}
	}
	if p != len(b) {
		return corruptf("%d trailing bytes after roaring bitmap", len(b)-p)
	}
	return nil
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}
