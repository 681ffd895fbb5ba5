package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/spf13/cobra"
)

// addOptions are the flags and arguments of "fpdb add".
type addOptions struct {
	*globalOptions
	id        string
	threshold float64
	reject    bool
	json      bool
	source    string
	paths     []string

	bulk         bool
	batch        int
	thresholdSet bool // --threshold was given
	idSet        bool // --id was given (perhaps empty)
	forQuery     bool // collect's walks are query's (its notices say so)
	replace      bool

	exclude, include []string
	filesFrom        string
	null             bool
	follow           bool

	quiet    bool // --quiet: no per-document output
	dupsOnly bool // --dups-only: per-document output only for near duplicates
	progress bool // --progress: show progress even when stderr is not a terminal

	creation creationFlags // --k, --group-bits, --shingle-width, --seed
	text     textFlags
	records  recordFlags // --id-field, --text-field, --keep-fields, --strict, --restart
}

// addInput is one document to add.
type addInput struct {
	path string // the file, or "-" for standard input
	id   string
	err  error // why path cannot be read, found while collecting
}

// jsonAddSummary is the JSON summary printed by add for each document.
type jsonAddSummary struct {
	Query     string `json:"query"`
	Stored    bool   `json:"stored"`
	Replaced  bool   `json:"replaced"`
	Unchanged bool   `json:"unchanged"`
	Rejected  bool   `json:"rejected"` // not stored: --reject found a near duplicate
	Matches   int    `json:"matches"`
}

