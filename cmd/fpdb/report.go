package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/minhash"
	"github.com/fpdb/fpdb/internal/report"
)

// reportOptions are the flags of "fpdb report".
type reportOptions struct {
	*globalOptions
	clusterFlags
	out         string
	maxClusters int
	maxPairs    int
	maxPassages int
	minWords    int
}

func newReportCommand(g *globalOptions) *cobra.Command {
	o := &reportOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "report --threshold R [--out FILE|-] [--centers [--max-size N]] [--keep K] [--max-clusters N] [--max-pairs N] [--passages N] [--min-words N]",
		Short: "Write a self-contained HTML report of the near duplicates",
		Long: `Report writes one self-contained HTML page (styles and pictures inline, no
network access, no other file: it opens from a USB stick on any computer,
and reads without JavaScript) about the near duplicates stored in the
database at --threshold:

  - the database, the threshold, the date, the counts and the fingerprint
    parameters (k, shingle width);
  - a table of the clusters (as "fpdb clusters" makes them, with the same
    --centers, --max-size and --keep): size, pairs, center (or the document
    to keep) and cohesion;
  - per cluster, a picture: a heat map of the estimated resemblance of every
    two members (at most ` + fmt.Sprint(report.MatrixMembers) + ` members, the center first; larger clusters say
    so), and the cluster's pairs, most similar first, each expanding to the
    estimated resemblance, the exact resemblance (Jaccard), how much of each
    document the other contains and their shared passages side by side, as
    "fpdb compare" finds them.

A database created with --no-texts keeps no texts: its pairs show the
estimated resemblance and containment only, and the page says so.

--max-clusters, --max-pairs (per cluster) and --passages (per pair) bound
the page; 0 means no limit. The page says what it leaves out. The page is
written to --out, or to standard output with --out - (the default, refused
on a terminal); --out must not lie in the database's directory.

Exit status: 0 on success (also when nothing reaches the threshold: the
page says so); 2 on error (bad flags, a database problem, a file that cannot
be written).`,
		Example: `  fpdb report --threshold 0.8 --out near-duplicates.html
  fpdb report --threshold 0.7 --centers --keep oldest --out report.html
  fpdb report --threshold 0.9 --max-clusters 0 --max-pairs 0 > everything.html`,
		Args: noArgs("report"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.clusterFlags.register(cmd)
	f := cmd.Flags()
	f.StringVarP(&o.out, "out", "o", "-", "write the page to `FILE` (- for standard output)")
	f.IntVar(&o.maxClusters, "max-clusters", 50, "show the largest `N` clusters (0: all)")
	f.IntVar(&o.maxPairs, "max-pairs", 20, "show the `N` most similar pairs of each cluster (0: all)")
	f.IntVar(&o.maxPassages, "passages", 5, "show the longest `N` shared passages of each pair (0: all)")
	f.IntVar(&o.minWords, "min-words", 8, "report passages of at least `N` words")
	return cmd
}

func (o *reportOptions) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	copts, err := o.options()
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"max-clusters", o.maxClusters}, {"max-pairs", o.maxPairs}, {"passages", o.maxPassages}, {"min-words", o.minWords}} {
		if f.v < 0 {
			return usageErrorf("invalid --%s %d: must not be negative", f.name, f.v)
		}
	}
	switch {
	case o.out == "":
		return usageErrorf("--out is empty: give a file, or - for standard output")
	case o.out == "-" && isTerminal(stdout):
		return usageErrorf("report: standard output is a terminal: give --out FILE, or redirect it (> report.html)")
	}
	start := time.Now()
	d, err := o.openDB(openReadOnly)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)
	if o.out != "-" && d.InsideDir(o.out) {
		return usageErrorf("--out %s is inside the database %s: the page would be written among its files; give --out a file outside it", o.out, d.Dir())
	}

	var prog *progress
	if isTerminal(stderr) {
		prog = newProgress(stderr, time.Now)
	}
	copts.Progress = func(done, _ int) { prog.update(done) }
	r, err := o.build(ctx, d, copts)
	prog.clear()
	if err != nil {
		if ctx.Err() != nil {
			return failure(fmt.Errorf("report: interrupted"))
		}
		return failure(newOpError("report", err, "report", "clusters", "pairs", "compare"))
	}
	var page bytes.Buffer
	if err := report.WriteReport(&page, *r); err != nil {
		return failure(fmt.Errorf("report: %w", err))
	}
	if err := o.write(stdout, page.Bytes()); err != nil {
		return failure(err)
	}
	if prog != nil {
		fmt.Fprintf(stderr, "report: %s of %s in %v\n", plural(len(r.Clusters), "cluster"), plural(len(r.Clusters)+r.OmittedClusters, "cluster"), time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// write writes the page to --out.
func (o *reportOptions) write(stdout io.Writer, page []byte) error {
	return writeOutput(stdout, o.out, "report: --out", func(w io.Writer) error {
		_, err := w.Write(page)
		return err
	})
}

// mode says in words how clusters are made.
func (o *reportOptions) mode() string {
	s := "Connected components of the pairs: chains of near duplicates"
	if o.centers {
		s = "Clusters around centers (--centers): every member within the threshold of its center"
		if o.maxSize > 0 {
			s += fmt.Sprintf(", at most %d members", o.maxSize)
		}
	}
	if o.keep != "" {
		s += "; the document to keep: " + o.keep
	}
	return s
}

// build finds the clusters, their pairs and the evidence of each pair shown.
func (o *reportOptions) build(ctx context.Context, d *db.DB, copts db.ClusterOptions) (*report.Report, error) {
	p := d.Params()
	r := &report.Report{
		Database: d.Dir(), Threshold: o.threshold, Mode: o.mode(), Generated: time.Now(),
		K: p.K, ShingleWidth: p.ShingleWidth, Documents: d.Len(),
		MaxClusters: o.maxClusters, MaxPairs: o.maxPairs, MaxPassages: o.maxPassages, MinWords: max(o.minWords, 1),
	}
	cs, _, err := d.Clusters(ctx, copts)
	if err != nil {
		return nil, err
	}
	shown := cs
	if o.maxClusters > 0 && len(cs) > o.maxClusters {
		shown = cs[:o.maxClusters]
		for _, c := range cs[o.maxClusters:] {
			r.OmittedClusters++
			r.OmittedDocuments += len(c.IDs)
			r.OmittedPairs += c.Pairs
		}
	}
	pairs, err := o.clusterPairs(ctx, d, copts.PairsOptions, shown)
	if err != nil {
		return nil, err
	}
	docs := map[string]*db.Doc{}
	get := func(id string) (*db.Doc, error) {
		if doc, ok := docs[id]; ok {
			return doc, nil
		}
		doc, err := d.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		docs[id] = doc
		return doc, nil
	}
	for i, c := range shown {
		rc := report.Cluster{Center: c.Center, Kept: c.Keep != "", Cohesion: c.Cohesion, TotalPairs: c.Pairs}
		// The center first, then the others in storing order.
		rc.Members = append([]string{c.Center}, slices.DeleteFunc(slices.Clone(c.IDs), func(id string) bool { return id == c.Center })...)
		if rc.Matrix, err = matrix(rc.Members[:min(len(rc.Members), report.MatrixMembers)], p.K, get); err != nil {
			return nil, err
		}
		for _, pr := range pairs[i] {
			cp, err := o.pairEvidence(ctx, d, pr, get)
			if err != nil {
				return nil, err
			}
			rc.Pairs = append(rc.Pairs, cp)
		}
		r.Clusters = append(r.Clusters, rc)
		docs = map[string]*db.Doc{} // hold the records of one cluster at a time
	}
	return r, nil
}

// clusterPairs returns the pairs inside each of the clusters cs, at most
// --max-pairs of each, the most similar.
func (o *reportOptions) clusterPairs(ctx context.Context, d *db.DB, po db.PairsOptions, cs []db.Cluster) ([][]db.Pair, error) {
	of := map[string]int{}
	for i, c := range cs {
		for _, id := range c.IDs {
			of[id] = i
		}
	}
	out := make([][]db.Pair, len(cs))
	counts := make([]int, len(cs))
	order := func(a, b db.Pair) int {
		if c := cmp.Compare(b.Similarity, a.Similarity); c != 0 {
			return c
		}
		if c := cmp.Compare(a.A, b.A); c != 0 {
			return c
		}
		return cmp.Compare(a.B, b.B)
	}
	// Keep the most similar: sort and cut whenever twice the limit is held.
	trim := func(i int) {
		slices.SortFunc(out[i], order)
		if o.maxPairs > 0 && len(out[i]) > o.maxPairs {
			out[i] = slices.Clip(out[i][:o.maxPairs])
		}
	}
	_, err := d.Pairs(ctx, po, func(p db.Pair) error {
		ca, okA := of[p.A]
		cb, okB := of[p.B]
		if !okA || !okB || ca != cb {
			return nil
		}
		counts[ca]++
		out[ca] = append(out[ca], p)
		if o.maxPairs > 0 && len(out[ca]) >= 2*o.maxPairs {
			trim(ca)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, c := range cs {
		if counts[i] != c.Pairs {
			return nil, fmt.Errorf("cluster of %s: found %d pairs inside, clusters counted %d", c.Center, counts[i], c.Pairs)
		}
		trim(i)
	}
	return out, nil
}

// similarity is the estimated resemblance of two fingerprints (at least 0).
func similarity(k int, a, b []uint64) float64 {
	return max(minhash.Similarity(k, bitvec.Hamming(a, b)), 0)
}

// matrix returns the estimated resemblance of every two of ids.
func matrix(ids []string, k int, get func(string) (*db.Doc, error)) ([][]float64, error) {
	fps := make([][]uint64, len(ids))
	for i, id := range ids {
		doc, err := get(id)
		if err != nil {
			return nil, err
		}
		fps[i] = doc.Fingerprint
	}
	m := make([][]float64, len(ids))
	for i := range m {
		m[i] = make([]float64, len(ids))
		for j := range m[i] {
			m[i][j] = similarity(k, fps[i], fps[j])
		}
	}
	return m, nil
}

// pairEvidence compares the stored texts of a pair; without them, it
// estimates the containments from the shingle counts and says why.
func (o *reportOptions) pairEvidence(ctx context.Context, d *db.DB, p db.Pair, get func(string) (*db.Doc, error)) (report.ClusterPair, error) {
	cp := report.ClusterPair{A: p.A, B: p.B, Similarity: p.Similarity, Hamming: p.Hamming, Exact: p.Exact}
	c, err := d.Compare(ctx, db.CompareInput{ID: p.A}, db.CompareInput{ID: p.B}, passageOptions(o.minWords, 0, 0))
	switch {
	case err == nil:
		cp.Evidence, err = report.NewEvidence(c.TextA, c.TextB, &c.Figures, o.maxPassages)
		return cp, err
	case errors.Is(err, db.ErrNoText):
		cp.NoText = "the database keeps no texts (it was created with --no-texts)"
	case errors.Is(err, db.ErrTextTooLarge):
		cp.NoText = fmt.Sprintf("a stored text is longer than the %d MiB a comparison reads", db.MaxCompareText>>20)
	default:
		return cp, err
	}
	a, err := get(p.A)
	if err != nil {
		return cp, err
	}
	b, err := get(p.B)
	if err != nil {
		return cp, err
	}
	if a.Shingles > 0 && b.Shingles > 0 {
		cp.HasEstimate = true
		cp.EstContainedA = minhash.EstimateContainment(d.Params().K, p.Similarity, a.Shingles, b.Shingles)
		cp.EstContainedB = minhash.EstimateContainment(d.Params().K, p.Similarity, b.Shingles, a.Shingles)
	}
	return cp, nil
}
