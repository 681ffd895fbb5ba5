package tune

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/fpdb/fpdb/internal/binom"
	"github.com/fpdb/fpdb/internal/minhash"
)

// ErrInvalid is wrapped by every error about an argument out of range.
var ErrInvalid = errors.New("tune: invalid argument")

// Curve is the detection curve of a threshold for k-bit fingerprints.
type Curve struct {
	// K is the fingerprint length in bits.
	K int
	// Threshold is the estimated-resemblance threshold r, in (0, 1].
	Threshold float64
	// Radius is r's Hamming radius: a pair is reported when its
	// fingerprints differ in at most Radius bits.
	Radius int
}

// NewCurve returns the detection curve of threshold r for k-bit
// fingerprints. k must be ≥ 1 and r in (0, 1].
func NewCurve(k int, r float64) (Curve, error) {
	if k < 1 {
		return Curve{}, fmt.Errorf("%w: fingerprint length %d bits (want ≥ 1)", ErrInvalid, k)
	}
	if !(r > 0 && r <= 1) {
		return Curve{}, fmt.Errorf("%w: threshold %v (want a value in (0, 1])", ErrInvalid, r)
	}
	return Curve{K: k, Threshold: r, Radius: minhash.Radius(k, r)}, nil
}

// Probability returns the probability that a pair of true resemblance R
// is reported (R is clamped to [0, 1]).
func (c Curve) Probability(R float64) float64 {
	R = min(max(R, 0), 1)
	return binom.CDF(c.K, (1-R)/2, c.Radius)
}

// Caught returns the least true resemblance that is reported with
// probability at least p, for p in (0, 1); 0 when even R = 0 is.
func (c Curve) Caught(p float64) float64 {
	if c.Probability(0) >= p {
		return 0
	}
	lo, hi := 0.0, 1.0 // Probability(lo) < p ≤ Probability(hi) = 1
	for range 60 {
		mid := (lo + hi) / 2
		if c.Probability(mid) >= p {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// Points returns the curve at n+1 evenly spaced resemblances from 0 to 1.
func (c Curve) Points(n int) (xs, ys []float64) {
	n = max(n, 1)
	xs, ys = make([]float64, n+1), make([]float64, n+1)
	for i := range xs {
		xs[i] = float64(i) / float64(n)
		ys[i] = c.Probability(xs[i])
	}
	return xs, ys
}

// Recommendation is a threshold chosen to catch pairs of resemblance ≥
// Catch with probability ≥ With.
type Recommendation struct {
	// Curve is the recommended threshold's.
	Curve
	// Catch and With are what was asked: resemblance J and probability P.
	Catch, With float64
	// Probability is the probability that a pair of resemblance exactly
	// Catch is reported (≥ With; a pair above Catch is more likely).
	Probability float64
}

// Recommend returns the highest threshold for k-bit fingerprints that
// reports a pair of true resemblance catch (and so any pair above it) with
// probability at least with. The threshold is the shortest decimal whose
// Hamming radius is the smallest radius that meets the goal. catch must be
// in (0, 1], with in (0, 1). An error wrapping ErrInvalid says when no
// positive threshold meets the goal.
func Recommend(k int, catch, with float64) (Recommendation, error) {
	if k < 1 {
		return Recommendation{}, fmt.Errorf("%w: fingerprint length %d bits (want ≥ 1)", ErrInvalid, k)
	}
	if !(catch > 0 && catch <= 1) {
		return Recommendation{}, fmt.Errorf("%w: resemblance to catch %v (want a value in (0, 1])", ErrInvalid, catch)
	}
	if !(with > 0 && with < 1) {
		return Recommendation{}, fmt.Errorf("%w: probability %v (want a value in (0, 1))", ErrInvalid, with)
	}
	p := (1 - catch) / 2
	// cdf is Pr[H ≤ h], accumulated term by term: binom.CDF(k, p, h)
	// summed from 0 for each h made this quadratic in k (21 s at k =
	// 65536). The terms are added in CDF's order, so each cdf is the
	// very float64 binom.CDF returns for h < k (radius h < k/2 here).
	cdf := 0.0
	for h := 0; h <= k; h++ {
		if minhash.Similarity(k, h) <= 0 {
			break
		}
		cdf += binom.PMF(k, p, h)
		if pr := min(cdf, 1); pr >= with {
			r := roundThreshold(k, h)
			return Recommendation{Curve: Curve{K: k, Threshold: r, Radius: h}, Catch: catch, With: with, Probability: pr}, nil
		}
	}
	c, _ := NewCurve(k, minhash.Similarity(k, (k-1)/2))
	return Recommendation{}, fmt.Errorf("%w: no positive threshold catches resemblance %v with probability %v at %d bits (the lowest, %.4f, catches it with probability %.4f)",
		ErrInvalid, catch, with, k, c.Threshold, c.Probability(catch))
}

// roundThreshold returns the shortest decimal r ≤ Similarity(k, h) whose
// Hamming radius is h.
func roundThreshold(k, h int) float64 {
	s := minhash.Similarity(k, h)
	for digits := 1; digits <= 17; digits++ {
		scale := math.Pow(10, float64(digits))
		r, _ := strconv.ParseFloat(strconv.FormatFloat(math.Floor(s*scale)/scale, 'f', digits, 64), 64)
		if r > 0 && minhash.Radius(k, r) == h {
			return r
		}
	}
	return s
}
