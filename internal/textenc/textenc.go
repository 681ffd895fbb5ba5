package textenc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
)

// Options say how to decode.
type Options struct {
	// Encoding forces an encoding by its WHATWG/IANA label ("utf-8",
	// "latin1", "windows-1252", "shift_jis", "utf-16le", ...), matched
	// case-insensitively and ignoring surrounding white space. "" or "auto"
	// detects (see the package documentation for the rules).
	Encoding string
	// Markup says the input is HTML or XML, so a <meta charset> /
	// <meta http-equiv="Content-Type"> / <?xml encoding="..."?> declaration
	// in its first 1024 bytes is honoured during detection. It has no effect
	// when Encoding forces an encoding.
	Markup bool
}

// Info says what was used.
type Info struct {
	// Encoding is the canonical WHATWG name of the encoding the text is
	// decoded from: "utf-8", "windows-1252", "utf-16le", "shift_jis", ...
	// On the UTF-8 path of detection rule 3 it is "utf-8", even though
	// bytes outside valid UTF-8 are decoded as Windows-1252.
	Encoding string
	// How says how Encoding was chosen: one of HowBOM, HowDeclared,
	// HowForced and HowFallback.
	How string
}

// The values of Info.How.
const (
	// HowBOM: a byte-order mark at the start of the input (rule 1).
	HowBOM = "bom"
	// HowDeclared: a declaration in the markup (rule 2). A declared UTF-8 or
	// ASCII is decoded on the UTF-8 path of rule 3, with its fallback.
	HowDeclared = "declared"
	// HowForced: Options.Encoding named the encoding.
	HowForced = "forced"
	// HowFallback: nothing said otherwise, so the input is decoded as UTF-8
	// with each byte outside valid UTF-8 decoded as Windows-1252 (rule 3).
	HowFallback = "utf-8 with windows-1252 fallback"
)

// ErrUnknownEncoding is wrapped when Options.Encoding (or the label given
// to Lookup) names no known encoding; the error names the label.
var ErrUnknownEncoding = errors.New("textenc: unknown encoding")

// sniffLen is how much of the input detection looks at.
const sniffLen = 1024

// auto is the canonical name of detection, as returned by Lookup.
const auto = "auto"

// Lookup returns the canonical name of the encoding that label names, as
// Options.Encoding would take it: "auto" for "" and "auto", else the WHATWG
// name ("latin1" → "windows-1252", "UTF8" → "utf-8", "utf-16" →
// "utf-16le"). The labels of the WHATWG "replacement" encoding
// ("iso-2022-kr", "hz-gb-2312", ...), which decodes any input to a single
// U+FFFD, are refused. The error for a label that names no encoding wraps
// ErrUnknownEncoding. Lookup reads no input, so a command line can check an
// --encoding flag up front.
func Lookup(label string) (canonical string, err error) {
	name, _, err := lookup(label)
	return name, err
}

// lookup is Lookup that also returns the encoding (nil for "auto").
func lookup(label string) (string, encoding.Encoding, error) {
	l := strings.TrimSpace(label)
	if l == "" || strings.EqualFold(l, auto) {
		return auto, nil, nil
	}
	name, e, ok := index(l)
	if !ok {
		return "", nil, fmt.Errorf("%w %q", ErrUnknownEncoding, label)
	}
	if name == "replacement" {
		return "", nil, fmt.Errorf("%w %q: it names the replacement encoding, which decodes no text", ErrUnknownEncoding, label)
	}
	return name, e, nil
}

// index returns the canonical name of the encoding that the WHATWG label
// names, and the encoding, with ok false if it names none.
func index(label string) (name string, enc encoding.Encoding, ok bool) {
	enc, err := htmlindex.Get(label)
	if err != nil {
		return "", nil, false
	}
	name, err = htmlindex.Name(enc)
	if err != nil {
		return "", nil, false
	}
	return name, enc, true
}

// NewReader returns a reader of r's text as UTF-8, and says which encoding
// it decodes. With Options.Encoding "" or "auto" it detects the encoding by
// the rules of the package documentation, looking at no more than the first
// 1024 bytes of r; otherwise it decodes with the encoding named. The reader
// buffers r: read the text through the returned reader only.
//
// The error wraps ErrUnknownEncoding for an unknown Options.Encoding, or is
// the error (other than io.EOF) that r returned while the start of the
// input was read for detection.
func NewReader(r io.Reader, o Options) (io.Reader, Info, error) {
	name, enc, err := lookup(o.Encoding)
	if err != nil {
		return nil, Info{}, err
	}
	br := bufio.NewReaderSize(r, 4096)
	if name != auto {
		if err := skipBOM(br, name); err != nil {
			return nil, Info{}, err
		}
		return decoder(br, name, enc, true), Info{Encoding: name, How: HowForced}, nil
	}
	n := len(utf8BOM) // enough for every byte-order mark
	if o.Markup {
		n = sniffLen
	}
	head, err := br.Peek(n)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, Info{}, fmt.Errorf("textenc: reading the start of the input: %w", err)
	}
	if bom, name := sniffBOM(head); bom > 0 {
		if _, err := br.Discard(bom); err != nil {
			return nil, Info{}, fmt.Errorf("textenc: skipping the byte-order mark: %w", err)
		}
		_, enc, err := lookup(name)
		if err != nil {
			return nil, Info{}, err
		}
		return decoder(br, name, enc, false), Info{Encoding: name, How: HowBOM}, nil
	}
	if o.Markup {
		if name, enc, ok := declared(head); ok {
			return decoder(br, name, enc, false), Info{Encoding: name, How: HowDeclared}, nil
		}
	}
	return &directReader{br: br, t: fallback{}}, Info{Encoding: "utf-8", How: HowFallback}, nil
}

// Verbatim reports whether the reader NewReader returns for text with o
// reads back text itself, byte for byte: text is valid UTF-8 without a
// byte-order mark, o names no encoding other than UTF-8, and markup
// (o.Markup) declares none other in its first bytes. A caller that holds
// the text in memory can then use it as it is. Verbatim reads only text.
func Verbatim(text []byte, o Options) bool {
	name, _, err := lookup(o.Encoding)
	switch {
	case err != nil, name != auto && name != "utf-8":
		return false
	}
	if n, _ := sniffBOM(text); n > 0 {
		return false
	}
	if name == auto && o.Markup {
		if declaredName, _, ok := declared(text); ok && declaredName != "utf-8" {
			return false
		}
	}
	return utf8.Valid(text)
}

// decoder returns the reader of br's text in the encoding enc named name.
// UTF-8 is passed through unchanged if strict, else decoded with the
// Windows-1252 fallback; Windows-1252 is decoded by the package's own table,
// which maps the five bytes Windows-1252 leaves undefined to the C1
// controls as WHATWG does.
func decoder(br *bufio.Reader, name string, enc encoding.Encoding, strict bool) io.Reader {
	switch name {
	case "utf-8":
		if strict {
			return br
		}
		return &directReader{br: br, t: fallback{}}
	case "windows-1252":
		return &directReader{br: br, t: windows1252{}}
	}
	return enc.NewDecoder().Reader(br)
}

// skipBOM discards the byte-order mark of the encoding named name, if br
// starts with it.
func skipBOM(br *bufio.Reader, name string) error {
	head, err := br.Peek(len(utf8BOM))
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("textenc: reading the start of the input: %w", err)
	}
	if bom, bomName := sniffBOM(head); bom > 0 && bomName == name {
		if _, err := br.Discard(bom); err != nil {
			return fmt.Errorf("textenc: skipping the byte-order mark: %w", err)
		}
	}
	return nil
}
