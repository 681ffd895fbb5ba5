package db

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/normalize"
)

// ExportVersion is the newest version of the export format (the
// "fpdb_export" field of the header line). Version 2 adds the audit log:
// its entries follow the documents. Export writes version 2 for a
// database that keeps the log and version 1, which older builds read,
// otherwise; Import reads both.
const ExportVersion = 2

// exportVersionNoLog is the version of an export without a log section.
const exportVersionNoLog = 1

// ErrBadExport is returned by Import for input that is not a valid export.
var ErrBadExport = errors.New("fpdb: invalid export")

// ErrNotEmpty is returned by Import when the target database already holds
// documents.
var ErrNotEmpty = errors.New("fpdb: database is not empty")

// ExportHeader is the first line of an export: the creation parameters of
// the exported database.
type ExportHeader struct {
	// Export is ExportVersion.
	Export int `json:"fpdb_export"`
	// FormatVersion is the on-disk format version of the exported database.
	FormatVersion    int    `json:"format_version"`
	K                int    `json:"k"`
	GroupWidths      []int  `json:"group_widths"`
	ShingleWidth     int    `json:"shingle_width"`
	Seed             uint64 `json:"seed,string"`
	HashVersion      int    `json:"hash_version"`
	NormalizeVersion int    `json:"normalize_version"`
	Created          string `json:"created"`
	// Docs is the number of document lines that follow.
	Docs int `json:"docs"`
	// KeepTexts reports that the exported database keeps texts (then
	// documents carry their text); absent (false) in exports made before
	// texts could be kept.
	KeepTexts bool `json:"keep_texts,omitempty"`
	// AuditLog reports that the exported database keeps an audit log
	// (version 2); LogEntries is the number of log lines that follow the
	// document lines, one entry each in the form of LogEntry.MarshalJSON,
	// in sequence order.
	AuditLog   bool `json:"audit_log,omitempty"`
	LogEntries int  `json:"log_entries,omitempty"`
	// Templates are the exported database's templates (see
	// DB.AddTemplate), by name; absent when it has none. The fingerprints
	// of the documents were made without their shingles.
	Templates []ExportTemplate `json:"templates,omitempty"`
}

// ExportTemplate is a template in an export header.
type ExportTemplate struct {
	Name string `json:"name"`
	Text string `json:"text"`
	// Format is "text" or "html".
	Format string `json:"format"`
	// Added is when the template was added, RFC 3339 with nanoseconds.
	Added string `json:"added"`
}

// FormatFingerprint returns fp in the hex form Export writes (and Import
// reads): word 0 first, each word as 16 lower-case hex digits.
func FormatFingerprint(fp []uint64) string { return bitvec.FormatHex(fp) }

// ExportRecord is one document line of an export.
type ExportRecord struct {
	ID string `json:"id"`
	// Fingerprint is the fingerprint in hex, 16 digits per 64-bit word,
	// word 0 first.
	Fingerprint string `json:"fingerprint"`
	// ContentHash is the content hash in hex (all zeros when none).
	ContentHash string `json:"content_hash"`
	Source      string `json:"source,omitempty"`
	// SourceBase64 holds the source's bytes, base64 (standard, padded),
	// when they are not UTF-8, as a file's path may be: Source then shows
	// them with each invalid byte as U+FFFD, and an import restores them
	// from SourceBase64.
	SourceBase64 string `json:"source_base64,omitempty"`
	Size         int64  `json:"size"`
	Words        int    `json:"words"`
	// Shingles is the number of distinct shingles; absent when unknown
	// (and in exports made before it was stored).
	Shingles int `json:"shingles,omitempty"`
	// Added is when the document was stored, RFC 3339 with nanoseconds.
	Added string `json:"added"`
	// Text is the document's stored text (see DB.Text), when the database
	// keeps texts and the document has one; absent otherwise, and in
	// exports made before texts could be kept.
	Text string `json:"text,omitempty"`
	// TextFormat is how Text was read, "text" or "html"; present with
	// Text.
	TextFormat string `json:"text_format,omitempty"`
}

// Export writes every stored document to w as JSON Lines: a header line
// (ExportHeader: the creation parameters) then one ExportRecord per
// document, in the order they were stored, with its text when the
// database keeps texts, then, when it keeps an audit log, one line per log
// entry. It reads a snapshot taken at the call, so writes
// may proceed meanwhile. It returns the number of documents written. A
// database an import is filling (ErrImportRunning) or did not finish
// (ErrImportIncomplete) is not exported: its export would import as a
// whole database.
func (d *DB) Export(ctx context.Context, w io.Writer) (_ int, err error) {
	if err := d.live(); err != nil {
		return 0, err
	}
	if w == nil {
		return 0, fmt.Errorf("fpdb: export: %w: no writer", ErrInvalidOptions)
	}
	ctx, leave, err := d.enterLong(ctx)
	if err != nil {
		return 0, err
	}
	defer leave(&err)
	d.mu.RLock()
	snap := d.pdb.NewSnapshot()
	count := d.ix.Len()
	d.mu.RUnlock()
	defer snap.Close()
	// An import not finished holds part of its export: exported, it would
	// import as a whole database.
	switch mark, err := readImportMark(snap); {
	case err != nil:
		return 0, fmt.Errorf("fpdb: export: %w", err)
	case mark != nil && d.importing.Load():
		return 0, fmt.Errorf("fpdb: export: %w", ErrImportRunning)
	case mark != nil:
		return 0, fmt.Errorf("fpdb: export: %w: %s holds part of an export; import that export again to finish it, then export", ErrImportIncomplete, d.dir)
	}

	entries := -1
	if d.params.AuditLog {
		if entries, err = countKeys(ctx, snap, keys.PrefixLog); err != nil {
			return 0, fmt.Errorf("fpdb: export: %w", err)
		}
	}
	ts, err := readTemplates(snap)
	if err != nil {
		return 0, fmt.Errorf("fpdb: export: %w", err)
	}
	ew, err := newExportWriter(w, d.Params(), count, entries, ts...)
	if err != nil {
		return 0, fmt.Errorf("fpdb: export: %w", err)
	}
	tc, err := newTextCursor(ctx, snap, d.texts)
	if err != nil {
		return 0, fmt.Errorf("fpdb: export: %w", err)
	}
	defer tc.close()
	n, err := eachDoc(ctx, snap, ew.k, func(doc *Doc) error {
		t, err := tc.get(doc.iid)
		if err != nil {
			return fmt.Errorf("document %d (%q): %w", doc.iid, doc.ID, err)
		}
		return ew.writeText(doc, doc.Fingerprint, t)
	})
	if err != nil {
		return n, fmt.Errorf("fpdb: export: %w", err)
	}
	if n != count {
		return n, fmt.Errorf("fpdb: export: %w: %d document records, %d fingerprints", ErrCorrupt, n, count)
	}
	if entries >= 0 {
		if err := ew.writeLog(ctx, snap, d.params.K, entries); err != nil {
			return n, fmt.Errorf("fpdb: export: %w", err)
		}
	}
	if err := ew.Flush(); err != nil {
		return n, fmt.Errorf("fpdb: export: %w", err)
	}
	return n, nil
}

