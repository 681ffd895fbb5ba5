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
//   - The curve assumes independent bits. The min-hash is one-permutation
//     hashing with densification (package minhash): a document's shingles
//     fill at most as many of the k bins as it has, and each empty bin
//     copies another bin's minimum. R̂ is unbiased either way, but its
//     spread depends on the document's size. For documents of at least
//     about k distinct shingles the curve is conservative: the bins sample
//     the shingles without replacement and R̂ spreads a little less than
//     the curve's √((1 − R²)/k), so fewer pairs below the threshold are
//     reported, and fewer above it missed, than it says. For shorter
//     documents the copied bins repeat bits and R̂ spreads wider than the
//     curve: false reports just below the threshold and misses just above
//     it can be somewhat more frequent than it says. Measured at k = 512,
//     r = 0.7 on random set pairs (50 000 per row, fresh seeds): at 100
//     shingles a document, R̂ spread 1.06 times the curve's, pairs of
//     R = 0.6 were reported 1.6 times as often as the curve says (0.0025
//     against 0.0016), of R = 0.65 1.2 times (0.073 against 0.062), and
//     pairs of R = 0.75 were missed 1.2 times as often (0.062 against
//     0.050); at 800 to 1 000 shingles R̂ spread 0.96 times the curve's and
//     the same rates were 0.7 to 0.9 times the curve's. On the Debian corpus
//     (about 250 distinct shingles a document) pairs of resemblance 0.55
//     to 0.7 were reported 1.1 to 1.6 times as often as the curve says.
//     Labelled pairs ([Evaluate]) measure the real rates.
//     TestShortDocumentsSpreadWider checks the spread at 100 and 1 024
//     shingles; with unions of 4 000 shingles every point of the curve
//     tested is within 2 standard errors (TestCurveMatchesSimulation).
//   - "Resemblance" is of shingle sets after normalization, not of the
//     documents' text as a reader sees it.
//   - Thresholds that share a Hamming radius are the same threshold; a
//     recommendation is the shortest decimal with the recommended radius.
package tune
