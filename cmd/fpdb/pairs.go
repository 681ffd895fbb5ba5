package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/spf13/cobra"
)

// pairsOptions are the flags of "fpdb pairs".
type pairsOptions struct {
	*globalOptions
	threshold float64
	json      bool
}

func newPairsCommand(g *globalOptions) *cobra.Command {
	o := &pairsOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "pairs --threshold R [--json]",
		Short: "List every pair of stored near duplicates",
		Long: `Pairs prints every pair of stored documents whose estimated resemblance is at
least --threshold, exactly once, each verified by the exact Hamming distance of
the fingerprints: the same set a comparison of all pairs gives. A is the
document stored first. Pairs are printed as they are found (in no particular
order), one per line:

  A<TAB>B<TAB>0.914<TAB>22[<TAB>exact]

(similarity, then Hamming distance: awk -F'\t' '$3 >= 0.95' filters them; an id
holding a control character such as a tab or a newline is written Go-quoted, and "fpdb delete -" reads it
back).

With --json, one object per line:

  {"a": "A", "b": "B", "similarity": 0.914, "hamming": 22, "exact": false}

"exact" reports identical normalized texts. The run uses both the index and
all cores; high thresholds are fast (R = 0.9 compares the documents that share
a group's value; R = 0.7 compares neighbouring values too); when the planner
estimates it cheaper (small collections, low thresholds) all pairs are
compared, in time quadratic in the number of documents. The database is released
as soon as the run has copied the fingerprints and ids it needs, so another
fpdb process (an add, a delete) may write meanwhile; when standard error is a
terminal, a progress line and a summary are shown.`,
		Example: `  fpdb pairs --threshold 0.9
  fpdb pairs --threshold 0.8 --json > pairs.jsonl
  fpdb pairs --threshold 0.9 | awk -F'\t' '$3 >= 0.95 { print $2 }' | fpdb delete -`,
		Args: noArgs("pairs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().Float64Var(&o.threshold, "threshold", 0, "minimum resemblance `R`, in (0, 1] (required)")
	_ = cmd.MarkFlagRequired("threshold")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON lines")
	return cmd
}

func (o *pairsOptions) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	if err := checkThreshold(o.threshold); err != nil {
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

	bw := bufio.NewWriter(stdout)
	enc := newJSONEncoder(bw)
	var prog *progress
	if isTerminal(stderr) {
		prog = newProgress(stderr, time.Now)
	}
	ttyOut := prog != nil && isTerminal(stdout)
	write := o.writer(bw, enc)
	var werr error
	st, err := d.Pairs(ctx, db.PairsOptions{
		Threshold: o.threshold,
		Detached:  release,
		Progress: func(done, total int) {
			if ttyOut {
				_ = bw.Flush()
			}
			prog.update(done)
		},
	}, func(p db.Pair) error {
		if ttyOut {
			prog.hide()
			defer prog.show()
		}
		werr = write(p)
		if ttyOut {
			_ = bw.Flush()
		}
		return werr
	})

	prog.clear()
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if err != nil {
		if ctx.Err() != nil {
			return failure(fmt.Errorf("pairs: interrupted after %s", plural(st.Pairs, "pair")))
		}
		return failure(newOpError("pairs", err, "pairs"))
	}
	if prog != nil {
		fmt.Fprintf(stderr, "%s among %s in %v (%s)\n", plural(st.Pairs, "pair"), nDocs(st.Docs), st.Elapsed.Round(time.Millisecond), st.Plan)
	}
	return nil
}

// writer returns the function that prints a pair on bw (enc, with --json,
// encodes on bw).
func (o *pairsOptions) writer(bw *bufio.Writer, enc *json.Encoder) func(db.Pair) error {
	return func(p db.Pair) error {
		if o.json {
			return enc.Encode(apiconv.Pair(p))
		}
		line := fmt.Sprintf("%s\t%s\t%.3f\t%d", tsvField(p.A), tsvField(p.B), p.Similarity, p.Hamming)
		if p.Exact {
			line += "\texact"
		}
		_, err := fmt.Fprintln(bw, line)
		return err
	}
}

// runRemote prints the pairs the server streams, as they come.
func (o *pairsOptions) runRemote(ctx context.Context, stdout, stderr io.Writer) error {
	c, err := o.client()
	if err != nil {
		return failure(err)
	}
	start := time.Now()
	bw := bufio.NewWriter(stdout)
	write := o.writer(bw, newJSONEncoder(bw))
	n := 0
	var werr error
	err = c.Pairs(ctx, o.threshold, func(p api.Pair) error {
		n++
		werr = write(pairOf(p))
		return werr
	})
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if err != nil {
		if ctx.Err() != nil {
			return failure(fmt.Errorf("pairs: interrupted after %s", plural(n, "pair")))
		}
		if werr != nil {
			return failure(newOpError("pairs", werr))
		}
		return failure(newOpError("pairs", fromServer(err), "pairs"))
	}
	if isTerminal(stderr) {
		fmt.Fprintf(stderr, "%s in %v (from %s)\n", plural(n, "pair"), time.Since(start).Round(time.Millisecond), c.URL())
	}
	return nil
}
