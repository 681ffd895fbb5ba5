package index

import (
	"math"
	"sync"
)

// Recall returns the probability that a document at Hamming distance
// exactly d from the query has at least t groups within tau bits of the
// query's groups, when its d differing bits fall uniformly at random among
// the K positions (as they do for 1-bit min-hash fingerprints, whose bits
// are independent). For a probe plan with count filter t this is its
// recall for neighbours at distance d; documents closer than d are found
// at least as often, so Recall(rh, ...) is the plan's worst case over the
// answer set. For t ≤ MinHits(m, rh, tau) it is 1.
func (l *Layout) Recall(d, tau, t int) float64 {
	if t <= 0 {
		return 1
	}
	if t > l.M() || d < 0 || d > l.K {
		return 0
	}
	return atLeast(l.WithinDist(d, tau), t)
}

// atLeast returns the sum of dist[t:], at most 1.
func atLeast(dist []float64, t int) float64 {
	s := 0.0
	for c := t; c < len(dist); c++ {
		s += dist[c]
	}
	return min(1, s)
}

// WithinDist returns, for a document at Hamming distance d whose differing
// bits fall uniformly among the K positions, the distribution of the number
// of groups within tau bits of the query's: element c is the probability of
// exactly c such groups (c = 0..m).
func (l *Layout) WithinDist(d, tau int) []float64 { return l.withinRadii(d, l.Radii(tau, 0)) }

// withinRadii is WithinDist for a plan probing group g at radius radii[g].
func (l *Layout) withinRadii(d int, radii []int) []float64 {
	m := l.M()
	// lf[i] = ln i!
	lf := make([]float64, l.K+1)
	for i := 2; i <= l.K; i++ {
		lf[i] = lf[i-1] + math.Log(float64(i))
	}
	lc := func(n, k int) float64 { return lf[n] - lf[k] - lf[n-k] }
	// cur[b][c]: probability that the groups so far hold b of the d
	// differing bits and c of them are within tau, given d bits placed
	// uniformly among K positions (multivariate hypergeometric).
	cur := make([][]float64, d+1)
	next := make([][]float64, d+1)
	for b := range cur {
		cur[b] = make([]float64, m+1)
		next[b] = make([]float64, m+1)
	}
	cur[0][0] = 1
	rest := l.K // positions not yet assigned to a group
	for g, w := range l.Widths {
		for b := range next {
			clear(next[b])
		}
		for b := 0; b <= d; b++ {
			left := d - b // differing bits still to place among rest positions
			for j := 0; j <= min(w, left); j++ {
				if left-j > rest-w {
					continue
				}
				q := math.Exp(lc(w, j) + lc(rest-w, left-j) - lc(rest, left))
				shift := 0
				if j <= radii[g] {
					shift = 1
				}
				for c := 0; c+shift <= m; c++ {
					next[b+j][c+shift] += cur[b][c] * q
				}
			}
		}
		cur, next = next, cur
		rest -= w
	}
	return cur[d]
}

// recallCache memoizes Layout.withinRadii per (d, tau, lower).
type recallCache struct {
	mu sync.Mutex
	m  map[[3]int][]float64
}

// recall returns the recall of probe plan (tau, lower) with count filter t
// at radius rh (Layout.Recall with lower groups at tau − 1), memoized per
// (rh, tau, lower).
func (ix *Index) recall(rh, tau, lower, t int) float64 {
	if t <= ExactMinHits(ix.layout.M(), rh, tau, lower) {
		return 1
	}
	if t > ix.layout.M() || rh < 0 || rh > ix.layout.K {
		return 0
	}
	key := [3]int{rh, tau, lower}
	ix.recalls.mu.Lock()
	defer ix.recalls.mu.Unlock()
	dist, ok := ix.recalls.m[key]
	if !ok {
		dist = ix.layout.withinRadii(rh, ix.layout.Radii(tau, lower))
		if ix.recalls.m == nil {
			ix.recalls.m = make(map[[3]int][]float64)
		}
		ix.recalls.m[key] = dist
	}
	return atLeast(dist, t)
}