// ExportWriter writes the export format (see DB.Export): the header line,
// then one line per document. Export uses one; NewExportWriter gives one
// to a caller that gathers the documents itself (a cluster exports its
// shards' documents with it), so that the lines are those Import reads.
type ExportWriter struct {
	bw  *bufio.Writer
	enc *json.Encoder
	k   int
}

// NewExportWriter writes to w the header line of an export of docs
// documents of a database with parameters p (the creation parameters and
// versions of DB.Params), without an audit log or templates; Write then
// writes each document's line and Flush the end. An export is only
// readable by Import when exactly docs documents follow.
func NewExportWriter(w io.Writer, p Params, docs int) (*ExportWriter, error) {
	if docs < 0 {
		return nil, fmt.Errorf("fpdb: export: %w: %d documents", ErrInvalidOptions, docs)
	}
	if w == nil {
		return nil, fmt.Errorf("fpdb: export: %w: no writer", ErrInvalidOptions)
	}
	return newExportWriter(w, p, docs, -1)
}

// Write writes the line of doc: its id, fingerprint, content hash and
// metadata (no text).
func (e *ExportWriter) Write(doc *Doc) error {
	if err := checkExportWidth(doc, e.k); err != nil {
		return err
	}
	return e.writeText(doc, doc.Fingerprint, nil)
}

// checkExportWidth refuses a document whose fingerprint is not of k bits.
func checkExportWidth(doc *Doc, k int) error {
	if len(doc.Fingerprint) != bitvec.Words(k) {
		return fmt.Errorf("fpdb: export: %w: fingerprint of %q has %d words, want %d", ErrInvalidOptions, doc.ID, len(doc.Fingerprint), bitvec.Words(k))
	}
	return nil
}

// newExportWriter writes the header line for a database with parameters p,
// docs documents and logEntries entries of its audit log (-1: the export
// carries no log).
func newExportWriter(w io.Writer, p Params, docs, logEntries int, templates ...Template) (*ExportWriter, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	h := ExportHeader{
		Export: ExportVersion, FormatVersion: p.FormatVersion, K: p.K, GroupWidths: p.GroupWidths,
		ShingleWidth: p.ShingleWidth, Seed: p.Seed, HashVersion: p.HashVersion,
		NormalizeVersion: p.NormalizeVersion, Created: p.Created.Format(time.RFC3339), Docs: docs,
		KeepTexts: p.KeepTexts,
	}
	for _, t := range templates {
		h.Templates = append(h.Templates, ExportTemplate{Name: t.Name, Text: string(t.Text), Format: t.Format.String(),
			Added: t.Added.Format(time.RFC3339Nano)})
	}
	if logEntries >= 0 {
		h.Export, h.AuditLog, h.LogEntries = ExportVersion, true, logEntries
	} else {
		h.Export = exportVersionNoLog
	}
	if err := enc.Encode(h); err != nil {
		return nil, err
	}
	return &ExportWriter{bw: bw, enc: enc, k: p.K}, nil
}

// writeText writes the line of one document, with its text when text is
// not nil.
func (e *ExportWriter) writeText(doc *Doc, fp []uint64, text *StoredText) error {
	rec, err := exportRecord(doc, fp, text)
	if err != nil {
		return err
	}
	return e.enc.Encode(rec)
}

// WriteLine writes a document's line as Params.AppendExportLine made it,
// for a database with this writer's parameters: a cluster merges the lines its
// shards made without decoding them. It checks that line is one line
// (a JSON object and its newline), not the JSON itself: Import does.
func (e *ExportWriter) WriteLine(line []byte) error {
	if len(line) < 3 || line[0] != '{' || line[len(line)-1] != '\n' || bytes.IndexByte(line, '\n') != len(line)-1 {
		return fmt.Errorf("fpdb: export: %w: not one line of a document: %.40q", ErrInvalidOptions, line)
	}
	_, err := e.bw.Write(line)
	return err
}

