package index

import (
	"math"
	"sync"

	"github.com/fpdb/fpdb/internal/binom"
	"github.com/fpdb/fpdb/internal/bitvec"
)

// The planners of Search (search.go) and of Pairs (pairs.go) share one cost
// model: for each probe radius τ and count filter t, a query costs its
// probes (the values within τ bits of each group value), the posting ids
// it counts, the candidates it verifies and a fixed part; the scan costs
// its words. They differ only in the price of each operation (a probe of a
// Pebble-backed cache against a lookup in posting lists built in memory),
// which each passes to cheapest as a cost function. The statistics below
// depend on the layout alone.

// layoutStats are the layout's statistics, computed once.
type layoutStats struct {
	once   sync.Once
	rates  [][]float64 // candidate rate by tau, t
	probes []float64   // probes per query by tau
	hit    []float64   // expected posting ids per document by tau
}

func (l *Layout) stat() *layoutStats {
	s := l.stats
	s.once.Do(func() {
		m := l.M()
		s.rates = make([][]float64, MaxTau+1)
		s.probes = make([]float64, MaxTau+1)
		s.hit = make([]float64, MaxTau+1)
		for tau := range s.rates {
			var pSum float64
			for _, w := range l.Widths {
				b := float64(bitvec.BallSize(w, tau))
				s.probes[tau] += b
				pSum += b / math.Exp2(float64(w))
			}
			s.hit[tau] = pSum
			s.rates[tau] = make([]float64, m+2)
			for t := range s.rates[tau] {
				s.rates[tau][t] = binom.Tail(m, min(1, pSum/float64(m)), t)
			}
		}
	})
	return s
}

// candidateRate returns the share of unrelated (random) documents that
// pass count filter t at probe radius tau: Pr[Binomial(m, p̄) ≥ t] with p̄
// the mean chance that a group lands within tau bits.
func (l *Layout) candidateRate(tau, t int) float64 {
	rates := l.stat().rates[tau]
	if t < 0 || t >= len(rates) {
		return 1
	}
	return rates[t]
}

// probesPerQuery returns the number of values a query probes at radius
// tau: the sum over groups of the Hamming ball sizes.
func (l *Layout) probesPerQuery(tau int) float64 { return l.stat().probes[tau] }

// hitsPerDoc returns the expected number of a random document's groups
// within tau bits of a query's: the posting ids per document a probe plan
// counts.
func (l *Layout) hitsPerDoc(tau int) float64 { return l.stat().hit[tau] }

// cheapest returns the plan of least estimated cost for radius rh, its
// cost and its expected recall: the scan (cost scan) or a probe plan
// (cost(tau, t)) with the exact count filter MinHits(m, rh, tau) for tau
// = 0..MaxTau; with approx, also probe plans whose filter is above the
// exact one while their recall(tau, t) is at least minRecall.
func (l *Layout) cheapest(rh int, scan float64, cost func(tau, t int) float64, approx bool, minRecall float64,
	recall func(tau, t int) float64) (Plan, float64, float64) {
	best, bestCost, bestRecall := Plan{Kind: Scan}, scan, 1.0
	m := l.M()
	for tau := 0; tau <= MaxTau; tau++ {
		exact := MinHits(m, rh, tau)
		if exact >= 1 {
			if c := cost(tau, exact); c < bestCost {
				best, bestCost, bestRecall = Plan{Kind: Probe, Tau: tau}, c, 1
			}
		}
		if !approx {
			continue
		}
		// Raise t above the exact filter while the recall stays high enough.
		for t := max(exact+1, 1); t <= m; t++ {
			rec := recall(tau, t)
			if rec < minRecall {
				break
			}
			if c := cost(tau, t); c < bestCost {
				best, bestCost, bestRecall = Plan{Kind: Probe, Tau: tau, MinHits: t}, c, rec
			}
		}
	}
	return best, bestCost, bestRecall
}
