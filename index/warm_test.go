package index

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
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
		if s.ix.cache.base.offs == nil {
			t.Fatal("Warm built no frozen lists on a dense layout")
		}
		if s.ix.cache.frozenOnly() == nil {
			t.Fatal("after Warm, probes do not read the frozen lists alone")
		}
		check("warmed") // probes read the frozen lists alone (gather's fast path)
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

// TestAutoPlanFollowsState: the plan Search remembers per radius is chosen
// again when the index grows or its cache is warmed: a small index is
// scanned, a large one probed.
func TestAutoPlanFollowsState(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	s := newTestStore(t, 64, []int{16, 16, 16, 16})
	q := randFP(r, 1)
	search := func(stage string) Plan {
		t.Helper()
		_, st, err := s.ix.Search(context.Background(), q, 6, Plan{Kind: Auto})
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := s.ix.Estimate(6); st.Plan != want {
			t.Fatalf("%s: auto ran %v, the planner picks %v", stage, st.Plan, want)
		}
		return st.Plan
	}
	s.add(0, q)
	if p := search("one document"); p.Kind != Scan {
		t.Fatalf("one document: plan %v, want the scan", p)
	}
	s.addRandom(r, 1, 60000)
	search("60 000 documents")
	if err := s.ix.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := search("warmed"); p.Kind != Probe {
		t.Fatalf("60 000 documents, warmed: plan %v, want a probe", p)
	}
	s.checkAllPlans(q, 0.9)
	// Approximate searches remember their plan per radius and recall:
	// alternating recalls, each search runs what the planner chooses for
	// its own recall.
	seen := map[Plan]bool{}
	for _, mr := range []float64{0.5, 0.999, 0.5, 0.999, 0.9} {
		for _, rh := range []int{6, 12} {
			want, _, wantRecall := s.ix.choose(rh, true, mr)
			_, st, err := s.ix.Search(context.Background(), q, rh, Plan{Kind: Approx, MinRecall: mr})
			if err != nil {
				t.Fatal(err)
			}
			if st.Plan != want || st.Recall != wantRecall {
				t.Fatalf("approx %v at radius %d ran %v (recall %v), the planner picks %v (recall %v)", mr, rh, st.Plan, st.Recall, want, wantRecall)
			}
			seen[st.Plan] = true
		}
	}
	if len(seen) < 2 {
		t.Fatalf("every approximate search ran %v: the test tells no memo from another", seen)
	}
}

// TestPlanMemoDrift: a remembered plan serves while the planner's inputs
// move by less than 1/planDrift of their value (a query after each added
// document does not choose again: check-then-store workloads), and is
// chosen anew beyond that, or when the scan's measured speed moves more.
func TestPlanMemoDrift(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	s := newTestStore(t, 64, []int{16, 16, 16, 16})
	const n = 20 * planDrift * planDrift
	s.addRandom(r, 0, n)
	if err := s.ix.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	q, rh := s.model[3], 6
	search := func() Plan {
		t.Helper()
		_, st, err := s.ix.Search(context.Background(), q, rh, Plan{Kind: Auto})
		if err != nil {
			t.Fatal(err)
		}
		return st.Plan
	}
	chosen := func(stage string, want int64) {
		t.Helper()
		if got := s.ix.replans.Load(); got != want {
			t.Fatalf("%s: %d plans chosen, want %d", stage, got, want)
		}
	}
	p0 := search()
	c := s.ix.replans.Load()
	for id := n; id < n+n/planDrift; id++ {
		s.addRandom(r, id, id+1)
		if p := search(); p != p0 {
			t.Fatalf("after %d documents added: plan %v, then %v", id-n+1, p0, p)
		}
	}
	chosen(fmt.Sprintf("%d documents added one at a time, each followed by a query", n/planDrift), c)
	s.addRandom(r, n+n/planDrift, n+n/planDrift+1)
	search()
	chosen("one document more than the drift allows", c+1)
	if m := s.ix.plans[rh].Load(); m.n != s.ix.n || m.capacity != s.ix.capacity() {
		t.Fatalf("memo chosen at %d documents (%d ids), the index holds %d (%d)", m.n, m.capacity, s.ix.n, s.ix.capacity())
	}

	// The scan's measured speed: a first measurement, a refinement within
	// the drift, one beyond it.
	m := &scanSpeed{nsPerWord: 0.5, workers: 2, speedup: 1.6, parNs: 0.5 / 1.6}
	for i, c2 := range []struct {
		f      float64
		replan bool
	}{{1, true}, {0.99, false}, {0.9, true}} {
		sp := *m
		sp.nsPerWord, sp.parNs = m.nsPerWord*c2.f, m.parNs*c2.f
		s.ix.scanCal.measured.Store(&sp)
		c = s.ix.replans.Load()
		search()
		want := c
		if c2.replan {
			want++
		}
		chosen(fmt.Sprintf("scan speed %d (x%v)", i, c2.f), want)
	}
	s.checkAllPlans(q, 0.9)
}

