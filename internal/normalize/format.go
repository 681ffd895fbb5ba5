package normalize

import (
	"bytes"
	"fmt"
	"path"
	"strings"
)

// Format says how a Tokenizer (version 2) reads markup.
type Format uint8

const (
	// FormatAuto sniffs the first SniffLen bytes of the input (see Sniff).
	FormatAuto Format = iota
	// FormatText reads the input as plain text: '<' and '&' are
	// punctuation, nothing is removed.
	FormatText
	// FormatMarkup reads the input as HTML or XML: tags, comments and the
	// content of script and style elements are removed, entities decoded.
	FormatMarkup
)

// String returns "auto", "text" or "html".
func (f Format) String() string {
	switch f {
	case FormatAuto:
		return "auto"
	case FormatText:
		return "text"
	case FormatMarkup:
		return "html"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat parses "auto", "text", "html" or "xml" (the last two are
// the same: markup).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "auto", "":
		return FormatAuto, nil
	case "text", "txt", "plain":
		return FormatText, nil
	case "html", "xml", "markup":
		return FormatMarkup, nil
	}
	return FormatAuto, fmt.Errorf("%w: format %q (want auto, text or html)", ErrRules, s)
}

// markupExts are the file extensions FormatOfName takes for markup.
var markupExts = map[string]bool{
	".html": true, ".htm": true, ".xhtml": true, ".shtml": true,
	".xml": true, ".svg": true, ".rss": true, ".atom": true,
}

// FormatOfName returns FormatMarkup for a name (a path or URL) whose
// extension is one of .html .htm .xhtml .shtml .xml .svg .rss .atom (any
// case, before any "?" or "#" of a URL), else FormatAuto.
func FormatOfName(name string) Format {
	if i := strings.IndexAny(name, "?#"); i >= 0 && strings.Contains(name, "://") {
		name = name[:i]
	}
	if markupExts[strings.ToLower(path.Ext(name))] {
		return FormatMarkup
	}
	return FormatAuto
}

// SniffLen is how many leading bytes Sniff looks at.
const SniffLen = 1024

// htmlStarts are elements that, as the first thing in an input, make it
// an HTML fragment.
var htmlStarts = []string{
	"html", "head", "body", "meta", "title", "link", "script", "style",
	"div", "p", "span", "a", "table", "ul", "ol", "li", "dl", "h1", "h2",
	"h3", "h4", "h5", "h6", "br", "hr", "pre", "section", "article",
	"header", "footer", "nav", "main", "form", "img", "em", "strong", "b",
	"i", "blockquote", "center", "font", "tr", "td", "!doctype",
}

// Sniff decides from the first bytes of an input (at most SniffLen are
// looked at; NUL bytes are skipped, so UTF-16 with a byte-order mark is
// sniffed too) whether it is markup:
//
//   - after white space and a byte-order mark, it starts with "<?xml", a
//     comment "<!--", a "<!DOCTYPE", or a start tag of a common HTML
//     element (html, head, body, p, div, table, …; see the package
//     documentation); or
//   - "<html", "<head" or "<body" followed by '>', '/' or white space
//     appears anywhere in those bytes (any case).
//
// Everything else is FormatText: C sources and headers, Markdown (its
// inline HTML is kept as words), text extracted from PDF, e-mail.
func Sniff(prefix []byte) Format {
	if len(prefix) > SniffLen {
		prefix = prefix[:SniffLen]
	}
	if bytes.IndexByte(prefix, '<') < 0 {
		return FormatText // every rule below needs a '<'
	}
	b := make([]byte, 0, len(prefix))
	for _, c := range prefix {
		if c != 0 {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			b = append(b, c)
		}
	}
	s := b
	s = bytes.TrimPrefix(s, []byte("\xef\xbb\xbf"))
	s = bytes.TrimPrefix(s, []byte("\xfe\xff"))
	s = bytes.TrimPrefix(s, []byte("\xff\xfe"))
	s = bytes.TrimLeft(s, " \t\r\n\f")
	if bytes.HasPrefix(s, []byte("<?xml")) || bytes.HasPrefix(s, []byte("<!--")) {
		return FormatMarkup
	}
	if len(s) > 1 && s[0] == '<' {
		for _, name := range htmlStarts {
			if rest, ok := bytes.CutPrefix(s[1:], []byte(name)); ok && (len(rest) == 0 || endsName(rest[0])) {
				return FormatMarkup
			}
		}
	}
	for _, name := range []string{"<html", "<head", "<body"} {
		for rest := b; ; {
			i := bytes.Index(rest, []byte(name))
			if i < 0 {
				break
			}
			rest = rest[i+len(name):]
			if len(rest) == 0 || endsName(rest[0]) {
				return FormatMarkup
			}
		}
	}
	return FormatText
}

// endsName reports whether c ends a tag name.
func endsName(c byte) bool {
	return c == '>' || c == '/' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}
