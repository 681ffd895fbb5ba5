package records

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// jsonlBufferSize is the size of the JSON Lines read buffer: lines up to it
// are parsed in place.
const jsonlBufferSize = 256 << 10

// maxInterned bounds the member names a JSON Lines reader keeps to share.
const maxInterned = 4096

// Span indexes of the id and text; kept fields follow.
const (
	spanID   = 0
	spanText = 1
	spanKeep = 2
)

// jsonlDecoder reads JSON Lines.
type jsonlDecoder struct {
	br      *bufio.Reader
	base    string
	opts    Options
	maxLine int

	lineNo int64  // lines consumed
	acc    []byte // a line longer than the read buffer
	sc     jsonScanner
	root   pathNode
	spans  []span

	idBuf, textBuf, metaBuf []byte
	keepKeys                [][]byte // JSON-encoded keys of Meta
	fields                  []Field
	intern                  map[string]string

	// The first objects read, and how many of them lack the id or the
	// text field: when the first fieldCheck all lack one, the field name
	// is wrong (schemaError), not the records.
	objects     int
	lack        [2]int
	firstFields []string // the members of the first object
	// regular is set for a regular file, whose end the field check may
	// ask for: a pipe's (standard input, a FIFO) could be waited for.
	regular bool
}

// fieldCheck is how many objects must all lack the id or the text field
// before a file is refused as a whole (a misspelled --id-field or
// --text-field), rather than each record reported bad.
const fieldCheck = 10

func newJSONLDecoder(in io.Reader, name, base string, src *source, o Options) *jsonlDecoder {
	d := &jsonlDecoder{
		br:      bufio.NewReaderSize(in, jsonlBufferSize),
		base:    base,
		opts:    o,
		maxLine: o.maxLine(),
		spans:   make([]span, spanKeep+len(o.KeepFields)),
	}
	if o.IDField != "" {
		d.root.add(strings.Split(o.IDField, "."), spanID)
	}
	d.root.add(strings.Split(o.TextField, "."), spanText)
	for i, k := range o.KeepFields {
		d.root.add(strings.Split(k, "."), spanKeep+i)
		d.keepKeys = append(d.keepKeys, appendJSONString(nil, k))
	}
	if o.Raw {
		d.intern = make(map[string]string)
	}
	return d
}

// readLine returns the next line without its line ending, the 1-based number
// of its line, and whether it was too long (then its content was dropped).
func (d *jsonlDecoder) readLine() (line []byte, lineNo int64, tooLong bool, err error) {
	d.acc = d.acc[:0]
	long := false
	for {
		data, err := d.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if !long && len(d.acc)+len(data) > d.maxLine {
				long = true
				d.acc = d.acc[:0]
			}
			if !long {
				d.acc = append(d.acc, data...)
			}
			continue
		}
		if err != nil && err != io.EOF {
			return nil, 0, false, err
		}
		if err == io.EOF && len(data) == 0 && len(d.acc) == 0 && !long {
			return nil, 0, false, io.EOF
		}
		d.lineNo++
		if long {
			return nil, d.lineNo, true, nil
		}
		if len(d.acc) > 0 {
			d.acc = append(d.acc, data...)
			data = d.acc
		}
		if len(data) > 0 && data[len(data)-1] == '\n' {
			data = data[:len(data)-1]
		}
		if len(data) > 0 && data[len(data)-1] == '\r' {
			data = data[:len(data)-1]
		}
		if len(data) > d.maxLine {
			return nil, d.lineNo, true, nil
		}
		if d.lineNo == 1 {
			data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		}
		return data, d.lineNo, false, nil
	}
}

// blank tells whether a line holds only white space.
func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// nextLine returns the next line that is not blank.
func (d *jsonlDecoder) nextLine() (line []byte, lineNo int64, tooLong bool, err error) {
	for {
		line, lineNo, tooLong, err = d.readLine()
		if err != nil || tooLong || !blank(line) {
			return line, lineNo, tooLong, err
		}
	}
}

