package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/client"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/spf13/cobra"
)

// clustersOptions are the flags of "fpdb clusters".
type clustersOptions struct {
	*globalOptions
	clusterFlags
	json bool
}

// clusterFlags are the flags that say how clusters are made, shared by
// "fpdb clusters" and "fpdb report".
type clusterFlags struct {
	threshold float64
	keep      string
	centers   bool
	maxSize   int
}

// register declares the flags on cmd (--threshold required).
func (c *clusterFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Float64Var(&c.threshold, "threshold", 0, "minimum resemblance `R`, in (0, 1] (required)")
	_ = cmd.MarkFlagRequired("threshold")
	f.StringVar(&c.keep, "keep", "", "choose the document to keep in each cluster: `oldest`, newest, first, longest or shortest")
	f.BoolVar(&c.centers, "centers", false, "clusters around centers, every member within --threshold of its center (no chaining)")
	f.IntVar(&c.maxSize, "max-size", 0, "with --centers, at most `N` members per cluster (0: no limit)")
}

// options checks the flags and returns the options of db.Clusters.
func (c *clusterFlags) options() (db.ClusterOptions, error) {
	if err := checkThreshold(c.threshold); err != nil {
		return db.ClusterOptions{}, err
	}
	keep, ok := apiconv.Keep(c.keep)
	if !ok {
		return db.ClusterOptions{}, usageErrorf("invalid --keep %q: want %s", c.keep, strings.Join(apiconv.KeepNames, ", "))
	}
	switch {
	case c.maxSize < 0 || c.maxSize == 1:
		return db.ClusterOptions{}, usageErrorf("invalid --max-size %d: want 0 (no limit) or at least 2", c.maxSize)
	case c.maxSize > 0 && !c.centers:
		return db.ClusterOptions{}, usageErrorf("--max-size needs --centers (a chain of near duplicates cannot be cut)")
	}
	mode := db.ClusterComponents
	if c.centers {
		mode = db.ClusterCenters
	}
	return db.ClusterOptions{PairsOptions: db.PairsOptions{Threshold: c.threshold}, Keep: keep, Mode: mode, MaxSize: c.maxSize}, nil
}