// TestPlanMemoScanStep: the scan's step from one goroutine to several is
// no drift: a plan chosen below it is chosen again above it, however few
// documents were added.
func TestPlanMemoScanStep(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	s := newTestStore(t, 512, SplitWidths(512, 32))
	step := 1 << 18 / s.ix.stride // ids scanned on one goroutine below it
	s.addRandom(r, 0, step-64)
	rh := Radius(512, 0.7)
	if _, _, err := s.ix.Search(context.Background(), s.model[1], rh, Plan{Kind: Auto}); err != nil {
		t.Fatal(err)
	}
	c := s.ix.replans.Load()
	s.addRandom(r, step-64, step+64)
	if _, _, err := s.ix.Search(context.Background(), s.model[1], rh, Plan{Kind: Auto}); err != nil {
		t.Fatal(err)
	}
	if got := s.ix.replans.Load(); got != c+1 {
		t.Fatalf("%d documents, then %d (the scan now on %d goroutines): %d plans chosen, want 1", step-64, step+64, scanWorkers(step+64, s.ix.stride), got-c)
	}
}

// TestFPStore: fingerprints set in any order, across chunk boundaries and
// with gaps, read back; ids never set read as zero; spans cover chunks.
func TestFPStore(t *testing.T) {
	s := fpStore{stride: 2}
	model := map[int][2]uint64{}
	r := rand.New(rand.NewPCG(1, 2))
	ids := []int{0, 5, 1<<fpChunkBits - 1, 1 << fpChunkBits, 3<<fpChunkBits + 7, 2, 1<<fpChunkBits + 1}
	for i := 0; i < 200; i++ {
		ids = append(ids, r.IntN(4<<fpChunkBits))
	}
	for _, id := range ids {
		fp := [2]uint64{r.Uint64(), r.Uint64()}
		s.set(id, fp[:])
		model[id] = fp
	}
	want := 0
	for id := range model {
		want = max(want, id+1)
	}
	if s.len() != want {
		t.Fatalf("len %d, want %d", s.len(), want)
	}
	for id := 0; id < s.len(); id++ {
		fp := model[id]
		if got := s.at(id); got[0] != fp[0] || got[1] != fp[1] {
			t.Fatalf("id %d: %v, want %v", id, got, fp)
		}
	}
	for from := 0; from < s.len(); {
		to := min((from>>fpChunkBits+1)<<fpChunkBits, s.len())
		sp := s.span(from, to)
		if len(sp) != (to-from)*2 {
			t.Fatalf("span [%d, %d): %d words", from, to, len(sp))
		}
		if fp := model[to-1]; sp[len(sp)-2] != fp[0] {
			t.Fatalf("span [%d, %d) ends with %x, want %x", from, to, sp[len(sp)-2], fp[0])
		}
		from = to
	}
}

// TestScanAcrossChunks: scans of id ranges that start, end and cross
// anywhere in the fingerprint chunks find exactly the brute-force answer.
func TestScanAcrossChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	s := newTestStore(t, 64, []int{16, 16, 16, 16})
	n := 2<<fpChunkBits + 1000
	es := s.addRandom(r, 0, n)
	q := es[1<<fpChunkBits].FP
	for i := 0; i < 30; i++ {
		from := r.IntN(n)
		to := from + r.IntN(n-from+1)
		if i == 0 {
			from, to = 1<<fpChunkBits-3, 2<<fpChunkBits+5
		}
		got, err := s.ix.scanRange(context.Background(), q, 32, from, to, nil) // about half match
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for id := from; id < to; id++ {
			if bits.OnesCount64(es[id].FP[0]^q[0]) <= 32 {
				want++
			}
		}
		if len(got) != want {
			t.Fatalf("scan [%d, %d): %d hits, want %d", from, to, len(got), want)
		}
	}
	s.checkAllPlans(q, 0.7)
}

