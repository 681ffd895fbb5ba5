package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/dedup"
	"github.com/fpdb/fpdb/internal/records"
)

// dedupOptions are the flags and arguments of "fpdb dedup".
type dedupOptions struct {
	*globalOptions
	inputs    []string
	threshold float64
	out       string
	removed   string
	clusters  string
	outFormat string
	keep      string
	format    string
	batch     int
	json      bool
	quiet     bool
	progress  bool
	keepWork  bool
	plan      planFlags
	pairsPlan db.Plan // parsed from plan by validate
	records   recordFlags
	creation  creationFlags
	dbGiven   bool // --db or $FPDB_DB
}

func newDedupCommand(g *globalOptions) *cobra.Command {
	o := &dedupOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "dedup INPUT... --out KEPT [--removed REMOVED] [--clusters CLUSTERS]",
		Short: "Deduplicate a dataset: JSON Lines, CSV, TSV or Parquet files in, kept and removed records out",
		Long: `Dedup reads the records of the INPUTs (files, directories of shards,
globs, "**" matching any number of directories; JSON Lines, CSV, TSV or Parquet, told by the extension or
--format, optionally gzip, zstd or bzip2 compressed, told by the
extension or the first bytes), one document per record
(--text-field, default "text"; --id-field, default "id"), groups the near
duplicates at --threshold, and writes every record once, in input order:
to KEPT, or to REMOVED (--removed) when it is a near duplicate of a kept
record. Each record gets four fields (columns) after its own:

  fpdb_cluster     its cluster: 1, 2, ... (largest first), 0 when it has no
                   near duplicate, -1 for a bad record
  fpdb_kept        the id of the record kept for its cluster (its own when
                   it is kept)
  fpdb_similarity  its estimated resemblance to that record (1 when kept)
  fpdb_error       why a bad record was not deduplicated ("" otherwise)

Clusters do not chain: every removed record is within the threshold of the
record kept for it (see "fpdb clusters --centers"). --keep chooses that
record: first (the first seen: input order; the default), oldest, longest,
shortest, max:FIELD or min:FIELD (the greatest or least value of a field:
a number, a numeric string or a date; a FIELD that no record has, or that holds no such value in any record, stops the run after the load, before anything is written). --clusters writes one JSON object per
cluster: {"cluster", "kept", "size", "cohesion", "members": [{"id",
"similarity"}]}.

The near-duplicate pairs are those a comparison of every pair of records
would find (every plan of --plan auto, scan and probe gives the same
output). --plan approx lets the planner choose a faster plan that finds a
pair at the threshold with probability at least --recall (default 0.999;
pairs closer than the threshold are found more surely); the summary then
states the plan and its expected recall.

KEPT and REMOVED share one format: --out-format, else KEPT's extension,
else the input's (a name of no known extension, such as kept.out, takes
it). A KEPT or REMOVED named as another format, or with a compression
fpdb does not write (.bz2, .xz, .lz4, ...; a Parquet file compressed as a
whole), is refused before anything is read. Outputs are compressed as
their extension says (.gz, .zst); CLUSTERS is uncompressed JSON Lines
(.jsonl, or a name of no known extension). Parquet outputs keep
the input's schema and add the four columns (Parquet shards of different
schemas are refused, the error naming the difference: a column only in
one, required in one and optional in the other, of another type; a JSON
Lines output takes them all). A CSV, TSV or Parquet output of JSON Lines
has a column for every member that any record has, in order of first
appearance (a record lacking one gets an empty cell, null in Parquet;
nested objects and arrays are written as their JSON text; more than
10000 different members stop the run during its load). Each output is
written under a temporary name (.fpdb-part.NAME, beside it) and renamed
when complete.

KEPT and REMOVED may both be directories of shards (paths ending with
"/"): each input then gets its own output file in each, in its own format
and schema (or --out-format), named as the input is within the deepest
directory that holds every input, as in
"fpdb dedup hf/data/ --out kept/ --removed removed/" (a .bz2 input's shard
is written .gz). A directory is replaced whole when the run ends; one that
holds an input, or files that are not this run's shards, is refused.

Bad records (a missing or non-string field, invalid UTF-8, a text too
long, a malformed line, an id given twice, a text without any word) are
reported on standard error with their position (FILE:LINE, or FILE: row
group G, row R), counted in the summary, and written to REMOVED with
fpdb_error set; --strict stops at the first instead. When the database
holds a document under a bad record's id (an archive with that id, or an
earlier run that stored a record now refused), that document is left out
of the clusters: no record names a bad one as kept.
TSV follows CSV quoting, as fpdb writes it: a field that begins with a
double quote runs to the next lone one ("" stands for one), over tabs and
line breaks (as Python's csv module and pandas write it), so a stray quote
at a field's start merges the rows up to the next lone quote into one.

A document shorter than the shingle width (--shingle-width words, 4 by
default) is one shingle of all its words: it is a near duplicate only of
documents with exactly the same words, so short records never gather into
one cluster.

The records are stored in a database first: --db DIR (or $FPDB_DB) keeps
it, to check new data against the deduplicated archive later (fpdb add
--threshold R --reject, or fpdb dedup NEW --db DIR, which removes every
record near a stored document, whatever --keep says: --keep chooses among
the new records; the summary and CLUSTERS count the clusters that hold a
new record). A rerun after documents were deleted from --db stores them
again. Without --db, a work database KEPT.fpdb is
made beside the output (it keeps no texts and no audit log) and removed
when dedup succeeds (--keep-work keeps it); it serves only the run that
made it: other inputs, an input changed since (its size or modification
time), other record options or other creation flags start a new one.
Either way dedup resumes: rerun the same command after an interruption,
and the records already stored are not fingerprinted again (--restart
reads everything anew, in a new work database). With --out - and no --db the work database is
temporary and a run cannot be resumed.

Progress is shown on standard error when it is a terminal (--progress:
always); a summary line ends every run, and --json also prints the summary
as one JSON object on standard output. At most one output (KEPT, REMOVED or
CLUSTERS) can be - (standard output), and none with --json; an output cannot
be an INPUT or another output, by its name or through a link.

Exit status: 0 when done (whatever was removed), 3 when bad records were
skipped or an input could not be read (missing, of no known format), 2 on
any other error (bad flags, an output that cannot be written, a database
problem).`,
		Example: `  fpdb dedup data/*.jsonl.zst --threshold 0.8 --out kept.jsonl.zst --removed removed.jsonl.zst
  fpdb dedup hf-dataset/data/ --format parquet --threshold 0.8 --out kept.parquet
  fpdb dedup crawl.csv --id-field url --keep max:fetched_at --out kept.csv --clusters clusters.jsonl
  fpdb --db archive.fpdb dedup new-crawl.jsonl --threshold 0.8 --out new-kept.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("dedup: no INPUT given")
			}
			if o.out == "" {
				return usageErrorf("dedup: --out KEPT is required (- for standard output)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.inputs = args
			o.dbGiven = g.dbGiven()
			o.plan.changed(cmd)
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.threshold, "threshold", 0.8, "least estimated resemblance `R` of a removed record to the kept one, in (0, 1]")
	f.StringVarP(&o.out, "out", "o", "", "write the kept records to `KEPT` (- for standard output)")
	f.StringVar(&o.removed, "removed", "", "write the removed (and bad) records to `REMOVED`")
	f.StringVar(&o.clusters, "clusters", "", "write the clusters, one JSON object per line, to `FILE`")
	f.StringVar(&o.outFormat, "out-format", "", "`FORMAT` of the outputs: jsonl, csv, tsv or parquet (default: by KEPT's extension, else the input's)")
	f.StringVar(&o.keep, "keep", "first", "which record of a cluster to keep: first, oldest, longest, shortest, max:`FIELD`, min:FIELD")
	f.StringVar(&o.format, "format", "", "`FORMAT` of the inputs: jsonl, csv, tsv or parquet (default: by extension)")
	f.IntVar(&o.batch, "batch", dedup.DefaultBatch, "records per atomic batch (`N`)")
	f.BoolVar(&o.json, "json", false, "print the summary as JSON on standard output")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print no progress (errors and the summary only)")
	f.BoolVar(&o.progress, "progress", false, "show progress on standard error even when it is not a terminal")
	f.BoolVar(&o.keepWork, "keep-work", false, "keep the work database (KEPT.fpdb) when no --db is given")
	o.plan.register(f, "all-pairs")
	o.records.register(f)
	o.creation.register(f)
	return cmd
}

// validate checks the flags.
func (o *dedupOptions) validate() error {
	if err := checkThreshold(o.threshold); err != nil {
		return err
	}
	if err := dedup.ParseKeep(o.keep); err != nil {
		return usageErrorf("dedup: --keep %s: want first, oldest, longest, shortest, max:FIELD or min:FIELD", o.keep)
	}
	for _, p := range o.inputs {
		if p == "-" {
			return usageErrorf("dedup: reads its inputs twice, so standard input cannot be an INPUT: save it to a file")
		}
	}
	if o.json {
		// The summary would be mixed into the records (or clusters)
		// written to standard output.
		for _, out := range []struct{ flag, path string }{{"out", o.out}, {"removed", o.removed}, {"clusters", o.clusters}} {
			if out.path == "-" {
				return usageErrorf("dedup: --json and --%s - both write to standard output: give --%s a file, or leave out --json (the summary line is on standard error)", out.flag, out.flag)
			}
		}
	}
	for name, v := range map[string]string{"format": o.format, "out-format": o.outFormat} {
		if v != "" && v != "auto" {
			if _, err := records.ParseFormat(v); err != nil {
				return usageErrorf("dedup: --%s %s: want jsonl, csv, tsv or parquet", name, v)
			}
		}
	}
	if o.batch < 1 || o.batch > 1_000_000 {
		return usageError(&flagValueError{flag: "batch", value: strconv.Itoa(o.batch), reason: "must be in [1, 1000000]"})
	}
	if o.remote() {
		return usageErrorf("dedup: works on a local database and cannot be used with --server")
	}
	if o.keepWork && o.dbGiven {
		return usageErrorf("dedup: --keep-work is for the work database made without --db; with --db the database is kept")
	}
	var err error
	if o.pairsPlan, err = o.plan.parse(); err != nil {
		return err
	}
	return o.creation.validate()
}

func (o *dedupOptions) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	if err := o.validate(); err != nil {
		return err
	}
	inputs, err := records.Expand(o.inputs)
	if err != nil {
		return failure(asInputError(fmt.Errorf("dedup: %w", err)))
	}
	if len(inputs) == 0 {
		return failure(fmt.Errorf("dedup: no dataset files in the INPUTs"))
	}
	rep := &addReport{stderr: stderr, verb: "dedup"}
	bar := newBytesProgress(stderr, o.progress, o.quiet)
	defer bar.clear()
	opts := dedup.Options{
		LoadOptions: dedup.LoadOptions{
			RecordOptions: o.records.options(o.format),
			Inputs:        inputs,
			Batch:         o.batch,
			Strict:        o.records.strict,
			Restart:       o.records.restart,
			Bad:           o.records.reportBad(rep, bar),
			Progress:      bar.update,
		},
		Threshold: o.threshold,
		Keep:      o.keep,
		Out:       o.out,
		Removed:   o.removed,
		Clusters:  o.clusters,
		OutFormat: o.outFormat,
		Stdout:    stdout,
		Plan:      o.pairsPlan,
	}
	// What Run would refuse, before a work database is made for it.
	if err := dedup.Check(opts); err != nil {
		return failure(newOpError("dedup", err, "dedup"))
	}
	// The database: --db, or a work database beside the output.
	work, temp := "", false
	if !o.dbGiven {
		if o.out == "-" {
			if work, err = os.MkdirTemp("", "fpdb-dedup-"); err != nil {
				return failure(err)
			}
			temp = true
			defer os.RemoveAll(work) // not resumable: nothing names it
		} else {
			// Beside the output (a directory of shards: beside it too).
			work = filepath.Clean(o.out) + ".fpdb"
		}
		o.dbDir = work
		// The work database is removed at the end: keeping texts and
		// an audit log would only cost time.
		o.creation.noTexts, o.creation.noLog = true, true
	}
	d, err := o.openDBWith(openBulk, &o.creation)
	var perr *db.ParamsError
	if work != "" && errors.As(err, &perr) {
		// A work database made with other creation flags (--k,
		// --shingle-width, ...) serves another run: a new one, as for
		// other record options (checkWork); a database dedup did not
		// make is the user's, and stays.
		if err := isWorkDB(ctx, work); err != nil {
			return failure(err)
		}
		if err := os.RemoveAll(work); err != nil {
			return failure(fmt.Errorf("dedup: remove the work database of another run: %w", err))
		}
		d, err = o.openDBWith(openBulk, &o.creation)
	}
	if err != nil {
		return failure(err)
	}
	closed := false
	defer func() {
		if !closed {
			// A run that fails having made the database and stored
			// nothing (--id-field naming no field) leaves none.
			closeMadeDB(d, &err, stderr)
		}
	}()
	if work != "" {
		// A work database left by an interrupted run is resumed only by
		// the same run: other inputs or record options start afresh, or
		// its documents would be clustered with the new ones.
		if d, err = o.checkWork(ctx, d, inputs); err != nil {
			closed = d == nil
			return failure(err)
		}
	}

	if err := exactTau(d, &o.pairsPlan, o.threshold); err != nil {
		return failure(newOpError("dedup", err, "exact tau"))
	}
	opts.Plan = o.pairsPlan // as exactTau set it for d
	sum, err := dedup.Run(ctx, d, opts)
	bar.clear()
	if err != nil {
		if ctx.Err() != nil && !temp {
			// Kept as it is, even with no record stored yet: the
			// message says so.
			closed = true
			var cerr error
			if closeDB(d, &cerr); cerr != nil {
				return cerr
			}
			return failure(fmt.Errorf("dedup: interrupted; run the same command again to resume (the records stored so far are kept in %s)", o.dbDir))
		}
		return failure(newOpError("dedup", err, "dedup"))
	}
	if work != "" && !o.keepWork {
		closed = true
		if err := d.CloseUnflushed(); err != nil {
			return failure(newOpError("dedup", err, "close"))
		}
		if err := os.RemoveAll(work); err != nil {
			return failure(fmt.Errorf("dedup: remove the work database: %w", err))
		}
	}
	if o.json {
		if err := newJSONEncoder(stdout).Encode(sum); err != nil {
			return failure(err)
		}
	}
	fmt.Fprintln(stderr, dedupSummaryLine(sum))
	if sum.Skipped > 0 {
		if rep.failures == (inputFailures{}) {
			// Every bad record was in the part an interrupted run
			// stored: reported then, counted in the summary now.
			return &exitError{code: exitInput}
		}
		return rep.failures.failure(nil)
	}
	return nil
}

// workMark names the mark of a work database that says which run it
// serves.
const workMark = "dedup:run"

// checkWork returns the work database d ready for this run: d itself when
// it is new or was left by the same run (same inputs, each of the same
// size and modification time, same record options and creation flags),
// else, or with --restart, a new one in its place. An input changed since
// the run that made d (a record deleted or edited) makes a new one: the
// documents of its old version would otherwise be clustered, and named as
// kept, with those of its current records.
func (o *dedupOptions) checkWork(ctx context.Context, d *db.DB, inputs []string) (*db.DB, error) {
	type input struct {
		Path    string `json:"path"`
		Size    int64  `json:"size"`
		ModTime int64  `json:"mtime"`
	}
	var ins []input
	for _, p := range inputs {
		a, err := filepath.Abs(p)
		if err != nil {
			return d, fmt.Errorf("dedup: %s: %w", p, err)
		}
		in := input{Path: a, Size: -1}
		if fi, err := os.Stat(p); err == nil {
			in.Size, in.ModTime = fi.Size(), fi.ModTime().UnixNano()
		}
		ins = append(ins, in)
	}
	want, _ := json.Marshal(map[string]any{"inputs": ins, "format": o.format, "id": o.records.idField, "text": o.records.textField, "keep_fields": o.records.keepFields})
	have, err := d.Mark(ctx, workMark)
	switch {
	case errors.Is(err, db.ErrNoMark) && d.Len() == 0:
	case err == nil && bytes.Equal(have, want) && !o.records.restart:
		return d, nil
	case err != nil && !errors.Is(err, db.ErrNoMark):
		return d, err
	case err != nil:
		return d, notWorkDB(o.dbDir, d.Len())
	default:
		if err := d.Close(); err != nil {
			return nil, err
		}
		if err := os.RemoveAll(o.dbDir); err != nil {
			return nil, fmt.Errorf("dedup: remove the work database of another run: %w", err)
		}
		if d, err = o.openDBWith(openBulk, &o.creation); err != nil {
			return nil, err
		}
	}
	return d, d.SetMark(ctx, db.Mark{Name: workMark, Value: want})
}

// isWorkDB returns nil when dir holds a work database of dedup (one with
// its mark, or one holding no document), else why dedup must not replace
// it.
func isWorkDB(ctx context.Context, dir string) error {
	d, err := db.Open(dir, &db.Options{ReadOnly: true, ErrorIfNotExist: true})
	if err != nil {
		return fmt.Errorf("dedup: %s is in the way of the work database: %w", dir, err)
	}
	defer d.Close()
	_, err = d.Mark(ctx, workMark)
	switch {
	case err == nil || errors.Is(err, db.ErrNoMark) && d.Len() == 0:
		return nil
	case errors.Is(err, db.ErrNoMark):
		return notWorkDB(dir, d.Len())
	}
	return err
}

// notWorkDB is the error of a database at a work database's place that
// dedup did not make.
func notWorkDB(dir string, docs int) error {
	return fmt.Errorf("dedup: %s is a database that dedup did not make (%s): it is left as it is; give it as --db to check the records against it, or another --out", dir, nDocs(docs))
}

// dedupSummaryLine is the last line of a dedup run.
func dedupSummaryLine(s *dedup.Summary) string {
	// The rate is the --json summary's: every record (dedup reads the
	// resumed ones too, to write them).
	line := summaryLine("dedup", &s.LoadSummary, s.RecordsPerSecond)
	approx := ""
	if s.Recall < 1 {
		approx = fmt.Sprintf(" by an approximate plan (%s; expected recall of a pair at the threshold %.4f)", s.Plan, s.Recall)
	}
	excluded := ""
	if s.Excluded > 0 {
		excluded = fmt.Sprintf("; %d stored documents left out (the database holds them under the ids of bad records)", s.Excluded)
	}
	return fmt.Sprintf("%s\ndedup: %d kept, %d removed; %d clusters (%d pairs%s)%s; load %v, pairs %v, write %v",
		line, s.Kept, s.Removed, s.Clusters, s.Pairs, approx, excluded, secs(s.LoadSeconds), secs(s.PairsSeconds), secs(s.WriteSeconds))
}

// secs rounds a number of seconds for a summary.
func secs(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond)
}
