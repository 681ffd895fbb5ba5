package records

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// Format is the format of a record file.
type Format int

// The formats of record files.
const (
	FormatAuto    Format = iota // by the file name's extension (see Detect)
	FormatJSONL                 // JSON Lines: one JSON object per line (.jsonl, .ndjson, .json)
	FormatCSV                   // comma-separated values with a header row (.csv)
	FormatTSV                   // tab-separated values with a header row (.tsv, .tab)
	FormatParquet               // Apache Parquet (.parquet, .pq)
)

// String returns the format's name as ParseFormat takes it: "auto", "jsonl",
// "csv", "tsv" or "parquet".
func (f Format) String() string {
	switch f {
	case FormatAuto:
		return "auto"
	case FormatJSONL:
		return "jsonl"
	case FormatCSV:
		return "csv"
	case FormatTSV:
		return "tsv"
	case FormatParquet:
		return "parquet"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// ParseFormat returns the format named s (case-insensitive): "auto", "jsonl"
// (also "ndjson" and "json"), "csv", "tsv" or "parquet". Any other name is an
// error wrapping ErrUnknownFormat.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "auto", "":
		return FormatAuto, nil
	case "jsonl", "ndjson", "json":
		return FormatJSONL, nil
	case "csv":
		return FormatCSV, nil
	case "tsv":
		return FormatTSV, nil
	case "parquet":
		return FormatParquet, nil
	}
	return FormatAuto, fmt.Errorf("%w %q (want auto, jsonl, csv, tsv or parquet)", ErrUnknownFormat, s)
}

// Compression is the compression of a record file as a whole.
type Compression int

// The compressions of record files.
const (
	CompressionNone  Compression = iota // not compressed
	CompressionGzip                     // gzip (.gz)
	CompressionZstd                     // Zstandard (.zst, .zstd)
	CompressionBzip2                    // bzip2 (.bz2), read only
)

// String returns the compression's name: "none", "gzip", "zstd" or "bzip2".
func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionZstd:
		return "zstd"
	case CompressionBzip2:
		return "bzip2"
	}
	return "Compression(" + strconv.Itoa(int(c)) + ")"
}

// Errors callers test with errors.Is.
var (
	// ErrUnknownFormat is wrapped by the errors of a format that cannot be
	// told from a file name or that is not known.
	ErrUnknownFormat = errors.New("unknown record format")
	// ErrBadRecord is wrapped by Record.Err: the record could not be read
	// (missing or mistyped id or text, malformed line, ...). It does not stop
	// the reading of the file.
	ErrBadRecord = errors.New("bad record")
	// ErrSchema is wrapped by whole-file errors about columns: the id or text
	// column missing from a CSV header or Parquet schema, a column that is
	// not usable (a Parquet group or list), or, when writing, records from
	// sources with different columns.
	ErrSchema = errors.New("record schema mismatch")
	// ErrNotUTF8 is wrapped by the whole-file error of a CSV, TSV or JSON
	// Lines text (once decompressed) that is UTF-16 or UTF-32, as its
	// byte-order mark or the NUL bytes of its first characters tell:
	// records must be UTF-8. The error names the encoding and how to
	// convert the file.
	ErrNotUTF8 = errors.New("records must be UTF-8")
)

// splitCompression returns the compression told by the last extension of
// name and the name without that extension.
func splitCompression(name string) (string, Compression) {
	ext := strings.ToLower(filepath.Ext(name))
	switch ext {
	case ".gz":
		return name[:len(name)-len(ext)], CompressionGzip
	case ".zst", ".zstd":
		return name[:len(name)-len(ext)], CompressionZstd
	case ".bz2":
		return name[:len(name)-len(ext)], CompressionBzip2
	}
	return name, CompressionNone
}

// formatOfExt returns the format of a file extension (with its dot), or
// FormatAuto when the extension is not a record format's.
func formatOfExt(ext string) Format {
	switch strings.ToLower(ext) {
	case ".jsonl", ".ndjson", ".json":
		return FormatJSONL
	case ".csv":
		return FormatCSV
	case ".tsv", ".tab":
		return FormatTSV
	case ".parquet", ".pq":
		return FormatParquet
	}
	return FormatAuto
}

// Detect returns the format and compression told by a path's extensions, e.g.
// "a/b.jsonl.zst" gives FormatJSONL and CompressionZstd, "x.parquet" gives
// FormatParquet and CompressionNone. A path whose format extension is not
// known gives FormatAuto (and the compression, if any was told) with an error
// wrapping ErrUnknownFormat.
func Detect(path string) (Format, Compression, error) {
	base := filepath.Base(path)
	rest, c := splitCompression(base)
	f := formatOfExt(filepath.Ext(rest))
	if f == FormatAuto {
		return FormatAuto, c, fmt.Errorf("%w: cannot tell the format of %q from its extension (want .jsonl, .ndjson, .json, .csv, .tsv, .tab, .parquet or .pq, optionally followed by .gz, .zst or .bz2)", ErrUnknownFormat, path)
	}
	return f, c, nil
}

// DefaultMaxText is the longest text accepted when Options.MaxText is 0.
const DefaultMaxText = 64 << 20

