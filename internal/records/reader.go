package records

import (
	"bytes"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
)

// source describes the file a record was read from, for a Writer.
type source struct {
	format  Format
	name    string
	columns []string // CSV/TSV header, Parquet top-level column names

	// Parquet
	pqSchema *parquet.Schema
	pqLeaves int
}

// decoder is a format's reading of records.
type decoder interface {
	// next fills rec with the next record, or returns io.EOF or a fatal error.
	next(rec *Record) error
	// skip passes over n records and returns how many it passed.
	skip(n int64) (int64, error)
	// progress returns the bytes consumed and the size, when the decoder
	// knows better than the byte counter (Parquet); ok is false otherwise.
	progress() (done, size int64, ok bool)
	close() error
}

// Reader reads the records of one file, or of a stream, in order. A Reader
// is not safe for concurrent use.
type Reader struct {
	name    string // as opened
	format  Format
	opts    Options
	src     *source
	sniffed bool // decompressed as its first bytes said, not its name

	file    *os.File
	counter *countingReader
	size    int64
	closers []io.Closer
	dec     decoder

	rec    Record
	index  int64
	err    error // sticky: a fatal error or io.EOF
	closed bool
}

// countingReader counts the bytes read through it. The count is atomic:
// a zstd decoder reads on a goroutine of its own while Progress is asked.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// normalize fills the defaults of o.
func (o Options) normalize() Options {
	if o.TextField == "" {
		o.TextField = "text"
	}
	if o.MaxText <= 0 {
		o.MaxText = DefaultMaxText
	}
	var keep []string
	for _, k := range o.KeepFields {
		if !slices.Contains(keep, k) {
			keep = append(keep, k)
		}
	}
	o.KeepFields = keep
	return o
}

// maxLine returns the longest line or CSV record read whole: the longest
// text, plus room for JSON escapes and the other fields.
func (o Options) maxLine() int {
	return o.MaxText + o.MaxText/2 + 1<<20
}

