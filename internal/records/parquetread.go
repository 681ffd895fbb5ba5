package records

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// parquetBatch is the number of rows read from a row group at once.
const parquetBatch = 128

// errCorruptParquet is wrapped by the errors of Parquet files that the
// library could not decode.
var errCorruptParquet = errors.New("corrupt Parquet file")

// recoverParquet turns a panic of the Parquet library on corrupt input into
// an error.
func recoverParquet(err *error, what string) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: %s: %v", errCorruptParquet, what, p)
	}
}

// pqTop is a top-level field of a Parquet schema.
type pqTop struct {
	name        string
	first, last int  // its leaf columns
	flat        bool // a single leaf, not repeated
	node        parquet.Node
	schema      *parquet.Schema // for a nested field: a schema of it alone
}

// parquetDecoder reads the rows of a Parquet file, row group by row group,
// reading only the column chunks it needs.
type parquetDecoder struct {
	file *parquet.File
	size int64
	base string
	opts Options
	src  *source

	leaves           []parquet.LeafColumn // by column index
	sel              []int                // the column indexes read
	idCol, textCol   int                  // -1: none
	keepCols         []int                // -1: absent
	keepKeys         [][]byte
	tops             []pqTop
	allFlat          bool // every top-level field is flat: Fields built on demand
	rowGroups        []parquet.RowGroup
	rgSize, rgStart  []int64 // compressed bytes; first row in the file
	rg               int     // current row group
	rgRow            int64   // next row within it
	rows             parquet.RowReadSeekCloser
	rgEOF            bool
	batch            []parquet.Row
	batchI, batchN   int
	colFirst, colEnd []int // the values of each column in the current row
	idBuf, textBuf   []byte
	metaBuf          []byte
	fields           []Field
	scratch          parquet.Row
	done             bool
}

// checkParquetFooter tells whether f looks like a Parquet file before the
// library reads it (the library trusts the footer length).
func checkParquetFooter(f *os.File, size int64) error {
	if size < 12 {
		return fmt.Errorf("not a Parquet file: too short (%d bytes)", size)
	}
	var head, tail [8]byte
	if _, err := f.ReadAt(head[:4], 0); err != nil {
		return fmt.Errorf("reading the Parquet header: %w", err)
	}
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return fmt.Errorf("reading the Parquet footer: %w", err)
	}
	if string(head[:4]) != "PAR1" || string(tail[4:]) != "PAR1" {
		if string(head[:4]) == "PARE" || string(tail[4:]) == "PARE" {
			return errors.New("encrypted Parquet files are not supported")
		}
		return errors.New("not a Parquet file (no PAR1 magic bytes)")
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n+12 > size {
		return fmt.Errorf("%w: the footer length %d exceeds the file size %d", errCorruptParquet, n, size)
	}
	return nil
}

