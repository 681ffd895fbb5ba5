package index

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/fpdb/fpdb/internal/bitvec"
)

// The planners of Search (search.go) and of Pairs (pairs.go) share one cost
// model: for each probe plan (radius τ, the number of groups lowered to
// τ − 1, count filter t), a query costs its probes (the values within each
// group's radius of the query's group value), the posting ids it counts,
// the candidates it verifies and a fixed part; the scan costs its words.
// They differ only in the price of each operation (a probe of a
// Pebble-backed cache against a lookup in posting lists built in memory),
// which each passes to cheapest as a cost function. The statistics below
// depend on the layout alone.
//
// Mixed radii (the general pigeonhole principle of Qin et al., ICDE 2018):
// a document within Hamming distance rh of the query can miss a group
// probed at radius ρ only by differing from the query in ρ + 1 bits of it
// or more, so it misses at most the number of groups whose ρ + 1, smallest
// first, add up to rh or less, and is hit in all the others
// (ExactMinHits). With every group at τ that is MinHits; lowering some
// groups to τ − 1 (or leaving them out, at τ = 0) removes most of their
// probes and postings for a lower count filter, which on 512-bit
// fingerprints at 1 M documents roughly halves the postings counted at
// thresholds 0.8 to 0.6.

// layoutStats are the layout's statistics, computed once.
type layoutStats struct {
	once  sync.Once
	order []int         // groups in the order they are lowered (lowerOrder)
	plans [][]planStats // by tau, lower
}

// planStats are the expected figures of one probe plan on random documents.
type planStats struct {
	probes float64   // values probed per query
	hits   float64   // expected groups of a random document within their radius
	rates  []float64 // share of random documents hit in ≥ t groups, by t
}

func (l *Layout) stat() *layoutStats {
	s := l.stats
	s.once.Do(func() {
		m := l.M()
		s.order = make([]int, m)
		for i := range s.order {
			s.order[i] = i
		}
		// Narrowest first (a narrow group's ball holds more documents per
		// value probed), the last groups first among equals.
		slices.SortStableFunc(s.order, func(a, b int) int {
			if l.Widths[a] != l.Widths[b] {
				return l.Widths[a] - l.Widths[b]
			}
			return b - a
		})
		s.plans = make([][]planStats, MaxTau+1)
		for tau := range s.plans {
			s.plans[tau] = make([]planStats, m+1)
			for lower := range s.plans[tau] {
				s.plans[tau][lower] = l.computePlanStats(l.radiiOrdered(s.order, tau, lower))
			}
		}
	})
	return s
}

// computePlanStats computes the statistics of probing each group g at
// radius radii[g] (−1: not probed).
func (l *Layout) computePlanStats(radii []int) planStats {
	m := l.M()
	var ps planStats
	// dist[c]: probability that c of the groups so far are hit (a
	// Poisson-binomial distribution, one group at a time).
	dist := make([]float64, m+1)
	dist[0] = 1
	for g, w := range l.Widths {
		b := float64(bitvec.BallSize(w, radii[g]))
		p := min(1, b/math.Exp2(float64(w)))
		ps.probes += b
		ps.hits += p
		for c := g + 1; c >= 1; c-- {
			dist[c] = dist[c]*(1-p) + dist[c-1]*p
		}
		dist[0] *= 1 - p
	}
	ps.rates = make([]float64, m+2)
	for t := m; t >= 0; t-- {
		ps.rates[t] = min(1, ps.rates[t+1]+dist[t])
	}
	return ps
}

// radiiOrdered returns the probe radius of each group: tau, or tau − 1 for
// the first lower groups of order.
func (l *Layout) radiiOrdered(order []int, tau, lower int) []int {
	radii := make([]int, l.M())
	for g := range radii {
		radii[g] = tau
	}
	for _, g := range order[:min(max(lower, 0), len(order))] {
		radii[g] = tau - 1
	}
	return radii
}

// Radii returns the probe radius of each group in a probe plan of radius
// tau with lower groups lowered to tau − 1 (−1: the group is not probed):
// the narrowest groups are lowered first, the last ones first among groups
// of equal width.
func (l *Layout) Radii(tau, lower int) []int { return l.radiiOrdered(l.stat().order, tau, lower) }

// ExactMinHits returns the exact count filter of a probe plan over m groups
// at Hamming radius rh in which lower groups are probed at radius tau − 1
// (at tau = 0: not probed) and the others at tau: m minus the most groups
// a document within rh can miss, taking the cheapest misses first (tau
// bits for a lowered group, none for an unprobed one, tau + 1 for the
// others). With lower = 0 it is MinHits(m, rh, tau) (or 0 when that is
// negative). The plan is exact when the filter is at least 1. A negative
// tau counts as 0.
func ExactMinHits(m, rh, tau, lower int) int {
	tau = max(tau, 0)
	lower = min(max(lower, 0), m)
	budget, missed := max(rh, 0), lower
	if tau > 0 {
		missed = min(lower, budget/tau)
		budget -= missed * tau
	}
	missed += min(m-lower, budget/(tau+1))
	return m - missed
}

// planStats returns the statistics of plan (tau, lower).
func (l *Layout) planStats(tau, lower int) *planStats {
	return &l.stat().plans[tau][min(max(lower, 0), l.M())]
}

