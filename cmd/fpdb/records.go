package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/dedup"
	"github.com/fpdb/fpdb/internal/records"
)

// recordFlags are the flags of add and dedup that say how dataset records
// are read.
type recordFlags struct {
	idField, textField string
	keepFields         []string
	strict             bool
	restart            bool
	flags              *pflag.FlagSet
	hinted             bool // idHint was given
}

// register adds the flags to f.
func (r *recordFlags) register(f *pflag.FlagSet) {
	r.registerFields(f)
	f.StringSliceVar(&r.keepFields, "keep-fields", nil, "datasets: further `FIELDS` stored as each document's source, a JSON object (comma-separated; default source: FILE:LINE)")
	f.BoolVar(&r.strict, "strict", false, "datasets: stop at the first bad record (by default bad records are reported and skipped)")
	f.BoolVar(&r.restart, "restart", false, "datasets: read every input from the start, even where an earlier run stored it (to store again documents deleted since)")
}

// registerFields adds --id-field and --text-field to f.
func (r *recordFlags) registerFields(f *pflag.FlagSet) {
	r.flags = f
	f.StringVar(&r.idField, "id-field", "id", "datasets: the record's id `FIELD` (a column, or a dotted path into JSON: meta.id); \"\" makes each record's position (FILE:LINE) its id")
	f.StringVar(&r.textField, "text-field", "text", "datasets: the record's text `FIELD` (a column, or a dotted path into JSON)")
}

// idHint returns, the first time a record is refused for lacking the id
// field while --id-field was not given, a line that says how to name
// another field; else "".
func (r *recordFlags) idHint(err error) string {
	if r.hinted || r.idField == "" || (r.flags != nil && r.flags.Changed("id-field")) ||
		!errors.Is(err, dedup.ErrBadRecord) || !strings.Contains(err.Error(), fmt.Sprintf("missing field %q", r.idField)) {
		return ""
	}
	r.hinted = true
	return fmt.Sprintf(`fpdb: hint: records without an %q field: --id-field FIELD names the field of their ids; --id-field "" makes FILE:LINE their ids`, r.idField)
}

// reportBad returns the LoadOptions.Bad of a run: each bad record
// reported on rep (its progress line hidden meanwhile), with idHint's
// line the first time it applies.
func (r *recordFlags) reportBad(rep *addReport, bar *bytesProgress) func(pos string, err error) {
	return func(pos string, err error) {
		bar.hide()
		defer bar.show()
		rep.fail(pos, "", err)
		if hint := r.idHint(err); hint != "" {
			fmt.Fprintln(rep.stderr, hint)
		}
	}
}

// given reports whether a dataset flag was given.
func (r *recordFlags) given() string {
	for _, name := range []string{"id-field", "text-field", "keep-fields", "strict", "restart"} {
		if r.flags != nil && r.flags.Changed(name) {
			return name
		}
	}
	return ""
}

// options returns the record options for the record format format ("":
// by extension).
func (r *recordFlags) options(format string) dedup.RecordOptions {
	return dedup.RecordOptions{Format: format, IDField: r.idField, TextField: r.textField, KeepFields: r.keepFields}
}

// isRecordFile reports whether a path names a dataset file by its
// extension: .jsonl, .ndjson, .csv, .tsv, .parquet or .pq, optionally
// compressed (.gz, .zst, .bz2). A .json file is a document unless --format
// says otherwise.
func isRecordFile(path string) bool {
	f, _, err := records.Detect(path)
	if err != nil || f == records.FormatAuto {
		return false
	}
	name := strings.ToLower(path)
	for _, c := range []string{".gz", ".zst", ".zstd", ".bz2"} {
		name = strings.TrimSuffix(name, c)
	}
	return !strings.HasSuffix(name, ".json")
}

// isRecordDir reports whether path is a directory of dataset shards: it
// holds dataset files (isRecordFile), and no other file, hidden ones and
// fpdb databases aside (the database dbAbs among them, as add's walks
// skip them): a Hugging Face dataset's data/ directory, say.
func isRecordDir(path, dbAbs string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return false
	}
	found, other := false, false
	err = filepath.WalkDir(path, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != path && strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.IsDir() {
			if isDatabaseDir(p, dbAbs) {
				return filepath.SkipDir
			}
			return nil
		}
		if !isRecordFile(p) {
			other = true
			return fs.SkipAll
		}
		found = true
		return nil
	})
	return err == nil && found && !other
}

