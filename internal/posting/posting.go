package posting

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
)

// ErrCorrupt is wrapped by every error returned for a malformed posting
// value. Test with errors.Is.
var ErrCorrupt = errors.New("posting: corrupt value")

// The first byte of a posting value says how its sets are encoded: tagV1
// in roaring's portable format, tagV2 in the compact encoding (delta.go).
// The framing after it is the same.
const (
	tagV1 = 1
	tagV2 = 2
)

// Op is a decoded posting value or merge operand: the function
// x → (x \ Remove) ∪ Add on id sets. Decode always returns an Op with
// non-nil, disjoint Add and Remove; a nil field is treated as the empty set
// by Encode.
type Op struct {
	Add, Remove *roaring.Bitmap
}

// EncodeAdd returns the operand that adds ids. ids is not modified.
func EncodeAdd(ids *roaring.Bitmap) []byte {
	return appendOp(nil, ids, nil, false, Roaring)
}

// EncodeAddAs returns the operand that adds ids, in the shorter encoding
// enc allows. ids is not modified.
func EncodeAddAs(ids *roaring.Bitmap, enc Encoding) []byte {
	return appendOp(nil, ids, nil, false, enc)
}

// EncodeRemove returns the operand that removes ids. ids is not modified.
func EncodeRemove(ids *roaring.Bitmap) []byte {
	return appendOp(nil, nil, ids, false, Roaring)
}

// Encode returns the encoding of o. Ids in both Add and Remove count as
// added (Add wins, as in the op's definition). o is not modified.
func (o *Op) Encode() []byte { return o.AppendEncode(nil) }

// AppendEncode appends the encoding of o to dst and returns the extended
// slice. o is not modified.
func (o *Op) AppendEncode(dst []byte) []byte {
	rem := o.Remove
	if o.Add != nil && !o.Add.IsEmpty() && rem != nil && rem.Intersects(o.Add) {
		rem = roaring.AndNot(rem, o.Add)
	}
	return appendOp(dst, o.Add, rem, false, Roaring)
}

// appendOp appends the encoding of the op (add, remove), which must be
// disjoint: in roaring's format, or with enc Compact in the compact one
// when that is shorter. If owned, the bitmaps are run-optimized in place;
// otherwise copies are optimized and the inputs are left untouched.
func appendOp(dst []byte, add, remove *roaring.Bitmap, owned bool, enc Encoding) []byte {
	prepare := func(bm *roaring.Bitmap) (*roaring.Bitmap, int) {
		if bm == nil || bm.IsEmpty() {
			return nil, 0
		}
		if !owned {
			bm = bm.Clone()
		}
		bm.RunOptimize()
		return bm, int(bm.GetSerializedSizeInBytes())
	}
	add, addLen := prepare(add)
	remove, remLen := prepare(remove)
	if enc == Compact {
		var card uint64
		if add != nil {
			card += add.GetCardinality()
		}
		if remove != nil {
			card += remove.GetCardinality()
		}
		if card < uint64(addLen+remLen) { // a byte per id at least
			var a, r []uint32
			if add != nil {
				a = add.ToArray()
			}
			if remove != nil {
				r = remove.ToArray()
			}
			if da, dr, ok := compactShorter(a, r, uvarintLen(uint64(addLen))+addLen+remLen); ok {
				return appendCompact(dst, a, r, da, dr)
			}
		}
	}
	dst = append(dst, tagV1)
	dst = binary.AppendUvarint(dst, uint64(addLen))
	if add != nil {
		dst = appendBitmap(dst, add)
	}
	if remove != nil {
		dst = appendBitmap(dst, remove)
	}
	return dst
}

// appendWriter is an io.Writer appending to a byte slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func appendBitmap(dst []byte, bm *roaring.Bitmap) []byte {
	w := appendWriter{b: dst}
	// Writing to appendWriter cannot fail: roaring only returns the writer's
	// errors.
	_, _ = bm.WriteTo(&w)
	return w.b
}

// split validates the framing of a value and returns its Add and Remove
// serializations (either may be empty, meaning ∅) and its tag. It does
// not validate the sets themselves.
func split(b []byte) (add, remove []byte, tag byte, err error) {
	if len(b) == 0 {
		return nil, nil, 0, fmt.Errorf("%w: empty value", ErrCorrupt)
	}
	if tag = b[0]; tag != tagV1 && tag != tagV2 {
		return nil, nil, 0, fmt.Errorf("%w: unknown tag %#x", ErrCorrupt, b[0])
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 {
		return nil, nil, 0, fmt.Errorf("%w: bad Add length", ErrCorrupt)
	}
	rest := b[1+k:]
	if n > uint64(len(rest)) {
		return nil, nil, 0, fmt.Errorf("%w: Add length %d exceeds the %d bytes left", ErrCorrupt, n, len(rest))
	}
	return rest[:n], rest[n:], tag, nil
}

// decodeBitmap validates the set b (empty meaning ∅) of a value tagged
// tag and decodes it into a new bitmap that does not reference b.
func decodeBitmap(tag byte, b []byte) (*roaring.Bitmap, error) {
	bm := roaring.New()
	if len(b) == 0 {
		return bm, nil
	}
	if tag == tagV2 {
		ids, err := sortedIDs(nil, tag, b)
		if err != nil {
			return nil, err
		}
		bm.AddMany(ids)
		return bm, nil
	}
	if err := walk(b, nil); err != nil {
		return nil, err
	}
	if err := bm.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return bm, nil
}

// Decode decodes a posting value or operand. The result does not reference
// b. Remove is made disjoint from Add (Add wins). A malformed value yields
// an error wrapping ErrCorrupt.
func Decode(b []byte) (*Op, error) {
	addB, remB, tag, err := split(b)
	if err != nil {
		return nil, err
	}
	add, err := decodeBitmap(tag, addB)
	if err != nil {
		return nil, fmt.Errorf("add set: %w", err)
	}
	rem, err := decodeBitmap(tag, remB)
	if err != nil {
		return nil, fmt.Errorf("remove set: %w", err)
	}
	if !rem.IsEmpty() && !add.IsEmpty() {
		rem.AndNot(add)
	}
	return &Op{Add: add, Remove: rem}, nil
}

// IDs returns the id set of a fully merged value, as read from Pebble: its
// Add set. Remove is ignored (and not validated) since nothing lies below a
// fully merged value. The result does not reference b. A malformed value
// yields an error wrapping ErrCorrupt.
func IDs(b []byte) (*roaring.Bitmap, error) {
	addB, _, tag, err := split(b)
	if err != nil {
		return nil, err
	}
	return decodeBitmap(tag, addB)
}

// IsCompact reports whether the value b is in the compact encoding, which
// only a store written with Compact may hold.
func IsCompact(b []byte) bool { return len(b) > 0 && b[0] == tagV2 }

// ForEach calls fn for each id of a fully merged value in increasing order,
// reading the serialized set in place without allocating; b is not
// retained after ForEach returns. Like IDs it ignores Remove. A malformed
// value yields an error wrapping ErrCorrupt; fn may already have been called
// for some ids when the corruption is found.
func ForEach(b []byte, fn func(id uint32)) error {
	addB, _, tag, err := split(b)
	if err != nil {
		return err
	}
	return walkSet(tag, addB, fn)
}
