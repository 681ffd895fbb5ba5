package index

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/posting"
)

// testStore is an Index on an in-memory Pebble with a model of its content.
type testStore struct {
	t     *testing.T
	db    *pebble.DB
	fs    vfs.FS
	ix    *Index
	model map[uint32][]uint64
}

func newTestStore(t *testing.T, k int, widths []int) *testStore {
	t.Helper()
	fs := vfs.NewMem()
	db, err := pebble.Open("", &pebble.Options{FS: fs, Merger: posting.Merger(), FormatMajorVersion: pebble.FormatNewest})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(k, widths)
	if err != nil {
		t.Fatal(err)
	}
	s := &testStore{t: t, db: db, fs: fs, ix: New(db, l), model: map[uint32][]uint64{}}
	t.Cleanup(func() {
		if err := s.ix.Check(context.Background()); err != nil {
			t.Errorf("Check after test: %v", err)
		}
		_ = db.Close()
	})
	return s
}

func (s *testStore) add(id uint32, fp []uint64) {
	s.t.Helper()
	if s.model[id] != nil {
		s.del(id) // a replace: the delete, then the add
	}
	b := s.db.NewBatch()
	w, err := s.ix.Stage(b, []Entry{{ID: id, FP: fp}}, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := w.Commit(func() error { return b.Commit(pebble.NoSync) }); err != nil {
		s.t.Fatal(err)
	}
	s.model[id] = slices.Clone(fp)
}

func (s *testStore) del(id uint32) {
	s.t.Helper()
	b := s.db.NewBatch()
	w, err := s.ix.Stage(b, nil, []uint32{id})
	if err != nil {
		s.t.Fatal(err)
	}
	if err := w.Commit(func() error { return b.Commit(pebble.NoSync) }); err != nil {
		s.t.Fatal(err)
	}
	delete(s.model, id)
}

// reopen drops the in-memory state and loads it back from Pebble.
func (s *testStore) reopen() {
	s.t.Helper()
	s.ix = New(s.db, s.ix.layout)
	if err := s.ix.Load(context.Background(), NoDeferred); err != nil {
		s.t.Fatal(err)
	}
}

// oracle is the brute-force linear scan over the model.
func (s *testStore) oracle(q []uint64, rh int) []Hit {
	var hits []Hit
	for id, fp := range s.model {
		if d := bitvec.Hamming(q, fp); d <= rh {
			hits = append(hits, Hit{ID: id, Dist: d})
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Dist != b.Dist {
			return a.Dist - b.Dist
		}
		return int(a.ID) - int(b.ID)
	})
	return hits
}

func randFP(r *rand.Rand, words int) []uint64 {
	fp := make([]uint64, words)
	for i := range fp {
		fp[i] = r.Uint64()
	}
	return fp
}

// flipN returns a copy of fp with exactly n distinct bits flipped.
func flipN(r *rand.Rand, fp []uint64, n int) []uint64 {
	out := slices.Clone(fp)
	for _, b := range r.Perm(64 * len(fp))[:n] {
		out[b/64] ^= 1 << (b % 64)
	}
	return out
}

// checkAllPlans compares every feasible plan with the oracle for query q at
// threshold r.
func (s *testStore) checkAllPlans(q []uint64, r float64) int {
	s.t.Helper()
	rh := Radius(s.ix.layout.K, r)
	want := s.oracle(q, rh)
	plans := append([]Plan{{Kind: Auto}, {Kind: Scan}}, probePlans(s.ix.layout.M(), rh, MaxTau)...)
	// The default way of counting, then each way for every list length:
	// hashing; blocks partitioned evenly when the ids allow (small blocks,
	// so that there are many, and enough ids per block) or by the
	// counting sort.
	defer func(c countConfig) { s.ix.counting = c }(s.ix.counting)
	for _, cfg := range []countConfig{s.ix.counting, {hashMax: 1 << 30}, {hashMax: -1, shift: 3}, {hashMax: -1, shift: 6}, {hashMax: -1, shift: 3, exact: true}} {
		s.ix.counting = cfg
		for _, p := range plans {
			got, st, err := s.ix.Search(context.Background(), q, rh, p)
			if err != nil {
				s.t.Fatalf("r=%v rh=%d %v: %v", r, rh, p, err)
			}
			if want, _ := s.ix.Estimate(rh); p.Kind == Auto && st.Plan != want {
				s.t.Fatalf("r=%v rh=%d: auto ran %v, the planner now picks %v", r, rh, st.Plan, want)
			}
			if !slices.Equal(got, want) {
				s.t.Fatalf("r=%v rh=%d plan %v counting %+v (stats %+v): got %d hits %v, want %d %v", r, rh, p, cfg, st, len(got), head(got), len(want), head(want))
			}
		}
	}
	return len(want)
}

func head(h []Hit) []Hit { return h[:min(len(h), 8)] }

func TestSearchMatchesOracle(t *testing.T) {
	for _, tc := range []struct {
		k      int
		widths []int
	}{
		{64, []int{11, 11, 11, 11, 10, 10}}, // the paper's k=64 layout
		{64, []int{24, 24, 16}},             // a key space too large for the dense cache
		{128, []int{16, 16, 16, 16, 16, 16, 16, 16}},
		{256, []int{8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8}},
	} {
		t.Run(fmt.Sprint(tc.k, "/", len(tc.widths)), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.k), 7))
			s := newTestStore(t, tc.k, tc.widths)
			words := tc.k / 64
			base := make([][]uint64, 0, 20)
			id := uint32(0)
			for i := 0; i < 600; i++ {
				fp := randFP(r, words)
				s.add(id, fp)
				id++
				if i%120 == 0 {
					base = append(base, fp)
				}
			}
			thresholds := []float64{1, 0.95, 0.9, 0.8, 0.7, 0.6, 0.45, 0.01}
			// Plant neighbours at distances rh-1, rh, rh+1 of each base
			// fingerprint for every threshold.
			for _, q := range base {
				for _, thr := range thresholds {
					rh := Radius(tc.k, thr)
					for _, d := range []int{rh - 1, rh, rh + 1} {
						if d >= 0 && d <= tc.k {
							s.add(id, flipN(r, q, d))
							id++
						}
					}
				}
			}
			check := func(stage string) {
				found := 0
				for _, q := range base {
					for _, thr := range thresholds {
						found += s.checkAllPlans(q, thr)
					}
				}
				if found == 0 {
					t.Fatalf("%s: no query found anything: the test proves nothing", stage)
				}
			}
			check("fresh")
			if err := s.db.Flush(); err != nil {
				t.Fatal(err)
			}
			// Delete a fifth, replace some, then compare again.
			for i := uint32(0); i < id; i += 5 {
				s.del(i)
			}
			for i := uint32(1); i < id; i += 17 {
				s.add(i, flipN(r, base[int(i)%len(base)], int(i)%9))
			}
			check("after deletes")
			s.reopen()
			check("after reopen")
		})
	}
}

