package records

import (
	pqzstd "github.com/parquet-go/parquet-go/compress/zstd"

	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
)

// Row group limits of the Parquet Writer: rows are buffered into row groups
// of at most this many rows or (about) bytes of values.
const (
	pqMaxRows  = 100_000
	pqMaxBytes = 64 << 20
)

// orderedGroup is a Parquet group whose fields keep the order they are given
// in (parquet.Group sorts its fields by name).
type orderedGroup struct{ fields []parquet.Field }

func (g *orderedGroup) ID() int { return 0 }
func (g *orderedGroup) String() string {
	var b strings.Builder
	parquet.PrintSchema(&b, "", g)
	return b.String()
}
func (g *orderedGroup) Type() parquet.Type                 { return parquet.Group{}.Type() }
func (g *orderedGroup) Optional() bool                     { return false }
func (g *orderedGroup) Repeated() bool                     { return false }
func (g *orderedGroup) Required() bool                     { return true }
func (g *orderedGroup) Leaf() bool                         { return false }
func (g *orderedGroup) Fields() []parquet.Field            { return g.fields }
func (g *orderedGroup) Encoding() encoding.Encoding        { return nil }
func (g *orderedGroup) Compression() compress.Codec        { return nil }
func (g *orderedGroup) GoType() reflect.Type               { return goTypeOfFields(g.fields) }
func namedField(name string, n parquet.Node) parquet.Field { return parquet.Group{name: n}.Fields()[0] }

// goTypeOfFields returns a struct type for a group's fields, as parquet-go
// builds one, with field names that are valid whatever the column names.
func goTypeOfFields(fields []parquet.Field) reflect.Type {
	sf := make([]reflect.StructField, len(fields))
	for i, f := range fields {
		sf[i] = reflect.StructField{
			Name: "F" + strconv.Itoa(i),
			Type: f.GoType(),
			Tag:  reflect.StructTag(`parquet:` + strconv.Quote(f.Name())),
		}
	}
	return reflect.StructOf(sf)
}

// pqOutput is the state of a Parquet Writer.
type pqOutput struct {
	w       *parquet.GenericWriter[any]
	same    bool    // the schema is a Parquet source's, plus the extras
	src     *source // that source
	okSrc   *source // another source found to have the same schema
	nLeaves int     // leaf columns before the extras
	kinds   []parquet.Kind
	row     parquet.Row
	rows    []parquet.Row
	scratch []byte
	offs    []int
	bytes   int64
	count   int64

	maxRows, maxBytes int64 // row group limits
}

// extraNode returns the Parquet column of an extra value.
func extraNode(v any) (parquet.Node, parquet.Kind) {
	switch v.(type) {
	case int64, int:
		return parquet.Int(64), parquet.Int64
	case float64:
		return parquet.Leaf(parquet.DoubleType), parquet.Double
	case bool:
		return parquet.Leaf(parquet.BooleanType), parquet.Boolean
	}
	return parquet.String(), parquet.ByteArray
}

// openParquet starts the Parquet writer with the given fields and extras.
func (w *Writer) openParquet(name string, fields []parquet.Field, extras []Extra, nLeaves int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: cannot write this Parquet schema: %v", w.path, p)
		}
	}()
	pq := &pqOutput{nLeaves: nLeaves, maxRows: w.pqMaxRows, maxBytes: w.pqMaxBytes}
	for i, e := range extras {
		n, k := extraNode(e.Value)
		fields = append(fields, namedField(w.extraNames[i], n))
		pq.kinds = append(pq.kinds, k)
	}
	// A source's zstd columns are written at the fastest level too: a
	// column's own codec overrides the writer's, and the default level
	// made writing Parquet 1.4x slower (the level is not stored in the file).
	codec := &pqzstd.Codec{Level: pqzstd.SpeedFastest}
	for i, f := range fields {
		if f.Leaf() && f.Compression() != nil && f.Compression().CompressionCodec() == codec.CompressionCodec() {
			fields[i] = namedField(f.Name(), parquet.Compressed(f, codec))
		}
	}
	schema := parquet.NewSchema(name, &orderedGroup{fields: fields})
	pq.w = parquet.NewGenericWriter[any](w.out, schema,
		parquet.Compression(codec),
		parquet.MaxRowsPerRowGroup(max(w.pqMaxRows, 1)),
		parquet.CreatedBy("fpdb", "", ""))
	pq.rows = make([]parquet.Row, 1)
	w.pq = pq
	return nil
}

// startParquetSame starts a Parquet output with the schema of rec's Parquet
// source plus the extras.
func (w *Writer) startParquetSame(rec *Record, extras []Extra) error {
	if rec.pqRow == nil {
		return needRaw(rec)
	}
	s := rec.src
	fields := append([]parquet.Field(nil), s.pqSchema.Fields()...)
	if err := w.openParquet(s.pqSchema.Name(), fields, extras, s.pqLeaves); err != nil {
		return err
	}
	w.pq.same = true
	w.pq.src = s
	w.cols = s.columns
	w.colsSet = true
	return nil
}

// startParquetStrings starts a Parquet output whose columns are w.cols as
// optional strings, plus the extras.
func (w *Writer) startParquetStrings(extras []Extra) error {
	if w.colIndex == nil {
		return fmt.Errorf("%w: the columns [%s] repeat a name, which Parquet cannot hold", ErrSchema, strings.Join(w.cols, ", "))
	}
	fields := make([]parquet.Field, 0, len(w.cols)+len(extras))
	for _, c := range w.cols {
		fields = append(fields, namedField(c, parquet.Optional(parquet.String())))
	}
	for _, n := range w.extraNames {
		if _, dup := w.colIndex[n]; dup {
			return fmt.Errorf("%w: extra field %q is also a column of the records", ErrSchema, n)
		}
	}
	return w.openParquet("fpdb", fields, extras, len(w.cols))
}