// TestScanCalibration: a small index plans with the default scan cost; one
// of calibrateBytes measures its own scan, once.
func TestScanCalibration(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	s := newTestStore(t, 64, []int{16, 16, 16, 16})
	stage := func(from, to int) { s.addRandom(r, from, to) }
	s.ix.scanCal.bytes = 1 << 20 // 131 072 documents
	stage(0, 1000)
	if ns, speedup := s.ix.scanSpeedFor(2); ns != costScanWord || speedup != 1.5 || s.ix.scanCal.measured.Load() != nil {
		t.Fatalf("1 000 documents: scan cost %v, speed-up %v (measured %v), want the defaults %v, 1.5", ns, speedup, s.ix.scanCal.measured.Load() != nil, costScanWord)
	}
	stage(1000, s.ix.calibrateDocs())
	w := scanWorkers(s.ix.calibrateDocs(), s.ix.stride)
	ns, speedup := s.ix.scanSpeedFor(w)
	if s.ix.scanCal.measured.Load() == nil || ns <= costScanWord/8 || ns > 4*costScanWord || speedup < 1 || speedup > float64(w) {
		t.Fatalf("%d documents: scan cost %v ns per word, speed-up %v on %d goroutines: not measured or out of range", s.ix.calibrateDocs(), ns, speedup, w)
	}
	if ns2, speedup2 := s.ix.scanSpeedFor(w); ns2 != ns || speedup2 != speedup {
		t.Fatalf("measured again: %v, %v, then %v, %v", ns, speedup, ns2, speedup2)
	}
	if _, one := s.ix.scanSpeedFor(1); one != 1 {
		t.Fatalf("speed-up of one goroutine %v, want 1", one)
	}
	s.checkAllPlans(s.model[7], 0.8)

	// A measurement taken while other work held the cores is refined by
	// the scans queries run, and the remembered plans are chosen again.
	m := s.ix.scanCal.measured.Load()
	slow := &scanSpeed{nsPerWord: 50 * m.nsPerWord, workers: m.workers, speedup: 1, parNs: 50 * m.nsPerWord}
	s.ix.scanCal.measured.Store(slow)
	rh := Radius(64, 0.8)
	s.ix.autoPlan(rh)
	before := s.ix.rangeScanCost(s.ix.capacity())
	if _, _, err := s.ix.Search(context.Background(), s.model[7], rh, Plan{Kind: Scan}); err != nil {
		t.Fatal(err)
	}
	now := s.ix.scanCal.measured.Load()
	if after := s.ix.rangeScanCost(s.ix.capacity()); now == slow || after >= before {
		t.Fatalf("a query's scan did not refine a slow measurement: estimate %v ns, then %v", before, after)
	}
	if s.ix.plans[rh].Load().scan != slow {
		t.Fatal("plan memo does not record the scan speed it was chosen with")
	}
	s.ix.autoPlan(rh)
	if s.ix.plans[rh].Load().scan != now {
		t.Fatal("plan not chosen again after the scan's speed changed")
	}
}

func TestScanSpeedRefined(t *testing.T) {
	s := &scanSpeed{nsPerWord: 1, workers: 2, speedup: 1.25, parNs: 0.8}
	if s.withScan(2, 0.9) != nil || s.withScan(1, 1.1) != nil || s.withScan(3, 0.1) != nil {
		t.Fatal("a slower scan, or one of another width, changed the measurement")
	}
	for _, c := range []struct {
		workers           int
		ns                float64
		one, par, speedup float64
	}{
		{2, 0.6, 1, 0.6, 1 / 0.6},
		{2, 0.4, 0.8, 0.4, 2}, // faster than 2 goroutines can be: one was measured too slow
		{1, 0.9, 0.9, 0.8, 0.9 / 0.8},
		{1, 0.5, 0.5, 0.5, 1}, // the parallel scan is not slower than one goroutine
	} {
		got := s.withScan(c.workers, c.ns)
		if got == nil || math.Abs(got.nsPerWord-c.one) > 1e-12 || math.Abs(got.parNs-c.par) > 1e-12 || math.Abs(got.speedup-c.speedup) > 1e-12 {
			t.Errorf("%d goroutines at %v ns per word: %+v, want one %v, parallel %v, speed-up %v", c.workers, c.ns, got, c.one, c.par, c.speedup)
		}
	}
}

