package records

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// pqTyped is the layout of a Parquet output given columns by SetNames:
// the columns of a Parquet source keep their types, the others are
// optional strings.
type pqTyped struct {
	src  *source
	cols []pqTypedCol // by output column (Writer.cols)
	// Scratch of a row: where each source leaf's values start in the
	// source row (starts[leaf] to starts[leaf+1]), and the cells of a
	// record written from its fields.
	starts []int
	cells  []pqCell
}

// pqTypedCol is one top-level column of the output.
type pqTypedCol struct {
	outLeaf int // its first leaf column in the output
	leaves  int // its leaf columns
	// The source's column (field < 0: an optional string column, not the
	// source's): its first leaf in the source, and whether it was made
	// optional (its values' definition levels are one more than the
	// source's).
	field   int
	srcLeaf int
	bump    bool
	conv    pqConv       // what a field value converts to
	node    parquet.Node // the source's column, for messages
}

// pqConv is what a field value is converted to for a column of the
// source's type.
type pqConv struct {
	kind   pqConvKind
	phys   parquet.Kind // integers: INT32 or INT64
	bits   int          // integers: 8, 16, 32 or 64
	signed bool         // integers
}

type pqConvKind uint8

const (
	convNull    pqConvKind = iota // nothing but null: a nested column or a type not converted to
	convBool                      // BOOLEAN
	convInt                       // INT32, INT64 (INT logical types)
	convFloat32                   // FLOAT
	convFloat64                   // DOUBLE
	convString                    // BYTE_ARRAY, STRING or ENUM
	convJSON                      // BYTE_ARRAY JSON: any JSON value as its text
)

// pqCell is the value of a column of one record written from its fields.
type pqCell struct {
	set        bool
	bytes      bool          // a byte array: scratch[start:end]
	v          parquet.Value // else the value
	start, end int
}

// convOf returns what the leaf column n converts field values to.
func convOf(n parquet.Node) pqConv {
	if !n.Leaf() || n.Repeated() {
		return pqConv{}
	}
	t := n.Type()
	var lt format.LogicalTypeValue
	if l := t.LogicalType(); l != nil {
		lt = l.Value
	}
	switch t.Kind() {
	case parquet.Boolean:
		if lt == nil {
			return pqConv{kind: convBool}
		}
	case parquet.Int32, parquet.Int64:
		bits := 32
		if t.Kind() == parquet.Int64 {
			bits = 64
		}
		switch x := lt.(type) {
		case nil:
			return pqConv{kind: convInt, phys: t.Kind(), bits: bits, signed: true}
		case *format.IntType:
			if b := int(x.BitWidth); b == 8 || b == 16 || b == 32 || b == 64 {
				return pqConv{kind: convInt, phys: t.Kind(), bits: min(b, bits), signed: x.IsSigned}
			}
		}
	case parquet.Float:
		if lt == nil {
			return pqConv{kind: convFloat32}
		}
	case parquet.Double:
		if lt == nil {
			return pqConv{kind: convFloat64}
		}
	case parquet.ByteArray:
		switch lt.(type) {
		case nil, *format.StringType, *format.EnumType:
			return pqConv{kind: convString}
		case *format.JsonType:
			return pqConv{kind: convJSON}
		}
	}
	return pqConv{}
}