func newAddCommand(g *globalOptions) *cobra.Command {
	o := &addOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "add [flags] PATH...|-",
		Short: "Store documents and report their near duplicates",
		Long: `Add fingerprints each document, reports the stored documents whose estimated
resemblance to it is at least --threshold, then stores it (unless --reject is
given and near duplicates were found). The check and the store are atomic.
The database is created if it does not exist.

Documents are checked in order, each against the stored documents and the
documents added before it in the same run. They are written in batches (up
to --batch documents, 256 by default, or 16 MB; each batch one atomic,
synced write; with --server, one request of at most 1 000): the files in
batches as they come, the records of datasets in batches of those read
while the previous batch was written, so that a slow stream of records is
added as each one comes. A crash loses no document whose outcome was
printed. With --strict, one record per write.

A PATH is a file, a directory (its regular files are added, recursively, in
sorted order) or "-" for standard input, which requires --id. A document's id
is, by default, its path as given, cleaned and with forward slashes; adding an
id that is already stored replaces that document — unless its content is
unchanged: then it is left as it is (its time added stays) and reported as
"ID: unchanged"; --replace stores it anew all the same. A path given twice is
added once.

Walking a directory skips the database's own directory (and any other fpdb
database), hidden files and directories (names starting with "."; .git, .hg
and .svn among them) and, unless --follow is given, symbolic links (counted
in a note on standard error). --exclude GLOB leaves out the files whose name
or path matches GLOB; with --include GLOB only matching files are added (both
repeatable, path.Match syntax, matched against the base name, the path under
the directory given and the path). --files-from FILE reads the paths from FILE ("-": standard input), one
per line as written (not unquoted, unlike delete's ids), or NUL-separated
with -0 (as find -print0 writes them).

An input that cannot be added (missing or unreadable, binary, not in the
encoding --encoding names, without any word) is reported on standard error as "fpdb: add PATH: ERROR"
and the other inputs are still added.

Output: for each document with near duplicates, a line "ID: N near
duplicates" followed by one line per match (closest first), then "ID: stored"
or "ID: rejected" (an id holding a control character, such as an escape,
is written Go-quoted, as "fpdb list" writes it). With --json, one JSON
object per line instead (ids as they are): for each match

  {"query": "ID", "id": "MATCH-ID", "similarity": 0.906, "hamming": 24, "exact": false}

("query" is the added document's id, "exact" reports identical normalized
text) and, after its matches, one summary per document

  {"query": "ID", "stored": true, "replaced": false, "unchanged": false, "rejected": false, "matches": 2}

--dups-only prints only the documents that have near duplicates; --quiet
prints no line per document (errors and the summary only).

Every add ends with a summary line on standard error (so that standard
output stays parseable), e.g.

  add: 14 inputs: 12 stored (0 replaced), 0 unchanged, 1 rejected, 1 failed; 4 with near duplicates in 35ms

When standard error is a terminal and more than one file is added, or with
--progress, a progress line is shown there: documents done of the total, a
percentage, the rate and an estimate of the time left (on a terminal it is
redrawn in place; otherwise one line every 2 s). --quiet hides it unless
--progress is given.

On a new database, --k, --group-bits, --shingle-width and --seed set its
creation parameters (see "fpdb stats"); on an existing one a value that
differs from the stored one is an error naming both, and an equal one is
accepted.

--bulk loads many documents fast: no near-duplicate check (find them
afterwards with "fpdb pairs" or "fpdb clusters"), texts fingerprinted on all
cores, and --batch documents written per atomic batch (a crash leaves each
batch wholly present or absent). The posting lists are written afterwards,
once per key for up to a million documents, and before the summary, so its
rate counts them. Inputs that cannot be added are reported on standard error
as above; at the end the summary is printed on standard error, e.g. for
4 006 Debian texts:

  bulk: 4006 stored (0 replaced), 0 unchanged, 0 skipped in 450ms, 8894 docs/s

(skipped inputs are counted by reason, e.g. "2 skipped (1 binary or not
UTF-8, 1 no words)").

With --json the summary is also written to standard output as one object
{"stored", "replaced", "unchanged", "skipped", "skipped_reasons", "seconds",
"docs_per_second"}. Exit status 0, or 3 when an input was skipped (2 when
one failed for another reason than its own content).

Datasets: PATHs that are JSON Lines, CSV, TSV or Parquet files (by
extension: .jsonl .ndjson .csv .tsv .parquet, also compressed .gz .zst .bz2)
or directories holding only such files (hidden files aside), or any PATHs
with --format jsonl|csv|tsv|parquet (which also reads such files in
directories and globs, and "-"), are read one document per record: its id
from --id-field (default "id"; "" uses the position FILE:LINE), its text
from --text-field (default "text"), dotted paths for nested JSON;
--keep-fields stores further fields as its source. A bad record (missing or
non-string field, invalid UTF-8, too long, malformed; TSV follows CSV quoting) is reported as
"fpdb: add FILE:LINE: ..." and skipped (--strict stops at it). A dataset
file that cannot be read to its end (corrupt, truncated) is reported as
"fpdb: add FILE: ..." after its records read before are added, and the
other files are still added; the summary counts it ("1 input could not be
read"; with --bulk --json: "inputs_failed", and "failed_inputs" with each
one's path, error, records read and stored). With --bulk,
each batch also records how far its file is stored, so a killed load run
again resumes there, and a file an earlier run stored to its end is skipped
while it is unchanged (its size and modification time), even if documents
it stored were deleted since: --restart reads everything anew. See "fpdb
dedup".

Exit status:
  0  every document was stored and no near duplicate was found
  1  near duplicates were found for at least one document
  2  an error: bad flags, a database problem (wins over 1 and 3)
  3  an input could not be read or fingerprinted (missing, unreadable,
     binary, no words); the other inputs were added (wins over 1)`,
		Example: `  fpdb add a.txt b.txt
  fpdb add --threshold 0.9 corpus/
  fpdb add --reject --json new.txt
  fpdb add --bulk crawl/
  fpdb add --bulk --id-field url data/*.jsonl.zst
  fpdb add --exclude '*.log' --include '*.txt' --include '*.html' docs/
  find crawl -newer stamp -type f -print0 | fpdb add --files-from - -0
  curl -s https://example.com/x.txt | fpdb add --id example-x --source https://example.com/x.txt -`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && o.filesFrom == "" {
				return usageErrorf("add: no PATH given (use - for standard input)")
			}
			if o.null && o.filesFrom == "" {
				return usageErrorf("add: -0 needs --files-from")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.paths = args
			if !cmd.Flags().Changed("batch") {
				o.batch = checkedBatch
				if o.bulk {
					o.batch = bulkBatch
				}
			}
			if o.remote() {
				o.batch = min(o.batch, serverBatch)
			}
			o.thresholdSet = cmd.Flags().Changed("threshold")
			o.idSet = cmd.Flags().Changed("id")
			return o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.id, "id", "", "document `ID` (only with a single file or -; default: the path)")
	f.Float64Var(&o.threshold, "threshold", defaultThreshold, "minimum resemblance `R` of a near duplicate, in (0, 1]")
	f.BoolVar(&o.reject, "reject", false, "do not store a document that has near duplicates")
	f.BoolVar(&o.json, "json", false, "print JSON lines")
	f.StringVar(&o.source, "source", "", "`SOURCE` recorded with the documents (default: the path)")
	f.BoolVar(&o.bulk, "bulk", false, "load fast in atomic batches, without the near-duplicate check")
	f.IntVar(&o.batch, "batch", 0, "most documents per atomic, synced write (`N`; default 1000 with --bulk, else 256; 1 checks and syncs each document on its own)")
	f.BoolVar(&o.replace, "replace", false, "store documents anew even when their content is unchanged")
	f.StringArrayVar(&o.exclude, "exclude", nil, "leave out files whose name or path matches `GLOB` (repeatable)")
	f.StringArrayVar(&o.include, "include", nil, "add only files whose name or path matches `GLOB` (repeatable)")
	f.StringVar(&o.filesFrom, "files-from", "", "read the paths to add from `FILE` (- for standard input), one per line")
	f.BoolVarP(&o.null, "null", "0", false, "with --files-from: paths are separated by NUL bytes")
	f.BoolVar(&o.follow, "follow", false, "follow symbolic links when walking directories")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print only errors and the final summary")
	f.BoolVar(&o.dupsOnly, "dups-only", false, "print only the documents that have near duplicates (and the summary)")
	f.BoolVar(&o.progress, "progress", false, "show progress on standard error even when it is not a terminal")
	o.creation.register(f)
	o.text.format.allowRecords = true
	o.text.register(f)
	o.records.register(f)
	return cmd
}

