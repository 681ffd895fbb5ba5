package dedup

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/records"
)

// ErrBadRecord is wrapped by the error of a bad record (a missing or
// non-string field, invalid UTF-8, a text too long, a malformed line, an id
// given twice) and by the error that stops a Strict run at one.
var ErrBadRecord = records.ErrBadRecord

// ErrBadInput is wrapped by the errors of inputs that cannot be read as
// records at all (an unknown format, a missing id or text column, a
// corrupt file).
var ErrBadInput = errors.New("fpdb: bad input")

// markPrefix starts the names of the marks that say how far each input
// file has been stored (db.Mark).
const markPrefix = "input:"

// markVersion is the version of a mark's value. Version 2 marks come
// with refused marks: a mark of an earlier version is not trusted (its
// file is read again from the start). Version 3 marks were made by a build
// that tells a compressed file by its first bytes: a version 2 mark of a
// file that is compressed though its name does not say so counted its
// bytes as records, and is not trusted either.
const markVersion = 3

// refusedPrefix starts the names of the marks that list the records of an
// input the database refused (no words, binary, an invalid id): one mark
// per batch that had any (more for very large batches), written with it
// (db.AddBatchMarkedBy), named by the SHA-256 of the input's absolute path
// (64 hex digits: a name of fixed length, however long the path), "#", the
// number of the file's records the batch ends at (16 hex digits) and the
// part (4 hex digits). A rerun that resumes the file reads them:
// a refused record whose id the database holds from before the run (an
// archive given as the database) is then still known as refused, not
// taken as stored.
const refusedPrefix = "refused:"

// DefaultBatch is the default number of records per atomic batch.
const DefaultBatch = 2000

// RecordOptions say how the records of the inputs are read.
type RecordOptions struct {
	// Format is "jsonl", "csv", "tsv" or "parquet"; "" or "auto" tells it
	// from each file's extension (standard input: JSON Lines).
	Format string
	// IDField and TextField name the record's id and text: a column, or
	// a dotted path into nested JSON objects ("meta.id"). TextField
	// defaults to "text". IDField "" gives each record its position as
	// its id: "PATH:LINE" (JSON Lines, CSV, TSV) or "PATH:ROW" (Parquet,
	// the 0-based row in the file). The command line's default is "id".
	IDField, TextField string
	// KeepFields are further fields stored with each document as its
	// source: a JSON object of those present ({"url": "…"}). Without
	// them, a document's source is its position ("PATH:LINE").
	KeepFields []string
	// MaxText is the longest text read, in bytes (default 64 MiB); a
	// longer one is a bad record.
	MaxText int
}

// LoadOptions configure Load.
type LoadOptions struct {
	RecordOptions
	// Inputs are the files to read, in order; "-" reads Stdin (JSON
	// Lines, CSV or TSV; compressed as Stdin says through Format's
	// extension is not possible, so it must be uncompressed).
	Inputs []string
	// Stdin is read for the input "-".
	Stdin io.Reader
	// Batch is the number of records per atomic batch (default
	// DefaultBatch).
	Batch int
	// Strict stops at the first bad record (with an error wrapping
	// ErrBadRecord); by default a bad record is reported to Bad and
	// skipped.
	Strict bool
	// Restart ignores the marks of earlier runs: every record is read and
	// stored again (unchanged documents are left as they are).
	Restart bool
	// ReplaceUnchanged stores documents anew even when unchanged (see
	// db.Input.ReplaceUnchanged).
	ReplaceUnchanged bool
	// Text says how the texts are read (HTML or plain text, encoding).
	Text db.TextOptions
	// Bad is called, in input order, for each bad record: its position
	// ("data.jsonl:12", "data.parquet: row group 3, row 17") and why.
	Bad func(pos string, err error)
	// BadInput, if set, makes Load go on past an input that cannot be
	// read, or not to its end (an error wrapping ErrBadInput: missing, of
	// no known format, corrupt, truncated): the input is reported to it
	// (in input order, after its records read before the failure, which
	// are stored), listed in LoadSummary.FailedInputs, and the next input
	// is read. Without it Load stops at the first such input with its
	// error. Run ignores it: its outputs must hold every record.
	BadInput func(FailedInput)
	// Progress, if set, is called after each batch (from the calling
	// goroutine).
	Progress func(Progress)
}

