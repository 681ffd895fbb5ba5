package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/tune"
)

// Curve is the detection curve of a threshold for K-bit fingerprints: the
// probability that a pair of true resemblance R (Jaccard of the shingle
// sets) is reported, exact under the estimator's model — the fingerprints'
// Hamming distance is Binomial(K, (1 − R)/2). Probability(R) evaluates it,
// Caught(p) gives the least R reported with probability p, Points(n)
// samples it. For documents of at least about K distinct shingles it is
// conservative; for shorter ones the estimate spreads wider than the
// curve, so false reports just below the threshold and misses just above
// it can be somewhat more frequent than it says (about 1.2 to 1.6 times
// at 100 shingles and K = 512; internal/tune's Caveats). Labelled pairs
// (EvaluateThresholds) measure the real rates.
type Curve = tune.Curve

// Recommendation is a threshold chosen by Recommend: its Curve, what was
// asked (Catch, With) and the probability of reporting a pair of
// resemblance exactly Catch.
type Recommendation = tune.Recommendation

// LabelledPair is a pair a person labelled: the Hamming distance of the
// two documents' fingerprints and whether they are duplicates.
type LabelledPair = tune.Labelled

// ThresholdScore is how one threshold does on labelled pairs: counts,
// precision, recall, F1 and Wilson 95 % intervals.
type ThresholdScore = tune.Score

// ThresholdGoal says which threshold BestThreshold picks: a threshold of
// the best F1 (the zero value), one of the most recall among those with a
// least precision, or the highest threshold with a least recall. Where a
// run of thresholds counts the labelled pairs alike, the first two pick
// the one two standard deviations of the estimate below the run's top
// (or its lowest), not the top, which sits on the weakest reported
// duplicate's estimate (see SameCounts).
type ThresholdGoal = tune.Goal

// DetectionCurve returns the detection curve of threshold for k-bit
// fingerprints. Errors wrap ErrInvalidOptions.
func DetectionCurve(k int, threshold float64) (Curve, error) {
	c, err := tune.NewCurve(k, threshold)
	return c, tuneError(err)
}

// Recommend returns the highest threshold for k-bit fingerprints that
// reports pairs of true resemblance ≥ catch with probability ≥ with (for
// instance 0.8 and 0.99), as the shortest decimal with that Hamming radius.
// Errors wrap ErrInvalidOptions, also when no positive threshold meets the
// goal.
func Recommend(k int, catch, with float64) (Recommendation, error) {
	r, err := tune.Recommend(k, catch, with)
	return r, tuneError(err)
}

// EvaluateThresholds scores every distinct positive threshold for k-bit
// fingerprints on labelled pairs, highest threshold first.
func EvaluateThresholds(k int, pairs []LabelledPair) ([]ThresholdScore, error) {
	s, err := tune.Evaluate(k, pairs)
	return s, tuneError(err)
}

// BestThreshold returns the score of the threshold that meets the goal
// among scores from EvaluateThresholds. Errors wrap ErrInvalidOptions,
// also when no threshold meets the goal, when no pair is labelled a
// duplicate, and for a least precision when none is labelled not.
func BestThreshold(scores []ThresholdScore, g ThresholdGoal) (ThresholdScore, error) {
	s, err := tune.Best(scores, g)
	return s, tuneError(err)
}

// SameCounts returns the first and the last index of the run of scores
// (from EvaluateThresholds, highest threshold first) around scores[i]
// that count the labelled pairs as scores[i] does.
func SameCounts(scores []ThresholdScore, i int) (first, last int) {
	return tune.SameCounts(scores, i)
}

// tuneError turns an error of package tune into one wrapping
// ErrInvalidOptions, keeping its detail.
func tuneError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, tune.ErrInvalid) {
		return fmt.Errorf("%w: %s", ErrInvalidOptions, strings.TrimPrefix(err.Error(), tune.ErrInvalid.Error()+": "))
	}
	return err
}

// Fingerprint returns the fingerprint of the text read from r under the
// database's parameters, storing nothing: what Add would store, for
// comparisons outside the database (labelled pairs of files, for one).
// It reads r until ctx is done (checking it every 64 KiB) or Close begins,
// and then fails with ctx's error or one wrapping ErrClosed.
func (d *DB) Fingerprint(ctx context.Context, r io.Reader, o TextOptions) (_ []uint64, err error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	ctx, leave, err := d.enterLong(ctx)
	if err != nil {
		return nil, err
	}
	defer leave(&err)
	d.tmplMu.RLock() // not in the middle of a template change
	defer d.tmplMu.RUnlock()
	res, _, err := d.build(withContext(ctx, r), nil, o, "")
	if cerr := ctx.Err(); cerr != nil { // it ended during the read
		return nil, fmt.Errorf("fpdb: fingerprint: %w", cerr)
	}
	if err != nil {
		return nil, fmt.Errorf("fpdb: fingerprint: %w", err)
	}
	return res.FP, nil
}

// QueryEstimate is the planner's choice for a threshold at the database's
// present size.
type QueryEstimate struct {
	// Plan is what Query would run (PlanAuto's choice).
	Plan Plan
	// Cost is the planner's estimate of one query's time, from a cost
	// model fitted on one machine (bench/): a rough figure; measure with
	// Query for a real one.
	Cost time.Duration
}

// EstimateQuery returns the plan and the estimated cost of a query at
// threshold on the database as it is now.
func (d *DB) EstimateQuery(ctx context.Context, threshold float64) (QueryEstimate, error) {
	if err := d.live(); err != nil {
		return QueryEstimate{}, err
	}
	if err := validThreshold(threshold); err != nil {
		return QueryEstimate{}, fmt.Errorf("fpdb: estimate: %w", err)
	}
	if err := d.enter(ctx); err != nil {
		return QueryEstimate{}, err
	}
	defer d.leave()
	p, ns := d.ix.Estimate(index.Radius(d.params.K, threshold))
	return QueryEstimate{Plan: p, Cost: time.Duration(ns)}, nil
}