func (d *jsonlDecoder) next(rec *Record) error {
	if d.lineNo == 0 && d.objects == 0 {
		if err := d.previewFields(); err != nil {
			return err
		}
	}
	line, lineNo, tooLong, err := d.nextLine()
	if err != nil {
		return err
	}
	rec.Pos.Line = lineNo
	if d.opts.IDField == "" {
		rec.ID = d.positionID(lineNo)
	}
	if tooLong {
		rec.Err = bad("line is too long (more than %d bytes)", d.maxLine)
		return nil
	}
	if d.opts.Raw {
		rec.Raw = line
	}
	notObject, err := d.sc.scanLine(line, &d.root, d.spans, d.opts.Raw || d.opts.Names != nil)
	if err != nil {
		rec.Err = bad("malformed JSON: %v", err)
		return nil
	}
	if notObject != "" {
		rec.Err = bad("not a JSON object (%s)", notObject)
		return nil
	}
	if d.opts.Names != nil {
		if err := d.addNames(line); err != nil {
			return err
		}
	}
	if err := d.checkFields(line); err != nil {
		return err
	}
	if d.opts.Raw {
		d.buildFields(line, rec)
	}
	if d.opts.IDField != "" {
		if rec.ID, rec.Err = d.idOf(line, d.spans[spanID]); rec.Err != nil {
			return nil
		}
	}
	if !d.opts.SkipText {
		rec.Text, rec.Err = d.textOf(line, d.spans[spanText])
	}
	if len(d.opts.KeepFields) > 0 {
		d.metaBuf = append(d.metaBuf[:0], '{')
		for i := range d.opts.KeepFields {
			sp := d.spans[spanKeep+i]
			if !sp.found {
				continue
			}
			if len(d.metaBuf) > 1 {
				d.metaBuf = append(d.metaBuf, ',')
			}
			d.metaBuf = append(d.metaBuf, d.keepKeys[i]...)
			d.metaBuf = append(d.metaBuf, ':')
			d.metaBuf = append(d.metaBuf, line[sp.start:sp.end]...)
		}
		rec.Meta = append(d.metaBuf, '}')
		d.metaBuf = rec.Meta
	}
	return nil
}

// previewFields runs checkFields over the first lines in the read buffer
// before any record is returned, so that a misspelled field is refused
// before its records are reported bad one by one. It looks at what the
// first read brought (up to the buffer's size from a file) and waits for
// no more: a pipe's first records are not held back. When that holds
// fewer than fieldCheck objects (long lines, a slow pipe), the count is
// left to next.
func (d *jsonlDecoder) previewFields() error {
	if _, err := d.br.Peek(1); err != nil {
		return nil // the read's error comes from nextLine
	}
	buf, _ := d.br.Peek(d.br.Buffered())
	buf = bytes.TrimPrefix(buf, []byte("\xef\xbb\xbf")) // called before the first line
	check := func(line []byte) error {
		line = bytes.TrimRight(line, "\r")
		if blank(line) {
			return nil
		}
		if notObject, err := d.sc.scanLine(line, &d.root, d.spans, false); err != nil || notObject != "" {
			return nil
		}
		return d.checkFields(line)
	}
	for d.objects < fieldCheck {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		if err := check(buf[:i]); err != nil {
			return err
		}
		buf = buf[i+1:]
	}
	if d.objects < fieldCheck && d.regular && d.br.Buffered() < d.br.Size() {
		// A file of fewer objects than fieldCheck may be whole in the
		// buffer: a file answers at once whether it ends there (a pipe
		// would be waited for). Then its last line (without a newline)
		// is checked too, and a file none of whose objects has the field
		// is refused as well.
		if _, err := d.br.Peek(d.br.Buffered() + 1); errors.Is(err, io.EOF) {
			if err := check(buf); err != nil {
				return err
			}
			if err := d.lackAll(); err != nil {
				return err
			}
		}
	}
	if d.objects < fieldCheck {
		d.objects, d.lack, d.firstFields = 0, [2]int{}, nil // counted again as read
	}
	return nil
}

// checkFields counts the first objects that lack the id or the text field,
// and refuses the file when the first fieldCheck all lack one.
func (d *jsonlDecoder) checkFields(line []byte) error {
	if d.objects >= fieldCheck {
		return nil
	}
	d.objects++
	for i, f := range []struct {
		name  string
		check bool
		sp    span
	}{{d.opts.IDField, d.opts.IDField != "", d.spans[spanID]}, {d.opts.TextField, !d.opts.SkipText, d.spans[spanText]}} {
		if !f.check || f.sp.found {
			continue
		}
		if d.objects == 1 && d.firstFields == nil {
			// Only a file whose first object lacks a field can be
			// refused: its member names, for the message.
			var m map[string]json.RawMessage
			if json.Unmarshal(line, &m) == nil {
				d.firstFields = slices.Sorted(maps.Keys(m))
			}
		}
		if d.lack[i]++; d.lack[i] == fieldCheck {
			return d.schemaError(fmt.Sprintf("none of the first %d records has", fieldCheck), f.name)
		}
	}
	return nil
}

// lackAll refuses a whole file of 2 to fieldCheck − 1 objects (all
// counted) none of which has the id or the text field. (A file of one
// object without it is one bad record.)
func (d *jsonlDecoder) lackAll() error {
	for i, name := range []string{d.opts.IDField, d.opts.TextField} {
		if d.objects >= 2 && d.lack[i] == d.objects {
			return d.schemaError(fmt.Sprintf("none of the %d records has", d.objects), name)
		}
	}
	return nil
}

