package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/spf13/cobra"
)

// queryOptions are the flags and argument of "fpdb query".
type queryOptions struct {
	*globalOptions
	threshold float64
	limit     int
	json      bool
	plan      string
	tau       int
	recall    float64
	explain   bool
	path      string
}

// jsonExplain is the JSON form of a query's execution statistics.
type jsonExplain struct {
	Plan       string  `json:"plan"`
	Radius     int     `json:"radius"`
	MinHits    int     `json:"min_hits"`
	Probes     int     `json:"probes"`
	Postings   int     `json:"postings"`
	Candidates int     `json:"candidates"`
	Verified   int     `json:"verified"`
	Reads      int     `json:"reads"`
	Recall     float64 `json:"recall"`
	ElapsedNS  int64   `json:"elapsed_ns"`
}

func newQueryCommand(g *globalOptions) *cobra.Command {
	o := &queryOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "query [flags] PATH|-",
		Short: "List the stored near duplicates of a document",
		Long: `Query fingerprints the document in PATH (or standard input for "-") and lists
the stored documents whose estimated resemblance to it is at least
--threshold, closest first, without storing anything. The database must exist.

Output: one line per match, "ID  similarity 0.906  hamming 24  exact" ("exact"
when the normalized texts are identical); nothing when there is no match.
With --json, one JSON object per line:

  {"query": "PATH", "id": "ID", "similarity": 0.906, "hamming": 24, "exact": true}

--explain prints how the query ran (plan, Hamming radius, minimum group hits,
probes, postings read, candidates, fingerprints verified, elapsed time) on
standard error; with --json it is printed last on standard output as

  {"explain": {"plan": "probe tau=2", "radius": 76, "min_hits": 7, "probes": 2239,
   "postings": 90, "candidates": 3, "verified": 3, "elapsed_ns": 81234}}

Every exact plan returns the same matches; --plan and --tau only change the
cost. --plan probe looks up, in every index group, all the values within --tau
bits of the query's group value; --tau alone implies --plan probe. A probe
radius too small to find every match at the threshold is an error.

--plan approx (never the default) also lets the planner use probe plans that
may miss matches, when their expected recall for a match at the threshold is
at least --recall (default 0.999); --explain states the plan's expected
recall.

Exit status: 0 on success, with or without matches; 2 on error.`,
		Example: `  fpdb query draft.txt
  fpdb query --threshold 0.9 --limit 5 --json draft.txt
  fpdb query --plan probe --tau 2 --explain draft.txt
  fpdb query --plan approx --recall 0.999 --explain draft.txt
  cat draft.txt | fpdb query -`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("query: want exactly one PATH or -, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.path = args[0]
			return o.run(cmd.Context(), cmd.Flags().Changed("tau"), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.threshold, "threshold", defaultThreshold, "minimum resemblance `R` of a match, in (0, 1]")
	f.IntVar(&o.limit, "limit", 0, "print at most `N` matches, the closest (0: all)")
	f.BoolVar(&o.json, "json", false, "print JSON lines")
	f.StringVar(&o.plan, "plan", "auto", "query `PLAN`: auto, scan, probe or approx")
	f.Float64Var(&o.recall, "recall", 0.999, "least expected recall `R` of --plan approx, in (0, 1]")
	f.IntVar(&o.tau, "tau", 0, "per-group probe radius `T` of --plan probe (implies it)")
	f.BoolVar(&o.explain, "explain", false, "print how the query was executed")
	return cmd
}

// queryPlan validates --plan and --tau and returns the plan they ask for.
func (o *queryOptions) queryPlan(tauSet bool) (db.Plan, error) {
	var p db.Plan
	switch o.plan {
	case "auto":
		p.Kind = db.PlanAuto
	case "scan":
		p.Kind = db.PlanScan
	case "probe":
		p.Kind = db.PlanProbe
	case "approx":
		p.Kind = db.PlanApprox
		if !(o.recall > 0 && o.recall <= 1) {
			return p, usageErrorf("invalid --recall %v: must be in (0, 1]", o.recall)
		}
		p.MinRecall = o.recall
	default:
		return p, usageErrorf("invalid --plan %q: must be auto, scan, probe or approx", o.plan)
	}
	switch {
	case tauSet && o.plan == "auto":
		p.Kind = db.PlanProbe // --tau alone asks for a probe plan
	case tauSet && p.Kind != db.PlanProbe:
		return p, usageErrorf("--tau %d needs --plan probe", o.tau)
	case !tauSet && p.Kind == db.PlanProbe:
		return p, usageErrorf("--plan probe needs --tau T")
	}
	if o.tau < 0 {
		return p, usageErrorf("invalid --tau %d: must not be negative", o.tau)
	}
	p.Tau = o.tau
	return p, nil
}

func (o *queryOptions) run(ctx context.Context, tauSet bool, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	if err := checkThreshold(o.threshold); err != nil {
		return err
	}
	if o.limit < 0 {
		return usageErrorf("invalid --limit %d: must not be negative", o.limit)
	}
	plan, err := o.queryPlan(tauSet)
	if err != nil {
		return err
	}

	r := stdin
	if o.path != "-" {
		f, err := os.Open(o.path)
		if err != nil {
			return failure(fmt.Errorf("query %s: %w", o.path, pathError(err, o.path)))
		}
		defer f.Close()
		r = f
	}

	d, err := o.openDB(openReadOnly)
	if err != nil {
		return failure(err)
	}
	defer closeDB(d, &err)

	res, err := d.QueryReader(ctx, r, db.QueryOptions{Threshold: o.threshold, Limit: o.limit, Plan: plan})
	if err != nil {
		return failure(newOpError("query "+o.path, err, "query"))
	}

	if o.json {
		enc := newJSONEncoder(stdout)
		for _, m := range res.Matches {
			if err := enc.Encode(newJSONMatch(o.path, m)); err != nil {
				return failure(err)
			}
		}
		if o.explain {
			s := res.Stats
			err := enc.Encode(map[string]jsonExplain{"explain": {
				Plan: s.Plan.String(), Radius: s.Radius, MinHits: s.MinHits, Probes: s.Probes,
				Postings: s.Postings, Candidates: s.Candidates, Verified: s.Verified,
				Reads: s.Reads, Recall: s.Recall, ElapsedNS: int64(s.Elapsed),
			}})
			if err != nil {
				return failure(err)
			}
		}
		return nil
	}

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, m := range res.Matches {
		fmt.Fprintf(tw, "%s\n", formatMatch(m))
	}
	if err := tw.Flush(); err != nil {
		return failure(err)
	}
	if o.explain {
		s := res.Stats
		tw := tabwriter.NewWriter(stderr, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "plan\t%s\n", s.Plan)
		fmt.Fprintf(tw, "radius\t%d\n", s.Radius)
		fmt.Fprintf(tw, "min hits\t%d\n", s.MinHits)
		fmt.Fprintf(tw, "probes\t%d\n", s.Probes)
		fmt.Fprintf(tw, "postings\t%d\n", s.Postings)
		fmt.Fprintf(tw, "candidates\t%d\n", s.Candidates)
		fmt.Fprintf(tw, "verified\t%d\n", s.Verified)
		fmt.Fprintf(tw, "pebble reads\t%d\n", s.Reads)
		fmt.Fprintf(tw, "expected recall\t%.4f\n", s.Recall)
		fmt.Fprintf(tw, "elapsed\t%s\n", s.Elapsed.Round(time.Microsecond))
		tw.Flush()
	}
	return nil
}