// AppendExportLine appends to dst the line of doc in the export format of
// a database with parameters p, its newline included: the bytes
// ExportWriter.Write writes for it, and the same error for a fingerprint
// of another length than p.K.
func (p Params) AppendExportLine(dst []byte, doc *Doc) ([]byte, error) {
	if err := checkExportWidth(doc, p.K); err != nil {
		return dst, err
	}
	rec, err := exportRecord(doc, doc.Fingerprint, nil)
	if err != nil {
		return dst, err
	}
	b := bytes.NewBuffer(dst)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return dst, fmt.Errorf("fpdb: export: %w", err)
	}
	return b.Bytes(), nil
}

// exportRecord is the export record of doc with fingerprint fp and text
// (none when nil).
func exportRecord(doc *Doc, fp []uint64, text *StoredText) (*ExportRecord, error) {
	rec := &ExportRecord{
		ID: doc.ID, Fingerprint: FormatFingerprint(fp), ContentHash: hex.EncodeToString(doc.ContentHash[:]),
		Source: doc.Source, Size: doc.Size, Words: doc.Words, Shingles: doc.Shingles, Added: doc.Added.Format(time.RFC3339Nano),
	}
	if !utf8.ValidString(doc.Source) {
		// A JSON string would carry U+FFFD for each invalid byte.
		rec.SourceBase64 = base64.StdEncoding.EncodeToString([]byte(doc.Source))
	}
	if text != nil {
		if !utf8.Valid(text.Text) {
			// A JSON string would not hold it as it is.
			return nil, fmt.Errorf("%w: text of %q is not UTF-8", ErrCorrupt, doc.ID)
		}
		rec.Text, rec.TextFormat = string(text.Text), text.Format.String()
	}
	return rec, nil
}

// textCursor reads the texts of a snapshot in internal id order.
type textCursor struct {
	it    *pebble.Iterator
	codec *textCodec
	buf   []byte
}

// newTextCursor returns a cursor over the texts of snap, decoded with
// codec; with a nil codec (a database without texts) it finds none.
func newTextCursor(ctx context.Context, snap *pebble.Snapshot, codec *textCodec) (*textCursor, error) {
	c := &textCursor{codec: codec}
	if codec == nil {
		return c, nil
	}
	lo, hi := keys.Range(keys.PrefixText)
	it, err := snap.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, storageError(err)
	}
	c.it = it
	return c, nil
}

// get returns the text of iid, or nil when it has none. Its Text is valid
// until the next call.
func (c *textCursor) get(iid uint32) (*StoredText, error) {
	if c.it == nil {
		return nil, nil
	}
	k := keys.Text(iid)
	if !c.it.SeekGE(k) || !bytes.Equal(c.it.Key(), k) {
		return nil, storageError(c.it.Error())
	}
	v, err := c.it.ValueAndErr()
	if err != nil {
		return nil, storageError(err)
	}
	t, err := c.codec.decode(v, c.buf)
	if err != nil {
		return nil, err
	}
	c.buf = t.Text[:0]
	return &t, nil
}

// close closes the cursor.
func (c *textCursor) close() {
	if c.it != nil {
		_ = c.it.Close()
	}
}

// Flush writes what is buffered to the underlying writer: call it after
// the last Write.
func (e *ExportWriter) Flush() error { return e.bw.Flush() }

// importBatchDocs is the number of documents Import writes per atomic batch.
const importBatchDocs = 10_000

// Import creates the database in dir (which must hold no database, or an
// empty one) with the creation parameters of the export read from r, and
// stores every document of it, keeping ids, fingerprints, content hashes,
// metadata and the order of storing, so that the new database answers
// every query as the exported one did. opts gives the run-time settings
// (nil: defaults); creation parameters set in opts must equal the export's.
// The new database keeps texts (Options.KeepTexts) when the exported one
// did (keep_texts in the header) or opts.KeepTexts is set, and then stores
// each document's text from the export (a document without one, as in
// exports made before texts could be kept, has none: DB.Text returns
// ErrNoText); a database that does not keep texts ignores them. Likewise
// the new database keeps an audit log when the export carries one
// (audit_log) or opts.AuditLog is set: it then holds the exported entries,
// with their sequence numbers and times, or, from an export without a log,
// one entry per document imported (op "import"). An existing
// target created otherwise makes Import fail with a *ParamsError.
// The export's hash and normalization versions must be this build's (the
// fingerprints of new texts would not be comparable otherwise); its format
// version may be older, which makes Import the migration path between
// format versions. Documents are written in atomic batches of importBatchDocs;
// on error, or when ctx is cancelled, the database holds a prefix of the
// export made of whole batches (never part of a batch) and Import returns
// its length with the error (ctx's error, wrapped, on cancellation). It
// returns the number of documents imported.
//
// An import that fails before it stored anything (a document cut short in
// the export's first batch, say) into a directory it created removes the
// database it made there (the directory keeps only its lock file, which
// holds no database), as one refused at the export's header creates none. An import
// that did not finish after that (an error, an interrupt, a crash) leaves a
// mark in the database: until an import of the same export finishes, the
// database refuses every other write with ErrImportIncomplete, and Check
// fails with it. Import of the same export into it resumes: it checks that
// the documents stored are the export's first ones and stores the rest
// (its count includes the documents of the earlier run). Import of another
// export into it fails with ErrNotEmpty.
func Import(ctx context.Context, dir string, r io.Reader, opts *Options) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	x, err := NewExportReader(r)
	if err != nil {
		return 0, err
	}
	h := x.Header()
	o := &Options{}
	if opts != nil {
		o = opts.Clone()
	}
	// Keeping texts is the export's choice or the caller's: either may turn
	// it on.
	keep := o.KeepTexts || h.KeepTexts
	// So is keeping an audit log (an export without one then records each
	// document imported).
	keepLog := o.AuditLog || h.AuditLog
	if err := checkParams(Params{K: h.K, GroupWidths: h.GroupWidths, ShingleWidth: h.ShingleWidth, Seed: h.Seed,
		NormalizeVersion: h.NormalizeVersion, KeepTexts: keep, AuditLog: keepLog}, o); err != nil {
		var pe *ParamsError
		if errors.As(err, &pe) {
			pe.Export = true // the stored value is the export's
		}
		return 0, fmt.Errorf("fpdb: import: %w", err)
	}
	o.K, o.GroupWidths, o.ShingleWidth, o.Seed = h.K, slices.Clone(h.GroupWidths), h.ShingleWidth, h.Seed
	o.NormalizeVersion, o.KeepTexts, o.AuditLog = h.NormalizeVersion, keep, keepLog
	o.ReadOnly, o.ErrorIfNotExist, o.BulkLoad = false, false, true
	d, err := Open(dir, o)
	if err != nil {
		return 0, fmt.Errorf("fpdb: import: %w", err)
	}
	created := d.Created()
	n, err := d.importAll(ctx, x)
	marked := d.importMark.Load() != nil // a later import of the export resumes from it
	var rerr error
	if err != nil && created && !marked && n == 0 {
		// Nothing of the export was stored: the database this import
		// made goes, as if the export's header had been refused. Its
		// files are removed before the lock is released (a process
		// waiting for it then finds no database), the lock file stays.
		d.beforeUnlock = func() { rerr = removeAllBut(d.opts.fs, dir, lockFileName) }
	}
	if cerr := d.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("fpdb: import: %w", cerr)
	}
	if rerr != nil {
		err = fmt.Errorf("%w (and removing the database it created, %s: %w)", err, dir, rerr)
	}
	return n, err
}

