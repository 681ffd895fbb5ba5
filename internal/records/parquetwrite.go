package records

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
)

// Row group limits of the Parquet Writer: rows are buffered into row groups
// of at most this many rows or (about) bytes of values.
const (
	pqMaxRows  = 100_000
	pqMaxBytes = 32 << 20
	pqPageSize = 1 << 20
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
	// leafMap maps the source's leaf columns to the output's (-1: left
	// out, a column of an earlier run's extra); nil when they are the same.
	leafMap []int
	kinds   []parquet.Kind
	row     parquet.Row
	scratch []byte
	offs    []int
	bytes   int64 // of the row group being filled
	count   int64 // its rows

	maxRows, maxBytes int64 // row group limits

	// Rows are encoded and compressed (most of the cost of writing
	// Parquet) by a goroutine per row group, while the caller reads and
	// routes the next records; row groups are committed to the file in
	// order, so the file does not depend on the timing.
	cur     *pqGroup   // the row group being filled; nil before its first row
	pending []*pqGroup // row groups filled, not yet committed, in file order
	batch   *pqBatch   // rows not yet handed out
	batchSz int64
	budget  *byteBudget           // bytes of rows handed to goroutines, not yet encoded
	free    chan *pqBatch         // batches written, for reuse
	failed  atomic.Pointer[error] // the first error of a goroutine
}

// Concurrency limits of the Parquet Writer. A row group's goroutine
// encodes the rows it is handed while the caller fills the batches; when
// the group ends, it finishes what it was handed (at most pqBudget bytes)
// while the next group's goroutine starts, so that up to pqGroups row
// groups are encoded at once and held in memory (their pages) until their
// commit.
const (
	pqGroups     = 2        // row groups pending at once
	pqBatchRows  = 256      // rows handed to a row group's goroutine at once
	pqBatchBytes = 1 << 20  // or this many bytes of values
	pqBudget     = 32 << 20 // bytes of rows handed out and not yet written
)

// pqGroup is a row group written by a goroutine of its own.
type pqGroup struct {
	rg   *parquet.ConcurrentRowGroupWriter
	ch   chan *pqBatch
	done chan struct{} // closed when the goroutine has ended
	err  error         // the goroutine's, read after done
}

// pqBatch is rows handed to a row group's goroutine: copies of the rows
// the caller wrote, their values and bytes in buffers that are reused once
// the rows are written (the Parquet writer copies them into its pages), so
// that copying makes no garbage.
type pqBatch struct {
	rows   []parquet.Row
	values []parquet.Value
	data   []byte
	bytes  int64
}

// add appends a copy of row.
func (b *pqBatch) add(row parquet.Row) {
	start := len(b.values)
	for _, v := range row {
		switch v.Kind() {
		case parquet.ByteArray, parquet.FixedLenByteArray:
			if !v.IsNull() {
				// b.data may be reallocated: values copied before keep
				// pointing into the old array, which stays valid.
				off := len(b.data)
				b.data = append(b.data, v.ByteArray()...)
				c := b.data[off:len(b.data):len(b.data)]
				if v.Kind() == parquet.ByteArray {
					v = parquet.ByteArrayValue(c).Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
				} else {
					v = parquet.FixedLenByteArrayValue(c).Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
				}
			}
		}
		b.values = append(b.values, v)
	}
	b.rows = append(b.rows, b.values[start:len(b.values):len(b.values)])
}

// reset empties the batch, keeping its buffers.
func (b *pqBatch) reset() {
	clear(b.values)
	b.rows, b.values, b.data, b.bytes = b.rows[:0], b.values[:0], b.data[:0], 0
}

// add queues one row (copied) and starts a new row group when the limits
// are reached.
func (pq *pqOutput) add(row parquet.Row, size int64) error {
	if e := pq.failed.Load(); e != nil {
		return *e // a row group's goroutine failed: stop at once
	}
	if pq.batch == nil {
		select {
		case pq.batch = <-pq.free:
		default:
			pq.batch = &pqBatch{}
		}
	}
	pq.batch.add(row)
	pq.batchSz += size
	pq.bytes += size
	pq.count++
	if len(pq.batch.rows) >= pqBatchRows || pq.batchSz >= pqBatchBytes {
		if err := pq.send(); err != nil {
			return err
		}
	}
	if pq.bytes >= pq.maxBytes || pq.count >= pq.maxRows {
		return pq.endGroup()
	}
	return nil
}

