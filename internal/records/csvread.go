package records

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// errRecordTooLong stops a CSV file with a record longer than can be held.
var errRecordTooLong = errors.New("CSV record too long")

// recordLimiter stops a CSV reader that reads too far into one record (an
// unterminated quote would otherwise make encoding/csv hold the rest of the
// file).
//
// With keep set (Options.Raw) it also keeps the bytes it gave from mark
// on, so that a bad record's original text can be written out (Record.Raw).
type recordLimiter struct {
	r     io.Reader
	head  []byte // read from r before it (skipBOM), given first
	fed   int64  // bytes given to the CSV reader
	mark  int64  // where the current record started
	limit int64

	keep   bool
	kept   []byte // the bytes given from offset keptAt on
	keptAt int64
}

func (l *recordLimiter) Read(p []byte) (n int, err error) {
	if l.fed-l.mark > l.limit {
		return 0, fmt.Errorf("%w: more than %d bytes (an unterminated quote?)", errRecordTooLong, l.limit)
	}
	if len(l.head) > 0 {
		n = copy(p, l.head)
		l.head = l.head[n:]
	} else {
		n, err = l.r.Read(p)
	}
	l.fed += int64(n)
	if l.keep && n > 0 {
		l.kept = append(l.kept, p[:n]...)
	}
	return n, err
}

// text returns the bytes given from offset start to end (nil when they
// are not kept), without a trailing line ending.
func (l *recordLimiter) text(start, end int64) []byte {
	if !l.keep || start < l.keptAt || end > l.keptAt+int64(len(l.kept)) || start > end {
		return nil
	}
	b := l.kept[start-l.keptAt : end-l.keptAt]
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	return b
}

// setMark starts a record at offset m, dropping the bytes kept before it.
func (l *recordLimiter) setMark(m int64) {
	l.mark = m
	if !l.keep {
		return
	}
	if drop := m - l.keptAt; drop > 0 && drop <= int64(len(l.kept)) && drop >= int64(len(l.kept))/2 {
		n := copy(l.kept, l.kept[drop:])
		l.kept = l.kept[:n]
		l.keptAt = m
	}
}

// skipBOM reads the first bytes of in and returns them, less the UTF-8
// byte-order mark they may be (spreadsheets write one before the header,
// whose first name may be quoted: a quote after the mark would be a bare
// quote), for the CSV reader to take before the rest of in.
func skipBOM(in io.Reader) ([]byte, error) {
	head := make([]byte, 3)
	n, err := io.ReadFull(in, head)
	switch {
	case n == len(head) && string(head) == "\ufeff":
		return nil, nil
	case err != nil && err != io.EOF && err != io.ErrUnexpectedEOF:
		return nil, err
	}
	return head[:n], nil
}

// csvDecoder reads CSV or TSV with a header row.
type csvDecoder struct {
	cr   *csv.Reader
	lim  *recordLimiter
	base string
	opts Options
	src  *source

	idCol, textCol int // -1: none
	keepCols       []int
	keepKeys       [][]byte

	idBuf, textBuf, metaBuf, rawBuf []byte
	fields                          []Field
}

func newCSVDecoder(in io.Reader, name, base string, src *source, o Options, tsv bool) (*csvDecoder, error) {
	head, err := skipBOM(in)
	if err != nil {
		return nil, fmt.Errorf("reading the header: %w", err)
	}
	lim := &recordLimiter{r: in, head: head, limit: int64(o.maxLine()) + 1<<16, keep: o.Raw}
	cr := csv.NewReader(lim)
	if tsv {
		cr.Comma = '\t'
	}
	cr.ReuseRecord = true
	cr.LazyQuotes = false
	d := &csvDecoder{cr: cr, lim: lim, base: base, opts: o, src: src, idCol: -1, textCol: -1}
	header, err := cr.Read()
	if err == io.EOF {
		return d, nil // an empty file: no records
	}
	if err != nil {
		return nil, fmt.Errorf("reading the header: %w", err)
	}
	lim.setMark(cr.InputOffset())
	header = append([]string(nil), header...)
	src.columns = header
	cr.FieldsPerRecord = len(header)
	col := func(name string) int {
		for i, h := range header {
			if h == name {
				return i
			}
		}
		return -1
	}
	if o.IDField != "" {
		if d.idCol = col(o.IDField); d.idCol < 0 {
			return nil, fmt.Errorf("%w: no id column %q in the header (columns: %s)", ErrSchema, o.IDField, strings.Join(header, ", "))
		}
	}
	if d.textCol = col(o.TextField); d.textCol < 0 {
		return nil, fmt.Errorf("%w: no text column %q in the header (columns: %s)", ErrSchema, o.TextField, strings.Join(header, ", "))
	}
	for _, k := range o.KeepFields {
		d.keepCols = append(d.keepCols, col(k))
		d.keepKeys = append(d.keepKeys, appendJSONString(nil, k))
	}
	return d, nil
}

