package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/posting"
)

// openMemIndex returns an empty Index with the given layout on an in-memory
// Pebble, checked and closed at the end of the test.
func openMemIndex(t testing.TB, k int, widths []int) (*pebble.DB, *Index) {
	t.Helper()
	pdb, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Merger: posting.Merger(), FormatMajorVersion: pebble.FormatNewest, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(k, widths)
	if err != nil {
		t.Fatal(err)
	}
	ix := New(pdb, l)
	t.Cleanup(func() {
		if err := ix.Check(context.Background()); err != nil {
			t.Errorf("Check: %v", err)
		}
		_ = pdb.Close()
	})
	return pdb, ix
}

// quietLogger discards Pebble's log messages.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// plantedFPs returns n random k-bit fingerprints where about a third are
// copies of an earlier one with a few bits flipped (so that near pairs and
// small clusters exist at every radius).
func plantedFPs(r *rand.Rand, n, k int) [][]uint64 {
	fps := make([][]uint64, n)
	for i := range fps {
		fp := make([]uint64, k/64)
		if i > 0 && r.IntN(3) == 0 {
			copy(fp, fps[r.IntN(i)])
			for range r.IntN(k / 4) {
				j := r.IntN(k)
				fp[j/64] ^= 1 << (j % 64)
			}
		} else {
			for w := range fp {
				fp[w] = r.Uint64()
			}
		}
		fps[i] = fp
	}
	return fps
}

// bruteForcePairs returns every pair (a < b) of live ids within rh.
func bruteForcePairs(fps map[uint32][]uint64, rh int) []Pair {
	var out []Pair
	for a, fa := range fps {
		for b, fb := range fps {
			if a < b {
				if d := bitvec.Hamming(fa, fb); d <= rh {
					out = append(out, Pair{A: int(a), B: int(b), Dist: d})
				}
			}
		}
	}
	sortPairs(out)
	return out
}

func sortPairs(ps []Pair) {
	slices.SortFunc(ps, func(x, y Pair) int {
		if x.A != y.A {
			return x.A - y.A
		}
		return x.B - y.B
	})
}

func TestPairsMatchesBruteForce(t *testing.T) {
	ctx := context.Background()
	layouts := []struct {
		k      int
		widths []int
	}{
		{64, []int{8, 8, 8, 8, 8, 8, 8, 8}},
		{64, []int{11, 11, 11, 11, 10, 10}},
		{128, []int{24, 24, 24, 24, 16, 16}}, // key space too large: sparse lists
		{256, []int{16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16}},
	}
	for li, lay := range layouts {
		t.Run(fmt.Sprint(lay.widths), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(li), 7))
			pdb, ix := openMemIndex(t, lay.k, lay.widths)
			fps := plantedFPs(r, 250, lay.k)
			model := map[uint32][]uint64{}
			b := pdb.NewBatch()
			var adds []Entry
			for i, fp := range fps {
				adds = append(adds, Entry{ID: uint32(i), FP: fp})
			}
			w, err := ix.Stage(b, adds, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(func() error { return b.Commit(pebble.NoSync) }); err != nil {
				t.Fatal(err)
			}
			for _, e := range adds {
				model[e.ID] = e.FP
			}
			// Delete some: the snapshot must leave them out.
			b = pdb.NewBatch()
			var dels []uint32
			for id := uint32(0); id < 250; id += 7 {
				dels = append(dels, id)
			}
			w, err = ix.Stage(b, nil, dels)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(func() error { return b.Commit(pebble.NoSync) }); err != nil {
				t.Fatal(err)
			}
			for _, id := range dels {
				delete(model, id)
			}
			snap := ix.Snapshot()
			if snap.Len() != len(model) {
				t.Fatalf("snapshot has %d documents, want %d", snap.Len(), len(model))
			}
			m := len(lay.widths)
			for _, rh := range []int{0, 3, lay.k / 16, lay.k / 4} {
				want := bruteForcePairs(model, rh)
				plans := []Plan{{Kind: Auto}, {Kind: Scan}}
				for _, p := range probePlans(m, rh, MaxTau) {
					// τ = 3 on wide groups probes thousands of values per
					// group: slow, and no different a code path.
					if p.Tau < 3 || lay.widths[0] <= 11 {
						plans = append(plans, p)
					}
				}
				for _, p := range plans {
					workerCounts := []int{2}
					if p.Kind == Auto {
						workerCounts = []int{1, 3}
					}
					for _, workers := range workerCounts {
						var got []Pair
						st, err := snap.Pairs(ctx, rh, PairOptions{Plan: p, Workers: workers}, func(pr Pair) error {
							if pr.A >= pr.B {
								return fmt.Errorf("pair %v is not in order", pr)
							}
							got = append(got, Pair{A: int(snap.ID(pr.A)), B: int(snap.ID(pr.B)), Dist: pr.Dist})
							return nil
						})
						if err != nil {
							t.Fatalf("rh=%d %v: %v", rh, p, err)
						}
						sortPairs(got)
						if !slices.Equal(got, want) {
							t.Fatalf("rh=%d plan %v workers %d: %d pairs, brute force %d", rh, st.Plan, workers, len(got), len(want))
						}
						if st.Pairs != int64(len(want)) {
							t.Fatalf("stats count %d pairs, want %d", st.Pairs, len(want))
						}
					}
				}
				if rh == lay.k/16 && len(want) == 0 {
					t.Fatalf("rh=%d: no planted pair found by brute force; the test proves nothing", rh)
				}
			}
		})
	}
}

