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
