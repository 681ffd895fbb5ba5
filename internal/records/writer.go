package records

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Extra is a field appended to each written record.
type Extra struct {
	Name string
	// Value is a string, int64 or float64 (int and bool are accepted too).
	// Every record of a Writer must give an extra the same type.
	Value any
}

// Limits of the records a CSV or Parquet Writer holds while it cannot tell
// its columns (bad records without fields that come first).
const (
	maxHeldRecords = 1000
	maxHeldBytes   = 16 << 20
)

// rawColumn is the column that holds the raw lines of bad records when a
// columnar output knows no other columns.
const rawColumn = "fpdb_raw"

// Writer writes records to a file in a format, appending extra fields to
// each. A Writer is not safe for concurrent use.
type Writer struct {
	path   string
	format Format
	file   *os.File       // nil for standard output
	bw     *bufio.Writer  // standard output's buffer
	bg     *bgWriter      // a file's buffers, written in the background
	comp   io.WriteCloser // the compressor, if any
	out    io.Writer      // comp, bw or bg

	extraNames []string
	extraKeys  [][]byte        // JSON Lines: `"name":`
	extraSet   map[string]bool // the extra names
	rawCol     bool            // AddRawColumn was called
	buf        []byte
	sc         jsonScanner
	err        error // sticky: an output error
	closed     bool

	// CSV/TSV and Parquet: the columns of the source records, once known.
	cols     []string
	colsSet  bool
	colIndex map[string]int // nil when cols has duplicates
	nSrc     int            // the columns of cols that are the source's (a raw column may follow)
	rawIdx   int            // the column of rawColumn in cols, -1 when none
	colMap   []int          // scratch: field index -> column (-1: dropped)
	// The columns SetColumns gave, and the types of the extras for an
	// output closed without a record; union: cols came from them, so a
	// record may have any subset of them.
	preset       []string
	presetExtras []Extra
	union        bool
	held         []heldRecord
	heldSize     int

	// CSV/TSV
	cw    *csv.Writer
	cells []string
	text  []byte

	// The columns of the first record that told them, shared with linked
	// Writers (ShareSchema); nil when not linked.
	share *schemaShare

	// The columns of an input (SchemaFrom), for an output that gets no
	// record telling them.
	fallback       *source
	fallbackExtras []Extra

	// Parquet
	pq                    *pqOutput
	pqMaxRows, pqMaxBytes int64 // row group limits (tests lower them)
}

// schemaShare is what linked Writers (ShareSchema) know of the columns of
// the first record one of them wrote.
type schemaShare struct {
	set    bool
	cols   []string // the columns (CSV/TSV, string Parquet)
	pqSrc  *source  // or the Parquet source whose schema a Parquet output keeps
	extras []Extra  // that record's extras (their types)
}

// ShareSchema links w and other (of the same format): a Writer that has
// written no record that tells the columns when it is closed takes those
// of the first record the other wrote (a Parquet output: its schema plus
// the extras, the extras of their types; a CSV/TSV output: its header),
// instead of being a file without columns or an empty CSV file. Call it
// before the first Write.
func (w *Writer) ShareSchema(other *Writer) {
	sh := &schemaShare{}
	w.share, other.share = sh, sh
}

// shareSchema notes the columns (cols, or the Parquet source src) of the
// first record written to a linked Writer.
func (w *Writer) shareSchema(cols []string, src *source, extras []Extra) {
	if w.share == nil || w.share.set {
		return
	}
	w.share.set = true
	w.share.cols = slices.Clone(cols)
	w.share.pqSrc = src
	w.share.extras = slices.Clone(extras)
}

// settleShared fixes the columns of a Writer that got none to those of a
// linked Writer; it tells whether it did.
func (w *Writer) settleShared() (bool, error) {
	sh := w.share
	if w.colsSet || sh == nil || !sh.set {
		return false, nil
	}
	if sh.pqSrc != nil && w.format == FormatParquet {
		return true, w.startParquetSchema(sh.pqSrc, sh.extras)
	}
	cols := sh.cols
	if sh.pqSrc != nil {
		cols = sh.pqSrc.columns
	}
	return true, w.setColumns(cols, sh.extras)
}