func TestPairsStopsOnCallbackError(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	pdb, ix := openMemIndex(t, 64, []int{8, 8, 8, 8, 8, 8, 8, 8})
	b := pdb.NewBatch()
	var adds []Entry
	for i := range 2000 {
		fp := []uint64{r.Uint64() & 0xff} // many close pairs
		adds = append(adds, Entry{ID: uint32(i), FP: fp})
	}
	w, err := ix.Stage(b, adds, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(func() error { return b.Commit(pebble.NoSync) }); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	calls := 0
	_, err = ix.Snapshot().Pairs(context.Background(), 4, PairOptions{Workers: 2}, func(Pair) error {
		calls++
		if calls == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 10 {
		t.Fatalf("err %v after %d calls, want stop after 10", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Snapshot().Pairs(ctx, 4, PairOptions{}, func(Pair) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	// Cancelled while fn runs: fn is not called again, though pairs are
	// found and queued.
	ctx, cancel = context.WithCancel(context.Background())
	calls = 0
	_, err = ix.Snapshot().Pairs(ctx, 4, PairOptions{Workers: 2}, func(Pair) error {
		calls++
		if calls == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || calls != 10 {
		t.Fatalf("err %v after %d calls, want context.Canceled after 10", err, calls)
	}
}

// BenchmarkPairs measures all pairs of n random 512-bit fingerprints at
// R = 0.9, 0.8 and 0.7 with the planner's plan: n is FPDB_PAIRS_N (default
// 100 000), the number of groups FPDB_PAIRS_M (default 32, 16-bit groups),
// and FPDB_PAIRS_RECALL_PPM, when below 1 000 000, asks for an approximate
// plan of that least expected recall in millionths.
func BenchmarkPairs(b *testing.B) {
	n := envInt(b, "FPDB_PAIRS_N", 100_000)
	r := rand.New(rand.NewPCG(1, 1))
	l, err := NewLayout(512, SplitWidths(512, envInt(b, "FPDB_PAIRS_M", 32)))
	if err != nil {
		b.Fatal(err)
	}
	s := &Snapshot{layout: l, stride: 8, ids: make([]uint32, n), fps: make([]uint64, 8*n)}
	for i := range s.ids {
		s.ids[i] = uint32(i)
	}
	for i := range s.fps {
		s.fps[i] = r.Uint64()
	}
	for _, thr := range []float64{0.9, 0.8, 0.7} {
		b.Run(fmt.Sprintf("n=%d/R=%.1f", n, thr), func(b *testing.B) {
			rh := Radius(512, thr)
			var po PairOptions
			if v := envInt(b, "FPDB_PAIRS_RECALL_PPM", 1000000); v < 1000000 {
				po.Plan = Plan{Kind: Approx, MinRecall: float64(v) / 1e6}
			}
			for b.Loop() {
				st, err := s.Pairs(context.Background(), rh, po, func(Pair) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(st.Pairs), "pairs")
				b.ReportMetric(float64(st.Candidates), "candidates")
				b.Logf("%s (%d groups): %v, %d pairs, %d candidates", st.Plan, st.Groups, st.Elapsed, st.Pairs, st.Candidates)
			}
		})
	}
}

// snapshotOf builds a snapshot of fps (position i = internal id i).
func snapshotOf(t testing.TB, k int, widths []int, fps [][]uint64) *Snapshot {
	t.Helper()
	l, err := NewLayout(k, widths)
	if err != nil {
		t.Fatal(err)
	}
	s := &Snapshot{layout: l, stride: k / 64}
	for i, fp := range fps {
		s.ids = append(s.ids, uint32(i))
		s.fps = append(s.fps, fp...)
	}
	return s
}

// collectPairs runs Pairs and returns the pairs as internal ids, sorted.
func collectPairs(t *testing.T, s *Snapshot, rh int, p Plan) ([]Pair, PairStats) {
	t.Helper()
	var got []Pair
	st, err := s.Pairs(context.Background(), rh, PairOptions{Plan: p}, func(pr Pair) error {
		got = append(got, Pair{A: int(s.ID(pr.A)), B: int(s.ID(pr.B)), Dist: pr.Dist})
		return nil
	})
	if err != nil {
		t.Fatalf("plan %v: %v", p, err)
	}
	sortPairs(got)
	return got, st
}

// TestPairsApproximatePlans: a forced count filter above the exact one
// (Plan.MinHits) and the Approx plan kind are honoured: each returns a
// subset of the exact pairs, the forced filter strictly fewer on this data,
// and Approx at least its requested recall, measured against brute force.
func TestPairsApproximatePlans(t *testing.T) {
	const k = 256
	widths := slices.Repeat([]int{16}, 16)
	r := rand.New(rand.NewPCG(21, 5))
	fps := plantedFPs(r, 1500, k)
	model := map[uint32][]uint64{}
	for i, fp := range fps {
		model[uint32(i)] = fp
	}
	s := snapshotOf(t, k, widths, fps)
	rh := k / 16 // r = 0.875
	want := bruteForcePairs(model, rh)
	exact := map[Pair]bool{}
	for _, p := range want {
		exact[p] = true
	}
	subset := func(got []Pair, what string) {
		for _, p := range got {
			if !exact[p] {
				t.Fatalf("%s returned %v, which brute force does not", what, p)
			}
		}
	}
	tExact := MinHits(len(widths), rh, 1)
	forced := Plan{Kind: Probe, Tau: 1, MinHits: tExact + 4}
	got, st := collectPairs(t, s, rh, forced)
	subset(got, "a forced count filter")
	if st.MinHits != tExact+4 || len(got) >= len(want) || st.Recall >= 1 {
		t.Errorf("forced t=%d: stats t=%d recall %.3f, %d pairs of %d: the count filter was not applied", tExact+4, st.MinHits, st.Recall, len(got), len(want))
	}
	for _, minRecall := range []float64{0.5, 0.9, 0.99} {
		got, st := collectPairs(t, s, rh, Plan{Kind: Approx, MinRecall: minRecall})
		subset(got, "an approximate plan")
		measured := float64(len(got)) / float64(len(want))
		t.Logf("approx recall ≥ %.2f: plan %v, expected %.3f, measured %.3f (%d of %d pairs)", minRecall, st.Plan, st.Recall, measured, len(got), len(want))
		if st.Recall < minRecall || measured < minRecall {
			t.Errorf("approx recall ≥ %.2f: plan %v expected %.3f, measured %.3f", minRecall, st.Plan, st.Recall, measured)
		}
	}
	if _, err := s.Pairs(context.Background(), rh, PairOptions{Plan: Plan{Kind: Probe, Tau: 1, MinHits: 17}}, func(Pair) error { return nil }); err == nil {
		t.Error("a count filter above the number of groups was accepted")
	}
	if _, err := s.Pairs(context.Background(), rh, PairOptions{Plan: Plan{Kind: Approx}}, func(Pair) error { return nil }); err == nil {
		t.Error("an approximate plan without a recall was accepted")
	}
	if len(want) < 100 {
		t.Fatalf("only %d planted pairs: the test proves little", len(want))
	}
}

// TestPairsBoundedMemory runs all pairs of 3 000 identical fingerprints
// (4 498 500 pairs, all from one cluster) with each plan and checks that
// every pair comes exactly once while the heap stays small: the pairs are
// handed over in bounded batches, never a whole chunk or document at once.
func TestPairsBoundedMemory(t *testing.T) {
	const n, k = 3000, 64
	fps := make([][]uint64, n)
	for i := range fps {
		fps[i] = []uint64{0x0123456789abcdef}
	}
	s := snapshotOf(t, k, []int{8, 8, 8, 8, 8, 8, 8, 8}, fps)
	for _, p := range []Plan{{Kind: Scan}, {Kind: Probe, Tau: 0}} {
		seen := make([]uint64, (n*(n-1)/2+63)/64)
		var base, ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&base)
		var peak uint64
		count := 0
		st, err := s.Pairs(context.Background(), 0, PairOptions{Plan: p, Workers: 2}, func(pr Pair) error {
			i := pr.B*(pr.B-1)/2 + pr.A
			if pr.A >= pr.B || seen[i/64]&(1<<(i%64)) != 0 {
				return fmt.Errorf("pair %v out of order or twice", pr)
			}
			seen[i/64] |= 1 << (i % 64)
			if count++; count%200_000 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		grown := float64(peak-min(peak, base.HeapAlloc)) / (1 << 20)
		t.Logf("plan %v: %d pairs, heap grew by at most %.1f MB while they streamed", st.Plan, count, grown)
		if count != n*(n-1)/2 {
			t.Fatalf("%d pairs, want %d", count, n*(n-1)/2)
		}
		if grown > 16 {
			t.Errorf("plan %v: the heap grew by %.1f MB while the pairs streamed; want them in bounded batches", st.Plan, grown)
		}
	}
}

// TestBuildPostingsWorkers: the posting lists built on any number of
// workers are those of the definition: for each value, the positions of
// the documents with that value in a group, in increasing order.
func TestBuildPostingsWorkers(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	fps := make([][]uint64, 1500)
	for i := range fps {
		fps[i] = []uint64{r.Uint64() & 0x0f0f0f0f0f0f0f0f} // 16 values per 8-bit group
	}
	s := snapshotOf(t, 64, []int{8, 8, 8, 8, 8, 8, 8, 8}, fps)
	l := s.layout
	want := map[uint32][]int32{}
	for p := range fps {
		for i := range l.M() {
			y := l.Value(s.Fingerprint(p), i)
			want[y] = append(want[y], int32(p))
		}
	}
	for _, workers := range []int{1, 2, 3, 7} {
		pl := s.buildPostings(workers)
		if pl.start == nil {
			t.Fatal("not dense")
		}
		for y := range uint32(len(pl.start) - 1) {
			if got := pl.list(y); !slices.Equal(got, want[y]) && (len(got) > 0 || len(want[y]) > 0) {
				t.Fatalf("%d workers: list %d = %v, want %v", workers, y, got, want[y])
			}
		}
	}
}

// TestPairsGroupJoinSameAsPerDocument: probe plans of radius 0 to 2,
// exact or with a count filter above the exact one, some groups lowered,
// return the same pairs group by group as document by document (a group
// sorted by one goroutine or by several).
func TestPairsGroupJoinSameAsPerDocument(t *testing.T) {
	for _, c := range []struct {
		widths []int
		n      int
		k      int
	}{{slices.Repeat([]int{8}, 16), 600, 128}, {SplitWidths(128, 11), 600, 128}, {slices.Repeat([]int{8}, 16), 5000, 128},
		{SplitWidths(256, 23), 900, 256}} { // k = 256: the two-word filter
		widths := c.widths
		r := rand.New(rand.NewPCG(31, uint64(len(widths))))
		fps := plantedFPs(r, c.n, c.k)
		// Copies: a cluster of identical fingerprints shares every group.
		for range 40 {
			fps = append(fps, slices.Clone(fps[7]))
		}
		s := snapshotOf(t, c.k, widths, fps)
		m := len(widths)
		rhs, taus := []int{4, 8, 16, 24}, 2
		if c.n > 1000 {
			rhs, taus = []int{16}, 1 // the parallel sort; fewer plans
		}
		for _, rh := range rhs {
			for tau := 0; tau <= taus; tau++ {
				for lower := 0; lower <= 2; lower++ {
					exact := ExactMinHits(m, rh, tau, lower)
					if exact < 1 {
						continue
					}
					for _, t0 := range []int{exact, exact + 1, exact + 3} {
						if t0 > m {
							continue
						}
						p := Plan{Kind: Probe, Tau: tau, Lower: lower, MinHits: t0}
						var runs [2][]Pair
						var stats [2]PairStats
						for i, perDoc := range []bool{false, true} {
							var got []Pair
							st, err := s.Pairs(context.Background(), rh, PairOptions{Plan: p, Workers: 3, perDocument: perDoc}, func(pr Pair) error {
								if pr.A >= pr.B {
									return fmt.Errorf("pair %v is not in order", pr)
								}
								got = append(got, pr)
								return nil
							})
							if err != nil {
								t.Fatalf("rh=%d %v: %v", rh, p, err)
							}
							sortPairs(got)
							runs[i], stats[i] = got, st
						}
						if !slices.Equal(runs[0], runs[1]) || stats[0].Pairs != int64(len(runs[0])) {
							t.Fatalf("widths %v rh=%d %v: %d pairs group by group (stats %d), %d document by document", widths, rh, p, len(runs[0]), stats[0].Pairs, len(runs[1]))
						}
						if t0 == exact && len(runs[0]) < 40*41/2 {
							t.Fatalf("widths %v rh=%d %v: %d pairs: the copies were not all paired", widths, rh, p, len(runs[0]))
						}
					}
				}
			}
		}
	}
}

// TestPairsOwnGroups: the planner runs pairs on groups of its own (here the
// index's 16-bit groups have more values than 8 per document, so only
// narrower ones can be sorted by), and they give what brute force gives.
func TestPairsOwnGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 3))
	fps := plantedFPs(r, 3000, 512)
	model := map[uint32][]uint64{}
	for i, fp := range fps {
		model[uint32(i)] = fp
	}
	s := snapshotOf(t, 512, slices.Repeat([]int{16}, 32), fps)
	own := false
	for _, thr := range []float64{0.9, 0.8} {
		rh := Radius(512, thr)
		want := bruteForcePairs(model, rh)
		for _, p := range []Plan{{Kind: Auto}, {Kind: Approx, MinRecall: 0.99}} {
			got, st := collectPairs(t, s, rh, p)
			t.Logf("R=%.1f %v: plan %v on %d groups, %d pairs of %d", thr, p.Kind, st.Plan, st.Groups, len(got), len(want))
			own = own || st.Plan.Kind == Probe && st.Groups != 32
			if p.Kind == Auto && !slices.Equal(got, want) {
				t.Fatalf("R=%.1f: %d pairs, brute force %d", thr, len(got), len(want))
			}
			for _, pr := range got {
				if _, found := slices.BinarySearchFunc(want, pr, func(a, b Pair) int { return cmp.Or(cmp.Compare(a.A, b.A), cmp.Compare(a.B, b.B)) }); !found {
					t.Fatalf("R=%.1f %v: pair %v is not one brute force finds", thr, p.Kind, pr)
				}
			}
			if len(want) == 0 {
				t.Fatalf("R=%.1f: no planted pair: the test proves nothing", thr)
			}
		}
	}
	if !own {
		t.Fatal("no run used groups of its own: the test proves nothing")
	}
}
