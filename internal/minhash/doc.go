// Package minhash computes the k-bit fingerprint of a set of 64-bit shingle
// hashes (docs/algorithm.md §1.3-1.5): k one-bit min-hashes, so that the Hamming
// distance H between two fingerprints estimates the Jaccard resemblance R of
// the two sets by R̂ = 1 − 2H/k.
//
// Instead of k independent permutations (O(k) work per element) a
// [Sketcher] uses one-permutation hashing (P. Li, A. Owen, C.-H. Zhang,
// "One Permutation Hashing", NIPS 2012): each element x is re-mixed with the
// seed to a 64-bit value v (a bijection, so distinct elements never tie),
// v picks one of k bins (the high word of v·k, "fastrange"), and each bin
// keeps the smallest v it has seen. Bins that received no element are filled
// by optimal densification (A. Shrivastava, "Optimal Densification for Fast
// and Accurate Minwise Hashing", ICML 2017): empty bin i probes bins
// j = hash(seed, i, attempt) mod k for attempt = 1, 2, … and copies the
// minimum of the first non-empty one. The probe sequence depends only on
// (seed, i), never on the data, so for two sets A and B the densified bin
// agrees exactly when the minimum of A∪B in the first bin of the sequence
// that is non-empty in A∪B lies in A∩B, which has probability R. The sketch
// costs O(|S| + k) expected time when |S| ≥ k, O(|S| + k²/|S|) for smaller
// sets (each of the empty bins probes about k/|S| times; cheap probes keep
// this to tens of microseconds at k = 512 unless |S| is a handful).
//
// Bit i of the fingerprint is one bit of mix(v_i, i, seed), where v_i is the
// minimum that bin i holds (its own or a copied one). Re-hashing with the
// bin index gives equal bits when the minima are equal and independent fair
// coin flips when they differ, also for bins that copied the same minimum:
// Pr[bit_i(A) = bit_i(B)] = R + (1−R)/2 = (1+R)/2, and R̂ = 1 − 2H/k is
// unbiased. Its variance is about (1−R²)/k for sets of at least about k
// elements (a little below it there: one-permutation hashing samples
// without replacement), and larger for sets much smaller than k, whose
// empty bins copy other bins' minima, so that their bits are not
// independent (a standard deviation 6 % above it at 100 elements for
// k = 512; docs/algorithm.md §1.5).
//
// A Sketcher is reusable but not safe for concurrent use.
package minhash
