package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/dedup"
	"github.com/fpdb/fpdb/internal/report"
)

// defaultThreshold is the default minimum resemblance of add and query.
const defaultThreshold = 0.7

// openMode says how a command opens the database.
type openMode int

const (
	// openCreate opens the database for writing, creating it if needed.
	openCreate openMode = iota
	// openExisting opens an existing database for writing.
	openExisting
	// openReadOnly opens an existing database for reading.
	openReadOnly
	// openBulk is openCreate with settings for bulk loads (postings
	// deferred and written once per key, larger memtables).
	openBulk
)

// bulkMemTableSize is the memtable size of bulk loads.
const bulkMemTableSize = 64 << 20

// openDB opens the database in --db. Unless mode is openCreate, a missing
// directory is an error and is never created.
func (g *globalOptions) openDB(mode openMode) (*db.DB, error) {
	return g.openDBWith(mode, nil)
}

// openDBWith is openDB with the creation parameters of c, if not nil.
func (g *globalOptions) openDBWith(mode openMode, c *creationFlags) (*db.DB, error) {
	dir, err := g.dir()
	if err != nil {
		return nil, err
	}
	opts := &db.Options{LockWait: g.wait}
	switch mode {
	case openExisting:
		opts.ErrorIfNotExist = true
	case openReadOnly:
		opts.ErrorIfNotExist = true
		opts.ReadOnly = true
	case openBulk:
		opts.MemTableSize = bulkMemTableSize
		opts.BulkLoad = true
	}
	if mode != openCreate && mode != openBulk {
		// Belt and braces: never let a read of a mistyped path leave an
		// empty directory behind.
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, g.openError(fmt.Errorf("%w: %s", db.ErrNotExist, dir), mode, dir)
		}
	}
	// The db package's errors name the directory already.
	opened := func(d *db.DB, err error) (*db.DB, error) {
		if err == nil {
			g.warnUnfinishedImport(d, dir)
		}
		return d, g.openError(err, mode, dir)
	}
	if opts.LockWait > 0 {
		// Held by another process? Then say so while waiting.
		once := opts.Clone()
		once.LockWait = 0
		d, err := c.open(dir, once)
		if !errors.Is(err, db.ErrLocked) {
			return opened(d, err)
		}
		defer g.noticeWait(dir)()
	}
	return opened(c.open(dir, opts))
}

// warnUnfinishedImport says on standard error that d, opened from dir,
// holds an import that did not finish, whose documents answer queries as
// if they were all: except to the commands that say so themselves (stats,
// check) or finish it (import).
func (g *globalOptions) warnUnfinishedImport(d *db.DB, dir string) {
	switch g.command {
	case "fpdb stats", "fpdb check", "fpdb check --repair", "fpdb import":
		return
	}
	if st := d.Stats(); st.ImportIncomplete && g.stderr != nil {
		fmt.Fprintf(g.stderr, "fpdb: warning: an import into %s did not finish: it holds the first %s of an export (import the same export again to finish it)\n", dir, nDocs(st.Docs))
	}
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// openError adds to an error of the open of dir in mode what to do.
func (g *globalOptions) openError(err error, mode openMode, dir string) error {
	switch {
	case errors.Is(err, db.ErrNotExist) && g.command != "fpdb tune": // tune says what it needs
		// A mistyped --db, or a command run in another directory than
		// the add that made ./fpdb-data.
		return fmt.Errorf("%w (fpdb add creates a database; --db DIR or $%s names another)", err, envDB)
	case errors.Is(err, db.ErrLocked) && mode != openBulk && g.remoteCapable:
		// This command also works through a server.
		return fmt.Errorf("%w; if it is fpdb serve, work through it: --server URL", err)
	case mode != openReadOnly && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) && isDir(dir):
		// A database this user may read but not write: the commands
		// that only read work.
		return fmt.Errorf("%w (%s opens the database for writing and needs write access to %s; commands that only read it, such as query, get, list, stats and export, work)",
			err, cmp.Or(g.command, "this command"), dir)
	}
	return err
}

// lockNotice is how long an open waits for a database another process
// holds before it says so on standard error: a pipeline's other end
// (fpdb clusters … | fpdb delete -) lets go well before.
const lockNotice = time.Second

// noticeWait says on standard error that the open of dir is waiting for
// the process that holds it, once it has waited lockNotice, unless the
// returned function is called first.
func (g *globalOptions) noticeWait(dir string) (done func()) {
	if g.wait <= lockNotice || g.stderr == nil {
		return func() {}
	}
	printed := make(chan struct{})
	t := time.AfterFunc(lockNotice, func() {
		defer close(printed)
		fmt.Fprintf(g.stderr, "fpdb: waiting up to %v (--wait) for %s: another fpdb process holds it\n", g.wait, dir)
	})
	return func() {
		if !t.Stop() {
			<-printed // the notice is written before anything else is
		}
	}
}

// errEmptyDB is the sentinel of an empty --db or $FPDB_DB (emptyDBError).
var errEmptyDB = errors.New("empty database directory")

// emptyDBError is an empty database directory; env says it came from an
// empty $FPDB_DB rather than from --db "".
type emptyDBError struct{ env bool }