// Progress is the state of a run.
type Progress struct {
	// Phase is "load", "pairs" or "write".
	Phase string
	// Records are the records read so far (in this phase), Bytes the
	// bytes of the input files read so far and TotalBytes their total
	// size (-1 when some size is unknown, as for standard input).
	Records           int64
	Bytes, TotalBytes int64
	// Elapsed is the time since the phase began.
	Elapsed time.Duration
}

// LoadSummary counts what a load did.
type LoadSummary struct {
	// Inputs is the number of input files read, FailedInputs those of them
	// that could not be read, or not to their end (LoadOptions.BadInput),
	// and InputsFailed their number.
	Inputs       int           `json:"inputs"`
	InputsFailed int           `json:"inputs_failed"`
	FailedInputs []FailedInput `json:"failed_inputs,omitempty"`
	// Records is the number of records read (bad ones included),
	// Resumed the number of them an earlier, interrupted run had done
	// (stored, or skipped as bad records: its marks said so), which this
	// run did not store again. (A Summary of Run counts the bad records
	// among them in Skipped too: its outputs write every record.)
	Records int64 `json:"records"`
	Resumed int64 `json:"resumed"`
	// Stored, Replaced and Unchanged are as in db.BatchResult.
	Stored    int64 `json:"stored"`
	Replaced  int64 `json:"replaced"`
	Unchanged int64 `json:"unchanged"`
	// Skipped is the number of bad records and of records the database
	// refused (no words, invalid id), by reason in SkippedReasons.
	Skipped        int64            `json:"skipped"`
	SkippedReasons map[string]int64 `json:"skipped_reasons"`
	// Bytes is the size of the input read.
	Bytes int64 `json:"bytes"`
	// Seconds is the time the load took.
	Seconds float64 `json:"seconds"`
}

// FailedInput is an input that could not be read, or not to its end.
type FailedInput struct {
	// Path is the input as given, Err why it failed (wrapping
	// ErrBadInput) and Error its message.
	Path  string `json:"path"`
	Error string `json:"error"`
	Err   error  `json:"-"`
	// Records is the number of its records read before the failure (bad
	// ones, and ones an earlier run stored, included), Stored the
	// documents this run stored from them (replaced ones included).
	Records int64 `json:"records"`
	Stored  int64 `json:"stored"`
}

// inputMark is the value of an input's mark: the file it was (size and
// modification time), the record options it was read with, and how many
// of its records have been stored or skipped.
type inputMark struct {
	V       int    `json:"v"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime"`
	Fields  string `json:"fields"`
	Records int64  `json:"records"`
	Done    bool   `json:"done"`
}

// Load reads records from the inputs and stores one document per record,
// Batch records per atomic batch, without any near-duplicate check (find
// them with db.Pairs or db.Clusters, or use Run). Records are streamed:
// memory holds a few batches, whatever the size of the inputs.
//
// Load is resumable: with each batch it stores, in the same atomic
// batch, a mark saying how many records of its file are done (db.Mark,
// named "input:" and the file's absolute path). A rerun after a crash or
// an interruption skips those records (unless Restart, or the file's size
// or modification time or the record options changed). Standard input
// is not resumable.
func Load(ctx context.Context, d *db.DB, o LoadOptions) (*LoadSummary, error) {
	l, err := newLoader(d, &o)
	if err != nil {
		return nil, err
	}
	return l.run(ctx, nil)
}

// loader is one Load.
type loader struct {
	d     *db.DB
	o     *LoadOptions
	ro    records.Options
	sum   LoadSummary
	start time.Time
	total int64 // the inputs' total size, -1 when unknown
	done  int64 // bytes of the inputs finished
	// onRefused, if set, is told the documents the database refused.
	onRefused func(id string, err error)
	// refused holds, by path, the numbers of the records of the part of
	// each file an earlier run stored that the database refused (sorted),
	// when check is set.
	refused map[string][]int64
	// started holds the names of the marks of the files this run read.
	started map[string]bool
	// arenas holds the text arrays of stored batches for new ones: a
	// batch's texts are copied into one array, reused, rather than each
	// into one of its own (2 GB of garbage per million 2 KB records).
	arenas chan []byte
}

