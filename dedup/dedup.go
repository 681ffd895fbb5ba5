package dedup

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/records"
)

// ErrDuplicateID is wrapped by the error of a record whose id an earlier
// record of the same run has.
var ErrDuplicateID = fmt.Errorf("%w: id given twice", ErrBadRecord)

// Added fields: every output record gets these, after its own fields.
const (
	// FieldCluster is the record's cluster: 1, 2, … for the clusters of
	// near duplicates (numbered largest first, then by their first
	// member's id), 0 for a record without near duplicates, -1 for a bad
	// record.
	FieldCluster = "fpdb_cluster"
	// FieldKept is the id of the record kept for the record's cluster (its
	// own id when it is kept).
	FieldKept = "fpdb_kept"
	// FieldSimilarity is the estimated resemblance of the record to the
	// kept one (1 when it is kept).
	FieldSimilarity = "fpdb_similarity"
	// FieldError says why a bad record was not deduplicated ("" for the
	// others).
	FieldError = "fpdb_error"
)

// errRefusedEarlier is the error of a record in the part of a file an
// earlier run stored that the database does not hold.
var errRefusedEarlier = fmt.Errorf("%w: refused by the database (no words, binary or an invalid id) in an earlier run", ErrBadRecord)

// MaxColumns is the most columns (of the records, not counting the added
// fields) a CSV/TSV or Parquet output of JSON Lines inputs may have: the
// load stops with an error (wrapping ErrBadInput) at a record that brings
// one more member, rather than write an output of that many columns
// (records whose members are data, such as ids as keys); a JSON Lines
// output has no such limit.
const MaxColumns = 10000

// extraNames are the added fields, in order.
var extraNames = []string{FieldCluster, FieldKept, FieldSimilarity, FieldError}

// emptyExtras are the added fields with values of their types, for the
// columns of an output that gets no record.
var emptyExtras = []records.Extra{{Name: FieldCluster, Value: int64(0)}, {Name: FieldKept, Value: ""}, {Name: FieldSimilarity, Value: 0.0}, {Name: FieldError, Value: ""}}

// Options configure Run.
type Options struct {
	LoadOptions
	// Threshold is the least estimated resemblance of a removed record to
	// the record kept for it, in (0, 1].
	Threshold float64
	// Keep says which record of a group of near duplicates is kept (see
	// ParseKeep): "first" (the first seen: the input order), "oldest" (the
	// earliest time added), "longest", "shortest", "max:FIELD" or
	// "min:FIELD" (the greatest or least value of a field: a number, a
	// numeric string or an RFC 3339 date; records without it come last;
	// a field that no record has, a misspelt name, or that no record
	// holds such a value in, stops the run after the load, before an
	// output is written). Default "first". Whatever the policy, a
	// document the database held before the run (an archive) is kept
	// over the run's records near it.
	Keep string
	// Out is the file the kept records are written to ("-": Stdout);
	// Removed, if set, the file the others go to; Clusters, if set, a JSON
	// Lines file with one object per cluster. At most one of them is "-",
	// and none is an input or another output, by its path or through a
	// link. A file is written under a temporary name (".fpdb-part." and
	// its name, in its directory) and renamed when complete.
	//
	// Out and Removed may instead both be directories of shards: paths
	// that end with a path separator, new, empty or holding only the
	// shards this run writes (an earlier output, replaced), neither inside
	// the other nor holding an input, the working directory or a link.
	// Each input then has its own output file in each, in its format (or
	// OutFormat), named as the input is within the deepest directory
	// holding every input (a .bz2 input's shard is .gz; an extension
	// converted by OutFormat is changed). The directory is written under a
	// temporary name and renamed when complete.
	Out, Removed, Clusters string
	// OutFormat is the format of Out and Removed: "jsonl", "csv", "tsv" or
	// "parquet"; default: told by Out's extension, else the first input's
	// format. An output file whose extension names another format is
	// refused (Check), as is a compression extension fpdb does not write;
	// names of no known extension (kept.out) take the format. Clusters is
	// written as uncompressed JSON Lines. A CSV/TSV or Parquet output of JSON Lines inputs has a column
	// for every member that any record has (of every input, in order of
	// first appearance; a record lacking one has an empty cell, null in
	// Parquet; nested values are their JSON text), and the columns of any
	// CSV/TSV or Parquet input among them.
	OutFormat string
	// Stdout is written for an output "-".
	Stdout io.Writer
	// Plan is the plan of the all-pairs search (db.PairsOptions.Plan): the
	// zero value lets the planner choose among exact plans, which all give
	// the same output; db.PlanApprox with a MinRecall lets it also choose
	// faster plans that may miss near-duplicate pairs (each pair at the
	// threshold is found with at least that probability).
	Plan db.Plan
}

// Summary counts what a Run did.
type Summary struct {
	LoadSummary
	// Kept and Removed count the records written to Out and to Removed
	// (bad records are among the removed).
	Kept    int64 `json:"kept"`
	Removed int64 `json:"removed"`
	// Clusters is the number of clusters (groups of two or more near
	// duplicates), each holding a record of the run, Pairs the
	// near-duplicate pairs found (not those of two archive documents).
	Clusters int   `json:"clusters"`
	Pairs    int64 `json:"pairs"`
	// Excluded counts the stored documents left out of the clusters: the
	// database held them under the id of a record that is bad in this run
	// (or that the database refused), so no record is compared with them.
	Excluded int64 `json:"excluded"`
	// Plan is the plan of the all-pairs search, with the number of groups
	// it ran on ("probe tau=1 lower=2, 27 groups"), and Recall its expected
	// recall of a pair at the threshold (1 for an exact plan).
	Plan   string  `json:"plan"`
	Recall float64 `json:"recall"`
	// LoadSeconds, PairsSeconds and WriteSeconds time the three phases;
	// Seconds (in LoadSummary) is the whole run.
	LoadSeconds  float64 `json:"load_seconds"`
	PairsSeconds float64 `json:"pairs_seconds"`
	WriteSeconds float64 `json:"write_seconds"`
	// RecordsPerSecond is Records / Seconds.
	RecordsPerSecond float64 `json:"records_per_second"`
}

