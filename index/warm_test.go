package index

import (
	"context"
	"math/rand/v2"
	"testing"
)

// TestWarmedCacheFollowsWrites: after Warm builds the posting lists from the
// fingerprints, adds, deletes and replaces (of documents before and after
// the warm, into lists shared with other documents) keep every plan equal
// to the oracle and the cache equal to Pebble (Check); a second Warm
// rebuilds from the changed state.
func TestWarmedCacheFollowsWrites(t *testing.T) {
	for _, widths := range [][]int{{8, 8, 8, 8, 8, 8, 8, 8}, {11, 11, 11, 11, 10, 10}} {
		k := 64
		r := rand.New(rand.NewPCG(uint64(len(widths)), 3))
		s := newTestStore(t, k, widths)
		var qs [][]uint64
		id := uint32(0)
		for i := 0; i < 400; i++ {
			fp := randFP(r, 1)
			if i%40 == 0 {
				qs = append(qs, fp)
			}
			s.add(id, fp)
			id++
		}
		for _, q := range qs { // near neighbours at the radii asked
			for _, d := range []int{0, 3, 6, 9, 12} {
				s.add(id, flipN(r, q, d))
				id++
			}
		}
		check := func(stage string) {
			t.Helper()
			found := 0
			for _, q := range qs {
				for _, thr := range []float64{1, 0.9, 0.8, 0.7, 0.6} {
					found += s.checkAllPlans(q, thr)
				}
			}
			if found == 0 {
				t.Fatalf("%s: nothing found", stage)
			}
			if err := s.ix.Check(context.Background()); err != nil {
				t.Fatalf("%s: %v", stage, err)
			}
		}
		check("lazy cache") // fills some slots from Pebble
		if err := s.ix.Warm(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s.ix.cache.base == nil {
			t.Fatal("Warm built no frozen lists on a dense layout")
		}
		check("warmed")
		for i := uint32(0); i < id; i += 7 {
			s.del(i)
		}
		for i := uint32(3); i < id; i += 11 {
			s.add(i, flipN(r, qs[int(i)%len(qs)], int(i)%10)) // replaces and re-adds
		}
		for i := 0; i < 50; i++ {
			s.add(id, flipN(r, qs[i%len(qs)], i%12))
			id++
		}
		check("written after warm")
		if err := s.ix.Warm(context.Background()); err != nil {
			t.Fatal(err)
		}
		check("warmed again")
	}
}
