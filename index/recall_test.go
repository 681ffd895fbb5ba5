package index

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// TestRecallOfExactFilterIsOne checks the count-filter bound through the
// recall model: with t = MinHits(m, d, tau) a document at distance d is
// always found.
func TestRecallOfExactFilterIsOne(t *testing.T) {
	for _, widths := range [][]int{{11, 11, 11, 11, 10, 10}, {16, 16, 16, 16}, {12, 12, 12, 12, 8, 8}} {
		l, err := NewLayout(64, widths)
		if err != nil {
			t.Fatal(err)
		}
		for d := 0; d <= 40; d++ {
			for tau := 0; tau <= 3; tau++ {
				mh := MinHits(l.M(), d, tau)
				if mh < 1 {
					continue
				}
				if r := l.Recall(d, tau, mh); math.Abs(r-1) > 1e-9 {
					t.Fatalf("%v d=%d tau=%d t=%d: recall %v, want 1", widths, d, tau, mh, r)
				}
			}
		}
	}
}

// TestRecallMonteCarlo compares the model with random placements.
func TestRecallMonteCarlo(t *testing.T) {
	l, err := NewLayout(128, []int{16, 16, 16, 16, 16, 16, 16, 16})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	const trials = 20000
	for _, c := range []struct{ d, tau, t int }{{20, 1, 3}, {20, 1, 5}, {30, 2, 4}, {12, 0, 3}} {
		hit := 0
		for range trials {
			var per [8]int
			for _, b := range r.Perm(128)[:c.d] {
				per[b/16]++
			}
			within := 0
			for _, n := range per {
				if n <= c.tau {
					within++
				}
			}
			if within >= c.t {
				hit++
			}
		}
		got := float64(hit) / trials
		want := l.Recall(c.d, c.tau, c.t)
		sigma := math.Sqrt(want*(1-want)/trials) + 1e-4
		if math.Abs(got-want) > 5*sigma {
			t.Errorf("%+v: simulated %.4f, model %.4f", c, got, want)
		}
	}
}

// TestApproxPlan checks that an approximate plan returns a subset of the
// exact answer, with about the recall it promises.
func TestApproxPlan(t *testing.T) {
	s := newTestStore(t, 256, []int{16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16})
	r := rand.New(rand.NewPCG(9, 9))
	for i := range 3000 {
		s.add(uint32(i), randFP(r, 4))
	}
	rh := Radius(256, 0.8) // 25
	id := uint32(3000)
	var queries [][]uint64
	for range 40 {
		q := randFP(r, 4)
		queries = append(queries, q)
		for range 10 {
			s.add(id, flipN(r, q, rh))
			id++
		}
	}
	// Force a count filter above the exact one, where the model promises
	// a recall between 0.5 and 0.97.
	tau := 1
	tf := MinHits(s.ix.layout.M(), rh, tau) + 1
	for s.ix.layout.Recall(rh, tau, tf) > 0.97 {
		tf++
	}
	if s.ix.layout.Recall(rh, tau, tf) < 0.5 {
		t.Fatalf("no count filter gives a recall in [0.5, 0.97]")
	}
	found, total := 0, 0
	var promised float64
	for _, q := range queries {
		want := s.oracle(q, rh)
		got, st, err := s.ix.Search(context.Background(), q, rh, Plan{Kind: Probe, Tau: tau, MinHits: tf})
		if err != nil {
			t.Fatal(err)
		}
		promised = st.Recall
		in := map[Hit]bool{}
		for _, h := range want {
			in[h] = true
		}
		for _, h := range got {
			if !in[h] {
				t.Fatalf("approximate plan returned %v, which the exact answer lacks", h)
			}
		}
		found += len(got)
		total += len(want)
	}
	measured := float64(found) / float64(total)
	t.Logf("approximate plan tau=%d t=%d: promised recall %.4f, measured %.4f over %d neighbours at distance rh", tau, tf, promised, measured, total)
	if sigma := math.Sqrt(promised * (1 - promised) / float64(total)); math.Abs(measured-promised) > 5*sigma+0.01 {
		t.Fatalf("measured recall %.4f, promised %.4f", measured, promised)
	}
	// The planner's approximate choice keeps its promise too, measured
	// against the exact answers.
	for _, minRecall := range []float64{0.8, 0.95} {
		found, total, approx := 0, 0, 0
		for _, q := range queries {
			want := s.oracle(q, rh)
			got, st, err := s.ix.Search(context.Background(), q, rh, Plan{Kind: Approx, MinRecall: minRecall})
			if err != nil {
				t.Fatal(err)
			}
			if st.Recall < minRecall {
				t.Fatalf("approx plan %v promises recall %v < %v", st.Plan, st.Recall, minRecall)
			}
			if st.Plan.MinHits > MinHits(s.ix.layout.M(), rh, st.Plan.Tau) {
				approx++
			}
			in := map[Hit]bool{}
			for _, h := range want {
				in[h] = true
			}
			for _, h := range got {
				if !in[h] {
					t.Fatalf("approx plan %v returned %v, which the exact answer lacks", st.Plan, h)
				}
			}
			found += len(got)
			total += len(want)
		}
		measured := float64(found) / float64(total)
		t.Logf("approx plan, recall ≥ %.2f: %d of %d queries ran an approximate filter; measured recall %.4f over %d neighbours", minRecall, approx, len(queries), measured, total)
		if approx == 0 {
			t.Fatalf("recall ≥ %.2f: the planner never chose an approximate filter; the test proves nothing", minRecall)
		}
		if sigma := math.Sqrt(minRecall * (1 - minRecall) / float64(total)); measured < minRecall-5*sigma {
			t.Fatalf("recall ≥ %.2f: measured %.4f", minRecall, measured)
		}
	}
}

func TestCheckCacheFindsStaleList(t *testing.T) {
	s := newTestStore(t, 64, []int{16, 16, 16, 16})
	r := rand.New(rand.NewPCG(3, 3))
	fp := randFP(r, 1)
	s.add(0, fp)
	if err := s.ix.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.ix.CheckCache(context.Background()); err != nil {
		t.Fatalf("fresh cache: %v", err)
	}
	y := s.ix.layout.Value(fp, 2)
	s.ix.cache.add(y, 7) // a list that Pebble does not hold
	if err := s.ix.CheckCache(context.Background()); err == nil {
		t.Fatal("CheckCache missed a stale cached list")
	}
	s.ix.cache.remove(y, 7)
}