// keepPolicy is a parsed Options.Keep.
type keepPolicy struct {
	keep  db.Keep
	field string // for KeepMax and KeepMin
}

// ParseKeep checks a keep policy (see Options.Keep).
func ParseKeep(s string) error {
	_, err := parseKeep(s)
	return err
}

func parseKeep(s string) (keepPolicy, error) {
	switch s {
	case "", "first":
		return keepPolicy{keep: db.KeepStored}, nil
	case "oldest":
		return keepPolicy{keep: db.KeepOldest}, nil
	case "longest":
		return keepPolicy{keep: db.KeepLongest}, nil
	case "shortest":
		return keepPolicy{keep: db.KeepShortest}, nil
	}
	if f, ok := strings.CutPrefix(s, "max:"); ok && f != "" {
		return keepPolicy{keep: db.KeepMax, field: f}, nil
	}
	if f, ok := strings.CutPrefix(s, "min:"); ok && f != "" {
		return keepPolicy{keep: db.KeepMin, field: f}, nil
	}
	return keepPolicy{}, fmt.Errorf("%w: keep policy %q (want first, oldest, longest, shortest, max:FIELD or min:FIELD)", db.ErrInvalidOptions, s)
}

// assignment is where a record of a cluster goes.
type assignment struct {
	cluster int32
	kept    string
	sim     float64
}

