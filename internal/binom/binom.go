package binom

import "math"

// CDF returns Pr[X ≤ x] for X ~ Binomial(n, p).
func CDF(n int, p float64, x int) float64 {
	switch {
	case math.IsNaN(p):
		return math.NaN()
	case x < 0:
		return 0
	case x >= n:
		return 1
	}
	return sum(n, p, 0, x)
}

// Tail returns Pr[X ≥ t] for X ~ Binomial(n, p).
func Tail(n int, p float64, t int) float64 {
	switch {
	case math.IsNaN(p):
		return math.NaN()
	case t <= 0:
		return 1
	case t > n:
		return 0
	}
	return sum(n, p, t, n)
}

// PMF returns Pr[X = j] for X ~ Binomial(n, p).
func PMF(n int, p float64, j int) float64 {
	if j < 0 || j > n {
		return 0
	}
	if math.IsNaN(p) {
		return math.NaN()
	}
	return sum(n, p, j, j)
}

// sum returns Σ Pr[X = j] for j in [from, to], 0 ≤ from ≤ to ≤ n.
func sum(n int, p float64, from, to int) float64 {
	p = min(max(p, 0), 1)
	if p == 0 || p == 1 {
		// All the mass is at 0 or at n.
		at := 0
		if p == 1 {
			at = n
		}
		if from <= at && at <= to {
			return 1
		}
		return 0
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	ln := lgamma(n + 1)
	s := 0.0
	for j := from; j <= to; j++ {
		s += math.Exp(ln - lgamma(j+1) - lgamma(n-j+1) + float64(j)*lp + float64(n-j)*lq)
	}
	return min(s, 1)
}

func lgamma(x int) float64 {
	v, _ := math.Lgamma(float64(x))
	return v
}

// CDFTable returns Pr[X ≤ x] for X ~ Binomial(n, p) and every x in
// [0, n], in O(n).
func CDFTable(n int, p float64) []float64 {
	out := make([]float64, n+1)
	s := 0.0
	for j := range out {
		s += sum(n, p, j, j)
		out[j] = min(s, 1)
	}
	return out
}