// SchemaFrom gives w the columns of r's input (a CSV/TSV header, a
// Parquet schema) and extras of the types given, for when w is closed
// having written no record that tells its columns and a linked Writer
// (ShareSchema) none either: the outputs of an input of no records then
// have the input's columns and the extras, not none. The first input that
// has columns counts (JSON Lines tells none); records written override it.
func (w *Writer) SchemaFrom(r *Reader, extras []Extra) {
	if w.fallback != nil || r.src == nil || (len(r.src.columns) == 0 && r.src.pqSchema == nil) {
		return
	}
	w.fallback, w.fallbackExtras = r.src, slices.Clone(extras)
}

// settleFallback fixes the columns of a Writer that got none, and whose
// linked Writer got none, to those SchemaFrom gave.
func (w *Writer) settleFallback() error {
	src := w.fallback
	if w.colsSet || src == nil {
		return nil
	}
	if w.format == FormatParquet && src.format == FormatParquet && src.pqSchema != nil {
		return w.startParquetSchema(src, w.fallbackExtras)
	}
	return w.setColumns(src.columns, w.fallbackExtras)
}

// SetColumns fixes the columns of a CSV/TSV output, or of a Parquet output
// of records that are not written with their Parquet source's schema, to
// names (distinct: a name given twice is an error; then the extras),
// instead of the first record's: every record written may have any subset
// of them, in any order (a column a record lacks is an empty cell, null in
// Parquet; a field named twice gives its last value); a field not among
// them is an error wrapping ErrSchema (WriteBad drops it). Extras are
// checked as Write checks them. Records from a Parquet
// source are then written from their fields, as strings. The output has
// the columns also when it gets no record (a linked Writer's first record,
// else extras, give the extras' types). It is for records of
// heterogeneous JSON Lines whose members a first pass collected
// (Options.Names). Call it before the first Write; a JSON Lines output,
// and empty names, leave the Writer as it is.
func (w *Writer) SetColumns(names []string, extras []Extra) error {
	if w.format == FormatJSONL || len(names) == 0 {
		return nil
	}
	if w.colsSet || len(w.held) > 0 {
		return errors.New("records: SetColumns after a Write")
	}
	if err := w.checkExtras(extras); err != nil {
		return err
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return fmt.Errorf("records: SetColumns: column %q given twice", n)
		}
		seen[n] = true
	}
	w.preset, w.presetExtras = slices.Clone(names), slices.Clone(extras)
	return nil
}

// setPreset fixes the columns to those SetColumns gave, the extras of the
// types of extras.
func (w *Writer) setPreset(extras []Extra) error {
	if err := w.setColumns(w.preset, extras); err != nil {
		return err
	}
	w.union = true
	return nil
}

// settlePreset fixes the columns of a Writer that got no record to those
// SetColumns gave.
func (w *Writer) settlePreset() error {
	if w.colsSet || w.preset == nil {
		return nil
	}
	extras := w.presetExtras
	if w.share != nil && w.share.set {
		extras = w.share.extras
	}
	return w.setPreset(extras)
}

// heldRecord is a copy of a record waiting for the columns to be known.
type heldRecord struct {
	rec    Record
	extras []Extra
}

// unwritableCompressions are the extensions of compressions, besides
// bzip2 (which Open reads), that Create does not write, with their names.
var unwritableCompressions = map[string]string{
	".xz": "xz", ".lzma": "lzma", ".lz": "lzip", ".lz4": "lz4", ".br": "brotli",
	".sz": "snappy", ".snappy": "snappy", ".z": "compress", ".zip": "zip", ".7z": "7-Zip",
}

