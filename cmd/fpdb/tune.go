package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/plot"
)

// tuneOptions are the flags of "fpdb tune".
type tuneOptions struct {
	*globalOptions
	threshold    float64
	k            int
	catch, with  float64
	pairs        string
	minPrecision float64
	minRecall    float64
	plot         string
	json         bool
}

// tuneCaught are the probabilities whose least caught resemblance "fpdb
// tune" prints.
var tuneCaught = []float64{0.5, 0.9, 0.99, 0.999}

// tuneSample is how many stored documents "fpdb tune --catch" queries to
// measure the query time.
const tuneSample = 20

func newTuneCommand(g *globalOptions) *cobra.Command {
	o := &tuneOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "tune [--threshold R | --catch J [--with P] | --pairs FILE] [--k K] [--plot FILE.svg] [--json]",
		Short: "Show what a threshold catches and misses, and recommend one",
		Long: `Tune helps choose the threshold R of add and query.

A pair of documents of true resemblance J (the Jaccard similarity of their
sets of word shingles) is reported at threshold R with a probability that
rises from near 0 below R to near 1 above it: the detection curve. For K-bit
fingerprints it is exact: the fingerprints differ in Binomial(K, (1-J)/2)
bits, and the pair is reported when at most R's radius (the largest h with
1 - 2h/K >= R) differ. K is the database's, or --k K without a database
(512, the default, when neither --db nor $FPDB_DB names one and there is
none in ./fpdb-data). $FPDB_SERVER does not concern tune --k.

  fpdb tune --threshold R
      prints the resemblance caught with probability 50 %, 90 %, 99 % and
      99.9 %, the probability of reporting a pair of resemblance R - 0.1 and
      R - 0.2, and the curve as a text plot (default R 0.7).

  fpdb tune --catch J [--with P]
      recommends the highest threshold that reports pairs of resemblance
      >= J with probability >= P (default 0.99), and says what it costs:
      false reports at J - 0.1 and J - 0.2 and, on a database, the query
      plan with its estimated cost and the query time measured on up to 20
      stored documents.

  fpdb tune --pairs FILE
      scores every threshold on pairs a person labelled: precision, recall
      and F1 with 95 % (Wilson) intervals, and recommends a threshold of
      best F1, or one of the most recall with --min-precision P, or the
      highest with --min-recall R. When a run of thresholds counts the
      pairs alike (from the weakest duplicate reported down to the
      strongest non-duplicate below it), the first two goals recommend
      the one two standard deviations of the estimate below the top of
      the run (or the run's lowest), not the top: the top sits on that
      duplicate's estimate, where a duplicate of the same resemblance is
      missed about half the time. FILE (- for standard input) holds one pair per line,
      either tab-separated "A<TAB>B<TAB>LABEL" or JSON {"a": A, "b": B,
      "label": LABEL}; A and B are stored ids, or else paths of files that
      are fingerprinted (not stored); LABEL is dup (or duplicate, yes,
      true, 1) or not (or no, false, 0). A first line "a<TAB>b<TAB>label"
      is a header. The database must exist. Tune refuses when no pair is
      labelled dup (recall cannot be measured), and --min-precision when
      none is labelled not (precision is then 1 at every threshold).

To label a sample quickly: take pairs from a low threshold, which shows the
whole range of resemblances, and mark each after reading both documents:

  fpdb pairs --threshold 0.5 | shuf -n 200 | cut -f1,2 > sample.tsv
  # append <TAB>dup or <TAB>not to each line, then:
  fpdb tune --pairs sample.tsv

A hundred labelled pairs give intervals about ±0.1 wide; the intervals
printed say how far to trust a recommendation.

--plot FILE writes the curve (or the precision and recall against the
threshold) as a self-contained SVG picture. --json prints one JSON object
instead of text.

The curve is conservative for documents of at least about K distinct
shingles (more true duplicates are caught, fewer false ones reported, than
it says). Shorter documents spread wider than the curve, so false reports
just below R and misses just above it can be somewhat more frequent than
it says: at K = 512 and R = 0.7, for documents of 100 shingles, about 1.2
times near R and 1.6 times at R - 0.1 in random sets, and 1.1 to 1.6 times
below R on short real documents. --pairs with labelled pairs measures the
real rates.

Exit status: 0 on success; 2 on error.`,
		Example: `  fpdb tune --threshold 0.8
  fpdb tune --k 256 --threshold 0.7 --plot curve.svg
  fpdb tune --catch 0.8 --with 0.99
  fpdb tune --pairs labelled.tsv --min-precision 0.95`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usageErrorf("tune: takes no arguments, got %d", len(args))
			}
			return o.validate(cmd)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.threshold, "threshold", defaultThreshold, "threshold `R` whose detection curve to show, in (0, 1]")
	f.IntVar(&o.k, "k", 0, "fingerprint length in bits `K` to tune for without a database (default: the database's; 512 when none is named and ./fpdb-data holds none)")
	f.Float64Var(&o.catch, "catch", 0, "recommend a threshold that reports pairs of resemblance `J` or more")
	f.Float64Var(&o.with, "with", 0.99, "with --catch: least probability `P` of reporting such a pair, in (0, 1)")
	f.StringVar(&o.pairs, "pairs", "", "score thresholds on labelled pairs read from `FILE` (- for standard input)")
	f.Float64Var(&o.minPrecision, "min-precision", 0, "with --pairs: recommend the threshold of the most recall among those of precision `P` or more (the highest of equals)")
	f.Float64Var(&o.minRecall, "min-recall", 0, "with --pairs: recommend the highest threshold of recall `R` or more")
	f.StringVar(&o.plot, "plot", "", "write the curve as an SVG picture to `FILE`")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	return cmd
}