func (e *emptyDBError) Error() string {
	if e.env {
		return "$" + envDB + " is set but empty: set it to a database directory, or unset it to use " + defaultDBDir
	}
	return "--db is empty: give a database directory (e.g. --db " + defaultDBDir + ")"
}

// Is reports errEmptyDB.
func (e *emptyDBError) Is(target error) bool { return target == errEmptyDB }

// dir returns the database directory, or a usage error when it is empty
// (--db "", or $FPDB_DB set to "" and no --db), naming where the empty
// value came from.
func (g *globalOptions) dir() (string, error) {
	if g.dbDir != "" {
		return g.dbDir, nil
	}
	return "", usageError(&emptyDBError{env: g.dbFlag != nil && !g.dbFlag.Changed})
}

// dbGiven reports whether a database was named: by --db or $FPDB_DB.
func (g *globalOptions) dbGiven() bool {
	_, env := os.LookupEnv(envDB)
	return env || g.dbFlag != nil && g.dbFlag.Changed
}

// nDocs says "1 document", "2 documents".
func nDocs(n int) string { return plural(n, "document") }

// plural says "1 input", "2 inputs": n and the noun, with an s unless n
// is 1. The noun must take a plain s.
func plural[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// pluralWord returns noun, with an s unless n is 1.
func pluralWord(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// closeDB closes d and, when *errp is nil and Close fails, sets *errp to a
// failure. Use it deferred.
func closeDB(d *db.DB, errp *error) {
	if err := d.Close(); err != nil && *errp == nil {
		*errp = failure(fmt.Errorf("close database: %w", err))
	}
}

// closeMadeDB closes d, the database of a command that may make it (add,
// template add, dedup), as closeDB does. When Open made it
// (db.DB.Created) and the command fails (*errp set) without a document
// stored (every record bad, a wrong --format or --id-field, a binary
// template), its files are deleted too (db.DB.CloseDiscardEmpty): a
// mistake in a first command leaves no empty database behind, whose
// parameters (the defaults, or --k and the like as given) the corrected
// command would have to match. Use it deferred.
func closeMadeDB(d *db.DB, errp *error, stderr io.Writer) {
	if !d.Created() || *errp == nil {
		closeDB(d, errp)
		return
	}
	// The command's error is the one to return; one of the close (or of
	// the deletion) is printed here, as a join would not show it.
	if _, err := d.CloseDiscardEmpty(); err != nil && stderr != nil {
		fmt.Fprintf(stderr, "fpdb: close database: %v\n", err)
	}
}

// checkThreshold validates the value of a --threshold flag.
func checkThreshold(r float64) error {
	if !(r > 0 && r <= 1) {
		return usageError(&flagValueError{flag: "threshold", value: strconv.FormatFloat(r, 'g', -1, 64), reason: "must be in (0, 1]"})
	}
	return nil
}

// errFlagValue is the sentinel of every bad flag value (flagValueError).
var errFlagValue = errors.New("invalid flag value")

// flagValueError is a bad value of a flag, printed as
// `invalid value "abc" for --threshold: not a number`.
type flagValueError struct {
	flag   string // the flag's name, without dashes
	value  string // the value as given
	reason string // what is wrong with it
	cause  error  // the parser's error, if any
}

func (e *flagValueError) Error() string {
	return fmt.Sprintf("invalid value %q for --%s: %s", e.value, e.flag, e.reason)
}

// Is reports errFlagValue.
func (e *flagValueError) Is(target error) bool { return target == errFlagValue }

// Unwrap returns the parser's error.
func (e *flagValueError) Unwrap() error { return e.cause }

// flagError is the flag error function of every command (installed on the
// root with SetFlagErrorFunc): a value that does not parse reads
// `invalid value "abc" for --threshold: not a number` rather than the
// parser's own text; every flag error is a usage error.
func flagError(_ *cobra.Command, err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) || ive.GetFlag() == nil {
		return usageError(err)
	}
	f := ive.GetFlag()
	return usageError(&flagValueError{flag: f.Name, value: ive.GetValue(), reason: valueReason(f.Value.Type(), ive.Unwrap()), cause: ive.Unwrap()})
}

// valueReason says why a value of a flag of type typ (pflag's type name)
// did not parse; cause is the parser's error.
func valueReason(typ string, cause error) string {
	var ne *strconv.NumError
	if errors.As(cause, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
		return "out of range"
	}
	switch {
	case strings.HasPrefix(typ, "float"):
		return "not a number"
	case strings.HasPrefix(typ, "uint"):
		return "not a whole number ≥ 0"
	case strings.HasPrefix(typ, "int"):
		return "not a whole number"
	case typ == "duration":
		return "not a duration (e.g. 500ms, 30s, 2m)"
	case typ == "bool":
		return "not true or false"
	case cause != nil:
		// A flag's own check (--encoding's is the db package's).
		return strings.TrimPrefix(errorText(cause), "invalid options: ")
	}
	return "invalid"
}

// newJSONEncoder returns an encoder writing one JSON value per line to w.
func newJSONEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// jsonMatch is the JSON form of a match, printed by add and query.
type jsonMatch struct {
	Query string `json:"query"`
	api.Match
}

// newJSONMatch returns the JSON form of m found for query.
func newJSONMatch(query string, m db.Match) jsonMatch {
	return jsonMatch{Query: query, Match: api.Match{ID: m.ID, Similarity: m.Similarity, Hamming: m.Hamming, Exact: m.Exact,
		QueryInDoc: m.QueryInDoc, DocInQuery: m.DocInQuery}}
}

// formatMatch returns the tab-separated text form of m, for a tabwriter.
func formatMatch(m db.Match) string {
	s := fmt.Sprintf("%s\tsimilarity %.3f\thamming %d", tsvField(m.ID), m.Similarity, m.Hamming)
	if m.QueryInDoc > 0 {
		s += fmt.Sprintf("\tcontained %.3f", m.QueryInDoc)
	}
	if m.Exact {
		s += "\texact"
	}
	return s
}

// pathError strips the *fs.PathError wrapping of err when it names path, so
// that "add PATH: open PATH: no such file" reads "add PATH: no such file".
func pathError(err error, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Err
	}
	return err
}