// CheckOutput reports, from its name alone, why an output named path,
// given by a user, should not be written in format f (FormatAuto: the one
// its extension tells): a name Create refuses (checkWritable), or an
// extension that is neither a format's nor a compression's after a
// format's (kept.csv.foo: a compression fpdb does not know?), which would
// be written uncompressed. Names that tell no format (kept.out, kept) and
// "-" (standard output) pass. The error names path.
func CheckOutput(path string, f Format) error {
	if err := checkWritable(path, f); err != nil || path == "-" {
		return err
	}
	base := filepath.Base(path)
	ext := filepath.Ext(base)
	if _, c := splitCompression(base); c == CompressionNone && formatOfExt(ext) == FormatAuto && formatOfExt(filepath.Ext(strings.TrimSuffix(base, ext))) != FormatAuto {
		return fmt.Errorf("%s: %s after the format's extension is no compression fpdb writes (.gz, .zst): it would not be compressed; drop %s, or use .gz or .zst", path, ext, ext)
	}
	return nil
}

// checkWritable reports why Create cannot write records in format f to
// path as its name asks: a compression it does not write (.bz2: Go has no
// bzip2 compressor; .xz, .lz4, .lzma, .br, .sz and the like), or a
// Parquet file compressed as a whole (.parquet.gz). Names derived from
// inputs (a shard named after logs.jsonl.1) pass as long as they are
// writable.
func checkWritable(path string, f Format) error {
	if path == "-" {
		return nil
	}
	base := filepath.Base(path)
	ext := filepath.Ext(base)
	rest, c := splitCompression(base)
	if f == FormatAuto {
		f = formatOfExt(filepath.Ext(rest))
	}
	switch name, unwritable := unwritableCompressions[strings.ToLower(ext)]; {
	case c == CompressionBzip2:
		return fmt.Errorf("%s: cannot write bzip2 (.bz2): Go has no bzip2 compressor; use .gz or .zst", path)
	case unwritable:
		return fmt.Errorf("%s: cannot write %s compression (%s): use .gz or .zst, or no compression extension", path, name, ext)
	case f == FormatParquet && c != CompressionNone:
		return fmt.Errorf("%s: a Parquet file cannot be %s-compressed as a whole (its pages are compressed inside): drop the %s extension", path, c, ext)
	}
	return nil
}

// Create creates the file at path (truncating it) to write records in
// format f (FormatAuto: by the extension), compressed as the extension tells
// (.gz, .zst, .zstd); a name it cannot write so (checkWritable) is refused. Path "-"
// writes to stdout (JSON Lines for FormatAuto) and Close does not close it.
// extraNames are the names of the extra fields that every Write passes, in
// order. A Writer must be closed, also after an error: a Parquet Writer's
// goroutines end at Close.
func Create(path string, f Format, stdout io.Writer, extraNames []string) (*Writer, error) {
	seen := map[string]bool{}
	for _, n := range extraNames {
		if n == "" {
			return nil, errors.New("records: an extra field has an empty name")
		}
		if seen[n] {
			return nil, fmt.Errorf("records: extra field %q named twice", n)
		}
		seen[n] = true
	}
	w := &Writer{path: path, format: f, extraNames: slices.Clone(extraNames), pqMaxRows: pqMaxRows, pqMaxBytes: pqMaxBytes}
	w.extraSet = make(map[string]bool, len(extraNames))
	for _, n := range extraNames {
		w.extraKeys = append(w.extraKeys, append(appendJSONString(nil, n), ':'))
		w.extraSet[n] = true
	}
	c := CompressionNone
	if path == "-" {
		if stdout == nil {
			return nil, errors.New(`records: "-" needs a standard output to write to`)
		}
		if w.format == FormatAuto {
			w.format = FormatJSONL
		}
		w.bw = bufio.NewWriterSize(stdout, 64<<10)
		w.out = w.bw
	} else {
		if err := checkWritable(path, w.format); err != nil {
			return nil, err
		}
		var rest string
		rest, c = splitCompression(filepath.Base(path))
		if w.format == FormatAuto {
			if w.format = formatOfExt(filepath.Ext(rest)); w.format == FormatAuto {
				_, _, err := Detect(path)
				return nil, err
			}
		}
	}
	switch w.format {
	case FormatJSONL, FormatCSV, FormatTSV, FormatParquet:
	default:
		return nil, fmt.Errorf("%w: format %v", ErrUnknownFormat, w.format)
	}
	if path != "-" {
		file, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		w.file = file
		var zs []zstdFrames
		if c == CompressionZstd {
			for range bgCompressors {
				z, err := newZstdFrames()
				if err != nil {
					file.Close()
					return nil, fmt.Errorf("%s: starting zstd: %w", path, err)
				}
				zs = append(zs, z)
			}
		}
		w.bg = newBgWriter(file, zs)
		w.out = w.bg
	}
	switch c {
	case CompressionGzip:
		// Outputs favour speed: a dedup writes as much as it reads.
		gw, err := gzip.NewWriterLevel(w.out, gzip.BestSpeed)
		if err != nil {
			w.bg.abort()
			w.file.Close()
			return nil, fmt.Errorf("%s: starting gzip: %w", path, err)
		}
		w.comp = gw
	}
	if w.comp != nil {
		w.out = w.comp
	}
	if w.format == FormatCSV || w.format == FormatTSV {
		w.cw = csv.NewWriter(w.out)
		if w.format == FormatTSV {
			w.cw.Comma = '\t'
		}
	}
	return w, nil
}