func newLoader(d *db.DB, o *LoadOptions) (*loader, error) {
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	ro, err := o.RecordOptions.records()
	if err != nil {
		return nil, err
	}
	l := &loader{d: d, o: o, ro: ro, sum: LoadSummary{SkippedReasons: map[string]int64{}}, refused: map[string][]int64{}, started: map[string]bool{}, arenas: make(chan []byte, 4)}
	l.total = 0
	for _, p := range o.Inputs {
		fi, err := os.Stat(p)
		if p == "-" || err != nil {
			l.total = -1
			break
		}
		l.total += fi.Size()
	}
	return l, nil
}

// records returns the records.Options of o.
func (o *RecordOptions) records() (records.Options, error) {
	f := records.FormatAuto
	if o.Format != "" {
		var err error
		if f, err = records.ParseFormat(o.Format); err != nil {
			return records.Options{}, fmt.Errorf("%w: %w", db.ErrInvalidOptions, err)
		}
	}
	text := o.TextField
	if text == "" {
		text = "text"
	}
	return records.Options{Format: f, IDField: o.IDField, TextField: text, KeepFields: o.KeepFields, MaxText: o.MaxText}, nil
}

// fieldsKey names the record options that decide the documents the file
// at path gives, so that a mark made with others is not trusted (with no
// id field, the ids hold the path as given): the record fields, the text
// options, and whether Run (check set: the first record of an id is
// stored, later ones are bad) or Load (the last one is) made it.
func (l *loader) fieldsKey(path string, check checkFunc) string {
	key := []any{l.ro.Format.String(), l.ro.IDField, l.ro.TextField, l.ro.KeepFields, l.o.Text.Format, l.o.Text.Encoding, check != nil}
	if l.ro.IDField == "" {
		key = append(key, path)
	}
	b, _ := json.Marshal(key)
	return string(b)
}

// markName returns the name of the mark of the file whose absolute path
// is abs: mark names are UTF-8, so a path that is not is hex-encoded.
func markName(abs string) string {
	if utf8.ValidString(abs) {
		return markPrefix + abs
	}
	return markPrefix + "hex:" + hex.EncodeToString([]byte(abs))
}

// refusedMarks returns the prefix of the names of the refused marks of the
// file whose absolute path is abs (refusedPrefix).
func refusedMarks(abs string) string {
	h := sha256.Sum256([]byte(abs))
	return refusedPrefix + hex.EncodeToString(h[:]) + "#"
}

// refusedPart is the most record numbers one refused mark lists: at most
// 10 bytes each, its value stays below db.MaxMarkValue.
const refusedPart = 100_000

// refusedMarksOf returns the refused marks of a batch ending at the file's
// record upTo, listing nums (increasing): its value is a version byte (1)
// and the numbers as uvarints, each the difference to the one before (the
// first: to 0).
func refusedMarksOf(prefix string, upTo int64, nums []int64) []db.Mark {
	var ms []db.Mark
	for part := 0; len(nums) > 0; part++ {
		k := min(len(nums), refusedPart)
		v := make([]byte, 1, 1+2*k)
		v[0] = 1
		prev := int64(0)
		for _, x := range nums[:k] {
			v = binary.AppendUvarint(v, uint64(x-prev))
			prev = x
		}
		ms = append(ms, db.Mark{Name: fmt.Sprintf("%s%016x%04x", prefix, upTo, part), Value: v})
		nums = nums[k:]
	}
	return ms
}

