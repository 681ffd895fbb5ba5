package posting

import "github.com/RoaringBitmap/roaring/v2"

// maxSliceIDs is the largest number of ids (Add plus Remove) a valueMerger
// keeps as sorted slices before it switches to roaring bitmaps. Posting
// lists are short (n / 2^w ids on average), so most merges never switch.
const maxSliceIDs = 4096

// sortedIDs returns the ids of the serialized set b (empty meaning ∅) of a
// value tagged tag, appended to dst, validating b.
func sortedIDs(dst []uint32, tag byte, b []byte) ([]uint32, error) {
	err := walkSet(tag, b, func(id uint32) { dst = append(dst, id) })
	return dst, err
}

// union returns a ∪ b of two increasing lists, as a new list.
func union(a, b []uint32) []uint32 {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]uint32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// minus returns a \ b of two increasing lists, as a new list (or a itself
// when nothing is removed).
func minus(a, b []uint32) []uint32 {
	if len(a) == 0 || len(b) == 0 {
		return a
	}
	out := make([]uint32, 0, len(a))
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j < len(b) && b[j] == x {
			continue
		}
		out = append(out, x)
	}
	return out
}

// mergeSlices composes the operand value with the merger's sorted-slice
// state (newer: value is newer than everything seen). It reports false,
// leaving m untouched, when the result would exceed maxSliceIDs or the
// merger is not in slice mode; the caller then uses bitmaps.
func (m *valueMerger) mergeSlices(value []byte, newer bool) (bool, error) {
	if !m.sliceMode {
		return false, nil
	}
	addB, remB, tag, err := split(value)
	if err != nil {
		return false, err
	}
	if len(addB)+len(remB) > 2*maxSliceIDs+64 { // roaring: 2 bytes per id at best, plus headers
		return false, nil
	}
	m.noteTag(tag)
	a, err := sortedIDs(nil, tag, addB)
	if err != nil {
		return false, err
	}
	r, err := sortedIDs(nil, tag, remB)
	if err != nil {
		return false, err
	}
	var add, rem []uint32
	if newer { // Add = (Add_m \ R) ∪ A, Remove = (Remove_m \ A) ∪ R
		add = union(minus(m.sa, r), a)
		rem = union(minus(m.sr, a), r)
	} else { // Add = (A \ Remove_m) ∪ Add_m, Remove = (R \ Add_m) ∪ Remove_m
		add = union(minus(a, m.sr), m.sa)
		rem = union(minus(r, m.sa), m.sr)
	}
	// A valid operand has A ∩ R = ∅; one that does not is normalized as
	// Decode does (Add wins).
	rem = minus(rem, add)
	if len(add)+len(rem) > maxSliceIDs {
		return false, nil
	}
	m.sa, m.sr = add, rem
	return true, nil
}

// leaveSliceMode moves the sorted-slice state into bitmaps.
func (m *valueMerger) leaveSliceMode() {
	if !m.sliceMode {
		return
	}
	m.op = Op{Add: roaring.BitmapOf(m.sa...), Remove: roaring.BitmapOf(m.sr...)}
	m.sa, m.sr, m.sliceMode = nil, nil, false
}
