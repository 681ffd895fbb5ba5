package hugepage

import (
	"syscall"
	"unsafe"
)

// Linux's madvise advice values (asm-generic/mman-common.h).
const (
	madvDontNeed = 4
	madvHugePage = 14
)

// advise marks [p, p+n) for huge pages, then drops the pages already
// there (MADV_DONTNEED: private anonymous memory reads as zero after it).
func advise(p unsafe.Pointer, n uintptr) bool {
	b := unsafe.Slice((*byte)(p), n)
	if syscall.Madvise(b, madvHugePage) != nil {
		return false
	}
	return syscall.Madvise(b, madvDontNeed) == nil
}
