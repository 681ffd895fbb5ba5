//go:build !linux

package hugepage

import "unsafe"

// advise does nothing where transparent huge pages are not known.
func advise(unsafe.Pointer, uintptr) bool { return false }
