package splitmix

import "testing"

// TestKnownValues checks the first outputs of SplitMix64 from seed 0, as
// published with the reference implementation (Vigna's splitmix64.c).
func TestKnownValues(t *testing.T) {
	x := uint64(0)
	for i, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := Next(&x); got != want {
			t.Fatalf("output %d: %#x, want %#x", i, got, want)
		}
	}
}
