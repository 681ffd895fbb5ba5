package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/spf13/cobra"
)

// queryOptions are the flags and argument of "fpdb query".
type queryOptions struct {
	*globalOptions
	threshold float64
	contained float64
	limit     int
	json      bool
	plan      planFlags
	explain   bool
	paths     []string

	containSet, thresholdSet bool // --containment, --threshold were given

	exclude, include []string
	follow           bool

	text     textFlags
	records  recordFlags // --id-field, --text-field
	progress bool        // --progress: show progress even when stderr is not a terminal
}

// jsonExplain is the JSON form of a query's execution statistics, as the
// server's API has it.
type jsonExplain = api.Explain

func newQueryCommand(g *globalOptions) *cobra.Command {
	o := &queryOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "query [flags] PATH...|-",
		Short: "List the stored near duplicates of documents",
		Long: `Query fingerprints each document given and lists the stored documents whose
estimated resemblance to it is at least --threshold, closest first, without
storing anything. A PATH is a file, a directory (its files are queried,
walked as "fpdb add" walks them: recursively, in sorted order, skipping hidden
files, databases and, unless --follow, symbolic links; --exclude and
--include select files) or "-" for standard input. The database must exist;
it is opened once for all the inputs.

Datasets (JSON Lines, CSV, TSV or Parquet files by their extension, maybe
compressed, or directories of them alone, or any input with --format
jsonl|csv|tsv|parquet; as "fpdb add" reads them) are queried record by
record: the output is that of several inputs, the record's id (--id-field;
"" for its FILE:LINE) standing for INPUT, records in input order. A bad
record is reported as "fpdb: query FILE:LINE: ERROR", a file that cannot be
read to its end (or that does not exist) as "fpdb: query FILE: ERROR", and
the other records and files are still queried; a summary line on standard
error ends the run. Records are queried on every core; once a run has queried 256
records (or one per 2 000 stored documents, if more), the database's
posting lists are loaded into memory in the background, as "fpdb serve"
does at start, so that later queries read none from disk.

Output for a single file or -: one line per match,
"ID  similarity 0.906  hamming 24  contained 0.950  exact" ("contained": the
estimated share of the input found in the document, shown when the sizes
are known and the resemblance is above the estimate's noise, 4/√K; "exact"
when the normalized texts are identical); nothing when
there is no match.

Output for several PATHs or a directory: one tab-separated line per match,
grouped by input in the order the inputs were given (or walked), each
input's matches closest first; an input without a match prints nothing:

  INPUT<TAB>ID<TAB>0.906<TAB>24[<TAB>exact]

(the input as given or found, the match's id, the similarity, the Hamming
distance: awk -F'\t' '$3 >= 0.9 { print $1 }' | sort -u lists the inputs
with a close match; an input or id holding a control character such as a
tab or a newline is written Go-quoted, as in every line of text output).

With --json, one JSON object per match, whatever the number of inputs:

  {"query": "PATH", "id": "ID", "similarity": 0.906, "hamming": 24, "exact": true,
   "query_in_doc": 0.95, "doc_in_query": 0.91}

("query_in_doc": the estimated share of the input found in the document;
"doc_in_query": of the document found in the input; absent when a size is
unknown, for documents added as fingerprints, or the resemblance is below
4/√K, where the estimate is noise: 0.177 at K = 512).

--containment C lists the documents that contain at least C of the input
(query_in_doc ≥ C, estimated from the resemblance and the two texts' numbers
of distinct shingles: R(|Q| + |D|) / ((1 + R)|Q|)), whatever their
resemblance: half of a stored text scores about 0.5 resemblance but 1.0
containment. No containment is estimated below a resemblance of 4/√K (the
estimate's noise), so a document more than about √K/4 times the input's
length (5.7 at K = 512) is not found. The answer is exactly what a scan of
that estimate returns; the search runs at the resemblance the largest stored
document needs (at least 4/√K), so it costs as much as a query at that
threshold. --threshold applies as well only
when given. It works with --plan auto and scan.

--explain prints how each query ran (plan, Hamming radius, minimum group
hits, probes, postings read, candidates, fingerprints verified, elapsed time)
on standard error, after an "input PATH" line when there are several inputs;
with --json it is printed on standard output after the input's matches as

  {"explain": {"plan": "probe tau=2", "radius": 76, "min_hits": 7, "probes": 2239,
   "postings": 90, "candidates": 3, "verified": 3, "elapsed_ns": 81234}}

(with "query": "PATH" added when there are several inputs).

Every exact plan returns the same matches; --plan and --tau only change the
cost. --plan probe looks up, in every index group, all the values within --tau
bits of the query's group value; --tau alone implies --plan probe, and
--plan probe without --tau uses the smallest radius that finds every match
at the threshold. A probe radius too small for that is an error that names
the radii that are large enough.

--plan approx (never the default) also lets the planner use probe plans that
may miss matches, when their expected recall for a match at the threshold is
at least --recall (default 0.999); --explain states the plan's expected
recall. --recall without --plan approx is refused.

An input that cannot be queried (missing or unreadable, binary, not in the
encoding --encoding names, without any word) is reported on standard error as "fpdb: query PATH: ERROR"
and the other inputs are still queried.

Exit status (as grep's):
  0  at least one input has a match
  1  no input has a match
  2  an error: bad flags, a database problem (wins over 3)
  3  an input could not be read or fingerprinted (wins over 0 and 1)`,
		Example: `  fpdb query draft.txt
  fpdb query --threshold 0.9 --limit 5 --json draft.txt
  fpdb query --containment 0.8 new-proposal.txt
  fpdb query --plan probe --explain draft.txt
  fpdb query --plan approx --recall 0.999 --explain draft.txt
  fpdb query --threshold 0.9 incoming/ | awk -F'\t' '{ print $1 }' | sort -u
  fpdb query --threshold 0.8 --id-field url crawl.jsonl.zst
  cat draft.txt | fpdb query -
  if fpdb query --threshold 0.95 new.txt > /dev/null; then echo "seen before"; fi`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usageErrorf("query: no PATH given (use - for standard input)")
			case len(slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a != "-" })) > 1:
				return usageErrorf("query: - (standard input) given more than once")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.paths = args
			o.plan.changed(cmd)
			o.containSet = cmd.Flags().Changed("containment")
			o.thresholdSet = cmd.Flags().Changed("threshold")
			return o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.threshold, "threshold", defaultThreshold, "minimum resemblance `R` of a match, in (0, 1]")
	f.Float64Var(&o.contained, "containment", 0, "list the documents containing at least `C` of the input (estimated share of its shingles), in (0, 1]; with it --threshold applies only when given")
	f.IntVar(&o.limit, "limit", 0, "print at most `N` matches per input, the closest (0: all)")
	f.BoolVar(&o.json, "json", false, "print JSON lines")
	o.plan.register(f, "query")
	f.BoolVar(&o.explain, "explain", false, "print how the query was executed")
	f.StringArrayVar(&o.exclude, "exclude", nil, "in directories, leave out files whose name or path matches `GLOB` (repeatable)")
	f.StringArrayVar(&o.include, "include", nil, "in directories, query only files whose name or path matches `GLOB` (repeatable)")
	f.BoolVar(&o.follow, "follow", false, "follow symbolic links when walking directories")
	f.BoolVar(&o.progress, "progress", false, "datasets: show progress on standard error even when it is not a terminal")
	o.text.format.allowRecords = true
	o.text.register(f)
	o.records.registerFields(f)
	return cmd
}