// validate checks the flags against the arguments.
func (o *addOptions) validate() error {
	if err := checkThreshold(o.threshold); err != nil {
		return err
	}
	if o.bulk {
		switch {
		case o.reject:
			return usageErrorf("add: --bulk does not check for near duplicates, so --reject cannot be used")
		case o.thresholdSet:
			return usageErrorf("add: --bulk does not check for near duplicates, so --threshold cannot be used (run fpdb pairs afterwards)")
		case o.dupsOnly:
			return usageErrorf("add: --bulk does not check for near duplicates, so --dups-only cannot be used")
		}
	}
	if o.quiet && o.dupsOnly {
		return usageErrorf("add: --quiet and --dups-only cannot be used together")
	}
	if err := o.validateRemote(); err != nil {
		return err
	}
	if err := o.creation.validate(); err != nil {
		return err
	}
	if o.batch < 1 || o.batch > 1_000_000 {
		return usageError(&flagValueError{flag: "batch", value: strconv.Itoa(o.batch), reason: "must be in [1, 1000000]"})
	}
	stdin := 0
	for _, p := range o.paths {
		if p == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return usageErrorf("add: - (standard input) given more than once")
	}
	if o.idSet {
		// A bad id is the command line's fault, not the input's: said
		// before any input is read or the database is created.
		if o.id == "" {
			return usageErrorf("add: --id: empty id")
		}
		if err := db.ValidID(o.id); err != nil {
			return usageErrorf("add: --id: %w", err)
		}
	}
	if stdin == 1 && o.id == "" && o.text.format.records == "" {
		return usageErrorf("add: --id is required to add standard input (-)")
	}
	if o.id != "" {
		if o.filesFrom != "" {
			// Its paths would all get that id: all but one dropped.
			return usageErrorf("add: --id %q needs a single file or -, not --files-from", o.id)
		}
		if len(o.paths) != 1 {
			return usageErrorf("add: --id %q needs a single file or -, got %d paths", o.id, len(o.paths))
		}
		if p := o.paths[0]; p != "-" {
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				return usageErrorf("add: --id %q needs a single file or -, but %s is a directory", o.id, p)
			}
		}
	}
	return nil
}