// Run deduplicates the records of the inputs: it stores them in d (as
// Load, resumably), groups near duplicates at Threshold into clusters that
// do not chain (db.ClusterCenters: every removed record is within the
// threshold of the record kept for it) with the Keep policy, then reads
// the inputs again and writes every record once, in input order, to Out
// (kept) or Removed (near duplicates of a kept record, and bad records),
// with the fields FieldCluster, FieldKept, FieldSimilarity and FieldError
// added. The output depends only on the inputs, the options and the
// documents d held before: not on the number of cores.
//
// d may hold documents already (an archive): a record near one of them is
// removed, that document named as kept, whatever the keep policy (the
// policy chooses among the archive's documents, and among the records of
// a cluster without any), so new data can be checked against old; the
// clusters reported are those that hold a record of the run. A document
// an earlier run stored that d no longer holds (deleted since) is stored
// again: the inputs are then read again from their start. A record
// that is bad in this run (or that d refuses) while d holds a document
// under its id (an earlier run stored it, with options under which it was
// not bad, or the archive has that id) is written as bad, and that stored
// document takes no part in the clusters: no record names it as kept.
//
// A bulk load's postings (db.Options.BulkLoad) are left deferred: the
// pairs are found in memory. A caller that goes on querying d should call
// d.Flush first (Close writes them too; db.DB.CloseUnflushed does not, for
// a database about to be removed).
//
// Run is a batch job: between its phases it runs a garbage collection
// (runtime.GC), which keeps one phase's garbage from adding to the next
// phase's peak memory; a process that serves requests meanwhile sees two
// collections per Run.
func Run(ctx context.Context, d *db.DB, o Options) (*Summary, error) {
	if err := Check(o); err != nil {
		return nil, err
	}
	kp, err := parseKeep(o.Keep)
	if err != nil {
		return nil, err
	}
	if err := d.CheckPlan(o.Threshold, o.Plan); err != nil {
		return nil, err
	}
	start := time.Now()
	sum := &Summary{}
	if kp.field != "" {
		o.KeepFields = append(slices.Clone(o.KeepFields), kp.field)
	}
	l, err := newLoader(d, &o.LoadOptions)
	if err != nil {
		return nil, err
	}
	outFormat, err := outputFormat(&o, l.ro)
	if err != nil {
		return nil, err
	}
	// One Parquet output keeps the schema of its first Parquet input: an
	// input of another schema, or a file of another format after it, is
	// refused now, not once the load and the pairs are done and the first
	// input is written.
	if outFormat == records.FormatParquet && !isShardDir(o.Out) {
		if err := records.CheckParquetSchemas(o.Inputs, l.ro); err != nil {
			return nil, fmt.Errorf("dedup: %w", err)
		}
	}
	// Nor can a Parquet or JSON Lines output hold a CSV header's
	// repeated name.
	if outFormat == records.FormatParquet || outFormat == records.FormatJSONL {
		if err := records.CheckHeaders(o.Inputs, l.ro, outFormat); err != nil {
			return nil, fmt.Errorf("dedup: %w", err)
		}
	}
	// A CSV/TSV or Parquet output of JSON Lines records has a column for
	// every member any record has, the first record's first: the load
	// pass, which reads every record (those an earlier run stored too:
	// it reads them, it does not skip them), collects the names, in
	// input order, so a resumed run has the columns of one that was not
	// interrupted. JSON Lines outputs need none (no cost for them).
	var names *records.Names
	if outFormat != records.FormatAuto && outFormat != records.FormatJSONL && hasJSONLInput(o.Inputs, l.ro) {
		names = &records.Names{Max: MaxColumns}
		l.ro.Names = names
	}

	// Phases 1 and 2: store every record, then cluster. A database that
	// no longer holds every record an earlier run stored (some deleted
	// since) gets the files read and stored again from their start, once.
	var ph *phases
	var cs []db.Cluster
	var st db.PairsStats
	var firstLoad LoadSummary // the first attempt's
	for attempt := 0; ; attempt++ {
		tl := time.Now()
		if attempt > 0 {
			// The records are read again; the bad ones were reported.
			firstLoad, sum.Excluded = sum.LoadSummary, 0
			lo := o.LoadOptions
			lo.Restart, lo.Bad = true, nil
			if l, err = newLoader(d, &lo); err != nil {
				return sum, err
			}
			if names != nil {
				*names = records.Names{Max: MaxColumns}
				l.ro.Names = names
			}
		}
		if ph, err = loadPhase(ctx, l, kp, sum, &o); err != nil {
			return sum, err
		}
		if attempt == 0 {
			sum.LoadSeconds = time.Since(start).Seconds()
		} else {
			sum.LoadSeconds += time.Since(tl).Seconds()
			// The summary is the first attempt's, the documents stored
			// again (all the second one stored: the rest were stored by
			// the first) moved from resumed to stored.
			again := sum.LoadSummary
			sum.LoadSummary = firstLoad
			sum.Stored += again.Stored
			sum.Replaced += again.Replaced
			sum.Resumed = max(0, sum.Resumed-again.Stored)
			sum.Seconds = again.Seconds + firstLoad.Seconds
		}
		// Each phase's garbage is collected before the next phase
		// allocates its own (the snapshot and sorted groups of the pairs,
		// then the outputs): left to the collector's pace, the garbage of
		// one phase and the live data of the next added up to the peak
		// (at 1 M records of 2 KB: 962 MiB peak RSS without these two
		// collections, 798 with).
		runtime.GC()
		t := time.Now()
		if o.Progress != nil {
			o.Progress(Progress{Phase: "pairs", TotalBytes: -1})
		}
		var missing int64
		cs, st, missing, err = ph.clusters(ctx, d, kp, &o, sum)
		if err != nil {
			return sum, err
		}
		sum.PairsSeconds += time.Since(t).Seconds()
		if missing == 0 {
			break
		}
		if attempt > 0 {
			return sum, fmt.Errorf("dedup: the database does not hold %d records this run stored: was it changed by another process during the run?", missing)
		}
		// Documents an earlier run stored are gone (deleted since): the
		// inputs are read and stored again from their start (documents
		// still held unchanged are left as they are).
		if o.Progress != nil {
			o.Progress(Progress{Phase: "load", TotalBytes: -1})
		}
	}
	first, bad1, refused, refusedBefore := ph.first, ph.bad1, ph.refused, ph.refusedBefore
	sum.Clusters, sum.Pairs = len(cs), int64(st.Pairs)
	sum.Plan, sum.Recall = st.Plan.String(), st.Recall
	if st.Groups > 0 {
		sum.Plan = fmt.Sprintf("%s, %d groups", st.Plan, st.Groups)
	}
	assign := make(map[string]assignment)
	for i, c := range cs {
		for j, id := range c.IDs {
			assign[id] = assignment{cluster: int32(i + 1), kept: c.Keep, sim: c.Similarities[j]}
		}
	}
	runtime.GC()

	// Phase 3: write.
	t := time.Now()
	var cols []string
	if names != nil {
		cols = names.List()
	}
	w, err := newOutputs(&o, outFormat, l.ro.Format, cols, len(bad1) > 0)
	if err != nil {
		return sum, err
	}
	defer w.abort()
	if err := writeClusters(w.cbuf, cs); err != nil {
		return sum, err
	}
	ro := l.ro
	ro.Raw = true
	ro.Names = nil // collected by the first pass
	// The first pass read every record (a resumed run's stored part too)
	// and noted the bad ones: the texts need not be decoded again, unless
	// the database refused records of the part an earlier run stored: why
	// is then asked again of their texts (refusedWhy).
	ro.SkipText = len(refusedBefore) == 0
	// Compressed inputs are decompressed beside the parsing, routing and
	// writing of the records (.zst and Parquet outputs are compressed on
	// goroutines of their own too).
	ro.DecodeAhead = true
	var n int64
	// The bad records are counted again here: a resumed run did not read
	// the bad records of the part an earlier run stored.
	sum.Skipped, sum.SkippedReasons = 0, map[string]int64{}
	bad := func(err error) (bool, []records.Extra, error) {
		sum.Skipped++
		sum.SkippedReasons[SkipReason(err)]++
		return false, badExtras(err), nil
	}
	for i, path := range o.Inputs {
		if w.shards != nil {
			if err := w.startShard(i, path); err != nil {
				return sum, err
			}
		}
		if err := writeFile(ctx, path, &o, ro, w, func(rec *records.Record) (bool, []records.Extra, error) {
			defer func() { n++ }()
			if err, ok := bad1[n]; ok {
				if rec.Err == nil {
					rec.Err = err // read without its text: written as a bad record
				}
				return bad(err)
			}
			if rec.Err != nil {
				// Read whole for rewriting, a record the first pass
				// read fails: its cluster may depend on it.
				return false, nil, fmt.Errorf("%w: %s: the record, stored and clustered, cannot be read again to be written: %w", ErrBadInput, rec.Pos, rec.Err)
			}
			id := recordID(rec, ro.IDField)
			if first[id] != n {
				return bad(fmt.Errorf("%w: %q", ErrDuplicateID, id))
			}
			if err, ok := refused[id]; ok {
				return bad(err)
			}
			if refusedBefore[id] {
				// Refused in the part an earlier run stored.
				why, err := l.refusedWhy(ctx, rec)
				if err != nil {
					return false, nil, err
				}
				return bad(why)
			}
			a, ok := assign[id]
			if !ok {
				return true, []records.Extra{{Name: FieldCluster, Value: int64(0)}, {Name: FieldKept, Value: id}, {Name: FieldSimilarity, Value: 1.0}, {Name: FieldError, Value: ""}}, nil
			}
			return a.kept == id, []records.Extra{{Name: FieldCluster, Value: int64(a.cluster)}, {Name: FieldKept, Value: a.kept}, {Name: FieldSimilarity, Value: round(a.sim)}, {Name: FieldError, Value: ""}}, nil
		}, sum); err != nil {
			return sum, err
		}
	}
	if err := w.commit(); err != nil {
		return sum, err
	}
	sum.WriteSeconds = time.Since(t).Seconds()
	sum.Seconds = time.Since(start).Seconds()
	if sum.Seconds > 0 {
		sum.RecordsPerSecond = float64(sum.Records) / sum.Seconds
	}
	return sum, nil
}