// validate refuses flag combinations that would be ignored and values out
// of range.
func (o *tuneOptions) validate(cmd *cobra.Command) error {
	f := cmd.Flags()
	modes := 0
	for _, m := range []string{"threshold", "catch", "pairs"} {
		if f.Changed(m) {
			modes++
		}
	}
	bad := func(flag string, v float64, reason string) error {
		return usageError(&flagValueError{flag: flag, value: strconv.FormatFloat(v, 'g', -1, 64), reason: reason})
	}
	switch {
	case modes > 1:
		return usageErrorf("tune: give only one of --threshold, --catch and --pairs")
	case f.Changed("with") && !f.Changed("catch"):
		return usageErrorf("tune: --with goes with --catch")
	case (f.Changed("min-precision") || f.Changed("min-recall")) && o.pairs == "":
		return usageErrorf("tune: --min-precision and --min-recall go with --pairs")
	case f.Changed("min-precision") && f.Changed("min-recall"):
		return usageErrorf("tune: give either --min-precision or --min-recall, not both")
	case f.Changed("k") && o.pairs != "":
		return usageErrorf("tune: --pairs fingerprints with the database's parameters; --k does not apply")
	case f.Changed("k") && (o.k <= 0 || o.k%64 != 0 || o.k > db.MaxK):
		return usageError(&flagValueError{flag: "k", value: strconv.Itoa(o.k), reason: fmt.Sprintf("must be a multiple of 64 in [64, %d]", db.MaxK)})
	case f.Changed("catch") && !(o.catch > 0 && o.catch <= 1):
		return bad("catch", o.catch, "must be in (0, 1]")
	case !(o.with > 0 && o.with < 1):
		return bad("with", o.with, "must be in (0, 1)")
	case f.Changed("min-precision") && !(o.minPrecision > 0 && o.minPrecision <= 1):
		return bad("min-precision", o.minPrecision, "must be in (0, 1]")
	case f.Changed("min-recall") && !(o.minRecall > 0 && o.minRecall <= 1):
		return bad("min-recall", o.minRecall, "must be in (0, 1]")
	case f.Changed("pairs") && o.pairs == "":
		return usageErrorf("tune: --pairs needs a file (- for standard input)")
	}
	return checkThreshold(o.threshold)
}

func (o *tuneOptions) run(ctx context.Context, stdin io.Reader, stdout io.Writer) (err error) {
	var d *db.DB
	k := o.k
	if k == 0 {
		if d, err = o.openDB(openReadOnly); err != nil {
			if errors.Is(err, db.ErrNotExist) && o.pairs == "" {
				if !o.dbGiven() {
					// No database named, none in the default place: the
					// curve of the default K (the output says which K).
					return o.runK(ctx, nil, db.DefaultK, stdin, stdout)
				}
				err = fmt.Errorf("%w (give --k K to tune without a database)", err)
			}
			return failure(err)
		}
		defer closeDB(d, &err)
		k = d.Params().K
	}
	return o.runK(ctx, d, k, stdin, stdout)
}