// send hands the queued rows to the current row group's goroutine,
// starting it first if needed; it waits while the rows handed out and not
// yet encoded exceed the budget.
func (pq *pqOutput) send() (err error) {
	if pq.batch == nil {
		return nil
	}
	if pq.cur == nil {
		g := &pqGroup{ch: make(chan *pqBatch, 4), done: make(chan struct{})}
		if g.rg, err = beginGroup(pq.w); err != nil {
			return err
		}
		go g.run(pq.budget, pq.free, &pq.failed)
		pq.cur = g
	}
	pq.budget.acquire(pq.batchSz)
	pq.batch.bytes = pq.batchSz
	pq.cur.ch <- pq.batch
	pq.batch, pq.batchSz = nil, 0
	return nil
}

// endGroup ends the current row group; once pqGroups row groups are
// pending (they are added one at a time), it commits the oldest.
func (pq *pqOutput) endGroup() error {
	if err := pq.send(); err != nil {
		return err
	}
	pq.bytes, pq.count = 0, 0
	if pq.cur == nil {
		return nil
	}
	close(pq.cur.ch)
	pq.pending = append(pq.pending, pq.cur)
	pq.cur = nil
	if len(pq.pending) == pqGroups {
		return pq.commit(1)
	}
	return nil
}

// commit waits for the n oldest pending row groups and commits them.
func (pq *pqOutput) commit(n int) (err error) {
	defer recoverWrite(&err, "writing a Parquet row group")
	for n > 0 {
		g := pq.pending[0]
		<-g.done
		if g.err != nil {
			return g.err
		}
		if _, err := g.rg.Commit(); err != nil {
			return err
		}
		pq.pending = pq.pending[1:]
		n--
	}
	return nil
}

// finish ends the last row group and commits every pending one.
func (pq *pqOutput) finish() error {
	if err := pq.endGroup(); err != nil {
		return err
	}
	return pq.commit(len(pq.pending))
}

// stop ends the goroutines without committing (after an error).
func (pq *pqOutput) stop() {
	if pq.cur != nil {
		close(pq.cur.ch)
		pq.pending = append(pq.pending, pq.cur)
		pq.cur = nil
	}
	for _, g := range pq.pending {
		<-g.done
	}
	pq.pending = nil
}

// run writes the rows it is handed into the row group and flushes its
// columns (compressing the last pages); after an error it goes on
// releasing the budget of what it is handed, so that the sender never
// waits for it.
func (g *pqGroup) run(b *byteBudget, free chan *pqBatch, failed *atomic.Pointer[error]) {
	defer close(g.done)
	defer func() {
		if g.err != nil {
			failed.CompareAndSwap(nil, &g.err)
		}
	}()
	for bt := range g.ch {
		if g.err == nil {
			g.err = writeGroupRows(g.rg, bt.rows)
		}
		n := bt.bytes
		bt.reset()
		select {
		case free <- bt:
		default:
		}
		b.release(n)
	}
	if g.err == nil {
		g.err = flushGroup(g.rg)
	}
}

// recoverWrite turns a panic of the Parquet library while writing into
// *err, saying what was being done (deferred).
func recoverWrite(err *error, what string) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: %v", what, p)
	}
}

// beginGroup starts a row group of w.
func beginGroup(w *parquet.GenericWriter[any]) (_ *parquet.ConcurrentRowGroupWriter, err error) {
	defer recoverWrite(&err, "starting a Parquet row group")
	return w.BeginRowGroup(), nil
}

// writeGroupRows writes rows into a row group.
func writeGroupRows(rg *parquet.ConcurrentRowGroupWriter, rows []parquet.Row) (err error) {
	defer recoverWrite(&err, "writing a Parquet row")
	_, err = rg.WriteRows(rows)
	return err
}

// flushGroup flushes a row group's columns.
func flushGroup(rg *parquet.ConcurrentRowGroupWriter) (err error) {
	defer recoverWrite(&err, "writing a Parquet row group")
	return rg.Flush()
}

// byteBudget bounds the bytes of rows handed to the goroutines and not yet
// encoded.
type byteBudget struct {
	mu   sync.Mutex
	cond sync.Cond
	used int64
	max  int64
}

