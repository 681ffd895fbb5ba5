package db

import (
	"fmt"
	"io"

	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/normalize"
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

// build fingerprints the text read from r, named name (a path or URL, for
// FormatAuto; may be empty), and returns it with the number of bytes read.
func (d *DB) build(r io.Reader, to TextOptions, name string) (fingerprint.Result, int64, error) {
	f, err := to.normalizeFormat(name)
	if err != nil {
		return fingerprint.Result{}, 0, err
	}
	b, _ := d.builders.Get().(*fingerprint.Builder)
	if b == nil {
		if b, err = fingerprint.NewBuilder(d.fpParams()); err != nil {
			return fingerprint.Result{}, 0, err
		}
	}
	defer d.builders.Put(b)
	cr := &countingReader{r: r}
	res, err := b.Read(cr, f)
	return res, cr.n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
