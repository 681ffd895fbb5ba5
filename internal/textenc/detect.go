package textenc

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/text/encoding"
)

// The byte-order marks of rule 1.
var (
	utf8BOM    = []byte{0xEF, 0xBB, 0xBF}
	utf16LEBOM = []byte{0xFF, 0xFE}
	utf16BEBOM = []byte{0xFE, 0xFF}
)

// sniffBOM returns the length of the byte-order mark head starts with and
// the canonical name of its encoding, or 0 and "".
func sniffBOM(head []byte) (int, string) {
	switch {
	case bytes.HasPrefix(head, utf8BOM):
		return len(utf8BOM), "utf-8"
	case bytes.HasPrefix(head, utf16LEBOM):
		return len(utf16LEBOM), "utf-16le"
	case bytes.HasPrefix(head, utf16BEBOM):
		return len(utf16BEBOM), "utf-16be"
	}
	return 0, ""
}

// declared applies rule 2 to head, the first bytes of a markup input that
// has no byte-order mark: it returns the canonical name and the encoding a
// declaration names, with ok false when head declares no encoding that rule
// 2 honours. A declared UTF-8 or ASCII is returned as "utf-8" (decoded on
// the UTF-8 path of rule 3).
func declared(head []byte) (name string, enc encoding.Encoding, ok bool) {
	if len(head) > sniffLen {
		head = head[:sniffLen]
	}
	if label := xmlLabel(head); label != "" {
		if name, enc, ok := honoured(label); ok {
			return name, enc, true
		}
	}
	return honoured(metaLabel(head))
}

// asciiLabels are the WHATWG labels (all of windows-1252) that name ASCII.
var asciiLabels = [...]string{"ansi_x3.4-1968", "ascii", "us-ascii"}

// honoured resolves a declared label by rule 2: UTF-8 and ASCII become
// "utf-8", x-user-defined becomes windows-1252 (as in the HTML prescan),
// and UTF-16 (a byte stream without byte-order mark is no UTF-16), the
// replacement encoding and unknown labels are not honoured.
func honoured(label string) (name string, enc encoding.Encoding, ok bool) {
	l := asciiLower([]byte(strings.TrimSpace(label)))
	for _, a := range asciiLabels {
		if l == a {
			return "utf-8", nil, true
		}
	}
	name, enc, ok = index(l)
	switch {
	case !ok, name == "utf-16le", name == "utf-16be", name == "replacement":
		return "", nil, false
	case name == "x-user-defined":
		return index("windows-1252")
	}
	return name, enc, true
}

// xmlLabel returns the encoding named by the encoding pseudo-attribute of
// the XML declaration head starts with (after optional ASCII white space),
// or "".
func xmlLabel(head []byte) string {
	s := bytes.TrimLeft(head, " \t\r\n")
	if !bytes.HasPrefix(s, []byte("<?xml")) {
		return ""
	}
	s = s[len("<?xml"):]
	end := bytes.Index(s, []byte("?>"))
	if end < 0 || end == 0 || !isXMLSpace(s[0]) {
		return ""
	}
	s = s[:end]
	// Pseudo-attributes: S name S? = S? ('"' value '"' | "'" value "'").
	for {
		s = bytes.TrimLeft(s, " \t\r\n")
		i := bytes.IndexAny(s, " \t\r\n=")
		if i <= 0 {
			return ""
		}
		key := s[:i]
		s = bytes.TrimLeft(s[i:], " \t\r\n")
		if len(s) == 0 || s[0] != '=' {
			return ""
		}
		s = bytes.TrimLeft(s[1:], " \t\r\n")
		if len(s) == 0 || (s[0] != '"' && s[0] != '\'') {
			return ""
		}
		q := s[0]
		s = s[1:]
		j := bytes.IndexByte(s, q)
		if j < 0 {
			return ""
		}
		if string(key) == "encoding" {
			return string(s[:j])
		}
		s = s[j+1:]
	}
}

func isXMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// metaLabel returns the encoding label declared by the first <meta> element
// of head that declares one, as the HTML prescan of
// golang.org/x/net/html/charset finds it (which follows the prescan
// algorithm of the HTML standard on top of the x/net/html tokenizer): a
// charset attribute, or a content attribute with "charset=" in an element
// that also has http-equiv="Content-Type". An element whose label names no
// encoding is skipped. It returns "" when head declares nothing.
//
// charset.DetermineEncoding cannot be called instead: it does not say which
// label was declared (US-ASCII and ISO-8859-1 both come back as
// windows-1252) nor tell a declared encoding from its own guess.
func metaLabel(head []byte) string {
	z := html.NewTokenizer(bytes.NewReader(head))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			tag, hasAttr := z.TagName()
			if string(tag) != "meta" {
				continue
			}
			var (
				seen       []string
				label      string
				valid      bool // label names an encoding
				gotPragma  bool
				needPragma int // 0 don't know, 1 needed, 2 not needed
			)
			for hasAttr {
				var key, val []byte
				key, val, hasAttr = z.TagAttr()
				k := string(key)
				if contains(seen, k) {
					continue
				}
				seen = append(seen, k)
				v := asciiLower(val)
				switch k {
				case "http-equiv":
					if v == "content-type" {
						gotPragma = true
					}
				case "content":
					if !valid {
						if l := fromContent(v); l != "" {
							label = l
							if _, _, ok := index(l); ok {
								valid = true
								needPragma = 1
							}
						}
					}
				case "charset":
					label = v
					_, _, valid = index(v)
					needPragma = 2
				}
			}
			if needPragma == 0 || needPragma == 1 && !gotPragma {
				continue
			}
			if valid {
				return label
			}
		}
	}
}

// asciiLower returns b as a string with ASCII letters lower-cased (and no
// other change: strings.ToLower would turn the Kelvin sign into a 'k').
func asciiLower(b []byte) string {
	s := []byte(string(b))
	for i, c := range s {
		if 'A' <= c && c <= 'Z' {
			s[i] = c + 'a' - 'A'
		}
	}
	return string(s)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fromContent extracts the label from the value of a meta element's content
// attribute ("text/html; charset=iso-8859-1"), as the HTML standard's
// "algorithm for extracting a character encoding from a meta element" does;
// s is lower-case.
func fromContent(s string) string {
	for s != "" {
		i := strings.Index(s, "charset")
		if i < 0 {
			return ""
		}
		s = strings.TrimLeft(s[i+len("charset"):], " \t\n\f\r")
		if !strings.HasPrefix(s, "=") {
			continue
		}
		s = strings.TrimLeft(s[1:], " \t\n\f\r")
		if s == "" {
			return ""
		}
		if q := s[0]; q == '"' || q == '\'' {
			s = s[1:]
			j := strings.IndexByte(s, q)
			if j < 0 {
				return ""
			}
			return s[:j]
		}
		if j := strings.IndexAny(s, "; \t\n\f\r"); j >= 0 {
			return s[:j]
		}
		return s
	}
	return ""
}
