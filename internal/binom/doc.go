// Package binom computes binomial probabilities: the tails of
// Binomial(n, p), summed term by term in log space so that small
// probabilities (1e-12 and below) keep their relative precision instead of
// being lost in 1 − (a number close to 1).
//
// # Basics
//
// [CDF] is Pr[X ≤ x] and [Tail] is Pr[X ≥ t] for X ~ Binomial(n, p). The
// query planner (package index) uses Tail for the share of documents that
// pass the count filter; the threshold tuning (package tune) uses CDF for
// the probability that a pair of given resemblance is reported.
//
// # Caveats
//
//   - Each call sums up to n+1 terms: O(n) time. n is a fingerprint length
//     or a group count here (at most a few thousand).
//   - p is clamped to [0, 1]; NaN p gives NaN.
package binom