// runK tunes for K-bit fingerprints, on d when it is not nil.
func (o *tuneOptions) runK(ctx context.Context, d *db.DB, k int, stdin io.Reader, stdout io.Writer) error {
	switch {
	case o.pairs != "":
		return o.runPairs(ctx, d, stdin, stdout)
	case o.catch != 0:
		return o.runCatch(ctx, d, k, stdout)
	}
	c, err := db.DetectionCurve(k, o.threshold)
	if err != nil {
		return failure(err)
	}
	rep := curveReportAt(c, c.Threshold)
	if err := o.writePlot(curveChart(c, nil)); err != nil {
		return failure(err)
	}
	if o.json {
		return encodeJSON(stdout, rep)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "threshold %s at K = %d bits: a pair is reported when at most %d of its %d bits differ\n\n", fmtR(c.Threshold), k, c.Radius, k)
	rep.writeText(&b)
	b.WriteString("\n")
	if err := curveChart(c, nil).Text(&b, 60, 12); err != nil {
		return failure(err)
	}
	_, err = stdout.Write(b.Bytes())
	return err
}

// jsonProbability is a resemblance and the probability of reporting a
// pair of it.
type jsonProbability struct {
	Resemblance float64 `json:"resemblance"`
	Probability float64 `json:"probability"`
}

// jsonCurve is the JSON form of a detection curve.
type jsonCurve struct {
	K         int     `json:"k"`
	Threshold float64 `json:"threshold"`
	Radius    int     `json:"radius"`
	// Caught: the least resemblance reported with each probability.
	Caught []jsonProbability `json:"caught"`
	// Below: the probability of reporting pairs 0.1 and 0.2 below what
	// was asked (the threshold, or --catch).
	Below []jsonProbability `json:"below"`
	Curve []jsonProbability `json:"curve"`
}

// curveReportAt returns the figures of c with false reports under ref.
func curveReportAt(c db.Curve, ref float64) jsonCurve {
	rep := jsonCurve{K: c.K, Threshold: c.Threshold, Radius: c.Radius}
	for _, p := range tuneCaught {
		rep.Caught = append(rep.Caught, jsonProbability{Resemblance: c.Caught(p), Probability: p})
	}
	for _, d := range []float64{0.1, 0.2} {
		if r := round3(ref - d); r >= 0 {
			rep.Below = append(rep.Below, jsonProbability{Resemblance: r, Probability: c.Probability(r)})
		}
	}
	xs, ys := c.Points(100)
	for i := range xs {
		rep.Curve = append(rep.Curve, jsonProbability{Resemblance: xs[i], Probability: ys[i]})
	}
	return rep
}

// writeText writes the caught and false-report figures.
func (rep jsonCurve) writeText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "  reported with probability\tif the true resemblance is at least\n")
	for _, c := range rep.Caught {
		fmt.Fprintf(tw, "  %s\t%.3f\n", fmtPercent(c.Probability), c.Resemblance)
	}
	tw.Flush()
	for _, b := range rep.Below {
		fmt.Fprintf(w, "  a pair of resemblance %s is reported with probability %s\n", fmtR(b.Resemblance), fmtProb(b.Probability))
	}
}

// curveChart returns the chart of c, with a mark at the threshold and at
// each of extra (resemblance, label).
func curveChart(c db.Curve, extra []plot.Mark) *plot.Chart {
	xs, ys := c.Points(200)
	return &plot.Chart{
		Title:  fmt.Sprintf("Detection curve: threshold %s, K = %d bits", fmtR(c.Threshold), c.K),
		XLabel: "true resemblance (Jaccard of the shingle sets)",
		YLabel: "probability of being reported",
		XMin:   0, XMax: 1, YMin: 0, YMax: 1,
		Series: []plot.Series{{Name: "reported", X: xs, Y: ys}},
		Marks:  append([]plot.Mark{{X: c.Threshold, Label: "threshold " + fmtR(c.Threshold)}}, extra...),
	}
}