func newParquetDecoder(f *os.File, size int64, name string, src *source, o Options) (d *parquetDecoder, err error) {
	defer recoverParquet(&err, "opening")
	if err := checkParquetFooter(f, size); err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, size,
		parquet.SkipPageIndex(true),
		parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(256<<10))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCorruptParquet, err)
	}
	d = &parquetDecoder{
		file: pf, size: size, base: baseName(name), opts: o, src: src,
		idCol: -1, textCol: -1,
	}
	schema := pf.Schema()
	src.pqSchema = schema
	cols := schema.Columns()
	d.leaves = make([]parquet.LeafColumn, len(cols))
	for i, p := range cols {
		leaf, ok := schema.Lookup(p...)
		if !ok || leaf.ColumnIndex != i {
			return nil, fmt.Errorf("%w: cannot resolve column %q", errCorruptParquet, strings.Join(p, "."))
		}
		d.leaves[i] = leaf
	}
	src.pqLeaves = len(cols)
	first := 0
	d.allFlat = true
	for _, fld := range schema.Fields() {
		n := countLeaves(fld)
		t := pqTop{name: fld.Name(), first: first, last: first + n, node: fld}
		t.flat = fld.Leaf() && !fld.Repeated()
		if !t.flat {
			t.schema = parquet.NewSchema(fld.Name(), parquet.Group{fld.Name(): fld})
		}
		d.tops = append(d.tops, t)
		d.allFlat = d.allFlat && t.flat
		src.columns = append(src.columns, fld.Name())
		first += n
	}
	if first != len(cols) {
		return nil, fmt.Errorf("%w: the schema has %d leaf columns, its fields %d", errCorruptParquet, len(cols), first)
	}

	sel := map[int]bool{}
	need := func(field, role string) (int, error) {
		c, found, err := d.resolve(schema, field, role)
		if err == nil && !found {
			err = fmt.Errorf("%w: no %s column %q in the Parquet schema (columns: %s)", ErrSchema, role, field, columnList(schema))
		}
		return c, err
	}
	if o.IDField != "" {
		if d.idCol, err = need(o.IDField, "id"); err != nil {
			return nil, err
		}
		sel[d.idCol] = true
	}
	if d.textCol, err = need(o.TextField, "text"); err != nil {
		return nil, err
	}
	sel[d.textCol] = true
	for _, k := range o.KeepFields {
		c, _, err := d.resolve(schema, k, "kept")
		if err != nil {
			return nil, err
		}
		d.keepCols = append(d.keepCols, c)
		d.keepKeys = append(d.keepKeys, appendJSONString(nil, k))
		if c >= 0 {
			sel[c] = true
		}
	}
	if o.Raw {
		for i := range cols {
			sel[i] = true
		}
	}
	for c := range sel {
		d.sel = append(d.sel, c)
	}
	slices.Sort(d.sel)
	d.colFirst = make([]int, len(cols))
	d.colEnd = make([]int, len(cols))

	d.rowGroups = pf.RowGroups()
	meta := pf.Metadata()
	var start int64
	for i, rg := range d.rowGroups {
		var sz int64
		if i < len(meta.RowGroups) {
			for _, c := range meta.RowGroups[i].Columns {
				sz += c.MetaData.TotalCompressedSize
			}
		}
		d.rgSize = append(d.rgSize, max(sz, 0))
		d.rgStart = append(d.rgStart, start)
		start += rg.NumRows()
		if len(rg.ColumnChunks()) != len(cols) {
			return nil, fmt.Errorf("%w: row group %d has %d column chunks, the schema %d columns", errCorruptParquet, i, len(rg.ColumnChunks()), len(cols))
		}
	}
	d.batch = make([]parquet.Row, parquetBatch)
	return d, nil
}

// resolve returns the leaf column index of the field named name: a
// top-level column or a dotted path to a nested leaf, not repeated. A name
// not in the schema gives -1 and found false; a group or a repeated column
// is an error.
func (d *parquetDecoder) resolve(schema *parquet.Schema, name, role string) (col int, found bool, err error) {
	leaf, ok := schema.Lookup(name)
	if !ok && strings.Contains(name, ".") {
		leaf, ok = schema.Lookup(strings.Split(name, ".")...)
	}
	if !ok {
		if nodeAt(schema, name) != nil {
			return -1, true, fmt.Errorf("%w: %s field %q is a group, not a leaf column, in the Parquet schema (columns: %s)", ErrSchema, role, name, columnList(schema))
		}
		return -1, false, nil
	}
	if leaf.MaxRepetitionLevel > 0 {
		return -1, true, fmt.Errorf("%w: %s field %q is a repeated (list) column: not supported", ErrSchema, role, name)
	}
	return leaf.ColumnIndex, true, nil
}

// columnList lists the leaf columns of a schema for messages.
func columnList(schema *parquet.Schema) string {
	var all []string
	for _, p := range schema.Columns() {
		all = append(all, strings.Join(p, "."))
	}
	return strings.Join(all, ", ")
}

// nodeAt returns the node at a top-level name or dotted path, or nil.
func nodeAt(root parquet.Node, name string) parquet.Node {
	find := func(n parquet.Node, name string) parquet.Node {
		for _, f := range n.Fields() {
			if f.Name() == name {
				return f
			}
		}
		return nil
	}
	if n := find(root, name); n != nil {
		return n
	}
	n := root
	for _, p := range strings.Split(name, ".") {
		if n = find(n, p); n == nil {
			return nil
		}
	}
	return n
}

// countLeaves returns the number of leaf columns under n.
func countLeaves(n parquet.Node) int {
	if n.Leaf() {
		return 1
	}
	c := 0
	for _, f := range n.Fields() {
		c += countLeaves(f)
	}
	return c
}

// baseName returns the base name of a path for position ids.
func baseName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 && i+1 < len(name) {
		return name[i+1:]
	}
	return name
}