func newClustersCommand(g *globalOptions) *cobra.Command {
	o := &clustersOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "clusters --threshold R [--centers [--max-size N]] [--keep oldest|newest|first|longest|shortest] [--json]",
		Short: "Group stored near duplicates into clusters",
		Long: `Clusters finds every pair of stored documents with estimated resemblance at
least --threshold (as "fpdb pairs" does) and prints the connected components of
the graph those pairs form: the clusters of near duplicates, largest first,
each with its members in the order they were stored. Documents without any
near duplicate are in no cluster.

Near duplication is not transitive: A may resemble B and B resemble C while A
and C are far apart. A cluster is therefore a chain of near duplicates, not a
group whose members all resemble each other; with a low threshold one cluster
can link many different documents. The pair count shows how dense a cluster
is (a cluster of n documents that all resemble each other has n(n−1)/2 pairs).

--centers makes clusters that do not chain (star clustering): documents are
taken in --keep order (storing order without --keep); one that is in no
cluster yet becomes a center and takes its near duplicates that are in no
cluster yet, nearest first, up to --max-size members (center included).
Every member is then within --threshold of its center, which is the document
kept. A document none of whose near duplicates is left is in no cluster.

--keep chooses the one document of each cluster to keep, and lists the others
to drop (the crawler's "store only one copy"); ties go to the document stored
first (newest: last):
  oldest    the document added first (earliest time added)
  newest    the document added last
  first     the document whose id sorts first
  longest   the document with the most words
  shortest  the document with the fewest words

Each cluster's cohesion is the least similarity of a member to its center
(the kept document, else the first stored): below --threshold, the cluster
chains. The output is the same whatever the number of cores.

Output:

  cluster 1: 3 documents, 3 pairs, cohesion 0.914
    ID ...            (or, with --keep or --centers: "keep ID" then "drop ID" lines)

With --json, one object per cluster:

  {"cluster": 1, "size": 3, "pairs": 3, "ids": [...], "keep": "ID", "drop": [...],
   "center": "ID", "cohesion": 0.914}

("keep" and "drop" only with --keep or --centers: without them no document
is chosen; "center" is then the first stored.)`,
		Example: `  fpdb clusters --threshold 0.9
  fpdb clusters --threshold 0.9 --keep oldest --json | jq -r '.drop[] | @json' | fpdb delete -
  fpdb clusters --threshold 0.7 --centers --keep longest --max-size 50`,
		Args: noArgs("clusters"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.clusterFlags.register(cmd)
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object per cluster")
	return cmd
}

func (o *clustersOptions) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	copts, err := o.options()
	if err != nil {
		return err
	}
	if o.remote() {
		return o.runRemote(ctx, stdout, stderr)
	}
	d, err := o.openDB(openReadOnly)
	if err != nil {
		return failure(err)
	}
	open := true
	defer func() {
		if open {
			closeDB(d, &err)
		}
	}()
	// Release the database once the run holds its snapshot.
	release := func() { open = false; closeDB(d, &err) }

	var prog *progress
	if isTerminal(stderr) {
		prog = newProgress(stderr, time.Now)
	}
	copts.Detached = release
	copts.Progress = func(done, _ int) { prog.update(done) }
	cs, st, err := d.Clusters(ctx, copts)
	prog.clear()
	if err != nil {
		if ctx.Err() != nil {
			return failure(fmt.Errorf("clusters: interrupted"))
		}
		return failure(newOpError("clusters", err, "clusters", "pairs"))
	}
	enc := newJSONEncoder(stdout)
	for i, c := range cs {
		if err := o.print(stdout, enc, i+1, c); err != nil {
			return failure(err)
		}
	}
	if prog != nil {
		fmt.Fprintf(stderr, "%s from %s among %s in %v\n", plural(len(cs), "cluster"), plural(st.Pairs, "pair"), nDocs(st.Docs), st.Elapsed.Round(time.Millisecond))
	}
	return nil
}

// print prints c, the n-th cluster (from 1), on stdout (enc, with --json,
// encodes on stdout).
func (o *clustersOptions) print(stdout io.Writer, enc *json.Encoder, n int, c db.Cluster) error {
	if o.json {
		return enc.Encode(apiconv.Cluster(n, c))
	}
	fmt.Fprintf(stdout, "cluster %d: %s, %s, cohesion %.3f\n", n, nDocs(len(c.IDs)), plural(c.Pairs, "pair"), c.Cohesion)
	if c.Keep == "" {
		for _, id := range c.IDs {
			fmt.Fprintf(stdout, "  %s\n", tsvField(id))
		}
		return nil
	}
	fmt.Fprintf(stdout, "  keep %s\n", tsvField(c.Keep))
	for _, id := range c.Drop {
		if _, err := fmt.Fprintf(stdout, "  drop %s\n", tsvField(id)); err != nil {
			return err
		}
	}
	return nil
}

// runRemote prints the clusters the server streams.
func (o *clustersOptions) runRemote(ctx context.Context, stdout, stderr io.Writer) error {
	c, err := o.client()
	if err != nil {
		return failure(err)
	}
	start := time.Now()
	enc := newJSONEncoder(stdout)
	n := 0
	var werr error
	err = c.Clusters(ctx, client.ClustersOptions{Threshold: o.threshold, Keep: o.keep, Centers: o.centers, MaxSize: o.maxSize},
		func(cl api.Cluster) error {
			n++
			werr = o.print(stdout, enc, cl.Cluster, clusterOf(cl))
			return werr
		})
	switch {
	case err != nil && ctx.Err() != nil:
		return failure(fmt.Errorf("clusters: interrupted"))
	case err != nil && werr != nil:
		return failure(werr)
	case err != nil:
		return failure(newOpError("clusters", fromServer(err), "clusters", "pairs"))
	}
	if isTerminal(stderr) {
		fmt.Fprintf(stderr, "%s in %v (from %s)\n", plural(n, "cluster"), time.Since(start).Round(time.Millisecond), c.URL())
	}
	return nil
}