// addRandom adds documents from..to−1 with random fingerprints of the
// store's k in one batch, and returns them.
func (s *testStore) addRandom(r *rand.Rand, from, to int) []Entry {
	s.t.Helper()
	var es []Entry
	for id := from; id < to; id++ {
		es = append(es, Entry{ID: uint32(id), FP: randFP(r, s.ix.layout.K/64)})
	}
	b := s.db.NewBatch()
	w, err := s.ix.Stage(b, es, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := w.Commit(func() error { return b.Commit(nil) }); err != nil {
		s.t.Fatal(err)
	}
	for _, e := range es {
		s.model[e.ID] = e.FP
	}
	return es
}

// TestRecentPlan: searches that alternate radii, and exact with
// approximate plans at one radius, each find their remembered plan (the
// last search's memo is looked up first, then the radius's), and a small
// probe counts in its scratch's inline arrays.
func TestRecentPlan(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	s := newTestStore(t, 512, SplitWidths(512, 32))
	s.addRandom(r, 0, 4000)
	if err := s.ix.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	q := s.model[5]
	rh9, rh8 := Radius(512, 0.9), Radius(512, 0.8)
	plans := []struct {
		rh int
		p  Plan
	}{{rh9, Plan{Kind: Auto}}, {rh8, Plan{Kind: Auto}}, {rh9, Plan{Kind: Approx, MinRecall: 0.99}}}
	for round := range 3 {
		for _, c := range plans {
			if _, _, err := s.ix.Search(context.Background(), q, c.rh, c.p); err != nil {
				t.Fatal(err)
			}
		}
		if got := s.ix.replans.Load(); got != int64(len(plans)) {
			t.Fatalf("round %d: %d plans chosen, want %d (one per radius and kind)", round, got, len(plans))
		}
	}
	// A large probe (τ = 2: 32 × 137 values, with the hash count limited
	// so that it counts in blocks) then a small one, which must count in
	// the inline arrays again; the large one's arrays stay for the next.
	counting := s.ix.counting
	s.ix.counting = countConfig{hashMax: 64, shift: blockBits}
	for i, c := range []struct {
		tau    int
		inline bool
	}{{0, true}, {2, false}, {0, true}} {
		if i == 2 {
			s.ix.counting = counting
		}
		if _, st, err := s.ix.Search(context.Background(), q, rh9, Plan{Kind: Probe, Tau: c.tau}); err != nil || st.Postings == 0 {
			t.Fatalf("probe τ = %d: %+v, %v", c.tau, st, err)
		}
		sc := s.ix.scratch.get()
		inline := &sc.ys[:1][0] == &sc.inline.ys[0] && &sc.lists[:1][0] == &sc.inline.lists[0]
		if c.inline {
			inline = inline && &sc.hashIDs[0] == &sc.inline.hashIDs[0] && &sc.cands[:1][0] == &sc.inline.cands[0]
		}
		if inline != c.inline {
			t.Fatalf("probe τ = %d: its scratch used its inline arrays: %v, want %v", c.tau, inline, c.inline)
		}
		if i == 2 && (cap(sc.big.ys) < 32*137 || cap(sc.big.lists) < 32*137 || cap(sc.part) == 0) {
			t.Fatalf("the large probe's arrays were not kept: %d, %d, %d", cap(sc.big.ys), cap(sc.big.lists), cap(sc.part))
		}
		for _, l := range append(sc.big.lists[:cap(sc.big.lists)], sc.inline.lists[:]...) {
			if l != nil {
				t.Fatal("a returned scratch keeps a posting list")
			}
		}
		s.ix.scratch.put(sc)
	}
}

// TestWarmFromPebbleCancelled: reading the lists of a sparse layout from
// Pebble stops when the context ends (the iterator does not check it).
func TestWarmFromPebbleCancelled(t *testing.T) {
	s := newTestStore(t, 64, []int{24, 24, 16})
	r := rand.New(rand.NewPCG(7, 7))
	for id := range uint32(2 * warmCheck) {
		s.add(id, randFP(r, 1))
	}
	if s.ix.WarmsInMemory() {
		t.Fatal("a layout of 24-bit groups warms in memory")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.ix.Warm(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Warm with a cancelled context: %v", err)
	}
	if err := s.ix.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.ix.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}