func TestRadius(t *testing.T) {
	for _, tc := range []struct {
		k    int
		r    float64
		want int
	}{
		{100, 0.8, 10}, {64, 0.7, 9}, {400, 0.7, 60}, {512, 0.7, 76}, {512, 0.9, 25},
		{512, 1, 0}, {64, 0.01, 31}, {64, 1e-9, 31},
	} {
		if got := Radius(tc.k, tc.r); got != tc.want {
			t.Errorf("Radius(%d, %v) = %d, want %d", tc.k, tc.r, got, tc.want)
		}
		if Similarity(tc.k, Radius(tc.k, tc.r)) < tc.r || Similarity(tc.k, Radius(tc.k, tc.r)+1) >= tc.r {
			t.Errorf("Radius(%d, %v) is not the largest h with Similarity >= r", tc.k, tc.r)
		}
	}
}

func TestLayout(t *testing.T) {
	l, err := NewLayout(64, []int{11, 11, 11, 11, 10, 10})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		fp := randFP(r, 1)
		for i := range l.Widths {
			y := l.Value(fp, i)
			if g := l.Group(y); g != i {
				t.Fatalf("Group(%d) = %d, want %d", y, g, i)
			}
		}
	}
	if _, err := NewLayout(64, []int{32, 31}); err == nil {
		t.Error("widths not summing to K accepted")
	}
	if _, err := NewLayout(64, []int{64}); err == nil {
		t.Error("64-bit group accepted")
	}
	if _, err := NewLayout(100, []int{50, 50}); err == nil {
		t.Error("K not a multiple of 64 accepted")
	}
}