// removeAllBut removes everything in dir, on fs, but the entry named keep.
func removeAllBut(fs vfs.FS, dir, keep string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		if name != keep {
			errs = append(errs, fs.RemoveAll(fs.PathJoin(dir, name)))
		}
	}
	return errors.Join(errs...)
}

// readExportHeader reads and checks the header line of an export.
func readExportHeader(br *bufio.Reader) (ExportHeader, error) {
	var h ExportHeader
	line, err := readLine(br)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return h, fmt.Errorf("fpdb: import: %w: no header line", ErrBadExport)
		}
		return h, fmt.Errorf("fpdb: import: %w", err)
	}
	if err := strictUnmarshal(line, &h); err != nil {
		return h, fmt.Errorf("fpdb: import: %w: header: %w", ErrBadExport, err)
	}
	if h.Export < exportVersionNoLog || h.Export > ExportVersion {
		return h, fmt.Errorf("fpdb: import: %w: export version %d, this build reads %d to %d", ErrBadExport, h.Export, exportVersionNoLog, ExportVersion)
	}
	if (h.AuditLog || h.LogEntries != 0) && h.Export < ExportVersion || h.LogEntries < 0 || h.LogEntries > 0 && !h.AuditLog {
		return h, fmt.Errorf("fpdb: import: %w: header: audit_log %v with log_entries %d in export version %d", ErrBadExport, h.AuditLog, h.LogEntries, h.Export)
	}
	if err := checkHeaderParams(&h); err != nil {
		return h, fmt.Errorf("fpdb: import: %w: header: %w", ErrBadExport, err)
	}
	if h.HashVersion != fingerprint.HashVersion {
		return h, fmt.Errorf("fpdb: import: %w", &ParamsError{Param: "HashVersion", Stored: strconv.Itoa(h.HashVersion), Given: strconv.Itoa(fingerprint.HashVersion), Export: true, Build: true})
	}
	if h.NormalizeVersion < normalize.MinVersion || h.NormalizeVersion > normalize.Version {
		return h, fmt.Errorf("fpdb: import: %w", &ParamsError{Param: "NormalizeVersion", Stored: strconv.Itoa(h.NormalizeVersion),
			Given: fmt.Sprintf("%d to %d", normalize.MinVersion, normalize.Version), Export: true, Build: true})
	}
	return h, nil
}

// checkHeaderParams checks the creation parameters of an export's header
// with the code Options.Validate checks them with (an export no database
// could have made, such as K 256 with group widths summing to 512, is a
// bad export, not a caller's invalid options). The versions are checked
// by the caller.
func checkHeaderParams(h *ExportHeader) error {
	fp := fingerprint.Params{K: h.K, ShingleWidth: h.ShingleWidth, Seed: h.Seed}
	if err := fp.Validate(); err != nil {
		return err
	}
	if _, err := index.NewLayout(h.K, h.GroupWidths); err != nil {
		return err // it names the widths and K
	}
	return nil
}

// ImportInto is Import into d, an open database that holds no document,
// no audit-log entry and no template (ErrNotEmpty otherwise) and whose
// fingerprint parameters (K, group widths, shingle width, seed,
// normalization version) are the export's (a *ParamsError otherwise). The
// export's texts are kept when d keeps texts, its audit log when d keeps
// one (an export without a log then records each document imported; an
// export with a log into a database without one is refused). While it
// runs, every other write of d fails with ErrImportRunning (reads go on);
// an import refused before it stored a document leaves d as it was, its
// templates included, and one that stopped later leaves d as Import does
// (ErrImportIncomplete for other writes; the same export resumes). It is
// how a server imports into the database it serves.
func (d *DB) ImportInto(ctx context.Context, r io.Reader) (int, error) {
	if err := d.importable(ctx); err != nil {
		return 0, err
	}
	x, err := NewExportReader(r)
	if err != nil {
		return 0, err
	}
	h := x.Header()
	if err := d.params.CheckExport(h); err != nil {
		return 0, fmt.Errorf("fpdb: import: %w", err)
	}
	return d.importAll(ctx, x)
}

