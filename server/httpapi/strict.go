package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// strictKeys checks the members of every JSON object of body that fills a
// struct of type t (or of the types inside it): each must name a field
// exactly, and none may be given twice. encoding/json matches names
// without regard to case and keeps the last of repeated members, so
// {"id": "a", "ID": "b"} would store under "b" and {"dry_run": true,
// "Dry_Run": false} would delete. strictKeys runs after a successful
// decode, on valid JSON: it walks the text's structure, skipping the
// contents of strings and scalars, at a few times the decoder's speed (a
// JSON decoder's tokens took longer than the decode itself on a large
// text).
func strictKeys(body []byte, t reflect.Type) error {
	w := jsonWalker{b: body}
	return w.value(t, "")
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// jsonWalker walks valid JSON text b from i.
type jsonWalker struct {
	b     []byte
	i     int
	depth int // of the objects and arrays the walk is in
}

// maxJSONDepth bounds the nesting the walker follows (its recursion): as
// deep as encoding/json decodes (10 000), which refuses deeper text before
// the walk.
const maxJSONDepth = 10000

// space passes over white space.
func (w *jsonWalker) space() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// str passes over the string that starts at i and returns its contents
// as they are in the text (escapes not decoded).
func (w *jsonWalker) str() []byte {
	start := w.i + 1
	for j := start; j < len(w.b); {
		k := bytes.IndexAny(w.b[j:], "\"\\")
		if k < 0 {
			break
		}
		j += k
		if w.b[j] == '\\' {
			j += 2 // the escaped byte (a \u escape's digits need no care)
			continue
		}
		w.i = j + 1
		return w.b[start:j]
	}
	w.i = len(w.b) // not valid JSON: the end
	return w.b[min(start, len(w.b)):]
}

// key returns the decoded name of the member whose string starts at i.
func (w *jsonWalker) key() string {
	start := w.i
	s := w.str()
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s)
	}
	var k string
	_ = json.Unmarshal(w.b[start:w.i], &k) // valid JSON: it decodes (bad UTF-8 as U+FFFD)
	return k
}

// value walks the value at i, which fills type t (nil: any), at path.
func (w *jsonWalker) value(t reflect.Type, path string) error {
	w.space()
	if w.i >= len(w.b) {
		return nil
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && reflect.PointerTo(t).Implements(unmarshalerType) {
		t = nil // it reads its own members
	}
	if c := w.b[w.i]; c == '{' || c == '[' {
		if w.depth++; w.depth > maxJSONDepth {
			return BadRequest("malformed JSON body: nested deeper than %d", maxJSONDepth)
		}
		defer func() { w.depth-- }()
	}
	switch w.b[w.i] {
	case '{':
		w.i++
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t != nil && t.Kind() == reflect.Struct:
			fields = jsonFields(t)
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		var seen map[string]bool
		for {
			w.space()
			if w.i >= len(w.b) || w.b[w.i] == '}' {
				w.i++
				return nil
			}
			if w.b[w.i] == ',' {
				w.i++
				w.space()
			}
			k := w.key()
			p := k
			if path != "" {
				p = path + "." + k
			}
			ft := elem
			if fields != nil {
				if seen == nil {
					seen = map[string]bool{}
				}
				if seen[k] {
					return BadRequest("malformed JSON body: %q is given twice", p)
				}
				seen[k] = true
				f, ok := fields[k]
				if !ok {
					return BadRequest("malformed JSON body: unknown field %q (names are case-sensitive)", p)
				}
				ft = f
			}
			w.space()
			w.i++ // the colon
			if err := w.value(ft, p); err != nil {
				return err
			}
		}
	case '[':
		w.i++
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for {
			w.space()
			if w.i >= len(w.b) || w.b[w.i] == ']' {
				w.i++
				return nil
			}
			if w.b[w.i] == ',' {
				w.i++
			}
			if err := w.value(elem, path); err != nil {
				return err
			}
		}
	case '"':
		w.str()
	default: // a number, true, false or null
		w.i++ // its first byte (in text that is not JSON, whatever it is: the walk goes on)
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return nil
			}
			w.i++
		}
	}
	return nil
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields returns the JSON member names of struct type t (those of
// embedded structs included) and the types they fill.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				continue // its fields are visible fields of t
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := m[name]; !dup || len(f.Index) == 1 {
			m[name] = f.Type
		}
	}
	fieldCache.Store(t, m)
	return m
}

// loneSurrogate reports whether body, JSON text, holds a \u escape of a
// UTF-16 surrogate that is not half of a pair: encoding/json reads it as
// U+FFFD, so two different ids ("s\udc00", "s\udc01") would be one.
func loneSurrogate(body []byte) bool {
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		i++ // the escaped byte
		if i >= len(body) || body[i] != 'u' {
			continue
		}
		r, ok := hex4(body[i+1:])
		if !ok {
			continue
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // a low half first
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 >= len(body) || body[i+1] != '\\' || body[i+2] != 'u' {
				return true
			}
			lo, ok := hex4(body[i+3:])
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
