package index

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// gathered puts lists into sc as gather does (the lists array picked by
// their number) and returns sc.
func gathered(sc *probeScratch, lists [][]uint32) *probeScratch {
	sc.lists = pick(sc.inline.lists[:], &sc.big.lists, len(lists))
	for _, l := range lists {
		sc.lists = append(sc.lists, l)
		sc.total += len(l)
	}
	return sc
}

// idRange returns the ids from, from+step, … below to.
func idRange(from, to, step uint32) []uint32 {
	var ids []uint32
	for id := from; id < to; id += step {
		ids = append(ids, id)
	}
	return ids
}

// TestScratchPhases: each phase of a probe takes its scratch's inline
// array when its size fits and the scratch's heap array (kept for the
// next query) when not; a small probe after a large one is back in the
// inline arrays; the counts are right either way, and a returned scratch
// holds no list.
func TestScratchPhases(t *testing.T) {
	var sp scratchPool
	hash := countConfig{hashMax: hashMaxPostings, shift: blockBits}
	isInline := func(sc *probeScratch) bool {
		return &sc.hashIDs[0] == &sc.inline.hashIDs[0] && &sc.hashCount[0] == &sc.inline.hashCount[0] &&
			&sc.cands[:1][0] == &sc.inline.cands[0] && &sc.lists[:1][0] == &sc.inline.lists[0]
	}
	for round, c := range []struct {
		name   string
		lists  [][]uint32
		t      int
		cfg    countConfig
		want   []uint32
		inline bool
	}{
		// 1 600 postings: a count table of 4 096 slots; 300 candidates.
		{"large hash", [][]uint32{idRange(0, 800, 1), idRange(500, 1300, 1)}, 2, hash, idRange(500, 800, 1), false},
		{"small after large", [][]uint32{{1, 5, 9}, {5, 9}, {9, 12}}, 2, hash, []uint32{5, 9}, true},
		// t = 1 over 3 000 postings counted in blocks: the candidates grow
		// past their first capacity.
		{"blocks, t = 1", [][]uint32{idRange(0, 3000, 2), idRange(1, 3000, 2)}, 1, countConfig{hashMax: 64, shift: 8}, idRange(0, 3000, 1), false},
		{"small again", [][]uint32{{3}, {3, 4}}, 2, hash, []uint32{3}, true},
	} {
		sc := gathered(sp.get(), c.lists)
		got, err := sc.count(c.t, 1<<20, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		got = slices.Clone(got)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Fatalf("%s: %d candidates %v…, want %d", c.name, len(got), got[:min(len(got), 5)], len(c.want))
		}
		if c.cfg == hash && isInline(sc) != c.inline {
			t.Fatalf("%s: inline arrays %v, want %v", c.name, isInline(sc), c.inline)
		}
		switch round {
		case 0:
			if cap(sc.big.hashIDs) < 4096 || &sc.hashIDs[0] != &sc.big.hashIDs[:1][0] || &sc.cands[:1][0] != &sc.big.cands[:1][0] {
				t.Fatalf("%s: the count table (%d) or the candidates are not the scratch's heap arrays", c.name, cap(sc.big.hashIDs))
			}
		case 2:
			if cap(sc.big.cands) < 3000 {
				t.Fatalf("%s: the grown candidates (%d) were not kept", c.name, cap(sc.big.cands))
			}
		}
		sp.put(sc)
		for _, l := range append(sc.big.lists[:cap(sc.big.lists)], sc.inline.lists[:]...) {
			if l != nil {
				t.Fatalf("%s: a returned scratch keeps a posting list", c.name)
			}
		}
	}
	sc := sp.get()
	if ys := sc.startProbes(300); cap(ys) < 300 || &ys[:1][0] == &sc.inline.ys[0] {
		t.Fatal("300 probes in the inline array of 256")
	}
	if ys := sc.startProbes(27); &ys[:1][0] != &sc.inline.ys[0] {
		t.Fatal("27 probes not in the inline array")
	}
	sp.put(sc)
}

// randomLists returns n sorted lists of about per distinct ids each below
// limit, drawn by draw, with extra ids planted in several lists.
func randomLists(r *rand.Rand, n, per int, draw func() uint32) [][]uint32 {
	lists := make([][]uint32, n)
	for i := range lists {
		for range 1 + r.IntN(2*per) {
			lists[i] = append(lists[i], draw())
		}
	}
	for range n / 4 { // some ids in several lists
		id := draw()
		for range 1 + r.IntN(6) {
			i := r.IntN(n)
			lists[i] = append(lists[i], id)
		}
	}
	for i, l := range lists {
		slices.Sort(l)
		lists[i] = slices.Compact(l)
	}
	return lists
}