// writePlot writes ch as SVG to --plot, if given; the file is written
// whole or not at all.
func (o *tuneOptions) writePlot(ch *plot.Chart) error {
	if o.plot == "" {
		return nil
	}
	var b bytes.Buffer
	if err := ch.SVG(&b); err != nil {
		return err
	}
	// A temporary file of its own (never FILE.tmp, which may be the
	// user's), renamed over FILE; a directory is refused, named.
	return writeOutput(nil, o.plot, "--plot", func(w io.Writer) error {
		_, err := w.Write(b.Bytes())
		return err
	})
}

// jsonCatch is the JSON form of "fpdb tune --catch".
type jsonCatch struct {
	Catch       float64 `json:"catch"`
	With        float64 `json:"with"`
	Probability float64 `json:"probability"`
	jsonCurve
	// Query is the query plan and time at the recommended threshold, on a
	// database.
	Query *jsonQueryCost `json:"query,omitempty"`
}

// jsonQueryCost is the plan of a query and its estimated and measured time.
type jsonQueryCost struct {
	Docs           int     `json:"docs"`
	Plan           string  `json:"plan"`
	EstimatedMS    float64 `json:"estimated_ms"`
	MeasuredP50MS  float64 `json:"measured_p50_ms,omitempty"`
	MeasuredMaxMS  float64 `json:"measured_max_ms,omitempty"`
	MeasuredOnDocs int     `json:"measured_on_docs,omitempty"`
}

func (o *tuneOptions) runCatch(ctx context.Context, d *db.DB, k int, stdout io.Writer) error {
	rec, err := db.Recommend(k, o.catch, o.with)
	if err != nil {
		return failure(err)
	}
	rep := jsonCatch{Catch: o.catch, With: o.with, Probability: rec.Probability, jsonCurve: curveReportAt(rec.Curve, o.catch)}
	if d != nil {
		if rep.Query, err = queryCost(ctx, d, rec.Threshold); err != nil {
			return failure(err)
		}
	}
	if err := o.writePlot(curveChart(rec.Curve, []plot.Mark{{X: o.catch, Label: "catch " + fmtR(o.catch)}})); err != nil {
		return failure(err)
	}
	if o.json {
		return encodeJSON(stdout, rep)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "To report pairs of true resemblance %s or more with probability %s or more at K = %d bits:\n\n", fmtR(o.catch), fmtR(o.with), k)
	fmt.Fprintf(&b, "  --threshold %s   (at most %d of %d bits differ)\n\n", fmtR(rec.Threshold), rec.Radius, k)
	fmt.Fprintf(&b, "  a pair of resemblance %s is reported with probability %s\n", fmtR(o.catch), fmtProb(rec.Probability))
	for _, x := range rep.Below {
		fmt.Fprintf(&b, "  a pair of resemblance %s is reported with probability %s (a false report if only %s counts)\n", fmtR(x.Resemblance), fmtProb(x.Probability), fmtR(o.catch))
	}
	if q := rep.Query; q != nil {
		fmt.Fprintf(&b, "\n  query at this threshold on this database (%s): plan %s, estimated %s", plural(q.Docs, "document"), q.Plan, fmtMS(q.EstimatedMS))
		if q.MeasuredOnDocs > 0 {
			fmt.Fprintf(&b, "; measured p50 %s, max %s over %s", fmtMS(q.MeasuredP50MS), fmtMS(q.MeasuredMaxMS), plural(q.MeasuredOnDocs, "stored document"))
		}
		b.WriteString("\n")
	}
	_, err = stdout.Write(b.Bytes())
	return err
}