// phases is what the load tells the later phases.
type phases struct {
	first         map[string]int64    // the number of the first record of each id
	values        map[string]keyValue // the keep policy's field, by id
	refused       map[string]error    // ids the database refused in this run
	refusedBefore map[string]bool     // ids it refused in the part an earlier run stored
	bad1          map[int64]error     // records bad in the load, by number
	badIDs        map[string]bool     // their ids, when they have one
}

// loadPhase stores every record of the inputs (phase 1), noting the first
// record of each id and the values the keep policy needs.
func loadPhase(ctx context.Context, l *loader, kp keepPolicy, sum *Summary, o *Options) (*phases, error) {
	ph := &phases{first: map[string]int64{}, refused: map[string]error{}, refusedBefore: map[string]bool{},
		bad1: map[int64]error{}, badIDs: map[string]bool{}}
	if kp.field != "" {
		ph.values = make(map[string]keyValue)
	}
	fieldSeen := false // a record has the keep policy's field
	l.onRefused = func(id string, err error) { ph.refused[id] = err }
	ls, err := l.run(ctx, func(rec *records.Record, n int64, resumed bool) error {
		if rec.Err != nil {
			ph.bad1[n] = rec.Err
			if id := recordID(rec, l.ro.IDField); id != "" {
				ph.badIDs[id] = true
			}
			return rec.Err
		}
		id := recordID(rec, l.ro.IDField)
		if _, dup := ph.first[id]; dup {
			return fmt.Errorf("%w: %q", ErrDuplicateID, id)
		}
		ph.first[id] = n
		if resumed {
			if _, ok := slices.BinarySearch(l.refused[rec.Pos.File], rec.Pos.Index); ok {
				ph.refusedBefore[id] = true
			}
		}
		if ph.values != nil {
			v, ok, has := fieldValue(rec.Meta, kp.field)
			if ok {
				ph.values[id] = v
			}
			fieldSeen = fieldSeen || has
		}
		return nil
	})
	if ls != nil {
		sum.LoadSummary = *ls
	}
	if err != nil {
		return nil, err
	}
	if ph.values != nil && !fieldSeen && len(ph.first) > 0 {
		// A misspelt field would keep the first record of every
		// cluster, as "first" does, without a word: refused before
		// anything is written.
		return nil, fmt.Errorf("%w: keep policy %s: none of the %d records read has a field %q: check its name (with no record having it, the policy would keep the first record of each cluster, as \"first\" does)", db.ErrInvalidOptions, o.Keep, len(ph.first), kp.field)
	}
	if ph.values != nil && fieldSeen && len(ph.values) == 0 {
		// So would a field that is there but never a value the policy
		// can order (all null, text or objects).
		return nil, fmt.Errorf("%w: keep policy %s: the field %q of the %d records read is never a number, a numeric string, a date or a boolean: the policy has nothing to order them by (it would keep the first record of each cluster, as \"first\" does)", db.ErrInvalidOptions, o.Keep, kp.field, len(ph.first))
	}
	return ph, nil
}

// clusters groups the stored documents (phase 2) and returns the clusters,
// each holding a record of this run, and how many of this run's records
// the database does not hold (deleted since an earlier run stored them).
// Documents the database held before, not records of this run (an
// archive), are kept: a record near one of them is removed whatever the
// policy.
func (ph *phases) clusters(ctx context.Context, d *db.DB, kp keepPolicy, o *Options, sum *Summary) ([]db.Cluster, db.PairsStats, int64, error) {
	co := db.ClusterOptions{PairsOptions: db.PairsOptions{Threshold: o.Threshold, Plan: o.Plan}, Keep: kp.keep, Mode: db.ClusterCenters}
	switch {
	case ph.values != nil:
		// The values, exact (integers beyond 2^53, nanoseconds), become
		// their ranks, which float64 holds exactly.
		sorted := make([]keyValue, 0, len(ph.values))
		for _, v := range ph.values {
			sorted = append(sorted, v)
		}
		slices.SortFunc(sorted, keyValue.compare)
		sorted = slices.Compact(sorted)
		co.Value = func(id string) (float64, bool) {
			v, ok := ph.values[id]
			if !ok {
				return 0, false
			}
			r, _ := slices.BinarySearchFunc(sorted, v, keyValue.compare)
			return float64(r), true
		}
	case kp.keep == db.KeepStored:
		// "first" is the input order: the order the records were
		// stored in, unless some were stored again since (deleted
		// after an earlier run), or held before under their ids.
		co.Keep = db.KeepMin
		co.Value = func(id string) (float64, bool) {
			n, ok := ph.first[id]
			return float64(n), ok
		}
	}
	// A record bad in this run (or refused by the database) has no
	// document of this run; a document the database holds under its id
	// (stored by an earlier run, with options under which it was not bad,
	// or held before) would be clustered, and maybe named as the record
	// kept, while the record itself is written as bad: such documents
	// take no part in the clusters.
	disowned := make(map[string]bool, len(ph.refused)+len(ph.refusedBefore))
	for id := range ph.badIDs {
		if _, ok := ph.first[id]; !ok {
			disowned[id] = true
		}
	}
	for id := range ph.refused {
		disowned[id] = true
	}
	for id := range ph.refusedBefore {
		disowned[id] = true
	}
	// Every record of this run that the database did not refuse must be
	// stored: held counts those it holds.
	var held int64
	co.Exclude = func(id string) bool {
		if disowned[id] {
			sum.Excluded++
			return true
		}
		if _, ok := ph.first[id]; ok {
			held++
		}
		return false
	}
	// Documents the database held before (an archive) are kept: a record
	// near one is removed, and they are not clustered with each other
	// (db.ClusterOptions.Kept), so every cluster holds a record of the run.
	co.Kept = func(id string) bool {
		_, ours := ph.first[id]
		return !ours
	}
	cs, st, err := d.Clusters(ctx, co)
	if err != nil {
		return nil, st, 0, err
	}
	var want int64
	for id := range ph.first {
		if !disowned[id] {
			want++
		}
	}
	return cs, st, want - held, nil
}