// AddRawColumn makes a CSV/TSV output, or a Parquet output of string
// columns (a source that is not Parquet), have a column "fpdb_raw" after
// the source's columns (unless they have one), holding the original text
// (Record.Raw) of each bad record written with WriteBad: a malformed CSV
// row or JSON line, whose fields cannot hold it. It is empty (null) for the
// other records. A caller that knows bad records will come calls it before
// the first Write; without it, a bad record that comes after the columns
// are known keeps only the fields the columns name.
func (w *Writer) AddRawColumn() {
	w.rawCol = true
}

// Write writes rec, read with Options.Raw, followed by the extras (one per
// extra name given to Create, in the same order).
//
// In the source's format, the record is written as it was read: a JSON
// line with the extra members inserted before its closing brace, a CSV/TSV
// row with the extras as further columns, a Parquet row with the extras as
// further columns of the source's schema. Across formats it is written from
// rec.Fields (see the package documentation). A record whose columns differ
// from those of the records written before is an error wrapping ErrSchema.
func (w *Writer) Write(rec *Record, extras []Extra) error {
	return w.write(rec, extras, false)
}

// WriteBad is Write for a record whose Err is set, which may lack fields: a
// JSON line is written as it is when it is a JSON object, else as an object
// {"fpdb_raw": "<the line>"}; CSV/TSV and Parquet outputs get the fields
// there are (others empty or null). Then the extras.
func (w *Writer) WriteBad(rec *Record, extras []Extra) error {
	return w.write(rec, extras, true)
}

func (w *Writer) write(rec *Record, extras []Extra, isBad bool) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("records: Write on a closed Writer")
	}
	if rec == nil {
		return errors.New("records: Write of a nil record")
	}
	if err := w.checkExtras(extras); err != nil {
		return err
	}
	if rec.pqLazy != nil && !w.parquetAsIs(rec) {
		rec.LoadFields()
	}
	var err error
	switch w.format {
	case FormatJSONL:
		err = w.writeJSONL(rec, extras, isBad)
	default:
		err = w.writeColumnar(rec, extras, isBad)
	}
	return err
}

