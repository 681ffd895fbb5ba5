// Package records reads and writes record datasets, one document per record:
// JSON Lines, CSV/TSV and Apache Parquet, the line-based formats optionally
// compressed with gzip, Zstandard or bzip2 (bzip2 is read only). It is what
// fpdb add and fpdb dedup read their input with and write their outputs
// with.
//
// # Basics
//
// Open a file (or NewReader for standard input) with Options naming the id
// and text fields, then call Next until io.EOF:
//
//	r, err := records.Open("data.jsonl.zst", records.Options{IDField: "id"})
//	...
//	defer r.Close()
//	for {
//		rec, err := r.Next()
//		if err == io.EOF {
//			break
//		}
//		if err != nil {
//			return err // the file cannot be read on
//		}
//		if rec.Err != nil {
//			log.Printf("%v: %v", rec.Pos, rec.Err) // a bad record: skip it
//			continue
//		}
//		use(rec.ID, rec.Text)
//	}
//
// The format and compression come from the file name's extensions (Detect):
// .jsonl/.ndjson/.json, .csv, .tsv/.tab, .parquet/.pq, then .gz, .zst/.zstd
// or .bz2. A gzip file may hold several members, read as one text, and
// zero bytes after the last one (the padding of tape and block devices), as
// gzip -d accepts; other data after a member stops the file with an error
// naming its offset. Field names are column names for CSV/TSV, column names or dotted
// paths to nested leaf columns for Parquet ("meta.url"), and dotted paths
// into nested objects for JSON Lines. A record whose id or text cannot be
// read is not an error of Next but a Record with Err set (wrapping
// ErrBadRecord), so one bad line does not stop a file; errors of Next stop
// the file (read errors, corrupt compressed streams, corrupt Parquet pages).
// CSV, TSV and JSON Lines texts must be UTF-8 (a UTF-8 byte-order mark is
// skipped): one that is UTF-16 or UTF-32, as its byte-order mark tells or,
// without one, the NUL bytes of its first 64 bytes, is a whole-file error
// of Open or NewReader wrapping ErrNotUTF8 (once decompressed, standard
// input too), which names the encoding and the iconv command to convert it.
// Records are positioned (Position: file and line, or row group and row) and
// Skip passes over records cheaply to resume a file. Expand turns
// command-line arguments (files, directories, globs, "-") into files.
//
// Everything is streamed: a reader holds one record (JSON Lines, CSV) or the
// needed column chunks of one Parquet row group's pages at a time; Parquet
// files are read row group by row group, only the columns needed (id, text,
// kept fields; all of them with Options.Raw). With Options.DecodeAhead a
// compressed file is decompressed on a goroutine of its own, up to three
// buffers of 256 KiB ahead of the one being parsed.
//
// A Writer writes records read with Options.Raw back out, each with extra
// fields appended (for example fpdb dedup's cluster and kept id). In the
// source's own format the record is rewritten as it was: a JSON line keeps
// its bytes with the extra members inserted before its closing brace, a
// CSV/TSV row keeps its cells with the extras as further columns, a Parquet
// row keeps its values, under the source's schema plus the extra columns
// (string: BYTE_ARRAY UTF8, int64: INT64, float64: DOUBLE, all required).
// Across formats records are written from Record.Fields: a JSON object of
// the fields in order, then the extras; CSV/TSV columns from the first
// record's columns (for a JSON Lines source its top-level members; nested
// values written as their JSON text), then the extras; Parquet columns from
// the first record's columns as optional strings (values as text, JSON
// values as JSON text), then the extras. JSON Lines records often differ in
// their members (optional keys that appear late): a first pass with
// Options.Names collects every member of every record, in order of first
// appearance, and Writer.SetColumns gives those to the output instead of
// the first record's, so that each record fills the columns it has.
//
// # Caveats
//
//   - JSON Lines: duplicate member names are not an error; the last one
//     wins, as with encoding/json. A \u escape of a lone UTF-16 surrogate
//     decodes to U+FFFD, as with encoding/json; raw invalid UTF-8 in the id
//     or text makes a bad record, elsewhere in the line it is kept as is. A
//     number id is its literal (an integral 1e3 or 2.0 becomes "1000", "2").
//     Lines longer than MaxText + MaxText/2 + 1 MiB are bad records ("line is
//     too long"), skipped without being held whole. A member name holding a
//     dot cannot be named by a dotted path.
//   - CSV/TSV: the first row is the header; the first column of a name wins
//     when names repeat. A record longer than that same limit (an
//     unterminated quote, say) stops the file with an error, since a CSV
//     reader cannot find the next record after it. Kept fields that are not
//     columns are left out of Meta. TSV follows CSV quoting, as fpdb's TSV
//     outputs are written: a field that begins with a double quote runs to
//     the next lone one (a doubled quote stands for one), over tabs and
//     line breaks, as Python's csv module and pandas write it. A stray
//     quote at a field's start therefore merges the rows up to the next
//     lone quote into one record (a validly quoted field and a stray quote
//     cannot be told apart). encoding/csv gives a CRLF inside a quoted
//     field as LF: with Options.Raw, Record.Fields have the field's own
//     bytes (CRLF kept), so a rewritten record keeps its values; Text and
//     Meta are as encoding/csv reads them (LF).
//   - Parquet cannot be read from standard input nor wrapped in .gz/.zst
//     (its pages are compressed inside). The id, text and kept fields must be
//     leaf columns that are not repeated (lists are refused with ErrSchema);
//     integer and floating-point ids are turned into their decimal text. A
//     null text or id is a bad record ("is null"). Record.Fields gives
//     top-level columns; a nested group or list is given as JSON
//     (json.RawMessage, keys sorted, binary values in base64), BYTE_ARRAY
//     values as strings when they are UTF-8 (else []byte), INT32 as int64,
//     FLOAT as float64; a value of a logical type its physical value does
//     not show as what it means: DATE "2006-01-02", TIMESTAMP in RFC 3339
//     (UTC "…Z" when adjusted to UTC, no zone when local), TIME
//     "15:04:05.999999999", DECIMAL a JSON number of its exact digits
//     (json.RawMessage), UUID its canonical text, FLOAT16 float64, and
//     INT96 (the legacy timestamp) RFC 3339 in UTC. Encrypted files are not
//     supported. In Meta, BYTE_ARRAY values are JSON strings (base64 when
//     not UTF-8) and unsigned integers keep their value. Progress of a
//     Parquet file is estimated from the compressed size of its row groups.
//   - Writer, every format: a field of a record named as an extra (the
//     extras of an earlier run, whose output is read again) is replaced:
//     the output has each extra once, after the record's other fields.
//     A bad CSV/TSV row keeps its original text in Record.Raw; written
//     as JSON it gets a member "fpdb_raw" of that text after its fields.
//   - Writer, empty outputs: a CSV/TSV or Parquet Writer that writes no
//     record has no columns to write (an empty CSV file; a Parquet file of
//     the extras alone, as strings), unless it is linked to another
//     (ShareSchema, as fpdb dedup links its kept and removed outputs): it
//     then has the columns of the first record the other wrote (Parquet:
//     that source's schema and the extras of their types; CSV/TSV: the
//     header), and its held bad records go to those columns plus fpdb_raw.
//     When neither wrote one, SchemaFrom (given an input's Reader) supplies
//     that input's columns, as fpdb dedup gives its outputs the first
//     input's.
//   - Writer, JSON Lines: extras are appended as they are (a record that
//     has a member named as an extra is written from its fields, without
//     that member, then the extras). NaN and infinite extras cannot be
//     written as JSON (error).
//   - Writer, CSV/TSV: a record whose columns are not those of the first one
//     (in any order and any subset of them, for JSON Lines sources: a
//     member a record lacks is an empty cell, as null is; with SetColumns,
//     any subset of those, for every source) is an error wrapping
//     ErrSchema naming both lists; WriteBad places the fields it can by name and drops
//     the others. Bad records that tell no columns (a malformed JSON line)
//     are held (at most 1000 of them or 16 MiB) until a record tells the
//     columns; if none does, the output's only column is "fpdb_raw" holding
//     their lines. A malformed JSON line written after the columns are known
//     keeps only its extras, unless the Writer was given a raw column
//     (AddRawColumn, which fpdb dedup asks for on its kept and removed
//     outputs when there are bad records, so that both have one schema):
//     a column "fpdb_raw" after the source's
//     columns then holds the original text of every bad record that has
//     one (a malformed JSON line, a malformed CSV row or one of the wrong
//     number of fields); it is empty (null) for the other records.
//   - Writer, Parquet: parquet-go cannot add columns to a file, so the output
//     is a new file whose schema is the source's top-level fields (same
//     types, repetition, logical types and compression) followed by the
//     extras (top-level columns named as an extra are left out: the extras
//     replace them); a record from a source of another schema is an error
//     wrapping ErrSchema that names how the schemas differ (a column only
//     in one, required in one and optional in the other, of another type,
//     in another order): the output's schema is fixed by its first row and
//     its rows are copied as they are, so a required column is not
//     widened to optional. Row groups hold at most 100 000 rows or about 32 MiB of
//     values. Rows are encoded and compressed on goroutines, one per row
//     group, at most two row groups at once and 32 MiB of rows waiting for
//     them (a writer holds those and up to two row groups' pages in
//     memory); row groups are committed in order, so the file does not
//     depend on the number of cores. An encoding error is returned by a
//     later Write (the rows written in between are lost with the file) or
//     by Close. Output pages (of up to 1 MiB, as Arrow and parquet-mr
//     write them; parquet-go's default is 256 KiB) are
//     Zstandard-compressed at its fastest level (a source's top-level
//     Zstandard columns too; the level is not stored in a file) unless the
//     source column has another codec; .gz and .zst outputs are compressed
//     at the fastest level too (a dedup writes as much as it reads). A
//     .zst output is a sequence of zstd frames of 1 MiB of text each,
//     compressed on two goroutines and written in order. A Parquet output of string
//     columns (non-Parquet sources, or any with SetColumns) accepts records
//     with a subset of the first record's columns, or of those SetColumns
//     gave (the others null); other names are ErrSchema. An extra keeps the type it had
//     in the first record written. Parquet and bzip2 cannot be compressed
//     as a whole when writing (.parquet.gz, .bz2 are refused).
//   - Reader, Parquet with Options.Raw: when every top-level column is
//     flat, Record.Fields are built only when asked for (Record.LoadFields;
//     a Writer asks unless it copies the Parquet row as it is).
//   - The Parquet library may panic on corrupt files; such panics are
//     recovered and returned as errors.
package records