// refusedWhy returns why the database refused rec, a record an earlier
// run stored: the error it gives its document again, as a run that was
// not interrupted reports it (errRefusedEarlier when it takes it now).
func (l *loader) refusedWhy(ctx context.Context, rec *records.Record) (error, error) {
	in := recordDoc(rec, l.ro.IDField, nil)
	in.TextOptions = l.o.Text
	_, why, err := l.d.PrepareBatch(ctx, []db.Input{in})
	switch {
	case err != nil:
		return nil, err
	case why[0] == nil:
		return errRefusedEarlier, nil
	}
	// As AddBatch gives it, without Prepare's prefix.
	if inner := errors.Unwrap(why[0]); inner != nil {
		return inner, nil
	}
	return why[0], nil
}

// Check reports what Run refuses before it reads a record, and needs no
// database: no output, a threshold out of (0, 1], an unknown keep
// policy or record format, two outputs on standard output ("-"), an
// output that is an input, another output (by its path, or the same file
// through a symbolic or hard link), a directory (unless named as a
// directory of shards: Options.Out) or in a directory that does not
// exist, a directory of shards that holds an input, an
// input whose format its extension does not tell
// (ErrBadInput), an output file whose name says another format or
// compression than it would be written in (Out or Removed named as a
// format other than the outputs', or with a compression extension fpdb
// does not write, such as .bz2 or .xz, or a Parquet file compressed as a
// whole; Clusters named as anything but uncompressed JSON Lines). A
// caller that makes a database for the run checks first, so that a
// refused run leaves none.
func Check(o Options) error {
	if o.Out == "" {
		return fmt.Errorf("%w: no output", db.ErrInvalidOptions)
	}
	if !(o.Threshold > 0 && o.Threshold <= 1) {
		return fmt.Errorf("%w: threshold %v", db.ErrInvalidThreshold, o.Threshold)
	}
	if _, err := parseKeep(o.Keep); err != nil {
		return err
	}
	ro, err := o.RecordOptions.records()
	if err != nil {
		return err
	}
	if err := checkPaths(&o); err != nil {
		return err
	}
	if ro.Format == records.FormatAuto {
		for _, p := range o.Inputs {
			if _, _, err := records.Detect(p); err != nil && p != "-" {
				return fmt.Errorf("%w: %w", ErrBadInput, err)
			}
		}
	}
	return checkOutputNames(&o, ro)
}

// checkOutputNames refuses an output file whose name lies about what Run
// would write to it: Out or Removed named as a format other than the
// outputs' (OutFormat, else Out's extension, else the input's: both get
// the one format), or with an extension records.CheckOutput refuses (a
// compression fpdb does not write, such as .bz2 or .xz; a Parquet file
// compressed as a whole); Clusters named as another format than JSON
// Lines, or as compressed (it is written as plain JSON Lines). Names
// that tell no format (kept.out) are left to the default format.
// Directories of shards name their files after the inputs.
func checkOutputNames(o *Options, ro records.Options) error {
	if p := o.Clusters; p != "" && p != "-" {
		f, c, _ := records.Detect(p)
		if (f != records.FormatAuto && f != records.FormatJSONL) || c != records.CompressionNone || records.CheckOutput(p, records.FormatJSONL) != nil {
			return fmt.Errorf("%w: --clusters %s: the clusters file is written as uncompressed JSON Lines, not as its extension %s says: name it with the extension .jsonl (and compress it after the run if need be)", db.ErrInvalidOptions, p, filepath.Ext(p))
		}
	}
	if isShardDir(o.Out) {
		return nil
	}
	f, err := outputFormat(o, ro)
	if err != nil {
		return err
	}
	explicit := o.OutFormat != "" && o.OutFormat != "auto"
	told := "told by --out-format " + o.OutFormat
	if !explicit {
		switch _, _, err := records.Detect(o.Out); {
		case o.Out == "-":
			told = "the input's format, for --out -"
		case err == nil:
			told = fmt.Sprintf("told by the extension of --out %s", o.Out)
		default:
			told = fmt.Sprintf("the input's format: --out %s names none", o.Out)
		}
	}
	for _, out := range []struct{ flag, path string }{{"out", o.Out}, {"removed", o.Removed}} {
		if out.path == "" || out.path == "-" {
			continue
		}
		if g, _, err := records.Detect(out.path); err == nil && g != f {
			fix := "or set --out-format and give both files the extension of its format"
			if explicit {
				fix = "or change --out-format"
			}
			return fmt.Errorf("%w: --%s %s is named as a %s file, but the outputs are written as %s (%s): give it the extension .%s, %s", db.ErrInvalidOptions, out.flag, out.path, g, f, told, f, fix)
		}
		if err := records.CheckOutput(out.path, f); err != nil {
			return fmt.Errorf("%w: --%s %w", db.ErrInvalidOptions, out.flag, err)
		}
	}
	return nil
}