// Open opens the record file at path ("-" is not accepted: use NewReader for
// standard input). The format is o.Format or, for FormatAuto, told by the
// extension; the file is decompressed as its extension (.gz, .zst, .zstd,
// .bz2) tells, or, when it names none, as its first bytes tell (the magic
// numbers of gzip, zstd and bzip2). Parquet files cannot be compressed as a whole (their pages
// are compressed inside). Whole-file problems (the file cannot be opened, is
// not Parquet, lacks the id or text column, is UTF-16 or UTF-32 text:
// ErrNotUTF8) are errors naming the path.
func Open(path string, o Options) (*Reader, error) {
	if path == "-" {
		return nil, errors.New(`records: "-" (standard input) cannot be opened as a file: use NewReader`)
	}
	o = o.normalize()
	rest, c := splitCompression(filepath.Base(path))
	f := o.Format
	if f == FormatAuto {
		f = formatOfExt(filepath.Ext(rest))
		if f == FormatAuto {
			_, _, err := Detect(path)
			return nil, err
		}
	}
	if f == FormatParquet && c != CompressionNone {
		return nil, fmt.Errorf("%s: a Parquet file cannot be %s-compressed as a whole (its pages are compressed inside): decompress it first", path, c)
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError names the path
	}
	r := &Reader{name: path, format: f, opts: o, file: file, size: -1}
	r.src = &source{format: f, name: path}
	if st, err := file.Stat(); err == nil && st.Mode().IsRegular() {
		r.size = st.Size()
	}
	if f == FormatParquet {
		if r.size < 0 {
			file.Close()
			return nil, fmt.Errorf("%s: a Parquet file must be a regular file (it is read at offsets)", path)
		}
		d, err := newParquetDecoder(file, r.size, path, r.src, o)
		if err != nil {
			file.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r.dec = d
		if err := r.addColumnNames(); err != nil {
			r.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return r, nil
	}
	if err := r.init(file, c); err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := r.addColumnNames(); err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// addColumnNames adds the columns of a CSV/TSV or Parquet file to
// Options.Names, if set.
func (r *Reader) addColumnNames() error {
	if r.opts.Names != nil && r.format != FormatJSONL {
		return r.opts.Names.Add(r.src.columns...)
	}
	return nil
}

// NewReader reads records from rd (for example standard input), calling the
// stream name in positions and position-based ids. The stream is
// decompressed with c (CompressionNone: as its first bytes tell, gzip,
// zstd or bzip2, else not at all). The format is o.Format or, for FormatAuto, told by
// name's extension, and JSON Lines when the name tells none (as for "-").
// Parquet is refused: it is read at offsets, which needs a file.
func NewReader(rd io.Reader, name string, c Compression, o Options) (*Reader, error) {
	o = o.normalize()
	f := o.Format
	if f == FormatAuto {
		rest, _ := splitCompression(filepath.Base(name))
		if f = formatOfExt(filepath.Ext(rest)); f == FormatAuto {
			f = FormatJSONL
		}
	}
	if f == FormatParquet {
		return nil, fmt.Errorf("%s: Parquet cannot be read from a stream such as standard input (it is read at offsets): save it to a file first", name)
	}
	r := &Reader{name: name, format: f, opts: o, size: -1}
	r.src = &source{format: f, name: name}
	if err := r.init(rd, c); err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := r.addColumnNames(); err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

// prefixReader reads head, then r. Its first read also reads r (where
// io.MultiReader would return the head alone): a decoder that looks at
// its first buffer whole (the field check of JSON Lines) sees as much as
// from r itself.
type prefixReader struct {
	head []byte
	r    io.Reader
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.head) == 0 {
		return p.r.Read(b)
	}
	n := copy(b, p.head)
	p.head = p.head[n:]
	if len(p.head) > 0 || n == len(b) {
		return n, nil
	}
	m, err := p.r.Read(b[n:])
	if err == io.EOF {
		err = nil // the next read says so
	}
	return n + m, err
}

// Sniffed reports whether the input is decompressed because its first
// bytes say it is compressed, which its name does not say.
func (r *Reader) Sniffed() bool { return r.sniffed }

// sniffCompression tells the compression of a stream from its first bytes
// (at least 10 for bzip2): the magic numbers of gzip, zstd and bzip2 (its
// "BZh" and the digit of its block size, then the magic of its first
// block). No text of records starts with them.
func sniffCompression(head []byte) Compression {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return CompressionGzip
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return CompressionZstd
	case len(head) >= 10 && bytes.HasPrefix(head, []byte("BZh")) && head[3] >= '1' && head[3] <= '9' &&
		bytes.Equal(head[4:10], []byte{0x31, 0x41, 0x59, 0x26, 0x53, 0x59}):
		return CompressionBzip2
	}
	return CompressionNone
}

// init sets up decompression and the decoder of a line-based format.
func (r *Reader) init(rd io.Reader, c Compression) error {
	r.counter = &countingReader{r: rd}
	var in io.Reader = r.counter
	if c == CompressionNone {
		// A compressed file (or stream) whose name does not say so is
		// told by its first bytes, rather than read as records of
		// binary garbage.
		var head [10]byte
		n, err := io.ReadFull(r.counter, head[:])
		if err != nil && err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("read: %w", err)
		}
		c = sniffCompression(head[:n])
		r.sniffed = c != CompressionNone
		in = &prefixReader{head: head[:n], r: r.counter}
	}
	switch c {
	case CompressionNone:
	case CompressionGzip:
		zr, err := newGzipReader(r.counter, in) // in: r.counter, after the bytes sniffed
		if err != nil {
			return fmt.Errorf("reading gzip header: %w", err)
		}
		r.closers = append(r.closers, zr)
		in = zr
	case CompressionZstd:
		// One goroutine: the reader of a load already runs beside busy
		// workers, and the decoder's own goroutines cost more CPU than
		// they save (a 427 MB JSON Lines text: 1.1 against 1.3–1.4 CPU
		// seconds).
		zr, err := zstd.NewReader(in, zstd.WithDecoderMaxMemory(1<<31), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return fmt.Errorf("starting zstd decoder: %w", err)
		}
		r.closers = append(r.closers, zr.IOReadCloser())
		in = zr
	case CompressionBzip2:
		in = bzip2.NewReader(in)
	default:
		return fmt.Errorf("unknown compression %v", c)
	}
	if c != CompressionNone && r.opts.DecodeAhead && r.file != nil && r.size >= 0 {
		a := newAheadReader(in)
		r.closers = append(r.closers, a) // closed before the decompressor
		in = a
	}
	// A text saved as UTF-16 or UTF-32 (Windows' "Unicode" text) is
	// refused as a whole, rather than read as malformed records.
	in, err := checkUTF8(in)
	if err != nil {
		return err
	}
	base := filepath.Base(r.name)
	switch r.format {
	case FormatJSONL:
		d := newJSONLDecoder(in, r.name, base, r.src, r.opts)
		d.regular = r.file != nil && r.size >= 0
		r.dec = d
		return nil
	case FormatCSV, FormatTSV:
		d, err := newCSVDecoder(in, r.name, base, r.src, r.opts, r.format == FormatTSV)
		if err != nil {
			return err
		}
		r.dec = d
		return nil
	}
	return fmt.Errorf("%w: format %v", ErrUnknownFormat, r.format)
}

// Next returns the next record, io.EOF at the end of the file, or another
// error for a failure that stops the file (a read error, a corrupt
// compressed stream, a corrupt Parquet page). A bad record is not an error
// of Next: it is a Record whose Err is set, and reading goes on with the
// next record. The record and its slices are valid until the next call of
// Next.
func (r *Reader) Next() (*Record, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.closed {
		return nil, errors.New("records: Next on a closed Reader")
	}
	r.rec = Record{src: r.src}
	r.rec.Pos.File = r.name
	r.rec.Pos.Index = r.index
	if err := r.dec.next(&r.rec); err != nil {
		r.err = r.wrap(err)
		return nil, r.err
	}
	r.index++
	return &r.rec, nil
}

// wrap names the file in a fatal error (io.EOF stays as it is).
func (r *Reader) wrap(err error) error {
	if err == io.EOF {
		return err
	}
	return fmt.Errorf("%s: %w", r.name, err)
}

// Skip passes over the next n records cheaply (for resuming: JSON lines are
// not decoded, whole Parquet row groups are skipped) and returns how many it
// passed: fewer than n only at the end of the file (with a nil error) or
// with an error that stops the file. Bad records count as records.
func (r *Reader) Skip(n int64) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	if r.err != nil {
		if r.err == io.EOF {
			return 0, nil
		}
		return 0, r.err
	}
	if r.closed {
		return 0, errors.New("records: Skip on a closed Reader")
	}
	done, err := r.dec.skip(n)
	r.index += done
	if err != nil {
		r.err = r.wrap(err)
		if err == io.EOF {
			return done, nil
		}
		return done, r.err
	}
	return done, nil
}

// Progress returns the bytes of the underlying (compressed) file consumed so
// far and its size; size is -1 when it is not known (a stream). For Parquet
// the bytes are estimated from the row groups read.
func (r *Reader) Progress() (done, size int64) {
	if r.dec != nil {
		if d, s, ok := r.dec.progress(); ok {
			return d, s
		}
	}
	if r.counter != nil {
		done = r.counter.n.Load()
	}
	return done, r.size
}

// Format returns the format of the file being read.
func (r *Reader) Format() Format { return r.format }

// Columns returns the CSV/TSV header or the Parquet top-level column names;
// nil for JSON Lines. The slice must not be changed.
func (r *Reader) Columns() []string { return r.src.columns }

// Close releases the file and the decompressor. It does not close a stream
// given to NewReader.
func (r *Reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	if r.dec != nil {
		errs = append(errs, r.dec.close())
	}
	for i := len(r.closers) - 1; i >= 0; i-- {
		errs = append(errs, r.closers[i].Close())
	}
	if r.file != nil {
		errs = append(errs, r.file.Close())
	}
	return errors.Join(errs...)
}