func (d *csvDecoder) next(rec *Record) error {
	if d.src.columns == nil {
		return io.EOF
	}
	start := d.lim.mark
	row, err := d.cr.Read()
	end := d.cr.InputOffset()
	// crlf: the row has a field over several lines, whose line endings
	// encoding/csv gave as LF even where the text has CRLF.
	crlf := false
	if d.opts.Raw {
		for _, v := range row {
			if strings.IndexByte(v, '\n') >= 0 {
				crlf = true
				break
			}
		}
	}
	if d.opts.Raw && (err != nil || crlf) {
		// The row's original text, which the fields may not hold
		// (taken before setMark drops it).
		d.rawBuf = append(d.rawBuf[:0], d.lim.text(start, end)...)
		crlf = crlf && bytes.Contains(d.rawBuf, []byte("\r\n"))
	}
	d.lim.setMark(end)
	if err != nil {
		var pe *csv.ParseError
		if !errors.As(err, &pe) {
			return err // io.EOF, a read error, errRecordTooLong
		}
		rec.Pos.Line = int64(pe.StartLine)
		if d.opts.IDField == "" {
			rec.ID = d.positionID(rec.Pos.Line)
		}
		if d.opts.Raw {
			rec.Raw = d.rawBuf
		}
		if pe.Err == csv.ErrFieldCount {
			rec.Err = bad("wrong number of fields (%d, the header has %d)", len(row), len(d.src.columns))
			if d.opts.Raw {
				d.buildFields(row, rec, crlf)
			}
			return nil
		}
		rec.Err = bad("malformed CSV: %v (line %d, column %d)", pe.Err, pe.Line, pe.Column)
		return nil
	}
	line, _ := d.cr.FieldPos(0)
	rec.Pos.Line = int64(line)
	if d.opts.Raw {
		d.buildFields(row, rec, crlf)
	}
	if d.opts.IDField == "" {
		rec.ID = d.positionID(rec.Pos.Line)
	} else {
		id := row[d.idCol]
		switch {
		case id == "":
			rec.Err = bad("field %q is empty", d.opts.IDField)
			return nil
		case !utf8.ValidString(id):
			rec.Err = bad("invalid UTF-8 in field %q", d.opts.IDField)
			return nil
		}
		rec.ID = id
	}
	text := row[d.textCol]
	switch {
	case len(text) > d.opts.MaxText:
		rec.Err = bad("field %q is too long (%d bytes > %d)", d.opts.TextField, len(text), d.opts.MaxText)
	case !utf8.ValidString(text):
		rec.Err = bad("invalid UTF-8 in field %q", d.opts.TextField)
	default:
		d.textBuf = append(d.textBuf[:0], text...)
		rec.Text = d.textBuf
	}
	if len(d.keepCols) > 0 {
		d.metaBuf = appendMeta(d.metaBuf[:0], d.keepKeys, d.keepCols, func(b []byte, c int) []byte { return appendJSONString(b, row[c]) })
		rec.Meta = d.metaBuf
	}
	return nil
}