// checkPaths refuses standard input as an input, two outputs on standard
// output ("-"), and an output that is an input, another output or a
// directory: by its path, or as the same file under another name (a
// symbolic or hard link, or a path through a linked directory). An input
// that is a link to an output was lost (the output's rename replaced the
// file it names); an output that is a link to an input, or another name
// of it, would only replace that name, but is refused as well: one file
// is never both read and written by a run.
func checkPaths(o *Options) error {
	var seen []pathID
	for _, p := range o.Inputs {
		if p == "-" {
			return fmt.Errorf("%w: standard input cannot be deduplicated (it is read twice): save it to a file", db.ErrInvalidOptions)
		}
		id, err := identify(p)
		if err != nil {
			continue // an input that cannot be found is refused by its reading
		}
		id.what = "the input " + p
		seen = append(seen, id)
	}
	if err := checkShardDirs(o); err != nil {
		return err
	}
	stdout := ""
	for _, out := range []struct{ flag, path string }{{"out", o.Out}, {"removed", o.Removed}, {"clusters", o.Clusters}} {
		switch {
		case out.path == "" || isShardDir(out.path): // checked by checkShardDirs
			continue
		case out.path == "-" && stdout != "":
			return fmt.Errorf("%w: --%s - and --%s - both write to standard output: give one of them a file", db.ErrInvalidOptions, stdout, out.flag)
		case out.path == "-":
			stdout = out.flag
			continue
		}
		id, err := identify(out.path)
		if err != nil {
			return fmt.Errorf("%w: the %s file %s: %w", db.ErrInvalidOptions, out.flag, out.path, err)
		}
		for _, s := range seen {
			if same, alias := id.same(s); same {
				how := ""
				if alias {
					how = " (the same file, through a link)"
				}
				return fmt.Errorf("%w: the %s file %s is %s%s", db.ErrInvalidOptions, out.flag, out.path, s.what, how)
			}
		}
		if id.file != nil && id.file.IsDir() {
			hint := ""
			if out.flag != "clusters" {
				hint = fmt.Sprintf(" (end it with %q to write one shard per input in it)", string(os.PathSeparator))
			}
			return fmt.Errorf("%w: the %s file %s is a directory%s", db.ErrInvalidOptions, out.flag, out.path, hint)
		}
		if id.dir == nil || !id.dir.IsDir() {
			// Found only when the outputs are created, after the load
			// and the pairs.
			return fmt.Errorf("%w: the %s file %s: no directory %s", db.ErrInvalidOptions, out.flag, out.path, filepath.Dir(id.abs))
		}
		id.what = "the " + out.flag + " file " + out.path
		seen = append(seen, id)
	}
	return nil
}

// pathID tells whether two paths name the same file.
type pathID struct {
	what string      // the input or output, for an error
	abs  string      // the absolute path
	file os.FileInfo // the file (links followed); nil when there is none yet
	dir  os.FileInfo // its directory (links followed); nil when there is none
	base string      // the file's name in dir
}

// identify returns the pathID of path.
func identify(path string) (pathID, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return pathID{}, err
	}
	id := pathID{abs: abs, base: filepath.Base(abs)}
	if fi, err := os.Stat(path); err == nil {
		id.file = fi
	}
	if fi, err := os.Stat(filepath.Dir(abs)); err == nil {
		id.dir = fi
	}
	return id, nil
}

// same reports whether a and b name the same file, and whether they do
// under different paths (alias): the same existing file (os.SameFile),
// or, for a file that does not exist yet, the same name in the same
// directory.
func (a pathID) same(b pathID) (same, alias bool) {
	switch {
	case a.abs == b.abs:
		return true, false
	case a.file != nil && b.file != nil:
		return os.SameFile(a.file, b.file), true
	case a.dir != nil && b.dir != nil && a.base == b.base:
		return os.SameFile(a.dir, b.dir), true
	}
	return false, false
}

// round rounds a similarity to 4 decimals, as the command line prints
// them (k ≤ 4096 bits tell at most that many).
func round(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// badExtras are the added fields of a bad record.
func badExtras(err error) []records.Extra {
	return []records.Extra{{Name: FieldCluster, Value: int64(-1)}, {Name: FieldKept, Value: ""}, {Name: FieldSimilarity, Value: 0.0}, {Name: FieldError, Value: err.Error()}}
}

// writeFile reads one input again and writes each record where route says.
func writeFile(ctx context.Context, path string, o *Options, ro records.Options, w *outputs, route func(*records.Record) (bool, []records.Extra, error), sum *Summary) (err error) {
	if path == "-" {
		return fmt.Errorf("%w: standard input cannot be deduplicated (it is read twice): save it to a file", db.ErrInvalidOptions)
	}
	r, err := openInput(path, nil, ro)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := r.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%s: %w", path, cerr)
		}
	}()
	// Outputs that get no record at all take the first input's columns.
	w.kept.SchemaFrom(r, emptyExtras)
	if w.removed != nil {
		w.removed.SchemaFrom(r, emptyExtras)
	}
	start := time.Now()
	for i := 0; ; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if o.Progress != nil {
				done, size := r.Progress()
				o.Progress(Progress{Phase: "write", Records: sum.Kept + sum.Removed, Bytes: done, TotalBytes: size, Elapsed: time.Since(start)})
			}
		}
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		keep, extras, err := route(rec)
		if err != nil {
			return err
		}
		switch {
		case keep:
			sum.Kept++
			err = w.kept.Write(rec, extras)
		default:
			sum.Removed++
			if w.removed == nil {
				continue
			}
			if rec.Err != nil {
				err = w.removed.WriteBad(rec, extras)
			} else {
				err = w.removed.Write(rec, extras)
			}
		}
		if err != nil {
			return err
		}
	}
}

