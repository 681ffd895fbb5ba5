package index

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// probePlans returns the exact probe plans at radius rh over m groups for
// tau = 0..maxTau: every group at tau, and some lowered to tau − 1.
func probePlans(m, rh, maxTau int) []Plan {
	var plans []Plan
	for tau := 0; tau <= maxTau; tau++ {
		for _, lower := range slices.Compact([]int{0, 1, m / 2, m}) {
			if ExactMinHits(m, rh, tau, lower) >= 1 {
				plans = append(plans, Plan{Kind: Probe, Tau: tau, Lower: lower})
			}
		}
	}
	return plans
}

// TestExactMinHitsBruteForce: over every way a document within rh can
// differ from the query group by group, the fewest groups within their
// probe radius is ExactMinHits (groups wide enough that every radius can
// be exceeded).
func TestExactMinHitsBruteForce(t *testing.T) {
	for m := 1; m <= 5; m++ {
		const w = 6 // a group differs in 0..w bits
		for tau := 0; tau <= 3; tau++ {
			for lower := 0; lower <= m; lower++ {
				radii := make([]int, m)
				for g := range radii {
					radii[g] = tau
					if g < lower {
						radii[g] = tau - 1
					}
				}
				for rh := 0; rh <= m*w; rh++ {
					fewest := m
					d := make([]int, m) // bits differing per group
					var walk func(g, left int)
					walk = func(g, left int) {
						if g == m {
							hits := 0
							for i, x := range d {
								if x <= radii[i] {
									hits++
								}
							}
							fewest = min(fewest, hits)
							return
						}
						for x := 0; x <= min(w, left); x++ {
							d[g] = x
							walk(g+1, left-x)
						}
					}
					walk(0, rh)
					if got := ExactMinHits(m, rh, tau, lower); got != fewest {
						t.Fatalf("m=%d tau=%d lower=%d rh=%d: ExactMinHits %d, brute force %d", m, tau, lower, rh, got, fewest)
					}
					if lower == 0 && max(MinHits(m, rh, tau), 0) != fewest {
						t.Fatalf("m=%d tau=%d rh=%d: MinHits %d, brute force %d", m, tau, rh, MinHits(m, rh, tau), fewest)
					}
				}
			}
		}
	}
}

