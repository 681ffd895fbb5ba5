// Package tune answers "which threshold should I use?" from the estimator's
// exact statistics and from labelled pairs.
//
// A pair of documents of true resemblance R (Jaccard of their shingle sets)
// gets k-bit fingerprints whose bits differ independently with probability
// (1 − R)/2, so their Hamming distance H is Binomial(k, (1 − R)/2) and the
// estimate is R̂ = 1 − 2H/k. At threshold r the pair is reported when H ≤ h,
// h the threshold's Hamming radius (minhash.Radius). The probability of
// that, as a function of R, is the detection curve: an S-curve that rises
// from near 0 to near 1 around r, the steeper the larger k.
//
// # Basics
//
// [NewCurve] gives the curve of a threshold: [Curve.Probability] at any R,
// [Curve.Caught] the least R caught with a given probability. [Recommend]
// picks the highest threshold that catches pairs of resemblance ≥ J with
// probability ≥ P. [Evaluate] scores every threshold on labelled pairs
// (precision, recall, F1 with Wilson 95 % intervals) and [Best] picks one
// for a goal (best F1, or a least precision or recall).
//
// # Caveats
//
//   - The curve assumes independent bits, which holds for documents of many
//     more shingles than k. One-permutation hashing makes the bits of short
//     documents negatively correlated (the bins' minima are drawn without
//     replacement), which narrows the spread of R̂: for pairs of sets of
//     1 000 shingles at k = 512 and r = 0.7 the curve says 0.950 at R = 0.75
//     and 0.062 at R = 0.65, real fingerprints gave 0.973 and 0.049. So for
//     short documents the curve is conservative on both sides. With sets of
//     4 000 shingles every point tested is within 2 standard errors
//     (TestCurveMatchesSimulation).
//   - "Resemblance" is of shingle sets after normalization, not of the
//     documents' text as a reader sees it.
//   - Thresholds that share a Hamming radius are the same threshold; a
//     recommendation is the shortest decimal with the recommended radius.
package tune