// startParquetTyped starts a Parquet output whose columns are w.cols:
// those of the Parquet source w.presetPQ of its types (made optional), the
// others optional strings; then the extras.
func (w *Writer) startParquetTyped(extras []Extra) error {
	if err := w.checkParquetColumns(); err != nil {
		return err
	}
	src := w.presetPQ
	srcFields := src.pqSchema.Fields()
	byName := make(map[string]int, len(srcFields))
	firstLeaf := make([]int, len(srcFields))
	leaf := 0
	for i, f := range srcFields {
		if _, dup := byName[f.Name()]; !dup {
			byName[f.Name()] = i
		}
		firstLeaf[i] = leaf
		leaf += countLeaves(f)
	}
	t := &pqTyped{src: src, cols: make([]pqTypedCol, len(w.cols)), starts: make([]int, leaf+1)}
	fields := make([]parquet.Field, 0, len(w.cols)+len(extras))
	out := 0
	for i, c := range w.cols {
		col := pqTypedCol{outLeaf: out, leaves: 1, field: -1}
		if j, ok := byName[c]; ok {
			f := srcFields[j]
			col.field, col.srcLeaf, col.leaves, col.node = j, firstLeaf[j], countLeaves(f), f
			col.conv = convOf(f)
			var n parquet.Node = f
			if f.Required() {
				col.bump = true
				n = parquet.Optional(f)
			}
			fields = append(fields, namedField(c, n))
		} else {
			fields = append(fields, namedField(c, parquet.Optional(parquet.String())))
		}
		t.cols[i] = col
		out += col.leaves
	}
	if err := w.openParquet(src.pqSchema.Name(), fields, extras, out); err != nil {
		return err
	}
	w.pq.typed = t
	return nil
}

// appendTypedRow appends to row the values of rec's columns in an output
// of typed columns (SetNames), and returns it with their size.
func (w *Writer) appendTypedRow(row parquet.Row, rec *Record, isBad bool) (parquet.Row, int64, error) {
	if rec.src != nil && rec.src.format == FormatParquet && w.typedSource(rec.src) {
		return w.copyTypedRow(row, rec)
	}
	if err := w.mapFields(rec, isBad); err != nil {
		return row, 0, err
	}
	pq, t := w.pq, w.pq.typed
	pq.scratch = pq.scratch[:0]
	t.cells = slices.Grow(t.cells[:0], len(w.cols))[:len(w.cols)]
	clear(t.cells)
	for i, f := range rec.Fields {
		c := w.colMap[i]
		if c < 0 {
			continue
		}
		col := &t.cols[c]
		start := len(pq.scratch)
		cell := pqCell{set: true}
		var null bool
		var err error
		if col.field < 0 {
			if pq.scratch, null, err = appendText(pq.scratch, f.Value); err != nil {
				return row, 0, fmt.Errorf("records: record %v, field %q: %w", rec.Pos, f.Name, err)
			}
			cell.bytes = true
		} else if pq.scratch, cell.v, cell.bytes, null, err = convertField(pq.scratch, f.Value, col.conv); err != nil {
			if !isBad {
				return row, 0, fmt.Errorf("%w: record %v: field %q is %w, which column %q of the Parquet output cannot hold: it is %s, as in %s",
					ErrSchema, rec.Pos, f.Name, err, w.cols[c], typeName(col.node), t.src.name)
			}
			// A bad record keeps what fits; its original text is in
			// the raw column.
			null = true
		}
		cell.start, cell.end = start, len(pq.scratch)
		if null {
			cell = pqCell{}
		}
		t.cells[c] = cell // a field named twice: the last one
	}
	if r := w.rawIdx; r >= 0 && isBad && rec.Raw != nil && (t.cols[r].field < 0 || t.cols[r].conv.kind == convString) {
		start := len(pq.scratch)
		pq.scratch = append(pq.scratch, rec.Raw...)
		t.cells[r] = pqCell{set: true, bytes: true, start: start, end: len(pq.scratch)}
	}
	var size int64
	for c, cell := range t.cells {
		col := &t.cols[c]
		if !cell.set {
			// Null in every leaf of the column, at its top level (which
			// is optional or repeated).
			for l := range col.leaves {
				row = append(row, parquet.NullValue().Level(0, 0, col.outLeaf+l))
			}
			continue
		}
		v := cell.v
		if cell.bytes {
			v = parquet.ByteArrayValue(pq.scratch[cell.start:cell.end])
		}
		// A value of an optional top-level leaf.
		row = append(row, v.Level(0, 1, col.outLeaf))
		size += valueSize(v)
	}
	return row, size, nil
}

