package tune

import (
	"fmt"
	"math"

	"github.com/fpdb/fpdb/internal/minhash"
)

// Labelled is a pair of documents a person labelled: the Hamming distance
// of their fingerprints and whether they are duplicates.
type Labelled struct {
	Hamming int
	Dup     bool
}

// Interval is a 95 % confidence interval.
type Interval struct{ Lo, Hi float64 }

// Score is how one threshold does on labelled pairs.
type Score struct {
	// Threshold is the threshold; Radius its Hamming radius; K the
	// fingerprint length in bits.
	Threshold float64
	Radius    int
	K         int
	// TP: duplicates reported; FP: non-duplicates reported; FN:
	// duplicates missed; TN: non-duplicates not reported.
	TP, FP, FN, TN int
	// Precision is TP/(TP+FP) (1 when nothing is reported), Recall
	// TP/(TP+FN) (1 when there is no duplicate, a case Best refuses), F1
	// their harmonic mean.
	Precision, Recall, F1 float64
	// PrecisionCI and RecallCI are Wilson score intervals at 95 %.
	PrecisionCI, RecallCI Interval
}

// Evaluate scores every distinct positive threshold for k-bit fingerprints
// (one per Hamming radius 0, 1, … while 1 − 2h/k > 0) on the labelled
// pairs, highest threshold first.
func Evaluate(k int, pairs []Labelled) ([]Score, error) {
	if k < 1 {
		return nil, fmt.Errorf("%w: fingerprint length %d bits (want ≥ 1)", ErrInvalid, k)
	}
	// dups[h], nots[h]: labelled pairs at distance h (h > k counted at k).
	dups, nots := make([]int, k+1), make([]int, k+1)
	var nd, nn int
	for i, p := range pairs {
		if p.Hamming < 0 {
			return nil, fmt.Errorf("%w: pair %d has Hamming distance %d", ErrInvalid, i+1, p.Hamming)
		}
		h := min(p.Hamming, k)
		if p.Dup {
			dups[h]++
			nd++
		} else {
			nots[h]++
			nn++
		}
	}
	var out []Score
	tp, fp := 0, 0
	for h := 0; h <= k && minhash.Similarity(k, h) > 0; h++ {
		tp += dups[h]
		fp += nots[h]
		s := Score{Threshold: roundThreshold(k, h), Radius: h, K: k, TP: tp, FP: fp, FN: nd - tp, TN: nn - fp, Precision: 1, Recall: 1}
		if tp+fp > 0 {
			s.Precision = float64(tp) / float64(tp+fp)
		}
		if nd > 0 {
			s.Recall = float64(tp) / float64(nd)
		}
		if tp > 0 {
			s.F1 = 2 * s.Precision * s.Recall / (s.Precision + s.Recall)
		}
		s.PrecisionCI = wilson(tp, tp+fp)
		s.RecallCI = wilson(tp, nd)
		out = append(out, s)
	}
	return out, nil
}

// wilson returns the Wilson score interval at 95 % of s successes in n
// trials ([0, 1] when n is 0).
func wilson(s, n int) Interval {
	if n == 0 {
		return Interval{0, 1}
	}
	const z = 1.959963984540054
	p, nf := float64(s)/float64(n), float64(n)
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	w := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return Interval{max(0, c-w), min(1, c+w)}
}

// Goal says which threshold Best picks.
//
// The best F1, and the most recall at a least precision, are often shared
// by a run of thresholds with the same counts: from the estimate of the
// weakest duplicate reported down to just above the strongest
// non-duplicate below it. The highest of them sits on that duplicate's
// estimate, where a duplicate of the same true resemblance is missed about
// half the time. Best then picks the threshold whose radius is two
// standard deviations of a fingerprint's Hamming distance at that
// resemblance (the square root of k·p·(1−p), p the radius over k) above
// the highest's, or the lowest of the run if that comes first: the
// labelled counts are the same, and such a duplicate is reported about
// 98 times in 100 (see SameCounts).
type Goal struct {
	// MinPrecision, if > 0, picks, among the thresholds whose precision
	// is at least MinPrecision, one of the most recall (the run's margin,
	// above).
	MinPrecision float64
	// MinRecall, if > 0, picks the highest threshold (the most precision)
	// whose recall is at least MinRecall.
	MinRecall float64
	// With neither, Best picks a threshold of highest F1 (the run's
	// margin, above).
}