// writeParquet writes one row.
func (w *Writer) writeParquet(rec *Record, extras []Extra, isBad bool) error {
	pq := w.pq
	row := pq.row[:0]
	var size int64
	if pq.same {
		if rec.src == nil || rec.src.format != FormatParquet {
			return fmt.Errorf("%w: record %v is not from a Parquet file, the output has the schema of %s", ErrSchema, rec.Pos, pq.src.name)
		}
		if rec.src != pq.src && rec.src != pq.okSrc {
			if !parquet.EqualNodes(rec.src.pqSchema, pq.src.pqSchema) {
				return fmt.Errorf("%w: %s has the columns [%s], the output has those of %s [%s]", ErrSchema, rec.src.name, columnList(rec.src.pqSchema), pq.src.name, columnList(pq.src.pqSchema))
			}
			pq.okSrc = rec.src
		}
		if rec.pqRow == nil {
			return needRaw(rec)
		}
		row = append(row, rec.pqRow...)
		for _, v := range rec.pqRow {
			size += valueSize(v)
		}
	} else {
		if err := w.mapFields(rec, isBad); err != nil {
			return err
		}
		pq.scratch = pq.scratch[:0]
		pq.offs = pq.offs[:0]
		for range w.cols {
			pq.offs = append(pq.offs, -1, -1)
		}
		var err error
		for i, f := range rec.Fields {
			c := w.colMap[i]
			if c < 0 {
				continue
			}
			start := len(pq.scratch)
			var null bool
			if pq.scratch, null, err = appendText(pq.scratch, f.Value); err != nil {
				return fmt.Errorf("records: record %v, field %q: %w", rec.Pos, f.Name, err)
			}
			if !null {
				pq.offs[2*c], pq.offs[2*c+1] = start, len(pq.scratch)
			}
		}
		if len(w.cols) == 1 && w.cols[0] == rawColumn && rec.Fields == nil && rec.Raw != nil {
			start := len(pq.scratch)
			pq.scratch = append(pq.scratch, rec.Raw...)
			pq.offs[0], pq.offs[1] = start, len(pq.scratch)
		}
		for c := range w.cols {
			if pq.offs[2*c] < 0 {
				row = append(row, parquet.NullValue().Level(0, 0, c))
				continue
			}
			b := pq.scratch[pq.offs[2*c]:pq.offs[2*c+1]]
			row = append(row, parquet.ByteArrayValue(b).Level(0, 1, c))
			size += int64(len(b))
		}
	}
	for i, e := range extras {
		v, err := extraValue(e.Value, pq.kinds[i])
		if err != nil {
			return fmt.Errorf("%w: extra %q: %v", ErrSchema, w.extraNames[i], err)
		}
		row = append(row, v.Level(0, 0, pq.nLeaves+i))
		size += valueSize(v)
	}
	pq.row = row
	pq.rows[0] = row
	if err := pq.writeRows(); err != nil {
		return w.fail(err)
	}
	pq.bytes += size
	pq.count++
	if pq.bytes >= pq.maxBytes || pq.count >= pq.maxRows {
		pq.bytes, pq.count = 0, 0
		if err := pq.flush(); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

func (pq *pqOutput) writeRows() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("writing a Parquet row: %v", p)
		}
	}()
	_, err = pq.w.WriteRows(pq.rows)
	return err
}

func (pq *pqOutput) flush() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("writing a Parquet row group: %v", p)
		}
	}()
	return pq.w.Flush()
}

// valueSize estimates the bytes a value takes in a row group.
func valueSize(v parquet.Value) int64 {
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return int64(len(v.ByteArray())) + 4
	}
	return 8
}

// extraValue converts an extra to a value of its column's kind.
func extraValue(v any, k parquet.Kind) (parquet.Value, error) {
	switch x := v.(type) {
	case string:
		if k == parquet.ByteArray {
			return parquet.ByteArrayValue([]byte(x)), nil
		}
	case int64:
		if k == parquet.Int64 {
			return parquet.Int64Value(x), nil
		}
	case int:
		if k == parquet.Int64 {
			return parquet.Int64Value(int64(x)), nil
		}
	case float64:
		if k == parquet.Double {
			return parquet.DoubleValue(x), nil
		}
	case bool:
		if k == parquet.Boolean {
			return parquet.BooleanValue(x), nil
		}
	}
	return parquet.Value{}, fmt.Errorf("a %T, the column is %s", v, kindName(k))
}

// closeParquet ends the Parquet file. An output that got no record gets the
// columns it knows, all strings.
func (w *Writer) closeParquet() (err error) {
	if w.pq == nil {
		fields := []parquet.Field{}
		for _, c := range w.cols {
			fields = append(fields, namedField(c, parquet.Optional(parquet.String())))
		}
		for _, n := range w.extraNames {
			fields = append(fields, namedField(n, parquet.Optional(parquet.String())))
		}
		if len(fields) == 0 {
			fields = append(fields, namedField(rawColumn, parquet.Optional(parquet.String())))
		}
		if err := w.openParquet("fpdb", fields, nil, len(fields)); err != nil {
			return err
		}
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("closing the Parquet file: %v", p)
		}
	}()
	return w.pq.w.Close()
}