// hasJSONLInput tells whether an input is read as JSON Lines (ro.Format,
// else its extension).
func hasJSONLInput(inputs []string, ro records.Options) bool {
	if ro.Format != records.FormatAuto {
		return ro.Format == records.FormatJSONL
	}
	for _, p := range inputs {
		if f, _, err := records.Detect(p); err == nil && f == records.FormatJSONL {
			return true
		}
	}
	return false
}

// outputFormat returns the format of the outputs.
func outputFormat(o *Options, ro records.Options) (records.Format, error) {
	if o.OutFormat != "" && o.OutFormat != "auto" {
		f, err := records.ParseFormat(o.OutFormat)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", db.ErrInvalidOptions, err)
		}
		return f, nil
	}
	if isShardDir(o.Out) {
		return records.FormatAuto, nil // each shard in its input's format
	}
	if o.Out != "-" {
		if f, _, err := records.Detect(o.Out); err == nil && f != records.FormatAuto {
			return f, nil
		}
	}
	if ro.Format != records.FormatAuto {
		return ro.Format, nil
	}
	for _, p := range o.Inputs {
		if p == "-" {
			return records.FormatJSONL, nil
		}
		if f, _, err := records.Detect(p); err == nil && f != records.FormatAuto {
			return f, nil
		}
	}
	return records.FormatJSONL, nil
}

// outputs are the files a Run writes, under temporary names until commit.
type outputs struct {
	kept, removed *records.Writer // the files (or shards) being written
	clusters      *os.File
	cbuf          *jsonLines
	renames       [][2]string // temporary name, final name
	committed     bool
	shards        *shardPlan // nil: Out and Removed are files

	stdout     io.Writer
	cols       []string // the columns of JSON Lines records (SetColumns), if any
	badRecords bool     // the run has bad records (AddRawColumn)
}

// newOutputs creates the outputs, in format f (FormatAuto for directories
// of shards, whose files are opened input by input: startShard). With
// cols, the outputs have those columns (records.Writer.SetColumns). With
// badRecords (the first pass found some), CSV/TSV or Parquet kept and
// removed outputs get a column fpdb_raw for the original text of the bad
// records (written to the removed output) that their fields cannot hold
// (records.Writer.AddRawColumn): empty in the kept output, which then has
// the removed one's schema.
func newOutputs(o *Options, f, in records.Format, cols []string, badRecords bool) (_ *outputs, err error) {
	w := &outputs{stdout: o.Stdout, cols: cols, badRecords: badRecords}
	defer func() {
		if err != nil {
			w.abort()
		}
	}()
	// The temporary name keeps the extensions, which say the format and
	// the compression.
	temp := func(path string) string {
		path = filepath.Clean(path)
		tmp := filepath.Join(filepath.Dir(path), ".fpdb-part."+filepath.Base(path))
		w.renames = append(w.renames, [2]string{tmp, path})
		return tmp
	}
	if isShardDir(o.Out) {
		rels, err := shardRels(o.Inputs)
		if err != nil {
			return nil, err
		}
		// f is OutFormat's format, or FormatAuto (outputFormat).
		w.shards = &shardPlan{rels: rels, to: f, in: in}
		mkdir := func(path string) (string, error) {
			tmp := temp(path)
			// A directory of this name is left by a run that was killed.
			if err := os.RemoveAll(tmp); err != nil {
				return "", err
			}
			return tmp, os.Mkdir(tmp, 0o755)
		}
		if w.shards.keptDir, err = mkdir(o.Out); err != nil {
			return nil, err
		}
		if o.Removed != "" {
			if w.shards.removedDir, err = mkdir(o.Removed); err != nil {
				return nil, err
			}
		}
	} else {
		kept, removed := "-", ""
		if o.Out != "-" {
			kept = temp(o.Out)
		}
		if o.Removed != "" {
			removed = temp(o.Removed)
		}
		if err := w.openPair(kept, removed, f, cols); err != nil {
			return nil, err
		}
	}
	if o.Clusters != "" {
		if o.Clusters == "-" {
			w.cbuf = newJSONLines(o.Stdout)
		} else {
			if w.clusters, err = os.Create(temp(o.Clusters)); err != nil {
				return nil, err
			}
			w.cbuf = newJSONLines(w.clusters)
		}
	}
	return w, nil
}

