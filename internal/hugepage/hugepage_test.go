package hugepage

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestZeroedKeepsZeros: the slice reads as zero after the advice, even
// where small pages had been written before it was made (memory the
// runtime reused), and keeps what is written after it.
func TestZeroedKeepsZeros(t *testing.T) {
	for round := range 3 {
		s := make([]uint64, 3<<20) // 24 MiB
		Zeroed(s)
		for i, v := range s {
			if v != 0 {
				t.Fatalf("round %d: s[%d] = %d after Zeroed", round, i, v)
			}
		}
		for i := range s {
			s[i] = uint64(i) + 1
		}
		for i, v := range s {
			if v != uint64(i)+1 {
				t.Fatalf("round %d: s[%d] = %d, want %d", round, i, v, i+1)
			}
		}
		runtime.KeepAlive(s)
		s = nil
		runtime.GC() // the next round may reuse the written memory
	}
	if Zeroed([]byte(nil)) || Zeroed(make([]byte, 100)) {
		t.Fatal("a slice without a whole huge page was advised")
	}
}

// TestZeroedHugePages checks, on Linux with transparent huge pages in
// "madvise" mode, that an advised slice is backed by huge
// pages once written (AnonHugePages of its advised mapping in /proc/self/smaps).
func TestZeroedHugePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are advised on Linux only")
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[madvise]") {
		// "never": no huge pages; "always": every mapping gets them, so
		// the test could not tell the advice from no advice.
		t.Skipf("transparent huge pages are not in madvise mode here (%q, %v)", strings.TrimSpace(string(mode)), err)
	}
	s := make([]uint64, 4<<20) // 32 MiB: at least 15 whole huge pages
	if !Zeroed(s) {
		t.Fatal("the advice was refused")
	}
	for i := range s {
		s[i] = uint64(i)
	}
	// The first whole huge page: the part before it is not advised, and
	// may be a mapping of its own.
	first := (uintptr(unsafe.Pointer(&s[0])) + Size - 1) &^ (Size - 1)
	m, err := MappingOf(first)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Advised {
		t.Fatal("the advised part of the slice has no huge-page advice (VmFlags)")
	}
	kb := m.AnonHugeKB
	// The kernel may lack free huge pages for some (compaction failed):
	// at least one of the 15 must be there.
	if kb < 2<<10 {
		t.Fatalf("the advised part of the slice holds %d KiB of huge pages, want at least 2 MiB", kb)
	}
	runtime.KeepAlive(s)
}