// openRowGroup starts reading the current row group at d.rgRow.
func (d *parquetDecoder) openRowGroup() (err error) {
	defer recoverParquet(&err, fmt.Sprintf("row group %d", d.rg))
	chunks := d.rowGroups[d.rg].ColumnChunks()
	sel := make([]parquet.ColumnChunk, len(d.sel))
	for i, c := range d.sel {
		sel[i] = chunks[c]
	}
	d.rows = parquet.NewColumnChunkRowReader(sel)
	d.rgEOF = false
	if d.rgRow > 0 {
		if err := d.rows.SeekToRow(d.rgRow); err != nil {
			return fmt.Errorf("row group %d: seeking to row %d: %w", d.rg, d.rgRow, err)
		}
	}
	return nil
}

// closeRowGroup ends the reading of the current row group and goes to the
// next one.
func (d *parquetDecoder) closeRowGroup() error {
	var err error
	if d.rows != nil {
		err = d.rows.Close()
		d.rows = nil
	}
	d.batchI, d.batchN = 0, 0
	d.rg++
	d.rgRow = 0
	d.rgEOF = false
	return err
}

// fill reads the next batch of rows; io.EOF at the end of the file.
func (d *parquetDecoder) fill() (err error) {
	for {
		if d.rg >= len(d.rowGroups) {
			d.done = true
			return io.EOF
		}
		if d.rows == nil {
			if err := d.openRowGroup(); err != nil {
				return err
			}
		}
		if d.rgEOF {
			if err := d.closeRowGroup(); err != nil {
				return fmt.Errorf("row group %d: %w", d.rg-1, err)
			}
			continue
		}
		n, err := d.readRows()
		if err == io.EOF {
			d.rgEOF = true
		} else if err != nil {
			return fmt.Errorf("row group %d: %w", d.rg, err)
		}
		if n > 0 {
			d.batchI, d.batchN = 0, n
			return nil
		}
	}
}

func (d *parquetDecoder) readRows() (n int, err error) {
	defer recoverParquet(&err, fmt.Sprintf("row group %d", d.rg))
	for i := range d.batch {
		d.batch[i] = d.batch[i][:0]
	}
	return d.rows.ReadRows(d.batch)
}

func (d *parquetDecoder) next(rec *Record) error {
	if d.batchI >= d.batchN {
		if err := d.fill(); err != nil {
			return err
		}
	}
	row := d.batch[d.batchI]
	d.batchI++
	rec.Pos.RowGroup = d.rg
	rec.Pos.Row = d.rgRow
	fileRow := d.rgStart[d.rg] + d.rgRow
	d.rgRow++

	for _, c := range d.sel {
		d.colFirst[c], d.colEnd[c] = -1, -1
	}
	for i, v := range row {
		c := v.Column()
		if c < 0 || c >= len(d.colFirst) {
			continue
		}
		if d.colFirst[c] < 0 {
			d.colFirst[c] = i
		}
		d.colEnd[c] = i + 1
	}
	for _, c := range d.sel {
		if d.colFirst[c] < 0 {
			return fmt.Errorf("%w: row group %d, row %d: no value in column %q", errCorruptParquet, rec.Pos.RowGroup, rec.Pos.Row, strings.Join(d.leaves[c].Path, "."))
		}
	}
	if d.opts.Raw {
		rec.pqRow = row
		if d.allFlat {
			// Built when a Writer needs them (not to rewrite Parquet as
			// Parquet): converting every value (texts copied to strings)
			// was most of the garbage of reading Parquet to rewrite it.
			rec.pqLazy = d
		} else if err := d.buildFields(row, rec); err != nil {
			rec.Err = err
			return nil
		}
	}
	if d.idCol < 0 {
		d.idBuf = append(append(d.idBuf[:0], d.base...), ':')
		d.idBuf = strconv.AppendInt(d.idBuf, fileRow, 10)
		rec.ID = string(d.idBuf)
	} else {
		id, err := d.idOf(row[d.colFirst[d.idCol]])
		if err != nil {
			rec.Err = err
			return nil
		}
		rec.ID = id
	}
	rec.Text, rec.Err = d.textOf(row[d.colFirst[d.textCol]])
	if len(d.keepCols) > 0 {
		d.metaBuf = appendMeta(d.metaBuf[:0], d.keepKeys, d.keepCols, func(b []byte, c int) []byte {
			return appendParquetJSON(b, row[d.colFirst[c]], d.leaves[c].Node)
		})
		rec.Meta = d.metaBuf
	}
	return nil
}