// decodeRefused appends the record numbers of a refused mark's value v to
// nums.
func decodeRefused(v []byte, nums []int64) ([]int64, error) {
	if len(v) == 0 || v[0] != 1 {
		return nil, errors.New("unknown version")
	}
	prev := int64(0)
	for v = v[1:]; len(v) > 0; {
		d, k := binary.Uvarint(v)
		if k <= 0 || d > math.MaxInt64-uint64(prev) {
			return nil, errors.New("corrupt")
		}
		prev += int64(d)
		nums = append(nums, prev)
		v = v[k:]
	}
	return nums, nil
}

// readRefused returns the refused marks of the file whose absolute path is
// abs: the names of all, and, if decode, the numbers of the records they
// list below from (sorted), the records an earlier run stored or refused.
func (l *loader) readRefused(ctx context.Context, abs string, from int64, decode bool) (names []string, refused []int64, err error) {
	prefix := refusedMarks(abs)
	ms, err := l.d.Marks(ctx, prefix)
	if err != nil {
		return nil, nil, err
	}
	for _, m := range ms {
		rest := m.Name[len(prefix):]
		if len(rest) != 20 || strings.Trim(rest, "0123456789abcdef") != "" {
			continue // not one of ours
		}
		names = append(names, m.Name)
		if !decode {
			continue
		}
		if refused, err = decodeRefused(m.Value, refused); err != nil {
			return nil, nil, fmt.Errorf("%w: mark %q of an earlier run cannot be read (%w): start again with --restart", ErrBadInput, m.Name, err)
		}
	}
	slices.Sort(refused)
	// Records at from or after are the file's next run's to store (none,
	// unless the marks were made otherwise).
	i, _ := slices.BinarySearch(refused, from)
	return names, refused[:i], nil
}

// check is called for every record read, in input order, with its number
// among all records of the run (from 0), bad ones (rec.Err set) included;
// a non-nil error makes it a bad record (check returns rec.Err for those). Records an earlier run stored are passed too (with resumed set)
// when check is given: they are then read, not skipped.
type checkFunc func(rec *records.Record, n int64, resumed bool) error

// run loads every input. An input that cannot be read is reported to
// BadInput, if set, and the next one is read (not for Run: check is set);
// any other error stops the run.
func (l *loader) run(ctx context.Context, check checkFunc) (*LoadSummary, error) {
	l.start = time.Now()
	var n int64 // records of the run so far
	for _, path := range l.o.Inputs {
		records, stored := l.sum.Records, l.sum.Stored
		err := l.file(ctx, path, check, &n)
		switch {
		case err == nil:
		case l.o.BadInput != nil && check == nil && errors.Is(err, ErrBadInput) && ctx.Err() == nil:
			f := FailedInput{Path: path, Error: err.Error(), Err: err, Records: l.sum.Records - records, Stored: l.sum.Stored - stored}
			l.sum.InputsFailed++
			l.sum.FailedInputs = append(l.sum.FailedInputs, f)
			l.o.BadInput(f)
		default:
			return &l.sum, err
		}
		l.sum.Inputs++
	}
	l.sum.Seconds = time.Since(l.start).Seconds()
	return &l.sum, nil
}