// importable returns the error of an import into d whatever it reads: d
// is closed or read-only, or ctx is done.
func (d *DB) importable(ctx context.Context) error {
	if err := d.live(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d.opts.ReadOnly {
		return fmt.Errorf("fpdb: import: %w", ErrReadOnly)
	}
	return nil
}

// CheckImport returns the error ImportInto would end with now whatever
// export it read, or nil: ErrClosed, ErrReadOnly, ErrImportRunning while
// another import runs, and ErrNotEmpty when d holds a document (or held
// one, deleted since), an audit-log entry or a template, and no
// unfinished import (which only the same export resumes: its header
// tells). It lets a caller refuse an import before it reads the export;
// ImportInto makes the same checks again once it has read the header.
func (d *DB) CheckImport(ctx context.Context) error {
	if err := d.importable(ctx); err != nil {
		return err
	}
	if err := d.enter(ctx); err != nil {
		return fmt.Errorf("fpdb: import: %w", err)
	}
	defer d.leave()
	if err := d.lockWriter(exclusive); err != nil {
		return fmt.Errorf("fpdb: import: %w", err)
	}
	defer d.writeMu.Unlock()
	if d.importMark.Load() != nil {
		return nil
	}
	return d.checkImportTarget()
}

// importAll fills d, which must hold no document, audit-log entry or
// template (ErrNotEmpty), with the export x reads: its templates, then its
// documents and audit log. Every other write fails with ErrImportRunning
// meanwhile (another import too), so that none is mixed into the export's
// documents and log. An import that fails before it stored a document
// removes the templates it added: the database is then as it was.
func (d *DB) importAll(ctx context.Context, x *ExportReader) (n int, err error) {
	// Each step that reads or writes the store enters the DB (Close waits
	// for it, or it fails with ErrClosed); the whole import does not, so
	// that Close does not wait for a reader that blocks.
	if err := d.enter(ctx); err != nil {
		return 0, fmt.Errorf("fpdb: import: %w", err)
	}
	if err := d.lockWriter(exclusive); err != nil {
		d.leave()
		return 0, fmt.Errorf("fpdb: import: %w", err)
	}
	// An import that did not finish left its mark: the same export
	// resumes, skipping what it stored; another is refused. Otherwise the
	// target must be empty, and the mark is written before anything else.
	digest := exportDigest(x.Header())
	var res resumeState
	switch mark := d.importMark.Load(); {
	case mark != nil && bytes.Equal(*mark, digest):
		res, err = d.resumeState()
	case mark != nil:
		err = fmt.Errorf("fpdb: import: %w: %w: %s holds part of another export (import that export again to finish it, or remove the database)", ErrNotEmpty, ErrImportIncomplete, d.dir)
	default:
		if err = d.checkImportTarget(); err == nil {
			err = d.setImportMark(digest)
		}
	}
	d.importing.Store(err == nil)
	d.writeMu.Unlock()
	d.leave()
	if err != nil {
		return 0, err
	}
	d.at("import")
	defer func() {
		// Refused before it stored a document or a log entry, a new
		// import leaves the database as it was: no template, no mark.
		// Once it stored one, the mark stays: the same export resumes.
		if err != nil && n == 0 && res.logged == 0 && !res.resumed && d.enter(context.WithoutCancel(ctx)) == nil {
			if rerr := d.dropImportedTemplates(ctx); rerr != nil {
				err = fmt.Errorf("%w (and removing the templates it added: %w)", err, rerr)
			} else if rerr := d.clearImportMark(); rerr != nil {
				err = fmt.Errorf("%w (and removing its mark: %w)", err, rerr)
			}
			d.leave()
		}
		d.writeMu.Lock()
		d.importing.Store(false)
		d.writeMu.Unlock()
	}()
	if err := d.importTemplates(ctx, x.Header().Templates, res.templates); err != nil {
		return 0, err
	}
	if n, err = d.importDocs(ctx, x, &res); err != nil {
		return n, err
	}
	if err := d.enter(context.WithoutCancel(ctx)); err != nil {
		return n, fmt.Errorf("fpdb: import: %w", err)
	}
	defer d.leave()
	if err := d.clearImportMark(); err != nil {
		return n, fmt.Errorf("fpdb: import: %w", err)
	}
	return n, nil
}

// resumeState is what an earlier, unfinished import of the same export
// stored: its first docs documents, the templates named, and the audit-log
// entries below logNext (when the export carries its log); logged counts
// the entries this import restored.
type resumeState struct {
	resumed   bool
	docs      int
	templates map[string]bool
	logNext   uint64
	logged    int
}

// resumeState reads what the unfinished import stored. writeMu is held.
func (d *DB) resumeState() (resumeState, error) {
	st := resumeState{resumed: true, docs: d.ix.Len(), templates: map[string]bool{}}
	ts, err := readTemplates(d.pdb)
	if err != nil {
		return st, fmt.Errorf("fpdb: import: %w", err)
	}
	for _, t := range ts {
		st.templates[t.Name] = true
	}
	if d.params.AuditLog {
		if err := d.loadLog(); err != nil {
			return st, fmt.Errorf("fpdb: import: %w", err)
		}
		st.logNext = d.log.next
	}
	return st, nil
}

// storedAsExported returns an error unless doc, a document of the export
// being resumed, is stored with its fingerprint and content hash (ErrClosed
// once Close has begun: it enters the DB, as each step of an import does).
func (d *DB) storedAsExported(ctx context.Context, doc *Input) error {
	if err := d.enter(ctx); err != nil {
		return err
	}
	defer d.leave()
	iid, ok, err := d.lookup(doc.ID)
	switch {
	case err != nil:
		return err
	case !ok:
		return errors.New("not stored")
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if !slices.Equal(d.ix.Fingerprint(iid), doc.Fingerprint) || d.docs.hash(iid) != doc.ContentHash {
		return errors.New("stored with another fingerprint or content")
	}
	return nil
}

// clearImportMark removes the import mark, as the import's own write.
func (d *DB) clearImportMark() error {
	if err := d.lockWriter(importer); err != nil {
		return err
	}
	defer d.writeMu.Unlock()
	return d.setImportMark(nil)
}

// CheckExport returns a *ParamsError unless the documents of an export
// with header h can be stored in a database of parameters p: the same
// fingerprint parameters (K, group widths, shingle width, seed,
// normalization version), and an audit log in p when the export carries
// one (its entries would be lost otherwise).
func (p Params) CheckExport(h ExportHeader) error {
	given := &Options{K: h.K, GroupWidths: h.GroupWidths, ShingleWidth: h.ShingleWidth, Seed: h.Seed, NormalizeVersion: h.NormalizeVersion}
	if err := checkParams(p, given); err != nil {
		var pe *ParamsError
		if errors.As(err, &pe) && !pe.Build {
			pe.Into = true // the value "given" is the export's
		}
		return err
	}
	if h.AuditLog && !p.AuditLog {
		return &ParamsError{Param: "AuditLog", Stored: "false", Given: "true", Into: true}
	}
	return nil
}

// checkImportTarget fails with ErrNotEmpty unless the database holds no
// document, no audit-log entry and no template: Import writes nothing into
// a database it would not fill whole. writeMu is held.
func (d *DB) checkImportTarget() error {
	if st := d.Stats(); st.Docs > 0 || d.nextIID > 0 {
		holds := fmt.Sprintf("holds %d documents", st.Docs)
		switch st.Docs {
		case 0: // every one deleted: their internal ids are not reused
			holds = "has held documents (deleted since)"
		case 1:
			holds = "holds 1 document"
		}
		return fmt.Errorf("fpdb: import: %w: %s %s", ErrNotEmpty, d.dir, holds)
	}
	if d.params.AuditLog {
		err := d.loadLog()
		next := d.log.next
		if err != nil {
			return fmt.Errorf("fpdb: import: %w", err)
		}
		if next > 1 {
			return fmt.Errorf("fpdb: import: %w: %s holds audit-log entries", ErrNotEmpty, d.dir)
		}
	}
	if ts, err := readTemplates(d.pdb); err != nil || len(ts) > 0 {
		if err != nil {
			return fmt.Errorf("fpdb: import: %w", err)
		}
		return fmt.Errorf("fpdb: import: %w: %s has %d templates", ErrNotEmpty, d.dir, len(ts))
	}
	return nil
}

// importDocs stores the documents of an export (and restores its audit
// log's entries), read from x.
func (d *DB) importDocs(ctx context.Context, x *ExportReader, res *resumeState) (int, error) {
	h := x.Header()
	// restore restores log entries, counting them in res.logged.
	restore := func(entries []LogEntry) error {
		if err := d.restoreLog(entries); err != nil {
			return err
		}
		res.logged += len(entries)
		return nil
	}
	op := OpImport
	if h.AuditLog {
		op = 0 // the export's own entries are restored
	}
	var logs []LogEntry
	n := 0
	size := cmp.Or(d.testImportBatch, importBatchDocs)
	batch := make([]Input, 0, size)
	lines := make([]int, 0, size)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		// Whole or not at all: the target started empty, so an id
		// stored already is one an earlier batch of the export had.
		res, err := d.addBatchSpec(ctx, batch, writeSpec{op: op, what: "add batch", whole: true})
		if err != nil {
			return fmt.Errorf("fpdb: import: %w", err)
		}
		if len(res.Skipped) > 0 {
			s := res.Skipped[0]
			if errors.Is(s.Err, errStoredBefore) {
				return fmt.Errorf("fpdb: import: %w: line %d: %q: an earlier line has this id", ErrBadExport, lines[s.Index], s.ID)
			}
			return fmt.Errorf("fpdb: import: %w: line %d: %q: %w", ErrBadExport, lines[s.Index], s.ID, s.Err)
		}
		n += res.Stored
		batch, lines = batch[:0], lines[:0]
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			// Stop between lines: the batches written so far stay, the
			// pending one is dropped whole.
			return n, fmt.Errorf("fpdb: import: %w", err)
		}
		doc, entry, err := x.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && errors.Is(err, ErrBadExport) && len(batch) > 0 {
			// A line of the pending batch, before this one, may not match
			// its text: name the first bad line.
			if berr := d.firstBadLine(ctx, batch, lines); berr != nil {
				return n, berr
			}
		}
		if err != nil {
			if errors.Is(err, errExportShort) && len(batch) == 0 && (n > 0 || res.logged > 0) {
				// Cut short in the audit log's part, where every
				// document is stored: keep the entries read, which
				// are whole, then say the export was cut short. With
				// nothing stored yet (no document, no entry), keep
				// nothing: the database is then as it was. Cut short among the documents, the
				// pending batch is dropped whole, as on any other
				// error: a file cut within its first batch writes
				// nothing.
				if lerr := restore(logs); lerr != nil {
					return n, fmt.Errorf("fpdb: import: %w", lerr)
				}
			}
			return n, fmt.Errorf("fpdb: import: %w", err)
		}
		if entry != nil {
			if err := flush(); err != nil { // the documents come first
				return n, err
			}
			if entry.Seq < res.logNext {
				continue // restored by the unfinished import
			}
			if logs = append(logs, *entry); len(logs) == size {
				if err := restore(logs); err != nil {
					return n, fmt.Errorf("fpdb: import: %w", err)
				}
				logs = logs[:0]
			}
			continue
		}
		if n < res.docs {
			// Stored by the unfinished import, whose batches held the
			// export's documents in order: the same id, fingerprint and
			// content hash.
			if err := d.storedAsExported(ctx, doc); err != nil {
				if errors.Is(err, ErrClosed) || ctx.Err() != nil {
					return n, fmt.Errorf("fpdb: import: %w", err)
				}
				return n, fmt.Errorf("fpdb: import: %w: line %d: %q: %w (%s should hold the first %d documents of this export)", ErrImportIncomplete, x.Line(), doc.ID, err, d.dir, res.docs)
			}
			n++
			continue
		}
		doc.checkText = true // on AddBatch's goroutines
		batch = append(batch, *doc)
		lines = append(lines, x.Line())
		if len(batch) == size {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := flush(); err != nil {
		return n, err
	}
	if err := restore(logs); err != nil {
		return n, fmt.Errorf("fpdb: import: %w", err)
	}
	if n != h.Docs {
		return n, fmt.Errorf("fpdb: import: %w: header announces %d documents, stored %d", ErrBadExport, h.Docs, n)
	}
	return n, nil
}

// firstBadLine returns the error of the first document of batch (read
// from lines) that an import would refuse (see checkExportText), or nil.
func (d *DB) firstBadLine(ctx context.Context, batch []Input, lines []int) error {
	if err := d.enter(ctx); err != nil {
		return fmt.Errorf("fpdb: import: %w", err)
	}
	_, errs := d.fingerprintBatch(ctx, batch)
	d.leave()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("fpdb: import: %w: line %d: %q: %w", ErrBadExport, lines[i], batch[i].ID, err)
		}
	}
	return nil
}