// addReport tracks the outcome of an add run.
type addReport struct {
	stderr io.Writer
	// verb names the command in error lines ("add" when empty).
	verb     string
	progress *progress
	// ttyOut: standard output is the terminal that shows the progress
	// line, which must be hidden while a result is printed.
	ttyOut bool
	inputs int // inputs seen, including the failed ones
	failed int // inputs that could not be added
	// failures tells inputs at fault (exit status 3) from other failures.
	failures inputFailures
	dups     int // documents with near duplicates
	added    int // documents handled (stored, rejected or unchanged)

	stored    int // documents stored
	replaced  int // of them, documents that replaced a stored one
	unchanged int // documents left as they were
	rejected  int // documents not stored (--reject)
}

// summary returns the final line of a (non-bulk) add of total items (noun:
// "input", or "record" for a dataset) that took el; failed of them could
// not be added, and unread, when not empty, follows their count.
func (r *addReport) summary(total int, noun string, failed int, unread string, el time.Duration) string {
	return fmt.Sprintf("add: %s: %d stored (%d replaced), %d unchanged, %d rejected, %d failed%s; %d with near duplicates in %v",
		plural(total, noun), r.stored, r.replaced, r.unchanged, r.rejected, failed, unread, r.dups, el.Round(time.Millisecond))
}

// fail reports a bad input; id is its document id, if known.
func (r *addReport) fail(path, id string, err error) {
	r.failed++
	r.failures.note(path, err)
	r.progress.hide()
	defer r.progress.show()
	verb := cmp.Or(r.verb, "add")
	err = newOpError(verb+" "+path, pathError(err, path), fmt.Sprintf("%s %q", verb, id), verb)
	fmt.Fprintf(r.stderr, "fpdb: %s\n", errorText(err))
}

func (o *addOptions) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	if err := o.validate(); err != nil {
		return err
	}
	if !o.remote() {
		if _, err := o.dir(); err != nil {
			return err
		}
	}
	if recs, err := o.recordMode(); err != nil {
		return err
	} else if recs {
		return o.runRecords(ctx, stdin, stdout, stderr)
	}
	rep := &addReport{stderr: stderr}
	inputs, err := o.collect(stdin, stderr)
	if err != nil {
		return failure(err)
	}
	if len(inputs) == 0 {
		return failure(errors.New("add: no files to add (directory walks skip hidden files and directories, fpdb databases, and files --include/--exclude leave out)"))
	}
	if !slices.ContainsFunc(inputs, func(in addInput) bool { return in.err == nil }) {
		// Nothing readable: report, with the summary, and do not create
		// a database.
		if o.bulk {
			return o.runBulk(ctx, nil, inputs, stdin, stdout, rep)
		}
		for _, in := range inputs {
			rep.fail(in.path, "", in.err)
		}
		fmt.Fprintln(stderr, rep.summary(len(inputs), "input", rep.failed, "", 0))
		return rep.failures.failure(fmt.Errorf("add: %d of %s failed", len(inputs), plural(len(inputs), "input")))
	}

	start := time.Now()
	total := len(inputs)
	d, addEach, err := o.openAdder()
	if err != nil {
		return failure(err)
	}
	if d != nil {
		defer o.closeAdder(d, &err)
	}

	if o.progress || (!o.quiet && len(inputs) > 1 && isTerminal(stderr)) {
		rep.progress = newProgress(stderr, progressNow).withTotal(len(inputs))
		if isTerminal(stderr) {
			rep.ttyOut = isTerminal(stdout)
		} else {
			rep.progress.asLog()
		}
	}
	defer rep.progress.clear()
	if o.bulk {
		return o.runBulk(ctx, d, inputs, stdin, stdout, rep)
	}

	var enc *json.Encoder
	if o.json {
		enc = newJSONEncoder(stdout)
	}
	// The files go in batches (db.AddEach, or a server's checked batch:
	// each checked in turn, one write for all).
	opts := &db.AddOptions{Threshold: o.threshold, Reject: o.reject}
	br := batchReport{
		bad:  func(path string, err error) { rep.fail(path, "", err) },
		done: func(addItem) { rep.progress.update(rep.added) },
		hide: func() func() { return func() {} }, // printAdd hides it
	}
	wctx, cancel := context.WithCancel(ctx)
	warm := addWarm(d)
	defer func() {
		cancel()
		warm.wait() // before closeDB, deferred earlier
	}()
	for len(inputs) > 0 && ctx.Err() == nil {
		batch := o.fileBatch(inputs, o.batch, stdin)
		inputs = inputs[len(batch):]
		warm.after(wctx, int64(rep.inputs+len(batch)))
		if err := o.addBatch(ctx, addEach, opts, batch, stdout, enc, rep, br); err != nil && ctx.Err() == nil {
			rep.progress.clear()
			return failure(err) // named by addBatch
		}
	}
	rep.progress.clear()
	fmt.Fprintln(stderr, rep.summary(total, "input", rep.failed, "", time.Since(start)))
	if ctx.Err() != nil {
		return failure(fmt.Errorf("add: interrupted: %d of %s done", rep.added+rep.failed, plural(total, "input")))
	}
	switch {
	case rep.failed > 0:
		return rep.failures.failure(fmt.Errorf("add: %d of %s failed", rep.failed, plural(rep.inputs, "input")))
	case rep.dups > 0:
		return &exitError{code: exitDuplicates}
	}
	return nil
}