// recordMode reports whether add reads its inputs as datasets
// (recordModeOf).
func (o *addOptions) recordMode() (bool, error) {
	return recordModeOf("add", o.paths, o.dbDir, &o.text, &o.records)
}

// recordModeOf reports whether the command cmd (add or query) reads its
// PATHs as datasets: --format names a record format, or every PATH is a
// dataset file by its extension or a directory of them (isRecordDir). A
// mix is a usage error, as is a dataset flag without datasets.
func recordModeOf(cmd string, paths []string, dbDir string, text *textFlags, rf *recordFlags) (bool, error) {
	if text.format.records != "" {
		return true, nil
	}
	n := 0
	dbAbs, _ := filepath.Abs(dbDir)
	for _, p := range paths {
		if p != "-" && (isRecordFile(p) || isRecordDir(p, dbAbs)) {
			n++
		}
	}
	switch {
	case n > 0 && n < len(paths):
		return false, usageErrorf("%s: the PATHs mix dataset files (read one document per record) and documents; give them in separate runs, or give --format", cmd)
	case n == 0:
		if name := rf.given(); name != "" {
			return false, usageErrorf("%s: --%s is for datasets (JSON Lines, CSV, TSV, Parquet files, or --format jsonl|csv|tsv|parquet)", cmd, name)
		}
		return false, nil
	}
	return true, nil
}

// validateRecords checks the flags that cannot be used with datasets.
func (o *addOptions) validateRecords() error {
	for name, set := range map[string]bool{"id": o.id != "", "files-from": o.filesFrom != "", "exclude": len(o.exclude) > 0, "include": len(o.include) > 0, "source": o.source != ""} {
		if set {
			return usageErrorf("add: --%s cannot be used with datasets (each record has its id and its position as source; see --id-field and --keep-fields)", name)
		}
	}
	if o.records.restart && !o.bulk {
		return usageErrorf("add: --restart needs --bulk (an add without --bulk checks and stores each record on its own, so a rerun leaves stored records unchanged)")
	}
	return nil
}

// expandKeepMissing is records.Expand for add and query: an argument that
// does not exist (and is no pattern) stays an input, which the run then
// reports as one it could not read while it reads the others, as add does
// with documents (dedup, whose outputs must hold every record, refuses it
// before it starts); when no argument exists, it is an error, before a
// database is made or opened.
func expandKeepMissing(args []string) ([]string, error) {
	out, missing, err := records.ExpandKeepMissing(args)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 && len(missing) == len(out) {
		// Nothing to add: no database is made for a mistyped path.
		return nil, missing[0]
	}
	return out, nil
}

// runRecords adds the records of dataset files.
func (o *addOptions) runRecords(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	if err := o.validateRecords(); err != nil {
		return err
	}
	inputs, err := expandKeepMissing(o.paths)
	if err != nil {
		return failure(asInputError(fmt.Errorf("add: %w", err)))
	}
	if len(inputs) == 0 {
		return failure(fmt.Errorf("add: no dataset files in %s", strings.Join(o.paths, " ")))
	}
	rep := &addReport{stderr: stderr}
	start := time.Now()
	d, addEach, err := o.openAdder()
	if err != nil {
		return failure(err)
	}
	if d != nil {
		defer o.closeAdder(d, &err)
	}
	bar := newBytesProgress(stderr, o.progress, o.quiet)
	defer bar.clear()
	lo := dedup.LoadOptions{
		RecordOptions:    o.records.options(o.text.format.records),
		Inputs:           inputs,
		Stdin:            stdin,
		Batch:            o.batch,
		Strict:           o.records.strict,
		Restart:          o.records.restart,
		ReplaceUnchanged: o.replace,
		Text:             db.TextOptions{Format: o.text.format.f, Encoding: o.text.encoding.label},
		Bad:              o.records.reportBad(rep, bar),
		Progress:         bar.update,
	}
	if o.bulk {
		if !o.records.strict {
			// An input that cannot be read (to its end) is reported,
			// and the others are still added (exit status 3).
			lo.BadInput = func(f dedup.FailedInput) {
				bar.hide()
				defer bar.show()
				rep.fail(f.Path, "", fmt.Errorf("%w (after %s, %d of them stored by this run)", f.Err, plural(f.Records, "record"), f.Stored))
			}
		}
		sum, err := dedup.Load(ctx, d, lo)
		bar.clear()
		if err != nil {
			if sum != nil && ctx.Err() == nil && isInputError(err, "") {
				// Stopped by --strict: what was stored is summed up.
				sum.Seconds = time.Since(start).Seconds()
				fmt.Fprintln(stderr, loadSummaryLine("bulk", sum))
			}
			return failure(newOpError("add", err, "add"))
		}
		if err := d.Flush(ctx); err != nil {
			return failure(newOpError("add", err, "write postings"))
		}
		sum.Seconds = time.Since(start).Seconds()
		if o.json {
			if err := newJSONEncoder(stdout).Encode(sum); err != nil {
				return failure(err)
			}
		}
		fmt.Fprintln(stderr, loadSummaryLine("bulk", sum))
		if sum.Skipped > 0 || sum.InputsFailed > 0 {
			return rep.failures.failure(nil)
		}
		return nil
	}
	return o.addRecords(ctx, d, addEach, inputs, lo, stdin, stdout, rep, bar, start)
}