// open opens one input.
func openInput(path string, stdin io.Reader, ro records.Options) (*records.Reader, error) {
	var r *records.Reader
	var err error
	if path == "-" {
		if stdin == nil {
			stdin = os.Stdin
		}
		r, err = records.NewReader(stdin, "-", records.CompressionNone, ro)
	} else {
		r, err = records.Open(path, ro)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	return r, nil
}

// recordID returns rec's document id: its id field, or with no id field
// its position in the path as given.
func recordID(rec *records.Record, idField string) string {
	if idField != "" {
		return rec.ID
	}
	if rec.Pos.Line > 0 {
		return rec.Pos.File + ":" + strconv.FormatInt(rec.Pos.Line, 10)
	}
	return rec.Pos.File + ":" + strconv.FormatInt(rec.Pos.Index, 10)
}

// recordDoc returns the document of a record: its id, a copy of its text,
// and as source its kept fields, else its position.
// A non-nil arena receives the text (the document's Text is valid while
// the arena's array is not reused); else the text is copied on its own.
func recordDoc(rec *records.Record, idField string, arena *[]byte) db.Input {
	var text []byte
	switch {
	case len(rec.Text) == 0:
		// Not nil: a nil Text is no text at all (db.ErrBadInput), where
		// an empty one is a document without words (db.ErrNoWords).
		text = []byte{}
	case arena == nil:
		text = append([]byte(nil), rec.Text...)
	default:
		off := len(*arena)
		*arena = append(*arena, rec.Text...)
		text = (*arena)[off:len(*arena):len(*arena)]
	}
	in := db.Input{ID: recordID(rec, idField), Text: text, Source: rec.Pos.String()}
	if len(rec.Meta) > 0 {
		in.Source = string(rec.Meta)
	}
	return in
}

// file loads one input.
func (l *loader) file(ctx context.Context, path string, check checkFunc, n *int64) (err error) {
	r, err := openInput(path, l.o.Stdin, l.ro)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := r.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%s: %w", path, cerr)
		}
	}()
	// The mark of the file, unless it is standard input.
	var mark *inputMark
	var mname, abs string
	if path != "-" {
		if abs, err = filepath.Abs(path); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrBadInput, path, err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		mname = markName(abs)
		mark = &inputMark{V: markVersion, Size: fi.Size(), ModTime: fi.ModTime().UnixNano(), Fields: l.fieldsKey(path, check)}
	}
	var from int64 // records of this file stored by an earlier run
	// Restart ignores the marks of earlier runs, not those this run made
	// (a file given twice is read from its start once).
	restart := l.o.Restart && !l.started[mname]
	if mark != nil {
		l.started[mname] = true
	}
	if mark != nil && !restart {
		v, err := l.d.Mark(ctx, mname)
		switch {
		case err == nil:
			var old inputMark
			if json.Unmarshal(v, &old) == nil && (old.V == markVersion || old.V == 2 && !r.Sniffed()) &&
				old.Size == mark.Size && old.ModTime == mark.ModTime && old.Fields == mark.Fields {
				from = old.Records
				if old.Done && check == nil {
					l.sum.Resumed += old.Records
					l.sum.Records += old.Records
					*n += old.Records
					l.done += mark.Size
					l.sum.Bytes += mark.Size
					return nil
				}
			}
		case !errors.Is(err, db.ErrNoMark):
			return err
		}
	}
	var fm *fileMark
	if mark != nil {
		fm = &fileMark{mark: mark, name: mname, refused: refusedMarks(abs)}
	}
	if fm != nil && (from == 0 || check != nil) {
		// Load does not need the refused records of the part it skips.
		names, refused, err := l.readRefused(ctx, abs, from, from > 0)
		if err != nil {
			return err
		}
		if from == 0 {
			// Those of an earlier run that stored another version of the
			// file, or before Restart: deleted with the first batch.
			fm.stale = names
		} else {
			l.refused[path] = refused
		}
	}
	if from > 0 && check == nil {
		skipped, err := r.Skip(from)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		l.sum.Resumed += skipped
		l.sum.Records += skipped
		*n += skipped
	}

	fileRecords := int64(0) // records of this file read (or skipped) so far
	if check == nil {
		fileRecords = from
	}
	// A goroutine reads the records and makes the batches while the
	// previous batch is fingerprinted and written.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan *batch, 1)
	var rerr error // the reader's error, read after batches is closed
	go func() {
		defer close(batches)
		rerr = l.read(rctx, r, check, from, fileRecords, *n, batches)
	}()
	ready := batches
	if l.prefingerprint() {
		// A second goroutine fingerprints each batch while the batch
		// before it is written (the write runs on one core).
		prepared := make(chan *batch, 1)
		go func() {
			defer close(prepared)
			for b := range batches {
				l.fingerprint(rctx, b)
				// Always sent (the loop below drains ready, also
				// after an error): a batch dropped here would be lost
				// without an error.
				prepared <- b
			}
		}()
		ready = prepared
	}
	for b := range ready {
		if err := l.store(ctx, b, fm); err != nil {
			cancel()
			for range ready {
			}
			return err
		}
		l.release(b)
		*n += b.records
		l.progress(b.bytes)
	}
	done, _ := r.Progress()
	l.done += done
	l.sum.Bytes += done
	return rerr
}