// openPair creates the kept output (and the removed one, unless "") in
// format f, with the columns cols if any.
func (w *outputs) openPair(kept, removed string, f records.Format, cols []string) (err error) {
	if w.kept, err = records.Create(kept, f, w.stdout, extraNames); err != nil {
		return err
	}
	if removed != "" {
		if w.removed, err = records.Create(removed, f, w.stdout, extraNames); err != nil {
			return err
		}
		if w.badRecords {
			// Both outputs, so that they have one schema (the kept one's
			// fpdb_raw is empty): read together again, their records fit
			// one output.
			w.removed.AddRawColumn()
			w.kept.AddRawColumn()
		}
		// The output that gets no record has the other's columns.
		w.kept.ShareSchema(w.removed)
	}
	if cols != nil {
		for _, out := range []*records.Writer{w.kept, w.removed} {
			if out != nil {
				if err := out.SetColumns(cols, emptyExtras); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// closePair closes the kept and removed outputs, if open.
func (w *outputs) closePair() error {
	var errs []error
	for _, out := range []**records.Writer{&w.kept, &w.removed} {
		if *out != nil {
			errs = append(errs, (*out).Close())
			*out = nil
		}
	}
	return errors.Join(errs...)
}

// commit closes the outputs and gives them their names (a directory of
// shards replaces the earlier output of its name, if any: replace).
func (w *outputs) commit() error {
	errs := []error{w.closePair()}
	if w.cbuf != nil {
		errs = append(errs, w.cbuf.flush())
	}
	if w.clusters != nil {
		errs = append(errs, w.clusters.Sync(), w.clusters.Close())
		w.clusters = nil
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, r := range w.renames {
		if err := replace(r[0], r[1]); err != nil {
			return err
		}
	}
	w.committed = true
	return nil
}

// replace renames tmp to path. A directory of shards replaces the one
// at path (an earlier output of the same inputs: checkShardDir), which
// is first moved aside, then removed.
func replace(tmp, path string) error {
	fi, err := os.Stat(tmp)
	if err != nil || !fi.IsDir() {
		return os.Rename(tmp, path)
	}
	// An old directory left by a run that stopped between the renames is
	// removed too.
	old := filepath.Join(filepath.Dir(path), ".fpdb-old."+filepath.Base(path))
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil {
		if err := os.Rename(path, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// abort removes the temporary files of an unfinished run.
func (w *outputs) abort() {
	if w.committed {
		return
	}
	w.closePair()
	if w.clusters != nil {
		w.clusters.Close()
	}
	for _, r := range w.renames {
		os.RemoveAll(r[0])
	}
}

// jsonCluster is a line of the clusters file.
type jsonCluster struct {
	Cluster  int          `json:"cluster"`
	Kept     string       `json:"kept"`
	Size     int          `json:"size"`
	Cohesion float64      `json:"cohesion"`
	Members  []jsonMember `json:"members"`
}

// jsonMember is a member of a cluster.
type jsonMember struct {
	ID         string  `json:"id"`
	Similarity float64 `json:"similarity"`
}

// writeClusters writes the clusters, one JSON object per line.
func writeClusters(w *jsonLines, cs []db.Cluster) error {
	if w == nil {
		return nil
	}
	for i, c := range cs {
		jc := jsonCluster{Cluster: i + 1, Kept: c.Keep, Size: len(c.IDs), Cohesion: round(c.Cohesion)}
		for j, id := range c.IDs {
			jc.Members = append(jc.Members, jsonMember{ID: id, Similarity: round(c.Similarities[j])})
		}
		// The kept record first, then by similarity and id.
		slices.SortStableFunc(jc.Members, func(a, b jsonMember) int {
			switch {
			case a.ID == c.Keep:
				return -1
			case b.ID == c.Keep:
				return 1
			}
			if x := cmp.Compare(b.Similarity, a.Similarity); x != 0 {
				return x
			}
			return cmp.Compare(a.ID, b.ID)
		})
		if err := w.write(jc); err != nil {
			return err
		}
	}
	return nil
}

// keyValue is a value of the keep policy's field, exact (an integer beyond
// 2^53, a date to the nanosecond, which one float64 would round): a whole
// part and a fraction of the same sign (math.Modf's, both exact), compared
// in that order.
type keyValue struct {
	whole int64
	frac  float64
}

func (a keyValue) compare(b keyValue) int {
	return cmp.Or(cmp.Compare(a.whole, b.whole), cmp.Compare(a.frac, b.frac))
}

// numberValue reads a JSON number or a numeric string exactly: an int64 as
// it is, another number split into its integer part and its fraction
// (math.Modf: both exact, of the number's sign, so that -0.3 and
// -0.30000000000000004 stay apart); beyond the int64 range the whole part
// saturates and the fraction is the number itself, which orders those
// among themselves.
func numberValue(s string) (keyValue, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return keyValue{whole: n}, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return keyValue{}, false
	}
	switch whole, frac := math.Modf(f); {
	case whole >= math.MaxInt64:
		return keyValue{whole: math.MaxInt64, frac: f}, true
	case whole < math.MinInt64:
		return keyValue{whole: math.MinInt64, frac: f}, true
	default:
		return keyValue{whole: int64(whole), frac: frac}, true
	}
}

// fieldValue reads the keep policy's field from a record's kept fields (a
// JSON object): a number, a numeric string or a date (RFC 3339 or
// YYYY-MM-DD, as Unix seconds and nanoseconds), exactly; ok is false when
// the record has no such value. has tells whether the record has the field
// at all (with any value, null included).
func fieldValue(meta []byte, field string) (v keyValue, ok, has bool) {
	if len(meta) == 0 {
		return v, false, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return v, false, false
	}
	raw, has := m[field]
	if !has {
		return v, false, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil {
		return v, false, true
	}
	switch x := x.(type) {
	case json.Number:
		v, ok = numberValue(string(x))
		return v, ok, true
	case string:
		s := strings.TrimSpace(x)
		if v, ok := numberValue(s); ok {
			return v, true, true
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
			if t, err := time.Parse(layout, s); err == nil {
				return keyValue{whole: t.Unix(), frac: float64(t.Nanosecond()) / 1e9}, true, true
			}
		}
	case bool:
		if x {
			return keyValue{whole: 1}, true, true
		}
		return keyValue{}, true, true
	}
	return v, false, true
}