// ExportReader reads an export (the JSON Lines DB.Export writes) line by
// line: its header, read and checked by NewExportReader, then its
// documents and, after them, the entries of its audit log. Import uses
// one; a caller that stores the documents elsewhere (a cluster imports an
// export into its shards) reads them with one too.
type ExportReader struct {
	br         *bufio.Reader
	h          ExportHeader
	line       int
	docs, logs int
	texts      int
	prev       LogEntry
}

// errExportShort is wrapped by the error of Next at the end of an export
// that holds fewer lines than its header announces.
var errExportShort = errors.New("cut short")

// NewExportReader reads and checks the header line of the export r
// holds: its version, and hash and normalization versions this build
// fingerprints with (a *ParamsError otherwise). Other errors wrap
// ErrBadExport.
func NewExportReader(r io.Reader) (*ExportReader, error) {
	if r == nil {
		return nil, fmt.Errorf("fpdb: import: %w: no reader", ErrInvalidOptions)
	}
	br := bufio.NewReaderSize(r, 1<<16)
	h, err := readExportHeader(br)
	if err != nil {
		return nil, err
	}
	return &ExportReader{br: br, h: h, line: 1}, nil
}

// Header returns the export's header.
func (x *ExportReader) Header() ExportHeader { return x.h }

// Texts returns the number of documents read so far that carried a
// text.
func (x *ExportReader) Texts() int { return x.texts }