// kindName names a Parquet physical type in messages.
func kindName(k parquet.Kind) string {
	return strings.ToLower(k.String())
}

func (d *parquetDecoder) idOf(v parquet.Value) (string, error) {
	field := d.opts.IDField
	if v.IsNull() {
		return "", bad("field %q is null", field)
	}
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := v.ByteArray()
		switch {
		case len(b) == 0:
			return "", bad("field %q is empty", field)
		case !utf8.Valid(b):
			return "", bad("invalid UTF-8 in field %q", field)
		}
		return string(b), nil
	case parquet.Int32:
		if isUnsigned(d.leaves[d.idCol].Node) {
			return strconv.FormatUint(uint64(v.Uint32()), 10), nil
		}
		return strconv.FormatInt(int64(v.Int32()), 10), nil
	case parquet.Int64:
		if isUnsigned(d.leaves[d.idCol].Node) {
			return strconv.FormatUint(v.Uint64(), 10), nil
		}
		return strconv.FormatInt(v.Int64(), 10), nil
	case parquet.Float, parquet.Double:
		f := v.Double()
		if v.Kind() == parquet.Float {
			f = float64(v.Float())
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", bad("field %q is not a finite number (%v)", field, f)
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return strconv.FormatInt(int64(f), 10), nil
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	}
	return "", bad("field %q is not a string (%s)", field, kindName(v.Kind()))
}

// isUnsigned tells whether a leaf holds unsigned integers.
func isUnsigned(n parquet.Node) bool {
	if n == nil || !n.Leaf() {
		return false
	}
	lt := n.Type().LogicalType()
	if lt == nil {
		return false
	}
	it, ok := lt.Value.(*format.IntType)
	return ok && !it.IsSigned
}

func (d *parquetDecoder) textOf(v parquet.Value) ([]byte, error) {
	field := d.opts.TextField
	if v.IsNull() {
		return nil, bad("field %q is null", field)
	}
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
	default:
		return nil, bad("field %q is not a string (%s)", field, kindName(v.Kind()))
	}
	b := v.ByteArray()
	switch {
	case len(b) > d.opts.MaxText:
		return nil, bad("field %q is too long (%d bytes > %d)", field, len(b), d.opts.MaxText)
	case !utf8.Valid(b):
		return nil, bad("invalid UTF-8 in field %q", field)
	}
	return b, nil
}

// appendParquetJSON appends a leaf value as JSON: byte arrays as strings
// (base64 when not UTF-8), numbers, booleans, null.
func appendParquetJSON(dst []byte, v parquet.Value, node parquet.Node) []byte {
	dst, _ = appendJSONValue(dst, parquetFieldValue(v, node))
	return dst
}

// parquetFieldValue converts a leaf value of the column node for
// Record.Fields. An unsigned 64-bit integer above the int64 range is given
// as a json.RawMessage of its decimal text; a value of a logical type as
// logicalValue says.
func parquetFieldValue(v parquet.Value, node parquet.Node) any {
	if v.IsNull() {
		return nil
	}
	if x, ok := logicalValue(v, node); ok {
		return x
	}
	switch v.Kind() {
	case parquet.Boolean:
		return v.Boolean()
	case parquet.Int32:
		if isUnsigned(node) {
			return int64(v.Uint32())
		}
		return int64(v.Int32())
	case parquet.Int64:
		if isUnsigned(node) && v.Uint64() > math.MaxInt64 {
			return json.RawMessage(strconv.FormatUint(v.Uint64(), 10))
		}
		return v.Int64()
	case parquet.Float:
		f := float64(v.Float())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return f
	case parquet.Double:
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return f
	case parquet.ByteArray:
		b := v.ByteArray()
		if utf8.Valid(b) {
			return string(b)
		}
		return b
	case parquet.FixedLenByteArray:
		return v.ByteArray()
	}
	return v.String() // an INT96 that is no time
}

// buildFields fills rec.Fields with the top-level fields of row.
func (d *parquetDecoder) buildFields(row parquet.Row, rec *Record) error {
	d.fields = d.fields[:0]
	for i := range d.tops {
		t := &d.tops[i]
		if t.flat {
			d.fields = append(d.fields, Field{Name: t.name, Value: parquetFieldValue(row[d.colFirst[t.first]], t.node)})
			continue
		}
		raw, err := d.nestedJSON(row, t)
		if err != nil {
			d.fields = append(d.fields, Field{Name: t.name})
			rec.Fields = d.fields
			return bad("cannot convert field %q: %v", t.name, err)
		}
		d.fields = append(d.fields, Field{Name: t.name, Value: raw})
	}
	rec.Fields = d.fields
	return nil
}