// copyTypedRow appends to row the values of rec, of the source whose
// schema types the output, in the output's column order (null in the
// columns not the source's), and returns it with their size.
func (w *Writer) copyTypedRow(row parquet.Row, rec *Record) (parquet.Row, int64, error) {
	if rec.pqRow == nil {
		return row, 0, needRaw(rec)
	}
	t := w.pq.typed
	// A row holds the values of each leaf column together, in column
	// order (as the reader relies on too).
	starts := t.starts
	n := len(starts) - 1
	next := 0
	for i, v := range rec.pqRow {
		c := v.Column()
		if c < 0 || c < next-1 || c >= n {
			return row, 0, fmt.Errorf("%w: record %v has a value of column %d after one of column %d (the schema of %s has %d)", ErrSchema, rec.Pos, c, next-1, t.src.name, n)
		}
		for next <= c {
			starts[next] = i
			next++
		}
	}
	for next <= n {
		starts[next] = len(rec.pqRow)
		next++
	}
	var size int64
	for _, col := range t.cols {
		if col.field < 0 {
			row = append(row, parquet.NullValue().Level(0, 0, col.outLeaf))
			continue
		}
		bump := 0
		if col.bump {
			bump = 1
		}
		for _, v := range rec.pqRow[starts[col.srcLeaf]:starts[col.srcLeaf+col.leaves]] {
			row = append(row, v.Level(v.RepetitionLevel(), v.DefinitionLevel()+bump, col.outLeaf+v.Column()-col.srcLeaf))
			size += valueSize(v)
		}
	}
	return row, size, nil
}

// typeName names the type of a Parquet column in messages: its physical
// and logical types ("a group" for a group), "repeated" if it is.
func typeName(n parquet.Node) string {
	if !n.Leaf() {
		if n.Repeated() {
			return "a repeated group"
		}
		return "a group"
	}
	s := strings.ToLower(n.Type().Kind().String())
	if lt := n.Type().LogicalType(); lt != nil && lt.Value != nil {
		s += " " + lt.String()
	}
	if n.Repeated() {
		s = "repeated " + s
	}
	return s
}

// errNotConverted is the error of a value that a column of its type cannot
// hold; its text describes the value.
type errNotConverted struct{ what string }

func (e *errNotConverted) Error() string { return e.what }

// maxShownValue bounds the bytes of a value quoted in messages.
const maxShownValue = 40

// describe names a field value in messages: "the string \"abc\"", "the
// number 1.5", "an object".
func describe(v any) error {
	var what string
	switch x := v.(type) {
	case json.RawMessage:
		switch {
		case len(x) == 0:
			what = "null"
		case x[0] == '{':
			what = "an object"
		case x[0] == '[':
			what = "an array"
		case x[0] == '"':
			what = "the string " + shorten(string(x))
		case x[0] == 't' || x[0] == 'f' || x[0] == 'n':
			what = string(x)
		default:
			what = "the number " + shorten(string(x))
		}
	case string:
		what = "the string " + shorten(strconv.Quote(x))
	case []byte:
		what = fmt.Sprintf("a byte array of %d bytes", len(x))
	case bool:
		what = strconv.FormatBool(x)
	case int64:
		what = "the number " + strconv.FormatInt(x, 10)
	case float64:
		what = "the number " + strconv.FormatFloat(x, 'g', -1, 64)
	default:
		what = fmt.Sprintf("a %T", v)
	}
	return &errNotConverted{what}
}

// shorten cuts a quoted value longer than maxShownValue bytes.
func shorten(s string) string {
	if len(s) <= maxShownValue {
		return s
	}
	cut := maxShownValue
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut-- // not inside a UTF-8 sequence
	}
	return s[:cut] + "…"
}