// Line returns the line number (from 1, the header) of the last line
// read.
func (x *ExportReader) Line() int { return x.line }

// Next returns the next document of the export — its id, fingerprint,
// content hash, metadata, time added and, when the export carries one, its
// text, as an Input that AddBatch stores as it was — or, once every
// document the header announces was read, the next entry of its audit log
// (doc nil). After the last it returns io.EOF. An export with fewer or
// more lines than its header announces, or a line that does not decode,
// gives an error that wraps ErrBadExport and names the line.
func (x *ExportReader) Next() (doc *Input, entry *LogEntry, err error) {
	line, err := readLine(x.br)
	if errors.Is(err, io.EOF) {
		if x.docs != x.h.Docs || x.logs != x.h.LogEntries {
			return nil, nil, fmt.Errorf("%w: %w after line %d: header announces %d documents and %d log entries, read %d and %d (truncated?)",
				ErrBadExport, errExportShort, x.line, x.h.Docs, x.h.LogEntries, x.docs, x.logs)
		}
		return nil, nil, io.EOF
	}
	if err != nil {
		return nil, nil, err
	}
	x.line++
	if x.docs < x.h.Docs {
		var rec ExportRecord
		if err := strictUnmarshal(line, &rec); err != nil {
			return nil, nil, fmt.Errorf("%w: line %d: %w", ErrBadExport, x.line, err)
		}
		bd, err := rec.batchDoc(x.h.K)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: line %d: %w", ErrBadExport, x.line, err)
		}
		x.docs++
		if bd.keptText != nil {
			x.texts++
		}
		return &bd, nil, nil
	}
	if !x.h.AuditLog || x.logs == x.h.LogEntries {
		return nil, nil, fmt.Errorf("%w: line %d: more lines than the %d documents and %d log entries the header announces",
			ErrBadExport, x.line, x.h.Docs, x.h.LogEntries)
	}
	e, err := parseLogJSON(line, x.h.K)
	if err == nil && x.logs > 0 && (e.Seq <= x.prev.Seq || e.Time.Before(x.prev.Time)) {
		err = fmt.Errorf("entry %d (%s) does not follow entry %d (%s): sequence numbers must grow and times not decrease",
			e.Seq, e.Time.Format(time.RFC3339Nano), x.prev.Seq, x.prev.Time.Format(time.RFC3339Nano))
	}
	if err == nil && (e.Seq == 0 || e.Seq == math.MaxUint64) {
		err = fmt.Errorf("sequence number %d", e.Seq)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: line %d: log entry: %w", ErrBadExport, x.line, err)
	}
	x.prev = e
	x.logs++
	return nil, &e, nil
}