// nestedJSON converts a nested top-level field (a group or a list) to JSON.
func (d *parquetDecoder) nestedJSON(row parquet.Row, t *pqTop) (raw json.RawMessage, err error) {
	defer recoverParquet(&err, "converting "+t.name)
	d.scratch = d.scratch[:0]
	for c := t.first; c < t.last; c++ {
		for _, v := range row[d.colFirst[c]:d.colEnd[c]] {
			d.scratch = append(d.scratch, v.Level(v.RepetitionLevel(), v.DefinitionLevel(), c-t.first))
		}
	}
	var out any
	if err := t.schema.Reconstruct(&out, d.scratch); err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("reconstructed a %T", out)
	}
	b, err := json.Marshal(jsonable(reflect.ValueOf(m[t.name])))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// jsonable converts a reconstructed value for encoding/json: byte slices
// that are UTF-8 become strings, map keys strings, structs maps by their
// Parquet names.
func jsonable(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Invalid:
		return nil
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return jsonable(v.Elem())
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, v.Len())
			reflect.Copy(reflect.ValueOf(b), v)
			if utf8.Valid(b) {
				return string(b)
			}
			return b
		}
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = jsonable(v.Index(i))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		out := make(map[string]any, v.Len())
		it := v.MapRange()
		for it.Next() {
			k := jsonable(it.Key())
			ks, ok := k.(string)
			if !ok {
				ks = fmt.Sprint(k)
			}
			out[ks] = jsonable(it.Value())
		}
		return out
	case reflect.Struct:
		if t, ok := v.Interface().(time.Time); ok {
			return t
		}
		out := make(map[string]any, v.NumField())
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name := f.Name
			if tag, ok := f.Tag.Lookup("parquet"); ok {
				if n, _, _ := strings.Cut(tag, ","); n != "" && n != "-" {
					name = n
				}
			}
			out[name] = jsonable(v.Field(i))
		}
		return out
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return f
	}
	return v.Interface()
}

func (d *parquetDecoder) skip(n int64) (int64, error) {
	var done int64
	for done < n {
		if d.rg >= len(d.rowGroups) {
			d.done = true
			return done, io.EOF
		}
		if d.batchI < d.batchN {
			k := min(n-done, int64(d.batchN-d.batchI))
			d.batchI += int(k)
			d.rgRow += k
			done += k
			continue
		}
		left := d.rowGroups[d.rg].NumRows() - d.rgRow
		if left <= n-done || d.rgEOF {
			// skip the rest of the row group without reading it
			done += max(left, 0)
			if err := d.closeRowGroup(); err != nil {
				return done, err
			}
			continue
		}
		k := n - done
		d.rgRow += k
		done += k
		if d.rows != nil {
			if err := d.seek(); err != nil {
				return done, err
			}
		}
	}
	return done, nil
}

// seek moves the open row reader to d.rgRow.
func (d *parquetDecoder) seek() (err error) {
	defer recoverParquet(&err, fmt.Sprintf("row group %d", d.rg))
	d.batchI, d.batchN = 0, 0
	if err := d.rows.SeekToRow(d.rgRow); err != nil {
		return fmt.Errorf("row group %d: seeking to row %d: %w", d.rg, d.rgRow, err)
	}
	return nil
}

func (d *parquetDecoder) progress() (int64, int64, bool) {
	if d.done {
		return d.size, d.size, true
	}
	var done int64
	for i := 0; i < d.rg && i < len(d.rgSize); i++ {
		done += d.rgSize[i]
	}
	if d.rg < len(d.rowGroups) {
		if n := d.rowGroups[d.rg].NumRows(); n > 0 {
			done += int64(float64(d.rgSize[d.rg]) * float64(min(d.rgRow, n)) / float64(n))
		}
	}
	return min(done, d.size), d.size, true
}

func (d *parquetDecoder) close() error {
	if d.rows != nil {
		err := d.rows.Close()
		d.rows = nil
		return err
	}
	return nil
}

// pqRows is the number of rows of a Parquet file's reader (0 for another
// format).
func (r *Reader) pqRows() int64 {
	if d, ok := r.dec.(*parquetDecoder); ok {
		return d.file.NumRows()
	}
	return 0
}