func TestForcedInfeasiblePlan(t *testing.T) {
	s := newTestStore(t, 64, []int{16, 16, 16, 16})
	s.add(0, []uint64{1})
	_, _, err := s.ix.Search(context.Background(), []uint64{1}, 20, Plan{Kind: Probe, Tau: 0})
	if err == nil {
		t.Fatal("tau=0 with 4 groups and radius 20 accepted")
	}
}

// TestNegativeTau: a probe radius below 0 is refused with ErrInfeasible,
// whatever the lowered groups, never a panic (it divided by zero).
func TestNegativeTau(t *testing.T) {
	s := newTestStore(t, 64, []int{16, 16, 16, 16})
	s.add(0, []uint64{1})
	for _, tau := range []int{-1, -2, math.MinInt} {
		for _, lower := range []int{0, 2} {
			_, _, err := s.ix.Search(context.Background(), []uint64{1}, 3, Plan{Kind: Probe, Tau: tau, Lower: lower})
			if !errors.Is(err, ErrInfeasible) {
				t.Errorf("tau=%d lower=%d: %v, want ErrInfeasible", tau, lower, err)
			}
		}
		if got := ExactMinHits(4, 3, tau, 1); got != ExactMinHits(4, 3, 0, 1) {
			t.Errorf("ExactMinHits at tau=%d: %d, want tau 0's %d", tau, got, ExactMinHits(4, 3, 0, 1))
		}
	}
}