// checkExtras checks that extras are those the Writer was created with,
// of types it writes.
func (w *Writer) checkExtras(extras []Extra) error {
	if len(extras) != len(w.extraNames) {
		return fmt.Errorf("records: %d extras given, the Writer was created with %d (%s)", len(extras), len(w.extraNames), strings.Join(w.extraNames, ", "))
	}
	for i, e := range extras {
		if e.Name != "" && e.Name != w.extraNames[i] {
			return fmt.Errorf("records: extra %d is named %q, the Writer was created with %q", i, e.Name, w.extraNames[i])
		}
		switch e.Value.(type) {
		case string, int64, int, float64, bool:
		default:
			return fmt.Errorf("records: extra %q is a %T (want string, int64 or float64)", w.extraNames[i], e.Value)
		}
	}
	return nil
}

// parquetAsIs tells whether rec, from a Parquet file, is written as its
// Parquet row (an output with the schema of its source), without Fields.
func (w *Writer) parquetAsIs(rec *Record) bool {
	return w.format == FormatParquet && rec.src != nil && rec.src.format == FormatParquet &&
		(!w.colsSet && w.preset == nil || (w.pq != nil && w.pq.same))
}

// fail records an output error, which stops the Writer.
func (w *Writer) fail(err error) error {
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("%s: %w", w.path, err)
	}
	return w.err
}

// needRaw is the error for a record that was read without Options.Raw.
func needRaw(rec *Record) error {
	return fmt.Errorf("records: record %v has no content to write: read it with Options.Raw", rec.Pos)
}

// ---- JSON Lines ----

func (w *Writer) writeJSONL(rec *Record, extras []Extra, isBad bool) error {
	b := w.buf[:0]
	var err error
	switch {
	case rec.Raw != nil && (rec.src == nil || rec.src.format == FormatJSONL):
		ok := true
		if isBad {
			notObject, err := w.sc.scanLine(rec.Raw, nil, nil, false)
			ok = err == nil && notObject == ""
		}
		if ok && w.hasExtraField(rec) {
			// The record has fields of an earlier run's extras: they
			// are replaced, written from the fields.
			if b, err = w.appendFieldsObject(b, rec, extras, false); err != nil {
				return err
			}
			break
		}
		if ok {
			b, err = w.insertExtras(b, rec.Raw, extras)
			if err != nil {
				if !isBad {
					return fmt.Errorf("records: record %v: %w", rec.Pos, err)
				}
				ok = false
			}
		}
		if !ok {
			b = append(append(b[:0], '{'), appendJSONString(nil, rawColumn)...)
			b = appendJSONString(append(b, ':'), rec.Raw)
			if b, err = w.appendExtras(b, extras, true); err != nil {
				return err
			}
			b = append(b, '}')
		}
	case rec.Fields != nil || isBad || (rec.src != nil && rec.src.format != FormatJSONL && rec.src.format != FormatAuto):
		if rec.Fields == nil && !isBad {
			return needRaw(rec)
		}
		if b, err = w.appendFieldsObject(b, rec, extras, isBad && rec.Raw != nil); err != nil {
			return err
		}
	default:
		return needRaw(rec)
	}
	b = append(b, '\n')
	w.buf = b
	if _, err := w.out.Write(b); err != nil {
		return w.fail(err)
	}
	return nil
}

// hasExtraField tells whether a field of rec has the name of an extra.
func (w *Writer) hasExtraField(rec *Record) bool {
	for _, f := range rec.Fields {
		if w.extraSet[f.Name] {
			return true
		}
	}
	return false
}