func newByteBudget(max int64) *byteBudget {
	b := &byteBudget{max: max}
	b.cond.L = &b.mu
	return b
}

// acquire waits until n more bytes fit (any n fits when none are used).
func (b *byteBudget) acquire(n int64) {
	b.mu.Lock()
	for b.used > 0 && b.used+n > b.max {
		b.cond.Wait()
	}
	b.used += n
	b.mu.Unlock()
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
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
	defer recoverWrite(&err, w.path+": cannot write this Parquet schema")
	pq := &pqOutput{nLeaves: nLeaves, maxRows: w.pqMaxRows, maxBytes: w.pqMaxBytes}
	for i, e := range extras {
		n, k := extraNode(e.Value)
		fields = append(fields, namedField(w.extraNames[i], n))
		pq.kinds = append(pq.kinds, k)
	}
	// A source's zstd columns are written with the outputs' zstd codec
	// too (zstd.go: libzstd's level 1 in builds with cgo): a column's own
	// codec overrides the writer's, and parquet-go's default level made
	// writing Parquet 1.4x slower (the level is not stored in the file).
	codec := &pqZstdCodec{}
	for i, f := range fields {
		if f.Leaf() && f.Compression() != nil && f.Compression().CompressionCodec() == codec.CompressionCodec() {
			fields[i] = namedField(f.Name(), parquet.Compressed(f, codec))
		}
	}
	schema := parquet.NewSchema(name, &orderedGroup{fields: fields})
	pq.w = parquet.NewGenericWriter[any](w.out, schema,
		parquet.Compression(codec),
		parquet.MaxRowsPerRowGroup(max(w.pqMaxRows, 1)),
		parquet.PageBufferSize(pqPageSize),
		parquet.CreatedBy("fpdb", "", ""))
	pq.budget = newByteBudget(max(min(w.pqMaxBytes, pqBudget), 1))
	pq.free = make(chan *pqBatch, 8)
	w.pq = pq
	return nil
}

// startParquetSame starts a Parquet output with the schema of rec's Parquet
// source plus the extras.
func (w *Writer) startParquetSame(rec *Record, extras []Extra) error {
	if rec.pqRow == nil {
		return needRaw(rec)
	}
	w.shareSchema(nil, rec.src, extras)
	return w.startParquetSchema(rec.src, extras)
}

// startParquetSchema starts a Parquet output with the schema of the Parquet
// source s plus the extras.
func (w *Writer) startParquetSchema(s *source, extras []Extra) error {
	// Top-level columns named as an extra (an earlier run's extras) are
	// left out: the extras replace them.
	var fields []parquet.Field
	var leafMap []int
	nLeaves, dropped := 0, false // the output's leaves before the extras
	for _, f := range s.pqSchema.Fields() {
		drop := w.extraSet[f.Name()]
		for range countLeaves(f) {
			if drop {
				leafMap = append(leafMap, -1)
			} else {
				leafMap = append(leafMap, nLeaves)
				nLeaves++
			}
		}
		if drop {
			dropped = true
			continue
		}
		fields = append(fields, f)
	}
	if !dropped {
		leafMap, nLeaves = nil, s.pqLeaves
	}
	if err := w.openParquet(s.pqSchema.Name(), fields, extras, nLeaves); err != nil {
		return err
	}
	w.pq.same = true
	w.pq.src = s
	w.pq.leafMap = leafMap
	w.cols = w.sourceColumns(s.columns)
	w.nSrc, w.rawIdx = len(w.cols), -1
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
			if err := sameSchema(rec.src, pq.src); err != nil {
				return err
			}
			pq.okSrc = rec.src
		}
		if rec.pqRow == nil {
			return needRaw(rec)
		}
		if pq.leafMap == nil {
			row = append(row, rec.pqRow...)
			for _, v := range rec.pqRow {
				size += valueSize(v)
			}
		} else {
			for _, v := range rec.pqRow {
				c := v.Column()
				if c < 0 || c >= len(pq.leafMap) {
					return fmt.Errorf("%w: record %v has a value of column %d, the schema of %s has %d", ErrSchema, rec.Pos, c, pq.src.name, len(pq.leafMap))
				}
				if pq.leafMap[c] < 0 {
					continue
				}
				row = append(row, v.Level(v.RepetitionLevel(), v.DefinitionLevel(), pq.leafMap[c]))
				size += valueSize(v)
			}
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
			// A field named twice: the last one, null too (as in CSV).
			pq.offs[2*c], pq.offs[2*c+1] = -1, -1
			if !null {
				pq.offs[2*c], pq.offs[2*c+1] = start, len(pq.scratch)
			}
		}
		if w.rawIdx >= 0 && isBad && rec.Raw != nil {
			start := len(pq.scratch)
			pq.scratch = append(pq.scratch, rec.Raw...)
			pq.offs[2*w.rawIdx], pq.offs[2*w.rawIdx+1] = start, len(pq.scratch)
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
	if err := pq.add(row, size); err != nil {
		return w.fail(err)
	}
	return nil
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

// closeParquet ends the Parquet file. An output that got no record (and
// whose linked Writer, ShareSchema, got none either) gets the columns it
// knows, all strings.
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
	if err := w.pq.finish(); err != nil {
		w.pq.stop()
		return err
	}
	defer recoverWrite(&err, "closing the Parquet file")
	return w.pq.w.Close()
}