// queryCost returns the plan of a query at threshold on d, its estimated
// cost, and the time of queries by up to tuneSample stored documents
// spread over the database.
func queryCost(ctx context.Context, d *db.DB, threshold float64) (*jsonQueryCost, error) {
	est, err := d.EstimateQuery(ctx, threshold)
	if err != nil {
		return nil, err
	}
	n := d.Len()
	q := &jsonQueryCost{Docs: n, Plan: est.Plan.String(), EstimatedMS: float64(est.Cost) / 1e6}
	if n == 0 {
		return q, nil
	}
	step := max(1, n/tuneSample)
	var fps [][]uint64
	i := 0
	err = d.Docs(ctx, func(doc db.Doc) error {
		if i%step == 0 && len(fps) < tuneSample {
			fps = append(fps, doc.Fingerprint)
		}
		i++
		return nil
	})
	if err != nil {
		return nil, err
	}
	var times []time.Duration
	for _, fp := range fps {
		start := time.Now()
		if _, err := d.QueryFingerprint(ctx, fp, db.QueryOptions{Threshold: threshold}); err != nil {
			return nil, err
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	q.MeasuredOnDocs = len(times)
	q.MeasuredP50MS = float64(times[len(times)/2]) / 1e6
	q.MeasuredMaxMS = float64(times[len(times)-1]) / 1e6
	return q, nil
}

// jsonPairsReport is the JSON form of "fpdb tune --pairs".
type jsonPairsReport struct {
	Pairs      int       `json:"pairs"`
	Duplicates int       `json:"duplicates"`
	Goal       string    `json:"goal"`
	Best       jsonScore `json:"best"`
	// SameCounts is the run of thresholds, highest first, that count
	// the pairs as Best does (Best is the run's top unless the goal's
	// margin moved it down).
	SameCounts [2]float64  `json:"same_counts"`
	Scores     []jsonScore `json:"scores"`
}

// jsonScore is one threshold's score on labelled pairs.
type jsonScore struct {
	Threshold   float64    `json:"threshold"`
	Radius      int        `json:"radius"`
	TP          int        `json:"tp"`
	FP          int        `json:"fp"`
	FN          int        `json:"fn"`
	TN          int        `json:"tn"`
	Precision   float64    `json:"precision"`
	PrecisionCI [2]float64 `json:"precision_ci"`
	Recall      float64    `json:"recall"`
	RecallCI    [2]float64 `json:"recall_ci"`
	F1          float64    `json:"f1"`
}

func toJSONScore(s db.ThresholdScore) jsonScore {
	return jsonScore{Threshold: s.Threshold, Radius: s.Radius, TP: s.TP, FP: s.FP, FN: s.FN, TN: s.TN,
		Precision: s.Precision, PrecisionCI: [2]float64{s.PrecisionCI.Lo, s.PrecisionCI.Hi},
		Recall: s.Recall, RecallCI: [2]float64{s.RecallCI.Lo, s.RecallCI.Hi}, F1: s.F1}
}

func (o *tuneOptions) runPairs(ctx context.Context, d *db.DB, stdin io.Reader, stdout io.Writer) error {
	name := o.pairs
	var r io.Reader = stdin
	if name == "-" {
		name = "standard input"
	} else {
		f, err := os.Open(o.pairs)
		if err != nil {
			return failure(fmt.Errorf("tune: %w", err))
		}
		defer f.Close()
		r = f
	}
	labelled, err := readLabelled(ctx, d, r, name)
	if err != nil {
		return failure(err)
	}
	k := d.Params().K
	scores, err := db.EvaluateThresholds(k, labelled)
	if err != nil {
		return failure(err)
	}
	goal, goalText := db.ThresholdGoal{}, "best F1"
	switch {
	case o.minPrecision > 0:
		goal.MinPrecision, goalText = o.minPrecision, "the threshold of most recall at precision ≥ "+fmtR(o.minPrecision)
	case o.minRecall > 0:
		goal.MinRecall, goalText = o.minRecall, "the highest threshold of recall ≥ "+fmtR(o.minRecall)
	}
	best, err := db.BestThreshold(scores, goal)
	if err != nil {
		return failure(fmt.Errorf("tune: %s: %w", name, err))
	}
	dups := best.TP + best.FN
	bi := slices.IndexFunc(scores, func(s db.ThresholdScore) bool { return s.Radius == best.Radius })
	top, last := db.SameCounts(scores, bi)
	rep := jsonPairsReport{Pairs: len(labelled), Duplicates: dups, Goal: goalText, Best: toJSONScore(best),
		SameCounts: [2]float64{scores[top].Threshold, scores[last].Threshold}}
	for _, s := range scores {
		rep.Scores = append(rep.Scores, toJSONScore(s))
	}
	if err := o.writePlot(scoresChart(scores, best)); err != nil {
		return failure(err)
	}
	if o.json {
		return encodeJSON(stdout, rep)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s labelled in %s (%d duplicates, %d not), K = %d bits\n\n", plural(len(labelled), "pair"), name, dups, len(labelled)-dups, k)
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "  threshold\tprecision (95 %%)\trecall (95 %%)\tF1\tTP\tFP\tFN\tTN\n")
	shown := map[int]bool{}
	for _, s := range scores {
		// Every 0.05 step, and the recommended one.
		step := math.Round(s.Threshold*20) / 20
		show := s.Radius == best.Radius
		if !shown[int(step*20)] && s.Threshold <= step+1e-9 && step >= 0.3 {
			shown[int(step*20)] = true
			show = true
		}
		if !show {
			continue
		}
		mark := ""
		if s.Radius == best.Radius {
			mark = "  ← " + goalText
		}
		fmt.Fprintf(tw, "  %s\t%.3f [%.3f, %.3f]\t%.3f [%.3f, %.3f]\t%.3f\t%d\t%d\t%d\t%d%s\n", fmtR(s.Threshold),
			s.Precision, s.PrecisionCI.Lo, s.PrecisionCI.Hi, s.Recall, s.RecallCI.Lo, s.RecallCI.Hi, s.F1, s.TP, s.FP, s.FN, s.TN, mark)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nRecommended: --threshold %s (%s): precision %.3f [%.3f, %.3f], recall %.3f [%.3f, %.3f], F1 %.3f\n",
		fmtR(best.Threshold), goalText, best.Precision, best.PrecisionCI.Lo, best.PrecisionCI.Hi, best.Recall, best.RecallCI.Lo, best.RecallCI.Hi, best.F1)
	if top != bi {
		why := fmt.Sprintf("%s is two standard deviations of the estimate below %s, so that a duplicate of resemblance %s is still reported about 98 times in 100", fmtR(best.Threshold), fmtR(scores[top].Threshold), fmtR(scores[top].Threshold))
		if bi == last {
			why = fmt.Sprintf("%s, the lowest of them, is the farthest from %s, where a duplicate of resemblance %s is missed about half the time", fmtR(best.Threshold), fmtR(scores[top].Threshold), fmtR(scores[top].Threshold))
		}
		fmt.Fprintf(&b, "The same counts hold from --threshold %s down to %s: %s.\n", fmtR(scores[top].Threshold), fmtR(scores[last].Threshold), why)
	}
	if dups < 30 || len(labelled)-dups < 30 {
		fmt.Fprintf(&b, "Few labelled pairs on one side: the intervals are wide; label more to narrow them.\n")
	}
	b.WriteString("\n")
	if err := scoresChart(scores, best).Text(&b, 60, 12); err != nil {
		return failure(err)
	}
	_, err = stdout.Write(b.Bytes())
	return err
}

// scoresChart plots precision and recall against the threshold.
func scoresChart(scores []db.ThresholdScore, best db.ThresholdScore) *plot.Chart {
	var xs, ps, rs []float64
	for i := len(scores) - 1; i >= 0; i-- {
		xs = append(xs, scores[i].Threshold)
		ps = append(ps, scores[i].Precision)
		rs = append(rs, scores[i].Recall)
	}
	return &plot.Chart{
		Title:  "Precision and recall on labelled pairs",
		XLabel: "threshold",
		YLabel: "share",
		XMin:   0, XMax: 1, YMin: 0, YMax: 1,
		Series: []plot.Series{{Name: "recall", X: xs, Y: rs}, {Name: "precision", X: xs, Y: ps, Dashed: true}},
		Marks:  []plot.Mark{{X: best.Threshold, Label: "recommended " + fmtR(best.Threshold)}},
	}
}

// readLabelled reads labelled pairs (see the command's help) and returns
// each with the Hamming distance of the two fingerprints. name names the
// input in errors.
func readLabelled(ctx context.Context, d *db.DB, r io.Reader, name string) ([]db.LabelledPair, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	fps := map[string][]uint64{}
	fingerprint := func(line int, ref string) ([]uint64, error) {
		if fp, ok := fps[ref]; ok {
			return fp, nil
		}
		doc, err := d.Get(ctx, ref)
		switch {
		case err == nil:
			fps[ref] = doc.Fingerprint
			return doc.Fingerprint, nil
		case !errors.Is(err, db.ErrNotFound):
			return nil, err
		}
		f, err := os.Open(ref)
		if err != nil {
			return nil, fmt.Errorf("tune: %s:%d: %q is neither a stored id nor a readable file (%v)", name, line, ref, errorText(err))
		}
		defer f.Close()
		fp, err := d.Fingerprint(ctx, f, db.TextOptions{Format: db.FormatOfName(ref)})
		if err != nil {
			return nil, fmt.Errorf("tune: %s:%d: %s: %s", name, line, ref, errorText(err))
		}
		fps[ref] = fp
		return fp, nil
	}
	var out []db.LabelledPair
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		a, b, label, err := parseLabelledLine(text)
		if err != nil {
			if line == 1 && strings.EqualFold(strings.TrimSpace(label), "label") {
				continue // a header
			}
			return nil, fmt.Errorf("tune: %s:%d: %w", name, line, err)
		}
		fa, err := fingerprint(line, a)
		if err != nil {
			return nil, err
		}
		fb, err := fingerprint(line, b)
		if err != nil {
			return nil, err
		}
		if len(fa) != len(fb) {
			return nil, fmt.Errorf("tune: %s:%d: fingerprints of %q and %q differ in length", name, line, a, b)
		}
		out = append(out, db.LabelledPair{Hamming: bitvec.Hamming(fa, fb), Dup: label == "dup"})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tune: %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("tune: %s: no labelled pairs", name)
	}
	return out, nil
}

// parseLabelledLine parses "A<TAB>B<TAB>LABEL" or {"a","b","label"} and
// returns the label normalized to "dup" or "not"; on an unknown label the
// error comes with the label as written.
func parseLabelledLine(text string) (a, b, label string, err error) {
	if strings.HasPrefix(strings.TrimSpace(text), "{") {
		var v struct {
			A     *string `json:"a"`
			B     *string `json:"b"`
			Label any     `json:"label"`
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return "", "", "", fmt.Errorf("not a JSON object {\"a\", \"b\", \"label\"}: %v", err)
		}
		if v.A == nil || v.B == nil || v.Label == nil {
			return "", "", "", errors.New(`a JSON pair needs "a", "b" and "label"`)
		}
		a, b, label = *v.A, *v.B, fmt.Sprint(v.Label)
	} else {
		f := strings.Split(text, "\t")
		if len(f) != 3 {
			return "", "", "", fmt.Errorf("want A<TAB>B<TAB>LABEL, got %d tab-separated fields", len(f))
		}
		if a, err = unquoteTSV(f[0]); err == nil {
			b, err = unquoteTSV(f[1])
		}
		if err != nil {
			return "", "", f[2], err
		}
		label = f[2]
	}
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "dup", "duplicate", "yes", "true", "1", "y":
		return a, b, "dup", nil
	case "not", "no", "false", "0", "n", "different":
		return a, b, "not", nil
	}
	return a, b, label, fmt.Errorf("label %q is neither dup nor not", label)
}

