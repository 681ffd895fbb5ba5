package db

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/normalize"
	"github.com/fpdb/fpdb/internal/textenc"
)

// Format says whether a text is plain text or markup. It matters from
// normalization version 2 on (Params.NormalizeVersion); version 1 takes
// anything that looks like a tag out of every text.
type Format int

const (
	// FormatAuto reads a text as HTML when its name (Input.Source) ends in
	// .html, .htm, .xhtml, .shtml, .xml, .svg, .rss or .atom, or when its
	// first 1 024 bytes look like HTML or XML (a doctype, an XML
	// declaration, a comment or a common HTML element first; an <html>,
	// <head> or <body> tag anywhere in them); else as plain text. Markdown,
	// source code and text extracted from PDF are plain text.
	FormatAuto Format = iota
	// FormatText reads a text as plain text: every character counts, '<'
	// and '&' are punctuation.
	FormatText
	// FormatHTML reads a text as HTML or XML: tags, comments and the
	// content of script and style elements are dropped, entities decoded.
	FormatHTML
)

// String returns "auto", "text" or "html".
func (f Format) String() string {
	switch f {
	case FormatAuto:
		return "auto"
	case FormatText:
		return "text"
	case FormatHTML:
		return "html"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat parses "auto", "text" or "html" ("xml" is "html").
func ParseFormat(s string) (Format, error) {
	f, err := normalize.ParseFormat(s)
	if err != nil {
		return FormatAuto, fmt.Errorf("%w: %q is not a text format (auto, text or html)", ErrInvalidOptions, s)
	}
	return fromNormalize(f), nil
}

// FormatOfName returns FormatHTML when name (a path or URL) has a markup
// extension (see FormatAuto), else FormatAuto.
func FormatOfName(name string) Format {
	return fromNormalize(normalize.FormatOfName(name))
}

func fromNormalize(f normalize.Format) Format {
	switch f {
	case normalize.FormatText:
		return FormatText
	case normalize.FormatMarkup:
		return FormatHTML
	}
	return FormatAuto
}

// TextOptions say how the bytes of a text become words.
type TextOptions struct {
	// Format says whether the text is plain text or HTML; default
	// FormatAuto.
	Format Format
	// Encoding names the character encoding of the text by its WHATWG
	// label ("utf-8", "latin1", "windows-1252", "shift_jis", "utf-16le",
	// ...; case does not matter). "" or "auto" (the default) detects it,
	// looking at no more than the first 1 024 bytes: a byte-order mark
	// (UTF-8, UTF-16LE, UTF-16BE) wins; then, in HTML or XML, the charset a
	// <meta> element or the XML declaration declares; otherwise the text is
	// read as UTF-8, and each byte that is not part of valid UTF-8 as
	// Windows-1252 (a superset of Latin-1), so Latin-1 and Windows-1252
	// files are read correctly without being told. Other 8-bit and
	// multi-byte encodings (Shift_JIS, GBK, KOI8-R, ...) must be named
	// unless the markup declares them. A forced "utf-8" is strict: bytes
	// that are not UTF-8 make the text binary (ErrBinary).
	//
	// Encodings are decoded from normalization version 2 on
	// (Params.NormalizeVersion). A version 1 database reads UTF-8 only, as
	// it always did: naming an encoding other than UTF-8 there gives
	// ErrInvalidOptions.
	Encoding string
}

// ParseEncoding returns the canonical name of the encoding label (see
// TextOptions.Encoding): "auto" for "" and "auto". An unknown label gives
// an error wrapping ErrInvalidOptions that names it.
func ParseEncoding(label string) (string, error) {
	name, err := textenc.Lookup(label)
	if errors.Is(err, textenc.ErrUnknownEncoding) {
		return "", fmt.Errorf("%w: %q is not a character encoding fpdb reads (its labels: https://encoding.spec.whatwg.org/#names-and-labels)", ErrInvalidOptions, label)
	}
	return name, err
}

// normalizeFormat resolves the format of a text named name.
func (o TextOptions) normalizeFormat(name string) (normalize.Format, error) {
	switch o.Format {
	case FormatAuto:
		return normalize.FormatOfName(name), nil
	case FormatText:
		return normalize.FormatText, nil
	case FormatHTML:
		return normalize.FormatMarkup, nil
	}
	return 0, fmt.Errorf("%w: Format %d", ErrInvalidOptions, int(o.Format))
}

// build fingerprints the text read from r, or held in text when r is nil,
// named name (a path or URL, for FormatAuto; may be empty), and returns it
// with the number of bytes read.
func (d *DB) build(r io.Reader, text []byte, to TextOptions, name string) (fingerprint.Result, int64, error) {
	res, n, _, err := d.buildText(r, text, to, name, nil)
	return res, n, err
}

// buildText is build that also copies the decoded text the words are read
// from into keep, when not nil, and returns the format it was read as. A
// text longer than keep's limit fails with an error wrapping
// ErrTextTooLarge. A text in memory that decoding would pass through
// unchanged (UTF-8, the common case) is read in place.
func (d *DB) buildText(r io.Reader, text []byte, to TextOptions, name string, keep *textCapture) (fingerprint.Result, int64, normalize.Format, error) {
	f, err := to.normalizeFormat(name)
	if err != nil {
		return fingerprint.Result{}, 0, f, err
	}
	b, _ := d.builders.Get().(*fingerprint.Builder)
	if b == nil || b.Params() != d.fpParams() { // none, or of other templates
		if b, err = fingerprint.NewBuilder(d.fpParams()); err != nil {
			return fingerprint.Result{}, 0, f, err
		}
	}
	defer d.builders.Put(b)
	tooLarge := func() error {
		return fmt.Errorf("%w: more than %d bytes as UTF-8 (Options.MaxTextSize: a database that keeps texts holds each one in memory)", ErrTextTooLarge, keep.limit)
	}
	// A text over keep's limit is read through the reader below, which
	// reports the same error as for the same bytes given as a reader.
	if r == nil && (keep == nil || int64(len(text)) <= keep.limit) && d.verbatim(text, to.Encoding, f) {
		res, err := b.ReadBytes(text, f)
		if keep != nil && err == nil {
			keep.Write(text) // within the limit: cannot fail
			f = keep.format(f)
		}
		return res, int64(len(text)), f, err
	}
	if r == nil {
		r = bytes.NewReader(text)
	}
	cr := &countingReader{r: r}
	decoded, err := d.decode(cr, to.Encoding, f)
	if err != nil {
		return fingerprint.Result{}, cr.n, f, err
	}
	if keep != nil {
		decoded = io.TeeReader(decoded, keep)
	}
	res, err := b.Read(decoded, f)
	if keep != nil {
		if keep.over {
			return fingerprint.Result{}, cr.n, f, tooLarge()
		}
		f = keep.format(f)
	}
	return res, cr.n, f, err
}

// verbatim reports whether decode passes text, held in memory, through
// unchanged (so that it can be read in place).
func (d *DB) verbatim(text []byte, encoding string, f normalize.Format) bool {
	name, err := ParseEncoding(encoding)
	switch {
	case err != nil, name != "auto" && name != "utf-8":
		return false
	case d.params.NormalizeVersion < 2:
		return true // version 1 reads the bytes as they are
	}
	markup := f == normalize.FormatMarkup || f == normalize.FormatAuto && name == "auto" && normalize.Sniff(text) == normalize.FormatMarkup
	return textenc.Verbatim(text, textenc.Options{Encoding: encoding, Markup: markup})
}

// decode returns a reader of r's text as UTF-8 (see TextOptions.Encoding),
// r itself on a version 1 database.
func (d *DB) decode(r io.Reader, encoding string, f normalize.Format) (io.Reader, error) {
	return decodeText(r, encoding, f, d.params.NormalizeVersion)
}

// decodeText is DB.decode for normalization version version.
func decodeText(r io.Reader, encoding string, f normalize.Format, version int) (io.Reader, error) {
	name, err := ParseEncoding(encoding)
	if err != nil {
		return nil, err
	}
	if version < 2 {
		if name != "auto" && name != "utf-8" {
			return nil, fmt.Errorf("%w: Encoding %q: this database uses normalization version %d, which reads UTF-8 only (version 2 reads other encodings)",
				ErrInvalidOptions, encoding, version)
		}
		return r, nil
	}
	markup := f == normalize.FormatMarkup
	if f == normalize.FormatAuto && name == "auto" {
		// Whether a declared charset counts depends on the format, which
		// auto decides from the first bytes.
		br := bufio.NewReaderSize(r, normalize.SniffLen)
		prefix, err := br.Peek(normalize.SniffLen)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		markup = normalize.Sniff(prefix) == normalize.FormatMarkup
		r = br
	}
	text, _, err := textenc.NewReader(r, textenc.Options{Encoding: encoding, Markup: markup})
	return text, err
}

// ctxCheckBytes is how many bytes a ctxReader reads between two checks of
// its context.
const ctxCheckBytes = 64 << 10

// ctxReader reads r and fails with ctx's error once ctx is done, checking
// it before the first read and then every ctxCheckBytes: fingerprinting a
// long text (a reader of hundreds of MiB) stops soon after its deadline.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
	n   int // bytes read since the last check
}

// withContext returns r read through a ctxReader, or r itself when it is
// nil or ctx is never done.
func withContext(ctx context.Context, r io.Reader) io.Reader {
	if r == nil || ctx.Done() == nil {
		return r
	}
	return &ctxReader{ctx: ctx, r: r, n: ctxCheckBytes}
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if c.n >= ctxCheckBytes {
		if err := c.ctx.Err(); err != nil {
			return 0, err
		}
		c.n = 0
	}
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// countingReader counts the bytes read from r, and keeps r's first error:
// r is not read again after its end. (Readers above it, such as
// bufio.Reader, may ask again after an io.EOF, and a terminal would then
// wait for a second end of input.)
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
