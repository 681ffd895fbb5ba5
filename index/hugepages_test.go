package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/fpdb/fpdb/internal/hugepage"
)

// TestHugePagesSwitch: the fingerprint chunks and the posting arrays Warm
// builds are advised for huge pages (their mapping's VmFlags in
// /proc/self/smaps hold "hg") unless SetHugePages(false) was called. It
// runs in a child process of its own, switched off first: the advice stays
// on an address range after its memory is freed, so earlier tests' advice
// could cover the arrays of this one.
func TestHugePagesSwitch(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are advised on Linux only")
	}
	if os.Getenv("FPDB_TEST_HUGEPAGE_CHILD") == "" {
		// The probe runs here only: its advised range could hold the
		// child's arrays.
		if !hugepage.Zeroed(make([]byte, 2*hugepage.Size)) {
			t.Skip("this system refuses the huge-page advice")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHugePagesSwitch$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "FPDB_TEST_HUGEPAGE_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestHugePagesSwitch") {
			t.Fatalf("child process: %v\n%s", err, out)
		}
		return
	}
	r := rand.New(rand.NewPCG(8, 8))
	var keep []*testStore
	for _, on := range []bool{false, true} {
		s := newTestStore(t, 512, SplitWidths(512, 32))
		s.ix.SetHugePages(on)
		s.addRandom(r, 0, 1<<fpChunkBits+10) // a full chunk of 4 MiB
		if err := s.ix.Warm(context.Background()); err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{
			"fingerprints": bytesOf(s.ix.fps.chunks[0]),
			"posting ids":  bytesOf(s.ix.cache.base.ids),
		} {
			hg, err := advisedHuge(b)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if hg != on {
				t.Errorf("SetHugePages(%v): %s advised for huge pages: %v", on, name, hg)
			}
		}
		keep = append(keep, s)
	}
	runtime.KeepAlive(keep)
}

func bytesOf[T any](s []T) []byte {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(len(s))*unsafe.Sizeof(zero))
}

// advisedHuge reports whether the mapping holding the first whole huge
// page inside b has the huge-page advice.
func advisedHuge(b []byte) (bool, error) {
	p0 := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	p := (p0 + hugepage.Size - 1) &^ (hugepage.Size - 1)
	if p+hugepage.Size > p0+uintptr(len(b)) {
		return false, fmt.Errorf("%d bytes hold no whole huge page", len(b))
	}
	m, err := hugepage.MappingOf(p)
	return m.Advised, err
}