// Options tell a Reader which fields to read.
type Options struct {
	// Format is the file's format; FormatAuto tells it by the file name's
	// extension (Detect). For standard input, FormatAuto means JSON Lines.
	Format Format
	// IDField and TextField name the record's id and text: a column name for
	// CSV/TSV and Parquet (Parquet: a top-level column, or a dotted path to a
	// nested leaf column such as "meta.url"), a dotted path into nested
	// objects for JSON Lines ("meta.id" reads {"meta":{"id":...}}).
	//
	// An empty TextField means "text". An empty IDField means the records
	// have no id field: a record's id is its position, "<file base
	// name>:<line>" for JSON Lines and CSV/TSV (the 1-based line of the
	// record's first line) and "<file base name>:<row>" for Parquet (the
	// 0-based row index in the file).
	IDField, TextField string
	// KeepFields are further fields returned in Record.Meta, named like
	// IDField and TextField.
	KeepFields []string
	// MaxText is the longest text accepted, in bytes (0: DefaultMaxText); a
	// longer one makes a bad record.
	MaxText int
	// Raw keeps each record's full content (Record.Raw, Record.Fields) so a
	// Writer can rewrite it.
	Raw bool
	// SkipText leaves the text of a JSON Lines record undecoded and
	// unchecked (Record.Text is nil; a missing, non-string, too long or
	// invalid text is no error): for a second pass over records whose
	// texts an earlier pass read. Other formats ignore it.
	SkipText bool
	// DecodeAhead decompresses a compressed file (gzip, zstd, bzip2) on a
	// goroutine of its own, a few buffers ahead of the parsing, for a
	// caller that has work of its own to overlap with it (dedup's write
	// pass). It costs a copy of the decompressed text; streams (NewReader),
	// files that are not regular (a pipe's read could block its Close) and
	// uncompressed files ignore it. The Reader must then be closed: until
	// Close, the goroutine holds the file and the decompressor.
	DecodeAhead bool
	// Names, if set, collects the field names of the records read, in the
	// order of their first appearance: a JSON Lines reader adds the
	// top-level members of every line that is a JSON object (bad records'
	// too; a malformed line has none), at the cost of a look-up per
	// member; a CSV/TSV or Parquet reader adds its columns (the header,
	// the top-level columns) when it is opened. Records passed over by
	// Reader.Skip add nothing. Past Names.Max, Next (or Open) returns an
	// error wrapping ErrSchema that stops the file. It is for a first
	// pass over JSON Lines whose records differ in their members, so that
	// a columnar output of a second pass can have them all
	// (Writer.SetColumns).
	Names *Names
}

// Position locates a record in its file.
type Position struct {
	File     string // the path as opened ("-" for standard input)
	Line     int64  // JSON Lines and CSV/TSV: 1-based line of the record's start; 0 for Parquet
	RowGroup int    // Parquet: 0-based row group
	Row      int64  // Parquet: 0-based row within the row group
	Index    int64  // 0-based record number within the file (every format)
}

// String returns "file:line" for a line-based format and
// "file: row group G, row R" for Parquet.
func (p Position) String() string {
	if p.Line > 0 {
		return p.File + ":" + strconv.FormatInt(p.Line, 10)
	}
	return fmt.Sprintf("%s: row group %d, row %d", p.File, p.RowGroup, p.Row)
}

// Field is one field of a record as the file has it (Record.Fields).
type Field struct {
	Name string
	// Value is nil (null), a string, int64, float64, bool, []byte, or a
	// json.RawMessage for JSON values and nested Parquet groups and lists.
	Value any
}

// Record is one record read. It and the slices it holds are valid until the
// next call of the Reader's Next.
type Record struct {
	ID   string
	Text []byte // valid UTF-8
	// Meta holds, when Options.KeepFields were asked for, a JSON object
	// {"field": value, ...} of the kept fields that the record has ("{}" when
	// it has none of them); nil when none were asked for.
	Meta []byte
	Pos  Position
	// Err is non-nil for a bad record and wraps ErrBadRecord: the id or text
	// field is missing, not a string (an integer or number id is accepted as
	// its decimal text) or null, the id is empty, the id or text is not valid
	// UTF-8, the text is longer than Options.MaxText, a JSON line is
	// malformed, a CSV row has the wrong number of fields. Its message names
	// the reason and the field. ID and Text may be empty when Err is set.
	Err error
	// Raw (with Options.Raw) is, for JSON Lines, the original line without
	// its line ending; for CSV/TSV, the original text of a row that could
	// not be parsed into the header's fields (malformed, or a wrong number
	// of fields), without its line ending, and nil for other rows; nil for
	// Parquet.
	Raw []byte
	// Fields (with Options.Raw) are every field of the record in the file's
	// order: the columns for CSV/TSV and Parquet (top-level ones), the
	// top-level members for JSON Lines (values as json.RawMessage). For a
	// Parquet file whose top-level columns are all flat they are built
	// when asked for (LoadFields; a Writer asks when it needs them: not to
	// write Parquet with the source's schema).
	Fields []Field

	src    *source         // the reader's description of the file, for Writer
	pqRow  parquet.Row     // the Parquet row (with Options.Raw), for Writer
	pqLazy *parquetDecoder // builds Fields from pqRow on demand
}

// LoadFields fills Fields when they are built on demand (see Fields); it
// is a no-op otherwise. Like the record, they are valid until the next
// Reader.Next.
func (rec *Record) LoadFields() {
	if rec.pqLazy != nil && rec.Fields == nil {
		// Flat fields cannot fail to convert (d.allFlat).
		_ = rec.pqLazy.buildFields(rec.pqRow, rec)
	}
}

// badRecord is the error of a bad record.
type badRecord struct{ msg string }

func (e *badRecord) Error() string        { return "bad record: " + e.msg }
func (e *badRecord) Is(target error) bool { return target == ErrBadRecord }

// bad returns a bad-record error with a formatted reason.
func bad(format string, args ...any) error {
	return &badRecord{msg: fmt.Sprintf(format, args...)}
}
