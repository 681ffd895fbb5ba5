package index

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, n := range []int{0, 1, 100, 5000, 100000} {
		for _, mask := range []uint64{^uint64(0), 0x1fffff_0000ffff, 0xff} {
			ks := make([]uint64, n)
			for i := range ks {
				ks[i] = r.Uint64() & mask
			}
			want := slices.Clone(ks)
			slices.Sort(want)
			sortKeys(ks)
			if !slices.Equal(ks, want) {
				t.Fatalf("n=%d mask=%x: not sorted like slices.Sort", n, mask)
			}
		}
	}
}