// multi reports whether the query has several inputs: more than one PATH,
// or a directory. It chooses the output format, whatever the directories
// hold.
func (o *queryOptions) multi() bool {
	if len(o.paths) != 1 {
		return true
	}
	fi, err := os.Stat(o.paths[0])
	return o.paths[0] != "-" && err == nil && fi.IsDir()
}

// collect expands the PATH arguments into the inputs to query, with the
// directory walker of "fpdb add". Its note about skipped symbolic links is
// printed as query's.
func (o *queryOptions) collect(stdin io.Reader, stderr io.Writer) ([]addInput, error) {
	ao := &addOptions{globalOptions: o.globalOptions, paths: o.paths, exclude: o.exclude, include: o.include, follow: o.follow, forQuery: true}
	var note bytes.Buffer
	inputs, err := ao.collect(stdin, &note)
	if note.Len() > 0 {
		io.WriteString(stderr, strings.ReplaceAll(note.String(), "fpdb: add: ", "fpdb: query: "))
	}
	return inputs, err
}

// readErrors is a reader that remembers its last read error, to tell an
// input that could not be read from an error of the database.
type readErrors struct {
	r   io.Reader
	err error
}

func (r *readErrors) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// querier runs the query of one text: the database's (localQuerier) or a
// server's (remoteQuerier). It returns the matches and how the query ran.
type querier func(ctx context.Context, r io.Reader, qo db.QueryOptions) (*db.QueryResult, jsonExplain, error)