// appendFieldsObject appends a JSON object of the fields of rec, but for
// those named as an extra (an earlier run's, replaced), then with withRaw
// a member "fpdb_raw" of rec.Raw (replacing a field of that name), then
// the extras.
func (w *Writer) appendFieldsObject(b []byte, rec *Record, extras []Extra, withRaw bool) ([]byte, error) {
	var err error
	b = append(b, '{')
	n := 0
	for _, f := range rec.Fields {
		if w.extraSet[f.Name] || withRaw && f.Name == rawColumn {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(appendJSONString(b, f.Name), ':')
		if b, err = appendJSONValue(b, f.Value); err != nil {
			return b, fmt.Errorf("records: record %v, field %q: %w", rec.Pos, f.Name, err)
		}
	}
	if withRaw {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendJSONString(append(appendJSONString(b, rawColumn), ':'), rec.Raw)
	}
	if b, err = w.appendExtras(b, extras, n > 0); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// insertExtras appends the JSON object raw with the extras inserted before
// its closing brace.
func (w *Writer) insertExtras(dst, raw []byte, extras []Extra) ([]byte, error) {
	end := len(raw)
	for end > 0 && isJSONSpace(raw[end-1]) {
		end--
	}
	if end == 0 || raw[end-1] != '}' {
		return dst, errNotObject
	}
	j := end - 2
	for j >= 0 && isJSONSpace(raw[j]) {
		j--
	}
	if j < 0 {
		return dst, errNotObject
	}
	empty := raw[j] == '{'
	dst = append(dst, raw[:end-1]...)
	dst, err := w.appendExtras(dst, extras, !empty)
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// appendExtras appends the extras as object members.
func (w *Writer) appendExtras(dst []byte, extras []Extra, comma bool) ([]byte, error) {
	var err error
	for i, e := range extras {
		if comma || i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, w.extraKeys[i]...)
		if dst, err = appendJSONValue(dst, e.Value); err != nil {
			return dst, fmt.Errorf("records: extra %q: %w", w.extraNames[i], err)
		}
	}
	return dst, nil
}

// ---- CSV/TSV and Parquet ----

// recordColumns returns the column names of the source of rec: the
// CSV/TSV header or Parquet top-level columns, else the names of its
// fields; ok is false when rec tells none.
func recordColumns(rec *Record) ([]string, bool) {
	if rec.src != nil && rec.src.format != FormatJSONL && rec.src.columns != nil {
		return rec.src.columns, true
	}
	if len(rec.Fields) == 0 {
		return nil, false
	}
	names := make([]string, len(rec.Fields))
	for i, f := range rec.Fields {
		names[i] = f.Name
	}
	return names, true
}

func (w *Writer) writeColumnar(rec *Record, extras []Extra, isBad bool) error {
	if !w.colsSet && w.preset != nil {
		w.shareSchema(w.preset, nil, extras)
		if err := w.setPreset(extras); err != nil {
			return err
		}
	}
	if !w.colsSet {
		if w.format == FormatParquet && rec.src != nil && rec.src.format == FormatParquet {
			// A Parquet source keeps its schema.
			if err := w.startParquetSame(rec, extras); err != nil {
				return err
			}
			return w.writeParquet(rec, extras, isBad)
		}
		if rec.Fields == nil && !isBad {
			return needRaw(rec)
		}
		cols, ok := recordColumns(rec)
		if !ok || isBad && (rec.src == nil || rec.src.format == FormatJSONL) {
			// A bad JSON line may lack fields: the columns come from the
			// first good record.
			return w.hold(rec, extras)
		}
		w.shareSchema(cols, nil, extras)
		if err := w.setColumns(cols, extras); err != nil {
			return err
		}
		if err := w.releaseHeld(); err != nil {
			return err
		}
	}
	if w.format == FormatParquet {
		return w.writeParquet(rec, extras, isBad)
	}
	return w.writeCSVRow(rec, extras, isBad)
}

// sourceColumns returns a new slice of the columns of cols that are not
// named as an extra (an earlier run's extras, which this run's replace),
// with room for one more.
func (w *Writer) sourceColumns(cols []string) []string {
	out := make([]string, 0, len(cols)+1)
	for _, c := range cols {
		if !w.extraSet[c] {
			out = append(out, c)
		}
	}
	return out
}

// setColumns fixes the columns of a CSV/TSV or (string) Parquet output and
// writes the CSV header.
//
// Columns named as an extra (an earlier run's extras) are left out: the
// extras replace them. With AddRawColumn, a column rawColumn follows the
// source's columns unless they have one.
func (w *Writer) setColumns(cols []string, extras []Extra) error {
	w.cols = w.sourceColumns(cols)
	w.nSrc = len(w.cols)
	w.rawIdx = slices.Index(w.cols, rawColumn)
	if w.rawCol && w.rawIdx < 0 {
		w.rawIdx = len(w.cols)
		w.cols = append(w.cols, rawColumn)
	}
	w.colsSet = true
	w.colIndex = make(map[string]int, len(w.cols))
	for i, c := range w.cols {
		if _, dup := w.colIndex[c]; dup {
			w.colIndex = nil
			break
		}
		w.colIndex[c] = i
	}
	if w.format == FormatParquet {
		return w.startParquetStrings(extras)
	}
	header := append(slices.Clone(w.cols), w.extraNames...)
	if err := w.cw.Write(header); err != nil {
		return w.fail(err)
	}
	return nil
}

// hold keeps a copy of a record that tells no columns until a record that
// does comes (or Close).
func (w *Writer) hold(rec *Record, extras []Extra) error {
	c := heldRecord{
		rec:    Record{ID: rec.ID, Pos: rec.Pos, Err: rec.Err, Raw: slices.Clone(rec.Raw), src: rec.src, Fields: cloneFields(rec.Fields)},
		extras: slices.Clone(extras),
	}
	w.held = append(w.held, c)
	w.heldSize += 2*len(rec.Raw) + 64
	if len(w.held) >= maxHeldRecords || w.heldSize >= maxHeldBytes {
		return w.settleHeld()
	}
	return nil
}

// cloneFields copies fields and the bytes their values hold.
func cloneFields(fields []Field) []Field {
	if fields == nil {
		return nil
	}
	out := make([]Field, len(fields))
	for i, f := range fields {
		switch v := f.Value.(type) {
		case json.RawMessage:
			f.Value = json.RawMessage(slices.Clone(v))
		case []byte:
			f.Value = slices.Clone(v)
		}
		out[i] = f
	}
	return out
}

// settleHeld fixes the columns to the raw column alone, for held records
// that no record with columns came to place.
func (w *Writer) settleHeld() error {
	if len(w.held) == 0 {
		return nil
	}
	if w.colsSet {
		return w.releaseHeld()
	}
	// The held records tell no columns: their lines go to the raw column.
	w.rawCol = true
	if ok, err := w.settleShared(); ok || err != nil {
		if err != nil {
			return err
		}
		return w.releaseHeld()
	}
	if err := w.setColumns([]string{rawColumn}, w.held[0].extras); err != nil {
		return err
	}
	return w.releaseHeld()
}

// releaseHeld writes the held records.
func (w *Writer) releaseHeld() error {
	held := w.held
	w.held, w.heldSize = nil, 0
	for i := range held {
		if err := w.writeColumnar(&held[i].rec, held[i].extras, true); err != nil {
			return err
		}
	}
	return nil
}

// mapFields fills w.colMap with the column of each field of rec (-1:
// dropped). Records not bad must have exactly the columns (CSV, from a
// CSV/TSV or Parquet source) or a subset of them (Parquet strings; CSV
// from JSON Lines, whose records may lack a member: an empty cell, as
// for null).
func (w *Writer) mapFields(rec *Record, isBad bool) error {
	fields := rec.Fields
	w.colMap = w.colMap[:0]
	if len(fields) == w.nSrc {
		same := true
		for i, f := range fields {
			if f.Name != w.cols[i] {
				same = false
				break
			}
		}
		if same {
			for i := range fields {
				w.colMap = append(w.colMap, i)
			}
			return nil
		}
	}
	mismatch := w.colIndex == nil && !isBad
	filled := 0
	for _, f := range fields {
		c, ok := -1, false
		if w.extraSet[f.Name] {
			// An earlier run's extra: replaced by this run's.
			w.colMap = append(w.colMap, -1)
			continue
		}
		if w.colIndex != nil {
			c, ok = w.colIndex[f.Name]
		}
		if !ok {
			c = -1
			if !isBad {
				mismatch = true
			}
		} else {
			filled++
		}
		w.colMap = append(w.colMap, c)
	}
	if !isBad && !w.union && w.format != FormatParquet && filled != w.nSrc && (rec.src == nil || rec.src.format != FormatJSONL) {
		mismatch = true
	}
	if !isBad && !w.union && w.colIndex != nil && filled > w.nSrc {
		mismatch = true // a name given twice
	}
	if mismatch {
		names, _ := recordColumns(rec)
		if rec.src != nil && rec.src.format == FormatJSONL {
			names = make([]string, len(fields))
			for i, f := range fields {
				names[i] = f.Name
			}
		}
		return fmt.Errorf("%w: record %v has the columns [%s], the output has [%s]", ErrSchema, rec.Pos, strings.Join(names, ", "), strings.Join(w.cols, ", "))
	}
	return nil
}

func (w *Writer) writeCSVRow(rec *Record, extras []Extra, isBad bool) error {
	if err := w.mapFields(rec, isBad); err != nil {
		return err
	}
	n := len(w.cols) + len(extras)
	w.cells = slices.Grow(w.cells[:0], n)[:n]
	for i := range w.cells {
		w.cells[i] = ""
	}
	var err error
	for i, f := range rec.Fields {
		c := w.colMap[i]
		if c < 0 {
			continue
		}
		if s, ok := f.Value.(string); ok {
			w.cells[c] = s
			continue
		}
		if w.text, _, err = appendText(w.text[:0], f.Value); err != nil {
			return fmt.Errorf("records: record %v, field %q: %w", rec.Pos, f.Name, err)
		}
		w.cells[c] = string(w.text)
	}
	if w.rawIdx >= 0 && isBad && rec.Raw != nil {
		w.cells[w.rawIdx] = string(rec.Raw)
	}
	for i, e := range extras {
		if s, ok := e.Value.(string); ok {
			w.cells[len(w.cols)+i] = s
			continue
		}
		w.text, _, _ = appendText(w.text[:0], e.Value)
		w.cells[len(w.cols)+i] = string(w.text)
	}
	if err := w.cw.Write(w.cells); err != nil {
		return w.fail(err)
	}
	return nil
}

// Close writes what is buffered and closes the file (standard output is
// flushed, not closed). Errors of the flushing and closing are returned.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	var errs []error
	if w.err == nil && (w.format == FormatCSV || w.format == FormatTSV || w.format == FormatParquet) {
		if err := w.settleHeld(); err != nil {
			errs = append(errs, err)
		} else if err := w.settlePreset(); err != nil {
			// An output without records has the columns it was given.
			errs = append(errs, err)
		} else if _, err := w.settleShared(); err != nil {
			// An output without records keeps the columns of a
			// linked one's.
			errs = append(errs, err)
		} else if err := w.settleFallback(); err != nil {
			// Or, neither having any, the input's.
			errs = append(errs, err)
		}
	}
	w.closed = true
	if w.err == nil {
		if w.cw != nil {
			w.cw.Flush()
			errs = append(errs, w.cw.Error())
		}
		if w.format == FormatParquet {
			errs = append(errs, w.closeParquet())
		}
		if w.comp != nil {
			errs = append(errs, w.comp.Close())
		}
		if w.bw != nil {
			errs = append(errs, w.bw.Flush())
		}
		if w.bg != nil {
			errs = append(errs, w.bg.Close())
		}
	} else {
		errs = append(errs, w.err)
		if w.pq != nil {
			w.pq.stop()
		}
		if w.comp != nil {
			w.comp.Close()
		}
		if w.bg != nil {
			w.bg.abort()
		}
	}
	if w.file != nil {
		errs = append(errs, w.file.Close())
	}
	err := errors.Join(errs...)
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("%s: %w", w.path, err)
		return w.err
	}
	return err
}

// errNotObject is returned for a raw line that is not a JSON object.
var errNotObject = errors.New("the raw line is not a JSON object")