// linksUp reports whether the symbolic link at path names a directory
// that holds it (its own directory or one above): following it would walk
// that directory again, inside itself, and add every file under it twice.
// A link to another part of the tree is followed: its files are copies
// under other names.
func linksUp(path string) bool {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return false
	}
	return dir == target || strings.HasPrefix(dir, strings.TrimSuffix(target, string(filepath.Separator))+string(filepath.Separator))
}

// collect expands the PATH arguments (and --files-from) into the
// documents to add, in order, once each. A path that cannot be read is kept
// with its error, to be reported in turn.
func (o *addOptions) collect(stdin io.Reader, stderr io.Writer) ([]addInput, error) {
	paths := o.paths
	if o.filesFrom != "" {
		more, err := o.readFilesFrom(stdin)
		if err != nil {
			return nil, err
		}
		paths = append(slices.Clone(paths), more...)
	}
	var inputs []addInput
	seen := map[string]bool{}
	links, datasets := 0, 0
	add := func(path string) {
		id := o.id
		if id == "" {
			id = filepath.ToSlash(filepath.Clean(path))
		}
		if seen[id] {
			return // given twice: added once, whatever --batch
		}
		seen[id] = true
		var err error
		if o.id == "" && !o.forQuery {
			if err = db.ValidID(id); err != nil {
				// Not UTF-8 (a name in another encoding), or too long.
				err = fmt.Errorf("%w (the path is the document's id: rename the file, or add it alone with --id ID)", err)
			}
		}
		inputs = append(inputs, addInput{path: path, id: id, err: err})
	}
	dbAbs, _ := filepath.Abs(o.dbDir)
	for _, p := range paths {
		if p == "-" {
			add(p)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			inputs = append(inputs, addInput{path: p, err: err})
			continue
		}
		if !fi.IsDir() {
			add(p)
			continue
		}
		visited := map[string]bool{}
		var walk func(dir string)
		walk = func(dir string) {
			if real, err := filepath.EvalSymlinks(dir); err == nil {
				if visited[real] {
					return // a symbolic link loop
				}
				visited[real] = true
			}
			start := dir
			if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				start = dir + string(filepath.Separator) // WalkDir then follows it
			}
			// WalkDir visits the entries of each directory in lexical order.
			_ = filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					inputs = append(inputs, addInput{path: path, err: err})
					return nil
				}
				if path != start && strings.HasPrefix(d.Name(), ".") {
					if d.IsDir() {
						return filepath.SkipDir
					}
					return nil
				}
				if d.IsDir() {
					if isDatabaseDir(path, dbAbs) {
						return filepath.SkipDir
					}
					return nil
				}
				if d.Type()&fs.ModeSymlink != 0 {
					if !o.follow {
						links++
						return nil
					}
					fi, err := os.Stat(path)
					switch {
					case err != nil:
						inputs = append(inputs, addInput{path: path, err: err})
					case fi.IsDir():
						if !linksUp(path) {
							walk(path)
						}
					case fi.Mode().IsRegular() && o.wanted(p, path):
						add(path)
					}
					return nil
				}
				if d.Type().IsRegular() && o.wanted(p, path) {
					add(path)
					if isRecordFile(path) {
						datasets++
					}
				}
				return nil
			})
		}
		walk(p)
	}
	if links > 0 {
		fmt.Fprintf(stderr, "fpdb: add: %s skipped (--follow follows them)\n", plural(links, "symbolic link"))
	}
	switch {
	case datasets > 0 && o.forQuery:
		fmt.Fprintf(stderr, "fpdb: add: %s in the directories, each queried whole as one document (a directory of dataset files alone, or --format, queries each record)\n", plural(datasets, "dataset file"))
	case datasets > 0:
		fmt.Fprintf(stderr, "fpdb: add: %s among the documents of the directories, each added whole as one document "+
			"(a directory of dataset files alone, or --format, reads one document per record)\n", plural(datasets, "dataset file"))
	}
	return inputs, nil
}