// arena returns an empty text array for a batch: a stored batch's, or a
// new one.
func (l *loader) arena() []byte {
	select {
	case a := <-l.arenas:
		return a[:0]
	default:
		return make([]byte, 0, min(l.o.Batch*2048, 4<<20)) // grown by append
	}
}

// release hands the text array of a stored batch, whose documents are no
// longer used, to a later batch (unless it grew past 32 MiB: a batch of
// very long texts does not keep its memory).
func (l *loader) release(b *batch) {
	if cap(b.arena) <= 32<<20 {
		select {
		case l.arenas <- b.arena:
		default:
		}
	}
	b.arena, b.docs = nil, nil
}

// prefingerprint tells whether batches are fingerprinted ahead of their
// write (db.Prepare): only when the database stores nothing more of a
// document than Prepare returns (no text, no audit log).
func (l *loader) prefingerprint() bool {
	p := l.d.Params()
	return !p.KeepTexts && !p.AuditLog
}

// fingerprint replaces the documents of b by their fingerprints (with
// content hash, size, words and shingle count: db.PrepareBatch), so that
// AddBatch only stores them. A document PrepareBatch refuses is left as
// it is: AddBatch refuses it the same way, and reports it as it reports
// any refused document. Nothing changes when ctx ends (the batch is then
// not stored).
func (l *loader) fingerprint(ctx context.Context, b *batch) {
	docs, errs, err := l.d.PrepareBatch(ctx, b.docs)
	if err != nil {
		return
	}
	for i, doc := range docs {
		if errs[i] == nil {
			in := doc.Input()
			in.ReplaceUnchanged = b.docs[i].ReplaceUnchanged
			b.docs[i] = in
		}
	}
}

// batch is a batch of records read from one file.
type batch struct {
	docs  []db.Input
	arena []byte   // the documents' texts (recordDoc)
	pos   []string // position of each document
	idx   []int64  // its number in its file (records.Position.Index)
	// bad are the bad records read among them, in order.
	bad []badRecord
	// records is the number of records the batch covers (bad and resumed
	// ones included), resumed the number of those an earlier run stored,
	// upTo the file's records read up to its end, bytes the file's bytes
	// read then.
	records, resumed, upTo, bytes int64
	// done: the batch ends its file.
	done bool
}

// badRecord is a bad record and why.
type badRecord struct {
	pos string
	err error
}