// localQuerier returns the querier of d.
func localQuerier(d *db.DB) querier {
	return func(ctx context.Context, r io.Reader, qo db.QueryOptions) (*db.QueryResult, jsonExplain, error) {
		res, err := d.QueryReader(ctx, r, qo)
		if err != nil {
			return nil, jsonExplain{}, err
		}
		s := res.Stats
		return res, jsonExplain{
			Plan: s.Plan.String(), Radius: s.Radius, MinHits: s.MinHits, Probes: s.Probes,
			Postings: s.Postings, Candidates: s.Candidates, Verified: s.Verified,
			Reads: s.Reads, Recall: s.Recall, ElapsedNS: int64(s.Elapsed),
		}, nil
	}
}

// queryInput runs the query of one input. An error of the input itself (it
// cannot be opened or read, it is not text, it has no words) is returned
// marked by asInputError.
func (o *queryOptions) queryInput(ctx context.Context, query querier, in addInput, stdin io.Reader, qo db.QueryOptions) (*db.QueryResult, jsonExplain, error) {
	if in.err != nil {
		return nil, jsonExplain{}, asInputError(pathError(in.err, in.path))
	}
	r := &readErrors{r: stdin}
	if in.path != "-" {
		f, err := os.Open(in.path)
		if err != nil {
			return nil, jsonExplain{}, asInputError(pathError(err, in.path))
		}
		defer f.Close()
		r.r = f
	}
	qo.TextOptions = o.text.options(in.path)
	res, ex, err := query(ctx, r, qo)
	switch {
	case err == nil:
		return res, ex, nil
	case r.err != nil:
		return nil, ex, asInputError(pathError(r.err, in.path))
	case isInputError(err, in.path):
		return nil, ex, asInputError(err)
	}
	return nil, ex, err
}

func (o *queryOptions) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	if err := checkThreshold(o.threshold); err != nil {
		return err
	}
	if o.containSet {
		if !(o.contained > 0 && o.contained <= 1) {
			return usageError(&flagValueError{flag: "containment", value: fmt.Sprint(o.contained), reason: "must be in (0, 1]"})
		}
		if o.plan.approxOrProbe() {
			return usageErrorf("--containment works with --plan auto or scan (its resemblance floor depends on each document's size)")
		}
	}
	if o.limit < 0 {
		return usageErrorf("invalid --limit %d: must not be negative", o.limit)
	}
	plan, err := o.plan.parse()
	if err != nil {
		return err
	}
	if recs, err := recordModeOf("query", o.paths, o.dbDir, &o.text, &o.records); err != nil {
		return err
	} else if recs {
		return o.runRecords(ctx, plan, stdin, stdout, stderr)
	}
	multi := o.multi()
	inputs, err := o.collect(stdin, stderr)
	if err != nil {
		return failure(err)
	}
	if len(inputs) == 0 {
		return failure(errors.New("query: no files to query"))
	}
	var failed inputFailures
	fail := func(in addInput, err error) error {
		failed.note(in.path, err)
		err = newOpError("query "+in.path, err, "query")
		if !multi {
			return err // printed by the caller, once
		}
		fmt.Fprintf(stderr, "fpdb: %s\n", errorText(err))
		return nil
	}
	if !slices.ContainsFunc(inputs, func(in addInput) bool { return in.err == nil }) {
		// Nothing readable: report, without opening the database.
		var last error
		for _, in := range inputs {
			last = fail(in, asInputError(pathError(in.err, in.path)))
		}
		return o.failed(failed, last, len(inputs))
	}

	query, d, qo, err := o.open(plan)
	if err != nil {
		return err
	}
	if d != nil {
		defer closeDB(d, &err)
	}
	enc := newJSONEncoder(stdout)
	matched := 0
	var last error
	for _, in := range inputs {
		res, ex, err := o.queryInput(ctx, query, in, stdin, qo)
		switch {
		case err != nil && ctx.Err() != nil:
			return failure(fmt.Errorf("query: interrupted"))
		case err != nil && isInputError(err, in.path):
			last = fail(in, err)
			continue
		case err != nil:
			return failure(newOpError("query "+in.path, err, "query"))
		}
		if len(res.Matches) > 0 {
			matched++
		}
		if err := o.print(in.path, res.Matches, ex, multi, enc, stdout, stderr); err != nil {
			return failure(err)
		}
	}
	if failed.count() > 0 {
		return o.failed(failed, last, len(inputs))
	}
	if matched == 0 {
		return &exitError{code: exitNoMatch}
	}
	return nil
}

