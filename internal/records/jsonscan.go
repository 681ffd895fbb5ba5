package records

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds a small JSON scanner for JSON Lines: it validates a line
// (the grammar of RFC 8259, as encoding/json.Valid) and finds the values at
// a few paths without decoding the rest, so a record costs one pass over its
// bytes.

// maxJSONDepth is the deepest nesting accepted, as encoding/json's.
const maxJSONDepth = 10000

// Character classes of bytes inside a JSON string.
const (
	chPlain  = 0 // ASCII that needs no attention
	chQuote  = 1 // '"'
	chEscape = 2 // '\\'
	chCtl    = 3 // control character (invalid unescaped)
	chHigh   = 4 // non-ASCII byte
)

// strClass classifies the bytes of a JSON string. It is never written after
// its initialisation.
var strClass = func() (t [256]uint8) {
	for i := range 0x20 {
		t[i] = chCtl
	}
	t['"'] = chQuote
	t['\\'] = chEscape
	for i := 0x80; i < 0x100; i++ {
		t[i] = chHigh
	}
	return t
}()

// String flags.
const (
	strEscaped = 1 << iota // the string holds backslash escapes
	strHigh                // the string holds non-ASCII bytes
)

// jsonSyntaxError is a malformed JSON line.
type jsonSyntaxError struct {
	msg string
	off int
}

func (e *jsonSyntaxError) Error() string {
	return fmt.Sprintf("%s at offset %d", e.msg, e.off)
}

// span is the place of a value found in a line.
type span struct {
	start, end int
	flags      uint8 // for strings: strEscaped, strHigh
	found      bool
}

// kind returns the JSON kind of the value at sp in data.
func (sp span) kind(data []byte) string {
	if sp.start >= len(data) {
		return "nothing"
	}
	switch data[sp.start] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// member is a top-level member of an object: its key (between the quotes)
// and its value.
type member struct {
	keyStart, keyEnd int
	keyEscaped       bool
	val              span
}

// pathNode is a node of the tree of the paths a scanner looks for.
type pathNode struct {
	name     string
	children []*pathNode
	targets  []int // the indexes of the spans that this node's value fills
}

// child returns the child named name (raw key bytes), or nil.
func (n *pathNode) child(name []byte) *pathNode {
	for _, c := range n.children {
		if c.name == string(name) {
			return c
		}
	}
	return nil
}

// add adds the dotted path p to the tree, filling span target.
func (n *pathNode) add(p []string, target int) {
	cur := n
	for _, name := range p {
		next := (*pathNode)(nil)
		for _, c := range cur.children {
			if c.name == name {
				next = c
				break
			}
		}
		if next == nil {
			next = &pathNode{name: name}
			cur.children = append(cur.children, next)
		}
		cur = next
	}
	cur.targets = append(cur.targets, target)
}

// jsonScanner scans one JSON text held in memory. Its buffers are reused from
// one line to the next.
type jsonScanner struct {
	data    []byte
	pos     int
	stack   []byte // closing brackets of the containers being skipped
	keyBuf  []byte
	members []member
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return &jsonSyntaxError{msg: fmt.Sprintf(format, args...), off: s.pos}
}

// unexpected returns the error for the byte at s.pos (or the line's end).
func (s *jsonScanner) unexpected(context string) error {
	if s.pos >= len(s.data) {
		return s.errorf("unexpected end of line %s", context)
	}
	return s.errorf("invalid character %s %s", quoteChar(s.data[s.pos]), context)
}

// quoteChar quotes a byte for an error message, as encoding/json does.
func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	q := strconv.Quote(string(rune(c)))
	if c >= utf8.RuneSelf {
		q = fmt.Sprintf(`"\x%02x"`, c)
	}
	return "'" + q[1:len(q)-1] + "'"
}