// candidateRate returns the share of unrelated (random) documents that
// pass count filter t in plan (tau, lower).
func (l *Layout) candidateRate(tau, lower, t int) float64 {
	rates := l.planStats(tau, lower).rates
	if t < 0 || t >= len(rates) {
		return 1
	}
	return rates[t]
}

// probesPerQuery returns the number of values plan (tau, lower) probes.
func (l *Layout) probesPerQuery(tau, lower int) float64 { return l.planStats(tau, lower).probes }

// hitsPerDoc returns the expected number of a random document's groups
// that plan (tau, lower) hits: the posting ids per document it counts.
func (l *Layout) hitsPerDoc(tau, lower int) float64 { return l.planStats(tau, lower).hits }

// probeFilter checks probe plan p at Hamming radius rh and returns its
// radius per group, its exact count filter and the filter it runs
// (p.MinHits when that is higher).
func (l *Layout) probeFilter(rh int, p Plan) (radii []int, exact, t int, err error) {
	m := l.M()
	if p.Lower < 0 || p.Lower > m {
		return nil, 0, 0, fmt.Errorf("%w: it lowers %d groups of %d", ErrInvalidPlan, p.Lower, m)
	}
	if p.Tau < 0 || p.Tau > MaxGroupWidth {
		return nil, 0, 0, fmt.Errorf("%w: tau=%d is not a probe radius (0 to %d; at radius %d over %d groups, %d or more is exact)",
			ErrInfeasible, p.Tau, MaxGroupWidth, rh, m, ExactTau(m, rh))
	}
	exact = ExactMinHits(m, rh, p.Tau, p.Lower)
	t = max(exact, p.MinHits)
	switch {
	case t < 1:
		return nil, 0, 0, infeasible(p.Tau, rh, m)
	case t > m:
		return nil, 0, 0, fmt.Errorf("%w: count filter %d above the %d groups", ErrInvalidPlan, t, m)
	}
	return l.Radii(p.Tau, p.Lower), exact, t, nil
}

// probeGroup is what a probe reads of one group it probes: the layout's
// offset, start and width, and the plan's radius, packed in one array so
// that a query in cold CPU caches reads them from a few adjacent lines
// (the layout's three arrays and the radii would be four allocations).
type probeGroup struct {
	offset uint32
	start  uint32
	width  uint8
	radius uint8
}

// probeGroups appends to dst the groups that radii probes (radius ≥ 0; a
// group at radius −1 is left out), in group order.
func (l *Layout) probeGroups(dst []probeGroup, radii []int) []probeGroup {
	for i, w := range l.Widths {
		if r := radii[i]; r >= 0 {
			dst = append(dst, probeGroup{offset: l.Offset[i], start: uint32(l.Starts[i]), width: uint8(w), radius: uint8(r)})
		}
	}
	return dst
}

// CheckPlan returns the error a search or an all-pairs run at Hamming
// radius rh would return for plan p before doing any work: a plan of
// unknown kind, an approximate plan without a recall in (0, 1], a probe
// plan that lowers more groups than there are or whose count filter is
// above their number (ErrInvalidPlan), a probe plan that cannot be exact
// (ErrInfeasible); nil otherwise.
func (l *Layout) CheckPlan(rh int, p Plan) error {
	switch p.Kind {
	case Auto, Scan:
		return nil
	case Approx:
		if !(p.MinRecall > 0 && p.MinRecall <= 1) {
			return fmt.Errorf("%w: an approximate plan needs a recall in (0, 1], got %v", ErrInvalidPlan, p.MinRecall)
		}
		return nil
	case Probe:
		_, _, _, err := l.probeFilter(rh, p)
		return err
	default:
		return fmt.Errorf("%w: unknown plan kind %d", ErrInvalidPlan, p.Kind)
	}
}

// planCost is the cost of probe plan (tau, lower) with count filter t.
type planCost func(tau, lower, t int) float64

// cheapest returns the plan of least estimated cost for radius rh, its
// cost and its expected recall: the scan (cost scan) or an exact probe
// plan (tau = 0..MaxTau, any number of groups lowered, the exact count
// filter); with approx, also probe plans with every group at tau whose
// filter is above the exact one while their recall(tau, t) is at least
// minRecall.
func (l *Layout) cheapest(rh int, scan float64, cost planCost, approx bool, minRecall float64,
	recall func(tau, t int) float64) (Plan, float64, float64) {
	best, bestCost, bestRecall := Plan{Kind: Scan}, scan, 1.0
	m := l.M()
	for tau := 0; tau <= MaxTau; tau++ {
		for lower := 0; lower <= m; lower++ {
			if t := ExactMinHits(m, rh, tau, lower); t >= 1 {
				if c := cost(tau, lower, t); c < bestCost {
					best, bestCost, bestRecall = Plan{Kind: Probe, Tau: tau, Lower: lower}, c, 1
				}
			}
		}
		if !approx {
			continue
		}
		// Raise t above the exact filter while the recall stays high enough.
		for t := max(MinHits(m, rh, tau)+1, 1); t <= m; t++ {
			rec := recall(tau, t)
			if rec < minRecall {
				break
			}
			if c := cost(tau, 0, t); c < bestCost {
				best, bestCost, bestRecall = Plan{Kind: Probe, Tau: tau, MinHits: t}, c, rec
			}
		}
	}
	return best, bestCost, bestRecall
}