// opError is an error of one operation, printed as "OP: CAUSE". It wraps the
// cause, so errors.Is still sees the db package's sentinels.
type opError struct {
	op    string
	cause error
	text  string // the cause's message, without a context the op repeats
}

func (e *opError) Error() string { return e.op + ": " + e.text }

func (e *opError) Unwrap() error { return e.cause }

// newOpError returns err in the context op. The db package's errors carry
// their own context ("get \"x\": …", "query: …"); dbOps lists the prefixes
// that op makes redundant, which are dropped from the message.
func newOpError(op string, err error, dbOps ...string) error {
	text := errorText(err)
	for _, p := range dbOps {
		text = strings.TrimPrefix(text, p+": ")
	}
	return &opError{op: op, cause: err, text: text}
}

// noArgs is the Args check of a command that takes no arguments: a usage
// error (exit 2) naming the command.
func noArgs(name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 0 {
			return usageErrorf("%s: takes no arguments, got %d", name, len(args))
		}
		return nil
	}
}

// tsvField returns id (or a path, a source) as one field of a line of text
// output: as it is, unless it starts with a double quote or holds a
// character that would split the line or drive a terminal, when it is
// written Go-quoted ("fpdb delete -" unquotes it). Those characters are
// report.Unsafe (as excerpts hide them): the control characters (tab, newline, carriage return,
// ESC, BEL, the C1 controls such as CSI U+009B), the bidirectional
// formatting characters (U+202A–U+202E, U+2066–U+2069) and invalid UTF-8.
// A crafted id thus cannot set a terminal's title or reorder a line.
func tsvField(id string) string { return report.ShownID(id) }

// inputError marks an error as the failure of one input (a file or standard
// input given to add or query: missing, unreadable, not text, without any
// word) rather than of the database or the command line. failure gives it
// exit status exitInput.
type inputError struct{ err error }

func (e *inputError) Error() string { return e.err.Error() }

func (e *inputError) Unwrap() error { return e.err }

// asInputError marks err as the failure of an input (nil stays nil).
func asInputError(err error) error {
	if err == nil {
		return nil
	}
	return &inputError{err: err}
}

// isInputError reports whether err, the error of the input read from path
// ("-" for standard input), is the input's own fault: marked by
// asInputError; the db package's ErrBinary (binary or not UTF-8), ErrNoWords
// (empty, white space or punctuation only) or ErrInvalidID (a path that
// makes no valid id); or a file system error (*fs.PathError) on path
// itself (missing, unreadable, a directory that cannot be listed). Any
// other error — the database's — is not.
func isInputError(err error, path string) bool {
	var ie *inputError
	if errors.As(err, &ie) || errors.Is(err, db.ErrBinary) || errors.Is(err, db.ErrNoWords) || errors.Is(err, db.ErrInvalidID) ||
		errors.Is(err, db.ErrTextTooLarge) || errors.Is(err, dedup.ErrBadRecord) || errors.Is(err, dedup.ErrBadInput) {
		return true
	}
	var pe *fs.PathError
	return path != "" && errors.As(err, &pe) && pe.Path == path
}

// inputFailures counts the failed inputs of an add or query run by kind,
// and gives the run's exit status: exitInput when every failure was the
// input's own (isInputError), exitFailure when any was not.
type inputFailures struct {
	input int // inputs that could not be read or fingerprinted
	other int // inputs that failed for another reason
}

// note counts the failure err of the input read from path.
func (f *inputFailures) note(path string, err error) {
	if isInputError(err, path) {
		f.input++
	} else {
		f.other++
	}
}

// count returns the number of failed inputs.
func (f *inputFailures) count() int { return f.input + f.other }

// failure returns the exitError of a run in which inputs failed, printing
// err (nil: nothing more to print): exit status exitInput when only inputs
// were at fault, exitFailure otherwise.
func (f *inputFailures) failure(err error) *exitError {
	code := exitFailure
	if f.other == 0 && f.input > 0 {
		code = exitInput
	}
	return &exitError{code: code, err: err}
}