// wanted applies --exclude and --include to a file found by walking the
// directory root: a glob may match its base name, its path under root or
// its path as found.
func (o *addOptions) wanted(root, file string) bool {
	names := []string{filepath.Base(file), filepath.ToSlash(file)}
	if rel, err := filepath.Rel(root, file); err == nil {
		names = append(names, filepath.ToSlash(rel))
	}
	match := func(globs []string) bool {
		for _, g := range globs {
			for _, n := range names {
				if ok, _ := path.Match(g, n); ok {
					return true
				}
			}
		}
		return false
	}
	if match(o.exclude) {
		return false
	}
	return len(o.include) == 0 || match(o.include)
}

// isDatabaseDir reports whether dir is the database (its absolute path is
// dbAbs) or another fpdb database (it holds fpdb's lock file).
func isDatabaseDir(dir, dbAbs string) bool {
	if abs, err := filepath.Abs(dir); err == nil && abs == dbAbs {
		return true
	}
	_, err := os.Stat(filepath.Join(dir, "FPDB.LOCK"))
	return err == nil
}

// readFilesFrom reads the paths of --files-from, one per line or
// NUL-separated with -0.
func (o *addOptions) readFilesFrom(stdin io.Reader) ([]string, error) {
	r := stdin
	if o.filesFrom != "-" {
		f, err := os.Open(o.filesFrom)
		if err != nil {
			return nil, fmt.Errorf("add: --files-from: %w", err)
		}
		defer f.Close()
		r = f
	}
	paths, err := readLines(r, o.null)
	if err != nil {
		return nil, fmt.Errorf("add: --files-from %s: %w", o.filesFrom, err)
	}
	return paths, nil
}

// isFatal reports whether an error of one document means that the others
// cannot be added either.
func isFatal(err error) bool {
	return errors.Is(err, db.ErrClosed) || errors.Is(err, db.ErrReadOnly) || errors.Is(err, db.ErrImportIncomplete) ||
		errors.Is(err, db.ErrIDSpaceExhausted) || errors.Is(err, db.ErrCorrupt) || isRemoteFatal(err)
}

// adder adds one document: a server's (remoteAdder).
type adder func(ctx context.Context, in db.Input, o *db.AddOptions) (*db.AddResult, error)

// validateRemote refuses, with --server, the flags that concern a local
// database only.
func (o *addOptions) validateRemote() error {
	if !o.remote() {
		return nil
	}
	if o.bulk {
		return usageErrorf("add: --bulk loads a local database and cannot be used with --server (a server adds each document with the check)")
	}
	for _, name := range []string{"k", "group-bits", "shingle-width", "seed", "normalize-version", "no-texts", "no-log"} {
		if o.creation.given(name) {
			return usageErrorf("add: --%s sets a new local database's parameters and cannot be used with --server", name)
		}
	}
	return nil
}

