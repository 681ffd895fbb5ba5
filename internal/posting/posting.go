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

// tagV1 is the first byte of every version-1 posting value.
const tagV1 = 1

// Op is a decoded posting value or merge operand: the function
// x → (x \ Remove) ∪ Add on id sets. Decode always returns an Op with
// non-nil, disjoint Add and Remove; a nil field is treated as the empty set
// by Encode.
type Op struct {
	Add, Remove *roaring.Bitmap
}

// EncodeAdd returns the operand that adds ids. ids is not modified.
func EncodeAdd(ids *roaring.Bitmap) []byte {
	return appendOp(nil, ids, nil, false)
}

// EncodeRemove returns the operand that removes ids. ids is not modified.
func EncodeRemove(ids *roaring.Bitmap) []byte {
	return appendOp(nil, nil, ids, false)
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
	return appendOp(dst, o.Add, rem, false)
}

// appendOp appends the encoding of the op (add, remove), which must be
// disjoint. If owned, the bitmaps are run-optimized in place; otherwise
// copies are optimized and the inputs are left untouched.
func appendOp(dst []byte, add, remove *roaring.Bitmap, owned bool) []byte {
	dst = append(dst, tagV1)
	var addLen uint64
	if add != nil && !add.IsEmpty() {
		if !owned {
			add = add.Clone()
		}
		add.RunOptimize()
		addLen = add.GetSerializedSizeInBytes()
	}
	dst = binary.AppendUvarint(dst, addLen)
	if addLen > 0 {
		dst = appendBitmap(dst, add)
	}
	if remove != nil && !remove.IsEmpty() {
		if !owned {
			remove = remove.Clone()
		}
		remove.RunOptimize()
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
// serializations (either may be empty, meaning ∅). It does not validate
// the bitmaps themselves.
func split(b []byte) (add, remove []byte, err error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("%w: empty value", ErrCorrupt)
	}
	if b[0] != tagV1 {
		return nil, nil, fmt.Errorf("%w: unknown tag %#x", ErrCorrupt, b[0])
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 {
		return nil, nil, fmt.Errorf("%w: bad Add length", ErrCorrupt)
	}
	rest := b[1+k:]
	if n > uint64(len(rest)) {
		return nil, nil, fmt.Errorf("%w: Add length %d exceeds the %d bytes left", ErrCorrupt, n, len(rest))
	}
	return rest[:n], rest[n:], nil
}

// decodeBitmap validates b (empty meaning ∅) and decodes it into a new
// bitmap that does not reference b.
func decodeBitmap(b []byte) (*roaring.Bitmap, error) {
	bm := roaring.New()
	if len(b) == 0 {
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
	addB, remB, err := split(b)
	if err != nil {
		return nil, err
	}
	add, err := decodeBitmap(addB)
	if err != nil {
		return nil, fmt.Errorf("add set: %w", err)
	}
	rem, err := decodeBitmap(remB)
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
	addB, _, err := split(b)
	if err != nil {
		return nil, err
	}
	return decodeBitmap(addB)
}

// ForEach calls fn for each id of a fully merged value in increasing order,
// reading the serialized bitmap in place without allocating; b is not
// retained after ForEach returns. Like IDs it ignores Remove. A malformed
// value yields an error wrapping ErrCorrupt; fn may already have been called
// for some ids when the corruption is found.
func ForEach(b []byte, fn func(id uint32)) error {
	addB, _, err := split(b)
	if err != nil {
		return err
	}
	if len(addB) == 0 {
		return nil
	}
	return walk(addB, fn)
}