// convertField converts a field value (a JSON value, or a Go value of a
// Parquet source's field) for a column of conversion c: a byte array is
// appended to dst (isBytes), another value is v; null tells a null value.
// A value the column cannot hold is an error describing the value.
func convertField(dst []byte, value any, c pqConv) (_ []byte, v parquet.Value, isBytes, null bool, err error) {
	raw, isJSON := value.(json.RawMessage)
	if value == nil || isJSON && (len(raw) == 0 || string(raw) == "null") {
		return dst, v, false, true, nil
	}
	fail := func() ([]byte, parquet.Value, bool, bool, error) { return dst, v, false, false, describe(value) }
	if isJSON {
		// A JSON scalar as the Go value it reads as: a number's text
		// is converted below.
		switch raw[0] {
		case '"':
			if c.kind == convString {
				return appendUnescaped(dst, raw[1:len(raw)-1]), v, true, false, nil
			}
		case 't', 'f':
			value = raw[0] == 't'
		case '{', '[':
		default:
			return convertNumber(dst, string(raw), value, c)
		}
	}
	if c.kind == convJSON {
		if isJSON {
			return append(dst, raw...), v, true, false, nil
		}
		if dst, err = appendJSONValue(dst, value); err != nil {
			return fail()
		}
		return dst, v, true, false, nil
	}
	switch x := value.(type) {
	case string:
		if c.kind == convString {
			return append(dst, x...), v, true, false, nil
		}
	case []byte:
		if c.kind == convString {
			return append(dst, x...), v, true, false, nil
		}
	case bool:
		if c.kind == convBool {
			return dst, parquet.BooleanValue(x), false, false, nil
		}
	case int64:
		return convertNumber(dst, strconv.FormatInt(x, 10), value, c)
	case float64:
		return convertNumber(dst, strconv.FormatFloat(x, 'g', -1, 64), value, c)
	}
	return fail()
}

// convertNumber converts a number, given as its decimal text s (JSON
// syntax), for a column of conversion c; value is the field value, for
// messages.
func convertNumber(dst []byte, s string, value any, c pqConv) (_ []byte, v parquet.Value, isBytes, null bool, err error) {
	switch c.kind {
	case convJSON:
		return append(dst, s...), v, true, false, nil
	case convFloat32, convFloat64:
		bits := 64
		if c.kind == convFloat32 {
			bits = 32
		}
		f, err := strconv.ParseFloat(s, bits)
		if err != nil {
			break
		}
		if bits == 32 {
			return dst, parquet.FloatValue(float32(f)), false, false, nil
		}
		return dst, parquet.DoubleValue(f), false, false, nil
	case convInt:
		x, ok := parseInteger(s, c)
		if !ok {
			break
		}
		if c.phys == parquet.Int32 {
			return dst, parquet.Int32Value(int32(uint32(x))), false, false, nil
		}
		return dst, parquet.Int64Value(int64(x)), false, false, nil
	}
	return dst, v, false, false, describe(value)
}

// parseInteger parses the JSON number s as an integer of c's width and
// sign, given as its bits (two's complement for signed ones): an integral
// number in exponent or fraction notation (1e3, 2.0) counts.
func parseInteger(s string, c pqConv) (uint64, bool) {
	if c.signed {
		x, err := strconv.ParseInt(s, 10, 64)
		if errors.Is(err, strconv.ErrSyntax) {
			f, ferr := strconv.ParseFloat(s, 64)
			if ferr != nil || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
				return 0, false
			}
			x, err = int64(f), nil
		}
		if err != nil || c.bits < 64 && (x < -(1<<(c.bits-1)) || x >= 1<<(c.bits-1)) {
			return 0, false
		}
		return uint64(x), true
	}
	x, err := strconv.ParseUint(s, 10, 64)
	if errors.Is(err, strconv.ErrSyntax) {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || f < 0 || f >= 1<<64 {
			return 0, false
		}
		x, err = uint64(f), nil
	}
	if err != nil || c.bits < 64 && x >= 1<<c.bits {
		return 0, false
	}
	return x, true
}