// sameSchema returns nil when the Parquet files of the sources s and first
// have one schema, else an error wrapping ErrSchema that says how they
// differ: a Parquet output that keeps its first source's schema cannot
// hold the rows of s.
func sameSchema(s, first *source) error {
	if parquet.EqualNodes(s.pqSchema, first.pqSchema) {
		return nil
	}
	return fmt.Errorf("%w: %s has another schema than %s, whose schema the Parquet output keeps: %s (give the files one schema, or write JSON Lines, which holds records of any columns)",
		ErrSchema, s.name, first.name, schemaDiff(s.pqSchema, first.pqSchema, s.name, first.name))
}

// CheckParquetSchemas reads the schema of each Parquet file among paths
// that holds rows (its footer: no row is read) and returns an error
// wrapping ErrSchema when one differs from the first's. A Writer of one
// Parquet output refuses the records of a second schema only when they
// reach it, which may be after every record of the first was written, or
// not at all when they all go elsewhere: a caller that writes the records
// of paths to one Parquet output (fpdb dedup) holds them to the simpler
// rule, one schema for all, before it reads them; a file of another
// format after the first Parquet file with rows is refused too (an output
// that keeps a Parquet schema cannot hold its records). A path is Parquet as
// o.Format or, when that is FormatAuto, its extension tells; standard
// input ("-") is JSON Lines; Parquet files that cannot be opened are
// passed over (reading them reports them).
func CheckParquetSchemas(paths []string, o Options) error {
	o.Names = nil // the columns are the load's to collect
	var first *Reader
	defer func() {
		if first != nil {
			first.Close()
		}
	}()
	for _, p := range paths {
		f := o.Format
		if f == FormatAuto {
			f, _, _ = Detect(p)
		}
		if p == "-" || f != FormatParquet {
			if first != nil {
				return fmt.Errorf("%w: %s is not a Parquet file, and the Parquet output keeps the schema of %s, the first input with rows (give Parquet files of one schema, or write JSON Lines, which holds records of any columns)",
					ErrSchema, p, first.src.name)
			}
			continue
		}
		r, err := Open(p, o)
		if err != nil {
			continue
		}
		if r.src.pqSchema == nil || r.pqRows() == 0 {
			r.Close() // no rows: nothing of it reaches an output
			continue
		}
		if first == nil {
			first = r
			continue
		}
		err = sameSchema(r.src, first.src)
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// maxSchemaDiffs bounds the differences schemaDiff names.
const maxSchemaDiffs = 5

// schemaDiff says how the Parquet schemas a (of the file aName) and b (of
// bName) differ, as parquet.EqualNodes compares them: columns only in one
// of them, columns that are required in one and optional (or repeated) in
// the other, columns of other types, columns in another order.
func schemaDiff(a, b *parquet.Schema, aName, bName string) string {
	var diffs []string
	repetition := func(n parquet.Node) string {
		switch {
		case n.Repeated():
			return "repeated"
		case n.Optional():
			return "optional"
		}
		return "required"
	}
	kind := func(n parquet.Node) string {
		if n.Leaf() {
			return "a leaf column"
		}
		return "a group"
	}
	var walk func(path string, a, b parquet.Node)
	walk = func(path string, a, b parquet.Node) {
		if path != "" {
			switch {
			case repetition(a) != repetition(b):
				diffs = append(diffs, fmt.Sprintf("column %q is %s in %s, %s in %s", path, repetition(a), aName, repetition(b), bName))
			case a.Leaf() != b.Leaf():
				diffs = append(diffs, fmt.Sprintf("column %q is %s in %s, %s in %s", path, kind(a), aName, kind(b), bName))
				return
			case a.Leaf() && !parquet.EqualTypes(a.Type(), b.Type()):
				diffs = append(diffs, fmt.Sprintf("column %q is %s in %s, %s in %s", path, a.Type(), aName, b.Type(), bName))
				return
			case !a.Leaf() && !reflect.DeepEqual(a.Type().LogicalType(), b.Type().LogicalType()):
				diffs = append(diffs, fmt.Sprintf("column %q is %s in %s, %s in %s", path, a.Type(), aName, b.Type(), bName))
			}
			if a.Leaf() || b.Leaf() {
				return
			}
		}
		af, bf := a.Fields(), b.Fields()
		var aNames, bNames, common []string
		for _, f := range af {
			aNames = append(aNames, f.Name())
		}
		for _, f := range bf {
			bNames = append(bNames, f.Name())
		}
		child := func(name string) string {
			if path == "" {
				return name
			}
			return path + "." + name
		}
		for _, n := range aNames {
			if slices.Contains(bNames, n) {
				common = append(common, n)
			} else {
				diffs = append(diffs, fmt.Sprintf("column %q is only in %s", child(n), aName))
			}
		}
		for _, n := range bNames {
			if !slices.Contains(aNames, n) {
				diffs = append(diffs, fmt.Sprintf("column %q is only in %s", child(n), bName))
			}
		}
		if len(common) == len(aNames) && len(common) == len(bNames) && !slices.Equal(aNames, bNames) {
			of := ""
			if path != "" {
				of = " of " + strconv.Quote(path)
			}
			diffs = append(diffs, fmt.Sprintf("the columns%s are in another order: [%s] in %s, [%s] in %s", of, strings.Join(aNames, ", "), aName, strings.Join(bNames, ", "), bName))
		}
		for _, n := range common {
			walk(child(n), af[slices.Index(aNames, n)], bf[slices.Index(bNames, n)])
		}
	}
	walk("", a, b)
	if len(diffs) == 0 {
		// Not expected: the schemas differ in what is not told above.
		return fmt.Sprintf("[%s] in %s, [%s] in %s", columnList(a), aName, columnList(b), bName)
	}
	if len(diffs) > maxSchemaDiffs {
		diffs = append(diffs[:maxSchemaDiffs], fmt.Sprintf("and %d more differences", len(diffs)-maxSchemaDiffs))
	}
	return strings.Join(diffs, "; ")
}

// CheckHeaders opens each CSV/TSV file among paths (as CheckParquetSchemas
// tells formats) and returns an error wrapping ErrSchema, naming the file
// and the name, when its header names a column twice: an output of format
// out, Parquet or JSON Lines, cannot hold two columns of one name (JSON
// Lines would repeat a key, which most readers take the last of), and a
// caller that writes the records of paths to one (fpdb dedup) refuses them
// before it reads them rather than once they are loaded. Files that cannot
// be opened are passed over (reading them reports them).
func CheckHeaders(paths []string, o Options, out Format) error {
	o.Names = nil
	kind := map[Format]string{FormatJSONL: "JSON Lines", FormatParquet: "Parquet"}[out]
	for _, p := range paths {
		f := o.Format
		if f == FormatAuto {
			f, _, _ = Detect(p)
		}
		if p == "-" || (f != FormatCSV && f != FormatTSV) {
			continue
		}
		r, err := Open(p, o)
		if err != nil {
			continue
		}
		cols := r.Columns()
		r.Close()
		seen := make(map[string]int, len(cols))
		for i, c := range cols {
			if j, ok := seen[c]; ok {
				return fmt.Errorf("%w: %s: the header names column %q twice (columns %d and %d), which a %s output cannot hold (rename one, or write CSV)",
					ErrSchema, p, c, j+1, i+1, kind)
			}
			seen[c] = i
		}
	}
	return nil
}