// TestRadii: the narrowest groups are lowered first, the last first among
// equals, and tau − 1 is −1 (not probed) at tau 0.
func TestRadii(t *testing.T) {
	l, err := NewLayout(64, []int{11, 11, 11, 11, 10, 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tau, lower int
		want       []int
	}{
		{2, 0, []int{2, 2, 2, 2, 2, 2}},
		{2, 1, []int{2, 2, 2, 2, 2, 1}},
		{2, 3, []int{2, 2, 2, 1, 1, 1}},
		{0, 6, []int{-1, -1, -1, -1, -1, -1}},
		{1, 9, []int{0, 0, 0, 0, 0, 0}},
	} {
		if got := l.Radii(tc.tau, tc.lower); !slices.Equal(got, tc.want) {
			t.Errorf("Radii(%d, %d) = %v, want %v", tc.tau, tc.lower, got, tc.want)
		}
	}
}

// TestMixedPlansFindWorstCase stores, for each mixed plan, documents that
// miss as many groups as a document within the radius can (each missed
// group differs in one bit more than its probe radius, the cheapest
// first), and checks that the plan finds every one, and that a count
// filter one above the exact one misses them: the bound is tight, and the
// groups the probe lowers are the ones the bound assumes.
func TestMixedPlansFindWorstCase(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 9))
	for _, widths := range [][]int{
		{8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8},
		{11, 11, 11, 11, 10, 10},
	} {
		k := 0
		for _, w := range widths {
			k += w
		}
		s := newTestStore(t, k, widths)
		l, m := s.ix.layout, len(widths)
		q := randFP(r, k/64)
		id := uint32(0)
		for i := 0; i < 300; i++ { // unrelated documents
			s.add(id, randFP(r, k/64))
			id++
		}
		type planted struct {
			id   uint32
			plan Plan
			rh   int
		}
		var docs []planted
		for _, rh := range []int{4, 9, 17, 30} {
			for _, p := range probePlans(m, rh, 3) {
				radii := l.Radii(p.Tau, p.Lower)
				// Miss the groups in order of cost (radius + 1), ties in a
				// random order.
				order := r.Perm(m)
				slices.SortStableFunc(order, func(a, b int) int { return radii[a] - radii[b] })
				fp, left, missed := slices.Clone(q), rh, 0
				for _, g := range order {
					if c := radii[g] + 1; c <= left && c <= l.Widths[g] {
						for _, b := range r.Perm(l.Widths[g])[:c] {
							bit := l.Starts[g] + b
							fp[bit/64] ^= 1 << (bit % 64)
						}
						left -= c
						missed++
					}
				}
				if exact := ExactMinHits(m, rh, p.Tau, p.Lower); m-missed != exact {
					t.Fatalf("widths %v rh=%d %v: the planted document is hit in %d groups, ExactMinHits says %d", widths, rh, p, m-missed, exact)
				}
				s.add(id, fp)
				docs = append(docs, planted{id, p, rh})
				id++
			}
		}
		for _, d := range docs {
			want := s.oracle(q, d.rh)
			got, st, err := s.ix.Search(ctx, q, d.rh, d.plan)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("widths %v rh=%d %v: %d hits, the scan %d", widths, d.rh, d.plan, len(got), len(want))
			}
			if !slices.ContainsFunc(got, func(h Hit) bool { return h.ID == d.id }) {
				t.Fatalf("widths %v rh=%d %v: the planted document %d is not found", widths, d.rh, d.plan, d.id)
			}
			if st.MinHits >= m {
				continue
			}
			tighter := d.plan
			tighter.MinHits = st.MinHits + 1
			got, _, err = s.ix.Search(ctx, q, d.rh, tighter)
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(got, func(h Hit) bool { return h.ID == d.id }) {
				t.Fatalf("widths %v rh=%d %v: count filter %d still finds the planted document: the filter is not tight", widths, d.rh, tighter, tighter.MinHits)
			}
		}
	}
}

// TestPlannerLowersGroups: by the cost model at 1 M documents (posting
// cache complete, the scan far dearer), the cheapest exact plan for 32
// groups of 16 bits lowers some groups, as docs/algorithm.md §2.3.1 shows.
func TestPlannerLowersGroups(t *testing.T) {
	l, err := NewLayout(512, SplitWidths(512, 32))
	if err != nil {
		t.Fatal(err)
	}
	const n = 1e6
	cost := func(tau, lower, t int) float64 {
		return costQuery + l.probesPerQuery(tau, lower)*costProbeHit +
			n*l.hitsPerDoc(tau, lower)*costPosting + n*l.candidateRate(tau, lower, t)*costVerify
	}
	for _, tc := range []struct {
		r     float64
		want  Plan
		probe float64
	}{
		{0.9, Plan{Kind: Probe, Tau: 0, Lower: 5}, 27},
		{0.8, Plan{Kind: Probe, Tau: 1, Lower: 10}, 384},
		{0.7, Plan{Kind: Probe, Tau: 2, Lower: 16}, 2464},
		{0.6, Plan{Kind: Probe, Tau: 3, Lower: 17}, 12784},
	} {
		rh := Radius(512, tc.r)
		got, _, _ := l.cheapest(rh, 1e12, cost, false, 1, nil)
		if got != tc.want {
			t.Errorf("r=%v: cheapest %v, want %v", tc.r, got, tc.want)
		}
		if p := l.probesPerQuery(got.Tau, got.Lower); p != tc.probe {
			t.Errorf("r=%v: %v probes %v values, want %v", tc.r, got, p, tc.probe)
		}
	}
}