// Best returns the score of the threshold that meets the goal. An error
// wrapping ErrInvalid says when none does, when the goal sets both
// MinPrecision and MinRecall or one outside (0, 1], when no pair is
// labelled a duplicate (recall is then 1 and F1 0 at every threshold:
// nothing to choose by), and for MinPrecision when no pair is labelled
// not a duplicate (precision is then 1 wherever a pair is reported, so
// the goal would say nothing about false reports).
func Best(scores []Score, g Goal) (Score, error) {
	if len(scores) == 0 {
		return Score{}, fmt.Errorf("%w: no thresholds scored", ErrInvalid)
	}
	// Every score counts the same pairs.
	dups, nots := scores[0].TP+scores[0].FN, scores[0].FP+scores[0].TN
	switch {
	case g.MinPrecision != 0 && g.MinRecall != 0:
		return Score{}, fmt.Errorf("%w: a least precision and a least recall cannot both be asked", ErrInvalid)
	case g.MinPrecision != 0 && !(g.MinPrecision > 0 && g.MinPrecision <= 1):
		return Score{}, fmt.Errorf("%w: least precision %v (want a value in (0, 1])", ErrInvalid, g.MinPrecision)
	case g.MinRecall != 0 && !(g.MinRecall > 0 && g.MinRecall <= 1):
		return Score{}, fmt.Errorf("%w: least recall %v (want a value in (0, 1])", ErrInvalid, g.MinRecall)
	case dups == 0:
		return Score{}, fmt.Errorf("%w: no pair is labelled a duplicate (all %d are labelled not): recall cannot be measured, so no threshold can be recommended; label some duplicates too", ErrInvalid, nots)
	case g.MinPrecision != 0 && nots == 0:
		return Score{}, fmt.Errorf("%w: no pair is labelled not a duplicate (all %d are labelled dup): precision is 1 at every threshold, so a least precision cannot choose one; label some non-duplicates too, or ask for a least recall instead", ErrInvalid, dups)
	}
	switch {
	case g.MinPrecision != 0:
		best := -1
		for i, s := range scores { // highest threshold first
			if s.TP+s.FP > 0 && s.Precision >= g.MinPrecision && (best < 0 || s.Recall > scores[best].Recall) {
				best = i
			}
		}
		if best >= 0 {
			return scores[withMargin(scores, best)], nil
		}
		return Score{}, fmt.Errorf("%w: no threshold reaches precision %v on these pairs", ErrInvalid, g.MinPrecision)
	case g.MinRecall != 0:
		for _, s := range scores {
			if s.Recall >= g.MinRecall {
				return s, nil
			}
		}
		return Score{}, fmt.Errorf("%w: no positive threshold reaches recall %v on these pairs", ErrInvalid, g.MinRecall)
	}
	best := 0
	for i, s := range scores[1:] {
		if s.F1 > scores[best].F1 {
			best = i + 1
		}
	}
	return scores[withMargin(scores, best)], nil
}

// SameCounts returns the first and the last index of the run of scores
// (highest threshold first) around scores[i] that count the labelled
// pairs as scores[i] does: first is the top Best's margin moves down from.
func SameCounts(scores []Score, i int) (first, last int) {
	first, last = i, i
	for first > 0 && sameCounts(scores[first-1], scores[i]) {
		first--
	}
	for last+1 < len(scores) && sameCounts(scores[last+1], scores[i]) {
		last++
	}
	return first, last
}

// withMargin returns the index of the threshold of the run of equal counts
// starting at scores[i] whose radius is two standard deviations of a
// Hamming distance at that radius beyond scores[i]'s, or the run's last
// (see Goal).
func withMargin(scores []Score, i int) int {
	s := scores[i]
	if s.K <= 0 {
		return i
	}
	p := float64(max(s.Radius, 1)) / float64(s.K)
	want := s.Radius + int(math.Ceil(2*math.Sqrt(float64(s.K)*p*(1-p))))
	j := i
	for j+1 < len(scores) && scores[j+1].Radius <= want && sameCounts(scores[j+1], s) {
		j++
	}
	return j
}

// sameCounts reports whether a and b count the labelled pairs alike.
func sameCounts(a, b Score) bool { return a.TP == b.TP && a.FP == b.FP }