// loadSummaryLine is the summary line of a load of records, whose rate
// counts the records this run read and stored or skipped (not those it
// resumed past).
func loadSummaryLine(what string, s *dedup.LoadSummary) string {
	rate := 0.0
	if s.Seconds > 0 {
		rate = float64(s.Records-s.Resumed) / s.Seconds
	}
	return summaryLine(what, s, rate)
}

// summaryLine is loadSummaryLine with the rate given.
func summaryLine(what string, s *dedup.LoadSummary, rate float64) string {
	line := fmt.Sprintf("%s: %d records: %d stored (%d replaced), %d unchanged, %d skipped", what, s.Records, s.Stored, s.Replaced, s.Unchanged, s.Skipped)
	line += skippedReasons(s.SkippedReasons)
	if s.Resumed > 0 {
		line += fmt.Sprintf(", %d resumed (done by an earlier run: stored, or skipped as bad; their file unchanged since, --restart reads them again)", s.Resumed)
	}
	if s.InputsFailed > 0 {
		line += fmt.Sprintf(", %s could not be read (to the end)", plural(s.InputsFailed, "input"))
	}
	return fmt.Sprintf("%s in %v, %.0f records/s", line, time.Duration(s.Seconds*float64(time.Second)).Round(time.Millisecond), rate)
}

// bytesProgress shows the progress of a run over dataset files: records,
// megabytes read, the rate and, when the sizes are known, the percentage
// and the time left.
type bytesProgress struct {
	p *progress
}

// newBytesProgress shows progress on w when it is a terminal (unless
// quiet) or when force is set.
func newBytesProgress(w io.Writer, force, quiet bool) *bytesProgress {
	if !force && (quiet || !isTerminal(w)) {
		return &bytesProgress{}
	}
	p := newProgress(w, progressNow)
	if !isTerminal(w) {
		p.asLog()
	}
	return &bytesProgress{p: p}
}

func (b *bytesProgress) on() bool { return b.p != nil }
func (b *bytesProgress) hide()    { b.p.hide() }
func (b *bytesProgress) show()    { b.p.show() }
func (b *bytesProgress) clear()   { b.p.clear() }

// update redraws the line for p.
func (b *bytesProgress) update(p dedup.Progress) {
	if b.p == nil {
		return
	}
	b.p.updateLine(func(el time.Duration) string {
		s := el.Seconds()
		if p.Elapsed > 0 {
			s = p.Elapsed.Seconds()
		}
		rate := 0.0
		if s > 0 {
			rate = float64(p.Records) / s
		}
		line := fmt.Sprintf("%s: %d records, %.1f MB, %.0f records/s", p.Phase, p.Records, float64(p.Bytes)/1e6, rate)
		if p.TotalBytes > 0 && p.Bytes > 0 {
			left := time.Duration(s * float64(p.TotalBytes-p.Bytes) / float64(p.Bytes) * float64(time.Second))
			line += fmt.Sprintf(" (%d%% of %.1f MB, ETA %v)", 100*p.Bytes/p.TotalBytes, float64(p.TotalBytes)/1e6, left.Round(time.Second))
		}
		return line
	})
}