// TestDeferredMatchesOracle adds documents with postings deferred to the tail,
// deletes and replaces documents on both sides of the deferred mark, and
// compares every plan with the oracle: with the tail in memory, after a
// reopen that rebuilds it from the fingerprints, and after FlushDeferred.
func TestDeferredMatchesOracle(t *testing.T) {
	for _, tc := range []struct {
		k      int
		widths []int
	}{
		{128, []int{16, 16, 16, 16, 16, 16, 16, 16}},
		{64, []int{24, 24, 16}},       // sparse cache
		{64, []int{4, 8, 12, 16, 24}}, // narrow groups: the flush's counting sort
	} {
		t.Run(fmt.Sprint(tc.k, "/", len(tc.widths)), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.k), 11))
			s := newTestStore(t, tc.k, tc.widths)
			words := tc.k / 64
			var base [][]uint64
			id := uint32(0)
			addNew := func(fp []uint64) {
				s.add(id, fp)
				id++
			}
			for i := 0; i < 300; i++ {
				fp := randFP(r, words)
				addNew(fp)
				if i%60 == 0 {
					base = append(base, fp)
				}
			}
			s.ix.Defer()
			if _, err := s.ix.Stage(s.db.NewBatch(), []Entry{{ID: 3, FP: randFP(r, words)}}, nil); err == nil {
				t.Fatal("a deferred add below the largest id was accepted")
			}
			mark := id
			thresholds := []float64{1, 0.9, 0.8, 0.7, 0.5}
			for _, q := range base {
				for _, thr := range thresholds {
					rh := Radius(tc.k, thr)
					for _, d := range []int{rh - 1, rh, rh + 1} {
						if d >= 0 {
							addNew(flipN(r, q, d))
						}
					}
				}
			}
			for i := 0; i < 200; i++ {
				addNew(randFP(r, words))
			}
			if got := s.ix.DeferredFrom(); got != mark {
				t.Fatalf("deferred mark %d, want %d", got, mark)
			}
			// Deletes below and above the mark.
			for i := uint32(0); i < id; i += 7 {
				s.del(i)
			}
			check := func(stage string) {
				t.Helper()
				found := 0
				for _, q := range base {
					for _, thr := range thresholds {
						found += s.checkAllPlans(q, thr)
					}
				}
				if found == 0 {
					t.Fatalf("%s: no query found anything", stage)
				}
				if err := s.ix.Check(context.Background()); err != nil {
					t.Fatalf("%s: %v", stage, err)
				}
			}
			check("deferred")
			if s.ix.DeferredLen() == 0 {
				t.Fatal("empty tail: the test proves nothing")
			}
			if err := s.ix.Warm(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 30; i++ { // deferred adds into a complete cache
				addNew(randFP(r, words))
			}
			check("deferred, warmed")
			s.reopen() // not deferring any more; the tail is rebuilt
			if got := s.ix.DeferredFrom(); got != mark {
				t.Fatalf("after reopen: deferred mark %d, want %d", got, mark)
			}
			check("reopened with a tail")
			if err := s.ix.FlushDeferred(context.Background(), s.fs, ""); err != nil {
				t.Fatal(err)
			}
			// Queries between the ingest and applyFlush (readers run
			// then): lists read from Pebble now hold tail ids as well,
			// which the tail scan also finds. Near the tail's own
			// documents, whose lists are mostly not cached yet.
			queried := 0
			for tid := mark + 200; tid < id && queried < 40; tid += 3 {
				if fp := s.model[tid]; fp != nil {
					s.checkAllPlans(flipN(r, fp, 5), 0.9)
					queried++
				}
			}
			if queried == 0 {
				t.Fatal("no tail document to query")
			}
			s.ix.applyFlush()
			if s.ix.DeferredFrom() != NoDeferred {
				t.Fatal("tail not empty after FlushDeferred")
			}
			if names, _ := s.fs.List(""); slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, FlushFilePrefix) }) {
				t.Errorf("FlushDeferred left its files: %v", names)
			}
			check("flushed")
			for i := 0; i < 50; i++ { // normal adds after the flush
				addNew(randFP(r, words))
			}
			s.reopen()
			check("flushed and reopened")
		})
	}
}

func TestSplitWidths(t *testing.T) {
	ws := SplitWidths(512, 43)
	if len(ws) != 43 || ws[0] != 12 || ws[38] != 12 || ws[39] != 11 || ws[42] != 11 {
		t.Fatalf("SplitWidths(512, 43) = %v", ws)
	}
	if !slices.Equal(SplitWidths(512, 32), slices.Repeat([]int{16}, 32)) {
		t.Fatalf("SplitWidths(512, 32) = %v", SplitWidths(512, 32))
	}
	if SplitWidths(64, 0) != nil || SplitWidths(64, 65) != nil {
		t.Fatal("SplitWidths accepted m outside (0, k]")
	}
}

// TestScanHonoursCancellation: a scan with a done context returns its error
// instead of an answer.
func TestScanHonoursCancellation(t *testing.T) {
	s := newTestStore(t, 64, []int{16, 16, 16, 16})
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 100 {
		s.add(uint32(i), randFP(r, 1))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, p := range []Plan{{Kind: Scan}, {Kind: Auto}} {
		if _, _, err := s.ix.Search(ctx, randFP(r, 1), 8, p); !errors.Is(err, context.Canceled) {
			t.Errorf("plan %v with a cancelled context: %v", p, err)
		}
	}
}