// open returns the querier of the server (--server) or of the database,
// opened read-only (d, for the caller to close), and the options of the
// queries, their plan given an exact radius. Its errors are the run's.
func (o *queryOptions) open(plan db.Plan) (query querier, d *db.DB, qo db.QueryOptions, err error) {
	if o.remote() {
		c, err := o.client()
		if err != nil {
			return nil, nil, qo, failure(err)
		}
		query = remoteQuerier(c, o.explain) // a probe without --tau: the server's smallest exact radius
	} else {
		if d, err = o.openDB(openReadOnly); err != nil {
			return nil, nil, qo, failure(err)
		}
		if err := exactTau(d, &plan, o.threshold); err != nil {
			closeDB(d, &err)
			return nil, nil, qo, failure(newOpError("query", err, "exact tau"))
		}
		query = localQuerier(d)
	}
	qo = db.QueryOptions{Threshold: o.threshold, Limit: o.limit, Plan: plan}
	if o.containSet {
		qo.Containment = o.contained
		if !o.thresholdSet {
			qo.Threshold = 0
		}
	}
	return query, d, qo, nil
}

// failed returns the error of a query run in which inputs failed: the
// input's error with a single input, else a count (each input's error was
// printed as it happened).
func (o *queryOptions) failed(f inputFailures, last error, inputs int) error {
	if last != nil {
		return f.failure(last)
	}
	return f.failure(fmt.Errorf("query: %d of %d inputs failed", f.count(), inputs))
}

// print prints the matches of the query of input, and with --explain how
// it ran (ex).
func (o *queryOptions) print(input string, matches []db.Match, ex jsonExplain, multi bool, enc *json.Encoder, stdout, stderr io.Writer) error {
	if o.json {
		for _, m := range matches {
			if err := enc.Encode(newJSONMatch(input, m)); err != nil {
				return err
			}
		}
		if !o.explain {
			return nil
		}
		if multi {
			return enc.Encode(struct {
				Query   string      `json:"query"`
				Explain jsonExplain `json:"explain"`
			}{input, ex})
		}
		return enc.Encode(map[string]jsonExplain{"explain": ex})
	}

	if multi {
		for _, m := range matches {
			line := fmt.Sprintf("%s\t%s\t%.3f\t%d", tsvField(input), tsvField(m.ID), m.Similarity, m.Hamming)
			if m.Exact {
				line += "\texact"
			}
			if _, err := fmt.Fprintln(stdout, line); err != nil {
				return err
			}
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		for _, m := range matches {
			fmt.Fprintf(tw, "%s\n", formatMatch(m))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if o.explain {
		tw := tabwriter.NewWriter(stderr, 0, 0, 2, ' ', 0)
		if multi {
			fmt.Fprintf(tw, "input\t%s\n", tsvField(input))
		}
		fmt.Fprintf(tw, "plan\t%s\n", ex.Plan)
		fmt.Fprintf(tw, "radius\t%d\n", ex.Radius)
		fmt.Fprintf(tw, "min hits\t%d\n", ex.MinHits)
		fmt.Fprintf(tw, "probes\t%d\n", ex.Probes)
		fmt.Fprintf(tw, "postings\t%d\n", ex.Postings)
		fmt.Fprintf(tw, "candidates\t%d\n", ex.Candidates)
		fmt.Fprintf(tw, "verified\t%d\n", ex.Verified)
		fmt.Fprintf(tw, "pebble reads\t%d\n", ex.Reads)
		fmt.Fprintf(tw, "expected recall\t%.4f\n", ex.Recall)
		fmt.Fprintf(tw, "elapsed\t%s\n", time.Duration(ex.ElapsedNS).Round(time.Microsecond))
		tw.Flush()
	}
	return nil
}
