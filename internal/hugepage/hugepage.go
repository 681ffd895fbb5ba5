package hugepage

import "unsafe"

// Size is the huge page size advised for (2 MiB).
const Size = 2 << 20

// Zeroed advises the whole huge pages inside s for huge pages (see the
// package doc). s must be all zero and not yet in use: the small pages
// already backing that part are released, and read as zero afterwards. It
// reports whether any part of s was advised and accepted.
func Zeroed[T any](s []T) bool {
	if len(s) == 0 {
		return false
	}
	var zero T
	n := uintptr(len(s)) * unsafe.Sizeof(zero)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	lo := (p + Size - 1) &^ (Size - 1)
	hi := (p + n) &^ (Size - 1)
	if hi <= lo {
		return false
	}
	return advise(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), lo-p), hi-lo)
}