// schemaError is the ErrSchema of a field none of the first records has.
func (d *jsonlDecoder) schemaError(which, field string) error {
	return fmt.Errorf("%w: %s the field %q (the first one's fields: %s)", ErrSchema, which, field, strings.Join(d.firstFields, ", "))
}

// positionID returns the id of a record without an id field.
func (d *jsonlDecoder) positionID(lineNo int64) string {
	d.idBuf = append(append(d.idBuf[:0], d.base...), ':')
	d.idBuf = strconv.AppendInt(d.idBuf, lineNo, 10)
	return string(d.idBuf)
}

// stringOf decodes the JSON string at sp; the result may alias line.
func (d *jsonlDecoder) stringOf(line []byte, sp span, buf *[]byte) []byte {
	s := line[sp.start+1 : sp.end-1]
	if sp.flags&strEscaped == 0 {
		return s
	}
	*buf = appendUnescaped((*buf)[:0], s)
	return *buf
}

// idOf returns the id at sp.
func (d *jsonlDecoder) idOf(line []byte, sp span) (string, error) {
	field := d.opts.IDField
	if !sp.found {
		return "", bad("missing field %q", field)
	}
	var id []byte
	switch k := sp.kind(line); k {
	case "string":
		id = d.stringOf(line, sp, &d.idBuf)
		if sp.flags&strHigh != 0 && !utf8.Valid(id) {
			return "", bad("invalid UTF-8 in field %q", field)
		}
	case "number":
		return numberID(line[sp.start:sp.end]), nil
	default:
		return "", bad("field %q is not a string (%s)", field, k)
	}
	if len(id) == 0 {
		return "", bad("field %q is empty", field)
	}
	return string(id), nil
}

// numberID returns the id text of a JSON number: an integer as it is
// written; another number with an integral value (1e3, 2.0) as its decimal
// integer; any other number as it is written.
func numberID(lit []byte) string {
	for i, c := range lit {
		if !isDigit(c) && !(i == 0 && c == '-') {
			f, err := strconv.ParseFloat(string(lit), 64)
			if err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
				return strconv.FormatInt(int64(f), 10)
			}
			return string(lit)
		}
	}
	return string(lit)
}

// textOf returns the text at sp.
func (d *jsonlDecoder) textOf(line []byte, sp span) ([]byte, error) {
	field := d.opts.TextField
	if !sp.found {
		return nil, bad("missing field %q", field)
	}
	if k := sp.kind(line); k != "string" {
		return nil, bad("field %q is not a string (%s)", field, k)
	}
	text := d.stringOf(line, sp, &d.textBuf)
	if len(text) > d.opts.MaxText {
		return nil, bad("field %q is too long (%d bytes > %d)", field, len(text), d.opts.MaxText)
	}
	if sp.flags&strHigh != 0 && !utf8.Valid(text) {
		return nil, bad("invalid UTF-8 in field %q", field)
	}
	return text, nil
}

// buildFields fills rec.Fields from the scanned members.
func (d *jsonlDecoder) buildFields(line []byte, rec *Record) {
	d.fields = d.fields[:0]
	for _, m := range d.sc.members {
		key := line[m.keyStart:m.keyEnd]
		if m.keyEscaped {
			d.sc.keyBuf = appendUnescaped(d.sc.keyBuf[:0], key)
			key = d.sc.keyBuf
		}
		d.fields = append(d.fields, Field{Name: d.internName(key), Value: json.RawMessage(line[m.val.start:m.val.end])})
	}
	rec.Fields = d.fields
}

// addNames adds the names of the scanned members to Options.Names.
func (d *jsonlDecoder) addNames(line []byte) error {
	for _, m := range d.sc.members {
		key := line[m.keyStart:m.keyEnd]
		if m.keyEscaped {
			d.sc.keyBuf = appendUnescaped(d.sc.keyBuf[:0], key)
			key = d.sc.keyBuf
		}
		if err := d.opts.Names.addBytes(key); err != nil {
			return err
		}
	}
	return nil
}

// internName returns key as a string, shared with earlier records.
func (d *jsonlDecoder) internName(key []byte) string {
	if s, ok := d.intern[string(key)]; ok {
		return s
	}
	s := string(key)
	if len(d.intern) < maxInterned {
		d.intern[s] = s
	}
	return s
}

func (d *jsonlDecoder) skip(n int64) (int64, error) {
	var done int64
	for done < n {
		_, _, _, err := d.nextLine()
		if err != nil {
			return done, err
		}
		done++
	}
	return done, nil
}

func (d *jsonlDecoder) progress() (int64, int64, bool) { return 0, 0, false }

func (d *jsonlDecoder) close() error { return nil }