// TestCountBlocks: counting in blocks finds exactly the ids in at least t
// lists, whether the ids spread evenly over the blocks they span (one
// pass into regions of 1.5 times the even share) or crowd into some of
// them (a region overflows, and the counting sort partitions again), in
// blocks of 8 ids and of 2^16.
func TestCountBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for _, c := range []struct {
		name  string
		limit uint32
		shift uint
		draw  func() uint32
		even  bool // the even partition holds
	}{
		{"spread, 2^16", 1 << 20, 16, func() uint32 { return r.Uint32N(1 << 20) }, true},
		{"the upper half (the lower deleted)", 1 << 20, 16, func() uint32 { return 1<<19 + r.Uint32N(1<<19) }, true},
		{"spread, 2^3", 256, 3, func() uint32 { return r.Uint32N(256) }, true},
		{"one block", 1 << 20, 16, func() uint32 { return 3<<16 + r.Uint32N(1<<16) }, true},
		{"the last ids", 1 << 20, 16, func() uint32 { return 1<<20 - 1 - r.Uint32N(1000) }, true},
		{"every other block", 1 << 20, 16, func() uint32 { return r.Uint32N(1<<20) &^ (1 << 16) }, false},
		{"crowded at both ends", 1 << 20, 16, func() uint32 { return r.Uint32N(1000) + uint32(r.IntN(2))*(1<<20-1000) }, false},
	} {
		for _, tt := range []int{1, 2, 3} {
			lists := randomLists(r, 400, 12, c.draw)
			want := map[uint32]int{}
			for _, l := range lists {
				for _, id := range l {
					want[id]++
				}
			}
			var wantIDs []uint32
			for id, n := range want {
				if n >= tt {
					wantIDs = append(wantIDs, id)
				}
			}
			slices.Sort(wantIDs)
			for _, exact := range []bool{false, true} {
				var sp scratchPool
				sc := gathered(sp.get(), lists)
				lo, hi := uint32(c.limit), uint32(0)
				for _, l := range lists {
					lo, hi = min(lo, l[0]), max(hi, l[len(l)-1])
				}
				nb := int(hi>>c.shift-lo>>c.shift) + 1
				start, end := make([]uint32, nb), make([]uint32, nb)
				if even := sc.partitionEven(start, end, lo>>c.shift, c.shift); even != c.even {
					t.Fatalf("%s: even partition %v, want %v", c.name, even, c.even)
				}
				got, err := sc.count(tt, c.limit, countConfig{hashMax: -1, shift: c.shift, exact: exact})
				if err != nil {
					t.Fatal(err)
				}
				got = slices.Clone(got)
				slices.Sort(got)
				if !slices.Equal(got, wantIDs) {
					t.Fatalf("%s, t = %d, exact %v: %d candidates, want %d", c.name, tt, exact, len(got), len(wantIDs))
				}
				sp.put(sc)
			}
		}
	}
}

// BenchmarkCountBlocks counts the postings of an r = 0.7 query at 1 M
// random documents (about 2 500 lists of 15 ids) in blocks, partitioned
// in one pass (even, as count does) or by the counting sort (exact):
//
//	go test ./index -run XXX -bench CountBlocks
func BenchmarkCountBlocks(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	const limit = 1 << 20
	lists := randomLists(r, 2500, 15, func() uint32 { return r.Uint32N(limit) })
	for _, exact := range []bool{false, true} {
		b.Run(map[bool]string{false: "even", true: "exact"}[exact], func(b *testing.B) {
			var sp scratchPool
			sc := gathered(sp.get(), lists)
			for b.Loop() {
				if _, err := sc.count(4, limit, countConfig{hashMax: -1, shift: blockBits, exact: exact}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(sc.total), "ns/posting")
		})
	}
}

// TestCountBlocksBackoff: after the even partition fails, a scratch
// partitions its next evenBackoff counts by the counting sort, then tries
// the even partition again; the candidates are right throughout.
func TestCountBlocksBackoff(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	// The first and the last block span the lists; all but a few ids are
	// in the first.
	crowded := randomLists(r, 400, 12, func() uint32 {
		if r.IntN(50) == 0 {
			return 15<<16 + r.Uint32N(1<<16)
		}
		return r.Uint32N(1 << 16)
	})
	spread := randomLists(r, 400, 12, func() uint32 { return r.Uint32N(1 << 20) })
	var sp scratchPool
	cfg := countConfig{hashMax: -1, shift: 16}
	check := func(lists [][]uint32, skips int) {
		t.Helper()
		sc := gathered(sp.get(), lists)
		want := map[uint32]int{}
		for _, l := range lists {
			for _, id := range l {
				want[id]++
			}
		}
		got, err := sc.count(2, 1<<20, cfg)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range want {
			if c >= 2 {
				n++
			}
		}
		for _, id := range got {
			if want[id] < 2 {
				t.Fatalf("candidate %d in %d lists", id, want[id])
			}
		}
		if len(got) != n {
			t.Fatalf("%d candidates, want %d", len(got), n)
		}
		if sc.evenSkips != skips {
			t.Fatalf("%d counts to skip the even partition, want %d", sc.evenSkips, skips)
		}
		sp.put(sc)
	}
	check(spread, 0)
	check(crowded, evenBackoff)
	for i := evenBackoff - 1; i >= 0; i-- {
		check(spread, i)
	}
	check(crowded, evenBackoff)
}