// unquoteTSV reads a field as fpdb writes it in TSV: Go-quoted when it
// starts with a double quote.
func unquoteTSV(s string) (string, error) {
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		if err != nil {
			return "", fmt.Errorf("bad quoted field %s", s)
		}
		return u, nil
	}
	return s, nil
}

// encodeJSON writes v as one JSON line.
func encodeJSON(w io.Writer, v any) error {
	if err := newJSONEncoder(w).Encode(v); err != nil {
		return failure(err)
	}
	return nil
}

// fmtR formats a threshold or resemblance without trailing zeros.
func fmtR(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

// round3 rounds to three decimals.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// fmtPercent formats a probability as a percentage: "99.9 %".
func fmtPercent(p float64) string { return strconv.FormatFloat(p*100, 'f', -1, 64) + " %" }

// fmtProb formats a probability: fixed when readable, else in e notation.
func fmtProb(p float64) string {
	if p == 0 || p >= 0.0001 {
		return strconv.FormatFloat(p, 'f', 4, 64)
	}
	return strconv.FormatFloat(p, 'e', 1, 64)
}

// fmtMS formats milliseconds.
func fmtMS(ms float64) string {
	if ms < 1 {
		return strconv.FormatFloat(ms*1000, 'f', 0, 64) + " µs"
	}
	return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
}