// buildFields fills rec.Fields: the header's names with the row's values;
// values past the header are named "fpdb_field_<n>" (1-based). With crlf
// (d.rawBuf then holds the row's text), the values of fields over several
// lines are taken from the text, so that a CRLF in them stays one
// (encoding/csv gives it as LF): a rewritten record keeps its values.
func (d *csvDecoder) buildFields(row []string, rec *Record, crlf bool) {
	var exact []string
	if crlf {
		exact = exactFields(row, d.rawBuf, d.cr.Comma)
	}
	d.fields = d.fields[:0]
	for i, v := range row {
		if exact != nil {
			v = exact[i]
		}
		name := ""
		if i < len(d.src.columns) {
			name = d.src.columns[i]
		} else {
			name = "fpdb_field_" + strconv.Itoa(i+1)
		}
		d.fields = append(d.fields, Field{Name: name, Value: v})
	}
	rec.Fields = d.fields
}

// exactFields returns the values of row as raw, the text of the record
// row was read from (less its final line ending), holds them: row's values
// but for the CRLFs inside quoted fields, which encoding/csv turns into
// LF. It returns nil when raw does not split into row's fields that way
// (then row is kept as encoding/csv read it).
func exactFields(row []string, raw []byte, comma rune) []string {
	if comma >= utf8.RuneSelf || comma == '"' {
		return nil
	}
	sep := byte(comma)
	// encoding/csv skips empty lines before a record.
	for {
		if bytes.HasPrefix(raw, []byte("\n")) {
			raw = raw[1:]
		} else if bytes.HasPrefix(raw, []byte("\r\n")) {
			raw = raw[2:]
		} else {
			break
		}
	}
	out := make([]string, 0, len(row))
	for {
		if len(out) == len(row) {
			return nil // more fields than row's
		}
		var v []byte
		if len(raw) > 0 && raw[0] == '"' {
			// A quoted field: to its closing quote, a doubled quote
			// standing for one.
			i := 1
			for {
				j := bytes.IndexByte(raw[i:], '"')
				if j < 0 {
					return nil
				}
				v = append(v, raw[i:i+j]...)
				i += j + 1
				if i < len(raw) && raw[i] == '"' {
					v = append(v, '"')
					i++
					continue
				}
				break
			}
			raw = raw[i:]
			if len(raw) > 0 && raw[0] != sep {
				return nil // text after the closing quote
			}
		} else {
			j := bytes.IndexByte(raw, sep)
			if j < 0 {
				j = len(raw)
			}
			v = raw[:j]
			if bytes.IndexByte(v, '\n') >= 0 {
				return nil // a line break outside quotes: another record
			}
			raw = raw[j:]
		}
		if strings.ReplaceAll(string(v), "\r\n", "\n") != row[len(out)] {
			return nil
		}
		out = append(out, string(v))
		if len(raw) == 0 {
			break
		}
		raw = raw[1:] // the separator
	}
	if len(out) != len(row) {
		return nil
	}
	return out
}

func (d *csvDecoder) positionID(line int64) string {
	d.idBuf = append(append(d.idBuf[:0], d.base...), ':')
	d.idBuf = strconv.AppendInt(d.idBuf, line, 10)
	return string(d.idBuf)
}

func (d *csvDecoder) skip(n int64) (int64, error) {
	if d.src.columns == nil {
		return 0, io.EOF
	}
	var done int64
	for done < n {
		_, err := d.cr.Read()
		d.lim.setMark(d.cr.InputOffset())
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return done, err
			}
		}
		done++
	}
	return done, nil
}

func (d *csvDecoder) progress() (int64, int64, bool) { return 0, 0, false }

func (d *csvDecoder) close() error { return nil }

// appendMeta appends to buf the JSON object of the kept fields: key i
// (JSON-encoded) with the value val appends for column cols[i], leaving
// out the fields whose column is -1 (absent).
func appendMeta(buf []byte, keys [][]byte, cols []int, val func(buf []byte, col int) []byte) []byte {
	buf = append(buf, '{')
	n := 0
	for i, c := range cols {
		if c < 0 {
			continue
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		n++
		buf = append(buf, keys[i]...)
		buf = append(buf, ':')
		buf = val(buf, c)
	}
	return append(buf, '}')
}