func (s *jsonScanner) skipWS() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// scanString scans the string starting at s.pos (a '"') and returns its
// flags; s.pos is left after the closing quote.
func (s *jsonScanner) scanString() (uint8, error) {
	data := s.data
	i := s.pos + 1
	var flags uint8
	for {
		// The fast path: bytes that need no attention.
		for i < len(data) && strClass[data[i]] == chPlain {
			i++
		}
		if i >= len(data) {
			s.pos = i
			return 0, s.errorf("unexpected end of line in string literal")
		}
		switch strClass[data[i]] {
		case chQuote:
			s.pos = i + 1
			return flags, nil
		case chHigh:
			flags |= strHigh
			i++
		case chCtl:
			s.pos = i
			return 0, s.errorf("invalid character %s in string literal", quoteChar(data[i]))
		case chEscape:
			flags |= strEscaped
			i++
			if i >= len(data) {
				s.pos = i
				return 0, s.errorf("unexpected end of line in string escape code")
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for range 4 {
					if i >= len(data) {
						s.pos = i
						return 0, s.errorf("unexpected end of line in \\u hexadecimal character escape")
					}
					if !isHex(data[i]) {
						s.pos = i
						return 0, s.errorf("invalid character %s in \\u hexadecimal character escape", quoteChar(data[i]))
					}
					i++
				}
			default:
				s.pos = i
				return 0, s.errorf("invalid character %s in string escape code", quoteChar(data[i]))
			}
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber scans the number starting at s.pos.
func (s *jsonScanner) scanNumber() error {
	data := s.data
	i := s.pos
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	default:
		s.pos = i
		return s.unexpected("in numeric literal")
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || !isDigit(data[i]) {
			s.pos = i
			return s.unexpected("after decimal point in numeric literal")
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			s.pos = i
			return s.unexpected("in exponent of numeric literal")
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	s.pos = i
	return nil
}

// scanLiteral scans the literal lit (true, false, null) at s.pos.
func (s *jsonScanner) scanLiteral(lit string) error {
	for k := 0; k < len(lit); k++ {
		if s.pos >= len(s.data) || s.data[s.pos] != lit[k] {
			return s.unexpected("in literal " + lit + " (expecting " + quoteChar(lit[k]) + ")")
		}
		s.pos++
	}
	return nil
}

// scanScalar scans a string, number or literal at s.pos, which holds c.
func (s *jsonScanner) scanScalar(c byte) (uint8, error) {
	switch c {
	case '"':
		return s.scanString()
	case 't':
		return 0, s.scanLiteral("true")
	case 'f':
		return 0, s.scanLiteral("false")
	case 'n':
		return 0, s.scanLiteral("null")
	}
	if c == '-' || isDigit(c) {
		return 0, s.scanNumber()
	}
	return 0, s.unexpected("looking for beginning of value")
}

// scanKey scans an object key and the colon after it, leaving s.pos at the
// start of the value.
func (s *jsonScanner) scanKey() (start, end int, flags uint8, err error) {
	s.skipWS()
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return 0, 0, 0, s.unexpected("looking for beginning of object key string")
	}
	start = s.pos + 1
	if flags, err = s.scanString(); err != nil {
		return 0, 0, 0, err
	}
	end = s.pos - 1
	s.skipWS()
	if s.pos >= len(s.data) || s.data[s.pos] != ':' {
		return 0, 0, 0, s.unexpected("after object key")
	}
	s.pos++
	s.skipWS()
	return start, end, flags, nil
}

// skipValue scans the value at s.pos (after white space) whatever it is,
// without recursion, and returns its flags when it is a string.
func (s *jsonScanner) skipValue(depth int) (uint8, error) {
	s.skipWS()
	if s.pos >= len(s.data) {
		return 0, s.unexpected("looking for beginning of value")
	}
	c := s.data[s.pos]
	if c != '{' && c != '[' {
		return s.scanScalar(c)
	}
	stack := s.stack[:0]
	defer func() { s.stack = stack[:0] }()
	for {
		// A value starts at s.pos.
		s.skipWS()
		if s.pos >= len(s.data) {
			return 0, s.unexpected("looking for beginning of value")
		}
		c := s.data[s.pos]
		switch c {
		case '{', '[':
			if depth+len(stack) >= maxJSONDepth {
				return 0, s.errorf("exceeded max depth")
			}
			s.pos++
			s.skipWS()
			if c == '{' {
				stack = append(stack, '}')
				if s.pos < len(s.data) && s.data[s.pos] == '}' {
					s.pos++
					stack = stack[:len(stack)-1]
					break
				}
				if _, _, _, err := s.scanKey(); err != nil {
					return 0, err
				}
				continue
			}
			stack = append(stack, ']')
			if s.pos < len(s.data) && s.data[s.pos] == ']' {
				s.pos++
				stack = stack[:len(stack)-1]
				break
			}
			continue
		default:
			if _, err := s.scanScalar(c); err != nil {
				return 0, err
			}
		}
		// After a value: close containers or go on to the next element.
		for {
			if len(stack) == 0 {
				return 0, nil
			}
			s.skipWS()
			if s.pos >= len(s.data) {
				return 0, s.unexpected("after value")
			}
			top := stack[len(stack)-1]
			c := s.data[s.pos]
			if c == top {
				s.pos++
				stack = stack[:len(stack)-1]
				continue
			}
			if c != ',' {
				if top == '}' {
					return 0, s.unexpected("after object key:value pair")
				}
				return 0, s.unexpected("after array element")
			}
			s.pos++
			if top == '}' {
				if _, _, _, err := s.scanKey(); err != nil {
					return 0, err
				}
			}
			break
		}
	}
}

// scanObject scans the object whose '{' is at s.pos, filling the spans of
// the paths under node. With top, it records every member in s.members.
func (s *jsonScanner) scanObject(node *pathNode, spans []span, depth int, top bool) error {
	s.pos++ // '{'
	s.skipWS()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		kStart, kEnd, kFlags, err := s.scanKey()
		if err != nil {
			return err
		}
		var child *pathNode
		if node != nil {
			key := s.data[kStart:kEnd]
			if kFlags&strEscaped != 0 {
				s.keyBuf = appendUnescaped(s.keyBuf[:0], key)
				key = s.keyBuf
			}
			child = node.child(key)
		}
		vStart := s.pos
		var vFlags uint8
		if s.pos >= len(s.data) {
			return s.unexpected("looking for beginning of value")
		}
		if child != nil && len(child.children) > 0 && s.data[s.pos] == '{' {
			if depth+1 >= maxJSONDepth {
				return s.errorf("exceeded max depth")
			}
			err = s.scanObject(child, spans, depth+1, false)
		} else {
			vFlags, err = s.skipValue(depth + 1)
		}
		if err != nil {
			return err
		}
		sp := span{start: vStart, end: s.pos, flags: vFlags, found: true}
		if child != nil {
			for _, t := range child.targets {
				spans[t] = sp
			}
		}
		if top {
			s.members = append(s.members, member{keyStart: kStart, keyEnd: kEnd, keyEscaped: kFlags&strEscaped != 0, val: sp})
		}
		s.skipWS()
		if s.pos >= len(s.data) {
			return s.unexpected("after object key:value pair")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.unexpected("after object key:value pair")
		}
	}
}

// scanLine scans a whole line that must hold one JSON object (and white
// space), filling spans from the paths of root; with members, s.members
// lists the object's members. notObject names the kind of a valid
// top-level value that is not an object ("" when it is one).
func (s *jsonScanner) scanLine(line []byte, root *pathNode, spans []span, members bool) (notObject string, err error) {
	s.data = line
	s.pos = 0
	s.members = s.members[:0]
	for i := range spans {
		spans[i] = span{}
	}
	s.skipWS()
	if s.pos < len(line) && line[s.pos] == '{' {
		err = s.scanObject(root, spans, 0, members)
	} else {
		start := s.pos
		if _, err = s.skipValue(0); err == nil {
			notObject = span{start: start}.kind(line)
		}
	}
	if err != nil {
		return "", err
	}
	s.skipWS()
	if s.pos < len(line) {
		return "", s.unexpected("after top-level value")
	}
	return notObject, nil
}

// appendUnescaped appends the content of a valid JSON string (without its
// quotes) to dst with its escapes decoded. Invalid surrogate escapes become
// U+FFFD, as encoding/json decodes them; other bytes are copied as they are.
func appendUnescaped(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		c := src[i]
		if c != '\\' {
			j := i + 1
			for j < len(src) && src[j] != '\\' {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(src) {
			break // not reached for a valid string
		}
		switch src[i+1] {
		case '"', '\\', '/':
			dst = append(dst, src[i+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(src, i+2)
			if !ok {
				return dst // not reached for a valid string
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(0), false
				if i+6 <= len(src) && src[i] == '\\' && src[i+1] == 'u' {
					r2, ok2 = hex4(src, i+2)
				}
				if ok2 {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						dst = utf8.AppendRune(dst, dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst // not reached for a valid string
		}
		i += 2
	}
	return dst
}

// hex4 decodes the 4 hexadecimal digits at src[i:].
func hex4(src []byte, i int) (rune, bool) {
	if i+4 > len(src) {
		return 0, false
	}
	var r rune
	for _, c := range src[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
