package minhash

import "math"

// Similarity returns the estimated resemblance 1 − 2h/k of two k-bit
// fingerprints (one bit per min-hash) at Hamming distance h: each bit
// differs with probability (1 − R)/2 for a pair of resemblance R.
func Similarity(k, h int) float64 { return 1 - 2*float64(h)/float64(k) }

// Radius returns the Hamming radius of threshold r for k-bit fingerprints:
// the largest h with Similarity(k, h) ≥ r, or -1 when there is none. It is
// ⌊k(1−r)/2⌋ (docs/algorithm.md §1.6) computed so that it agrees exactly with
// the floating-point test Similarity(k, h) >= r used by the linear scan.
func Radius(k int, r float64) int {
	h := int(math.Floor(float64(k)*(1-r)/2)) + 1
	if h > k {
		h = k
	}
	for h >= 0 && Similarity(k, h) < r {
		h--
	}
	return h
}

// Containment returns the estimated share of a set A of a elements found
// in a set B of b elements, from their estimated resemblance r:
// |A ∩ B| / |A| = r(a + b) / ((1 + r)·a), which follows from
// r = |A ∩ B| / |A ∪ B| and |A ∪ B| = a + b − |A ∩ B|. It is clamped to
// [0, 1] (0 for r ≤ 0 or a ≤ 0).
func Containment(r float64, a, b int) float64 {
	if r <= 0 || a <= 0 {
		return 0
	}
	return min(r*float64(a+b)/((1+r)*float64(a)), 1)
}

// ContainmentNoise returns the least estimated resemblance from which
// EstimateContainment estimates a containment for k-bit fingerprints:
// 4/√k, four standard deviations of the estimate of two unrelated sets (of
// which about 3 in 100 000 reach it). Below it the estimate is noise, which
// Containment would multiply by the ratio of the sizes: a small query
// would be "contained" in most very large documents. 0.177 at k = 512.
func ContainmentNoise(k int) float64 { return 4 / math.Sqrt(float64(k)) }

// EstimateContainment is Containment for k-bit fingerprints: 0 when r is
// below ContainmentNoise(k).
func EstimateContainment(k int, r float64, a, b int) float64 {
	if k <= 0 || r < ContainmentNoise(k) {
		return 0
	}
	return Containment(r, a, b)
}

// ContainmentFloor returns the least resemblance r at which
// Containment(r, a, b) reaches c: c·a / (a(1 − c) + b). It grows with a
// and falls as b grows: a larger B needs less resemblance to contain A.
func ContainmentFloor(c float64, a, b int) float64 {
	return c * float64(a) / (float64(a)*(1-c) + float64(b))
}