// batchDoc decodes the fields of rec.
func (rec *ExportRecord) batchDoc(k int) (Input, error) {
	fp, err := bitvec.ParseHex(rec.Fingerprint, k)
	if err != nil {
		return Input{}, fmt.Errorf("fingerprint: %w", err)
	}
	bd := Input{ID: rec.ID, Fingerprint: fp, Source: rec.Source, Size: rec.Size, Words: rec.Words, Shingles: rec.Shingles}
	if rec.SourceBase64 != "" {
		src, err := base64.StdEncoding.DecodeString(rec.SourceBase64)
		if err != nil {
			return Input{}, fmt.Errorf("source_base64: %w", err)
		}
		bd.Source = string(src)
	}
	hb, err := hex.DecodeString(rec.ContentHash)
	if err != nil || len(hb) != len(bd.ContentHash) {
		return Input{}, fmt.Errorf("content_hash %q: want %d hex bytes", rec.ContentHash, len(bd.ContentHash))
	}
	copy(bd.ContentHash[:], hb)
	if rec.Words < 0 {
		return Input{}, fmt.Errorf("negative words %d", rec.Words)
	}
	if rec.Shingles < 0 {
		return Input{}, fmt.Errorf("negative shingles %d", rec.Shingles)
	}
	if bd.Added, err = time.Parse(time.RFC3339Nano, rec.Added); err != nil {
		return Input{}, fmt.Errorf("added: %w", err)
	}
	if y := bd.Added.Year(); y < minAddedYear || y > maxAddedYear {
		return Input{}, fmt.Errorf("added %s: out of range", rec.Added)
	}
	switch {
	case rec.Text == "" && rec.TextFormat != "":
		return Input{}, fmt.Errorf("text_format %q without a text", rec.TextFormat)
	case rec.Text != "":
		f, err := ParseFormat(rec.TextFormat)
		if err != nil || f == FormatAuto {
			return Input{}, fmt.Errorf("text_format %q: want \"text\" or \"html\"", rec.TextFormat)
		}
		bd.keptText = &StoredText{Text: []byte(rec.Text), Format: f}
	}
	return bd, nil
}

// checkExportText returns an error that says what does not match when
// the text of an export's record (in.keptText) does not give the record's
// content hash, fingerprint or word count with the database's parameters
// and templates: a damaged or edited record, which an import refuses
// (ErrBadExport, naming its line). It fingerprints the text as Add would
// (reindex does the same with a stored text), which AddBatch's goroutines
// do for a batch on all cores. The shingle count is not compared: it is
// not pinned by the hash and normalization versions as the others are, so
// an export of an older build could differ there without being damaged.
func (d *DB) checkExportText(in *Input) error {
	kt := in.keptText
	res, _, err := d.build(nil, kt.Text, TextOptions{Format: kt.Format, Encoding: "utf-8"}, "")
	if err != nil {
		return fmt.Errorf("text: %w", err)
	}
	var bad []string
	if res.ContentHash != in.ContentHash {
		bad = append(bad, fmt.Sprintf("content_hash %x is not the text's (%x)", in.ContentHash, res.ContentHash))
	}
	if !slices.Equal(res.FP, in.Fingerprint) {
		bad = append(bad, fmt.Sprintf("fingerprint differs from the text's in %d of its %d bits", bitvec.Hamming(res.FP, in.Fingerprint), d.params.K))
	}
	if res.Words != in.Words {
		bad = append(bad, fmt.Sprintf("words %d is not the text's (%d)", in.Words, res.Words))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", errRecordMismatch, strings.Join(bad, "; "))
	}
	return nil
}

// errRecordMismatch is the reason checkExportText refuses a record.
var errRecordMismatch = errors.New("the record does not match its text (damaged or edited)")

// readLine returns the next non-empty line of br without its end of line,
// or io.EOF.
func readLine(br *bufio.Reader) ([]byte, error) {
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		if err != nil && !errors.Is(err, io.EOF) {
			// A read that failed (not the export's end) is the error,
			// not the part of a line it left.
			return nil, err
		}
		if len(line) > 0 {
			return line, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// errCutShort is the error of a line that ends inside its JSON object.
var errCutShort = errors.New("the JSON object is cut short (a truncated export?)")

// strictUnmarshal decodes one JSON object into v, refusing unknown fields
// and trailing data.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); errors.Is(err, io.ErrUnexpectedEOF) {
		// Not Go's bare "unexpected EOF".
		return errCutShort
	} else if err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// writeLog writes the entries of the audit log of snap after the
// documents; there must be entries of them (counted when the header was
// written).
func (e *ExportWriter) writeLog(ctx context.Context, snap *pebble.Snapshot, k, entries int) error {
	n := 0
	err := logReader{snap: snap, k: k}.from(ctx, 0, time.Time{}, func(le *LogEntry) (bool, error) {
		n++
		return true, e.enc.Encode(le)
	})
	if err == nil && n != entries {
		err = fmt.Errorf("%w: %d log entries read, %d counted", ErrCorrupt, n, entries)
	}
	return err
}

// countKeys returns the number of keys with prefix pfx in r.
func countKeys(ctx context.Context, r pebble.Reader, pfx byte) (int, error) {
	lo, hi := keys.Range(pfx)
	it, err := r.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi, KeyTypes: pebble.IterKeyTypePointsOnly})
	if err != nil {
		return 0, storageError(err)
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		return 0, storageError(err)
	}
	return n, nil
}