// openAdder opens what adds the documents: the server's checked batches
// with --server, else the local database (for a bulk load with --bulk),
// which the caller closes, and its AddEach.
func (o *addOptions) openAdder() (*db.DB, eachFunc, error) {
	if o.remote() {
		c, err := o.client()
		if err != nil {
			return nil, nil, err
		}
		return nil, remoteEach(c, remoteAdder(c)), nil
	}
	mode := openCreate
	if o.bulk {
		mode = openBulk
	}
	d, err := o.openDBWith(mode, &o.creation)
	if err != nil {
		return nil, nil, err
	}
	return d, d.AddEach, nil
}

// closeAdder closes d, the database of an add, with closeMadeDB: an add
// that made it and fails without a document stored leaves no database.
func (o *addOptions) closeAdder(d *db.DB, errp *error) {
	closeMadeDB(d, errp, o.stderr)
}

// fileBatch returns the documents of the first inputs to add in one
// write: up to most of them, their files not over maxBatchBytes in all
// (the first one aside), standard input (-) alone.
func (o *addOptions) fileBatch(inputs []addInput, most int, stdin io.Reader) []addItem {
	var batch []addItem
	var bytes int64
	for _, in := range inputs {
		if len(batch) == most || len(batch) > 0 && in.path == "-" {
			break
		}
		it := addItem{pos: in.path, bad: in.err}
		it.doc = db.Input{ID: in.id, Source: o.source, ReplaceUnchanged: o.replace, TextOptions: o.text.options(in.path)}
		if in.path == "-" {
			it.doc.Reader = stdin
			return append(batch, it)
		}
		if fi, err := os.Stat(in.path); err == nil {
			if bytes += fi.Size(); len(batch) > 0 && bytes > maxBatchBytes {
				break
			}
		}
		path := in.path
		it.doc.Open = func() (io.ReadCloser, error) { return os.Open(path) }
		if it.doc.Source == "" {
			it.doc.Source = path
		}
		batch = append(batch, it)
	}
	return batch
}

// maxBatchBytes bounds the size of the files (or of the texts of records)
// add checks and stores in one write: they are held in memory until it.
const maxBatchBytes = 16 << 20

// printAdd counts the outcome res of the add of the document id on rep and
// prints it (unless --quiet, or --dups-only and it has no match).
func (o *addOptions) printAdd(id string, res *db.AddResult, stdout io.Writer, enc *json.Encoder, rep *addReport) error {
	rep.added++
	if len(res.Matches) > 0 {
		rep.dups++
	}
	switch {
	case res.Unchanged:
		rep.unchanged++
	case !res.Stored:
		rep.rejected++
	default:
		rep.stored++
		if res.Replaced {
			rep.replaced++
		}
	}
	if o.quiet || (o.dupsOnly && len(res.Matches) == 0) {
		return nil
	}
	if rep.ttyOut {
		rep.progress.hide()
		defer rep.progress.show()
	}
	if enc != nil {
		for _, m := range res.Matches {
			if err := enc.Encode(newJSONMatch(id, m)); err != nil {
				return err
			}
		}
		return enc.Encode(jsonAddSummary{Query: id, Stored: res.Stored, Replaced: res.Replaced, Unchanged: res.Unchanged,
			Rejected: !res.Stored && !res.Unchanged, Matches: len(res.Matches)})
	}
	if n := len(res.Matches); n > 0 {
		noun := "near duplicates"
		if n == 1 {
			noun = "near duplicate"
		}
		fmt.Fprintf(stdout, "%s: %d %s\n", tsvField(id), n, noun)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		for _, m := range res.Matches {
			fmt.Fprintf(tw, "  %s\n", formatMatch(m))
		}
		tw.Flush()
	}
	status := "stored"
	switch {
	case res.Unchanged:
		status = "unchanged"
	case !res.Stored:
		status = "rejected"
	case res.Replaced:
		status = "stored (replaced the previous version)"
	}
	_, err := fmt.Fprintf(stdout, "%s: %s\n", tsvField(id), status)
	return err
}