// read reads the records of r into batches and sends them, the last one
// with done set: from record fileRecords of the file on (the ones before
// from were stored by an earlier run), numbering them for check from n
// on. A Strict bad record ends the reading with an error after the batch
// before it is sent.
func (l *loader) read(ctx context.Context, r *records.Reader, check checkFunc, from, fileRecords, n int64, out chan<- *batch) error {
	b := &batch{arena: l.arena()}
	ids := make(map[string]struct{}) // the ids of b's documents
	send := func(done bool) error {
		b.upTo, b.done = fileRecords, done
		b.bytes, _ = r.Progress()
		select {
		case out <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
		b = &batch{docs: make([]db.Input, 0, l.o.Batch), arena: l.arena()}
		clear(ids)
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := r.Next()
		if err == io.EOF {
			return send(true)
		}
		if err != nil {
			// The records read before the failure are stored (not
			// done: a rerun reads the file again from there).
			if serr := send(false); serr != nil {
				return serr
			}
			return fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		resumed := check != nil && fileRecords < from
		rerr := rec.Err
		if check != nil {
			rerr = check(rec, n, resumed)
		}
		if rerr != nil && !resumed && l.o.Strict {
			// Not done: a rerun reads it again.
			if err := send(false); err != nil {
				return err
			}
			return fmt.Errorf("%s: %w", rec.Pos, rerr)
		}
		fileRecords++
		n++
		b.records++
		if resumed {
			b.resumed++
			continue // stored, or reported, by an earlier run
		}
		if rerr != nil {
			b.bad = append(b.bad, badRecord{rec.Pos.String(), rerr})
			if b.records >= int64(4*l.o.Batch) {
				if err := send(false); err != nil {
					return err
				}
			}
			continue
		}
		if _, again := ids[recordID(rec, l.ro.IDField)]; again {
			// A later record replaces an earlier one with its id, as
			// across batches: the batch before it is written first.
			fileRecords--
			b.records--
			if err := send(false); err != nil {
				return err
			}
			fileRecords++
			b.records++
		}
		// Its text goes into the arena of the batch it joins.
		in := recordDoc(rec, l.ro.IDField, &b.arena)
		in.TextOptions, in.ReplaceUnchanged = l.o.Text, l.o.ReplaceUnchanged
		ids[in.ID] = struct{}{}
		b.docs = append(b.docs, in)
		b.pos = append(b.pos, rec.Pos.String())
		b.idx = append(b.idx, rec.Pos.Index)
		if len(b.docs) >= l.o.Batch || b.records >= int64(4*l.o.Batch) {
			if err := send(false); err != nil {
				return err
			}
		}
	}
}

// fileMark is the mark of a file being loaded.
type fileMark struct {
	mark *inputMark
	name string
	// refused is the prefix of the file's refused marks' names, stale
	// the names of those of an earlier run to delete with the next batch.
	refused string
	stale   []string
}

// marks returns the marks stored with b: the file's mark, the deletion of
// the stale refused marks and the refused marks of b, which refuses the
// documents skipped.
func (fm *fileMark) marks(b *batch, skipped []db.BatchSkip) []db.Mark {
	fm.mark.Records, fm.mark.Done = b.upTo, b.done
	v, _ := json.Marshal(fm.mark)
	ms := []db.Mark{{Name: fm.name, Value: v}}
	for _, name := range fm.stale {
		ms = append(ms, db.Mark{Name: name})
	}
	if len(skipped) > 0 {
		nums := make([]int64, len(skipped))
		for i, s := range skipped {
			nums[i] = b.idx[s.Index]
		}
		ms = append(ms, refusedMarksOf(fm.refused, b.upTo, nums)...)
	}
	return ms
}

// store writes one batch with the file's marks (if any) and counts it.
func (l *loader) store(ctx context.Context, b *batch, fm *fileMark) error {
	l.sum.Records += b.records
	l.sum.Resumed += b.resumed
	for _, x := range b.bad {
		l.bad(x.pos, x.err)
	}
	if len(b.docs) == 0 && b.records == 0 && !b.done {
		return nil
	}
	var res *db.BatchResult
	var err error
	if fm != nil {
		res, err = l.d.AddBatchMarkedBy(ctx, b.docs, func(skipped []db.BatchSkip) []db.Mark { return fm.marks(b, skipped) })
		if err == nil {
			fm.stale = nil
		}
	} else if len(b.docs) > 0 {
		res, err = l.d.AddBatch(ctx, b.docs)
	} else {
		res = &db.BatchResult{}
	}
	if err != nil {
		return err
	}
	for _, s := range res.Skipped {
		if l.o.Strict {
			return fmt.Errorf("%s: %w: %w", b.pos[s.Index], ErrBadRecord, s.Err)
		}
		l.bad(b.pos[s.Index], s.Err)
		if l.onRefused != nil {
			l.onRefused(s.ID, s.Err)
		}
	}
	l.sum.Stored += int64(res.Stored)
	l.sum.Replaced += int64(res.Replaced)
	l.sum.Unchanged += int64(res.Unchanged)
	return nil
}

// bad counts and reports a bad record.
func (l *loader) bad(pos string, err error) {
	l.sum.Skipped++
	l.sum.SkippedReasons[SkipReason(err)]++
	if l.o.Bad != nil {
		l.o.Bad(pos, err)
	}
}

// progress reports the load's progress, done bytes of the current file
// read.
func (l *loader) progress(done int64) {
	if l.o.Progress == nil {
		return
	}
	l.o.Progress(Progress{Phase: "load", Records: l.sum.Records, Bytes: l.done + done, TotalBytes: l.total, Elapsed: time.Since(l.start)})
}
