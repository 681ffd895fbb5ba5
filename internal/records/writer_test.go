package records

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

var extraNames = []string{"fpdb_cluster", "fpdb_kept", "fpdb_similarity"}

func extrasFor(i int) []Extra {
	return []Extra{{"fpdb_cluster", int64(i)}, {"fpdb_kept", fmt.Sprintf("k%d", i)}, {"fpdb_similarity", 0.25 + float64(i)}}
}

// copyFile reads src with Raw and writes every record to dst (bad ones with
// WriteBad) with extrasFor(index).
func copyFile(t *testing.T, src, dst string, o Options) {
	t.Helper()
	w, err := Create(dst, FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	appendFile(t, w, src, o, 0)
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// appendFile writes the records of src to w; it returns the first Write error.
func appendFile(t *testing.T, w *Writer, src string, o Options, first int) error {
	t.Helper()
	o.Raw = true
	r, err := Open(src, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := first; ; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Err != nil {
			err = w.WriteBad(rec, extrasFor(i))
		} else {
			err = w.Write(rec, extrasFor(i))
		}
		if err != nil {
			return err
		}
	}
}

func readText(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteJSONLSameFormat(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "in.jsonl", []byte(`{"id":"a","text":"x"}
{ }
{"id":"b", "text":"y", "nested":{"k":[1,2]}}  `+"\r\n"+`{"id":
[1]
{"id":"c","text":"\u00e9","fpdb_cluster":"dup"}
`))
	dst := filepath.Join(dir, "out.jsonl")
	copyFile(t, src, dst, Options{IDField: "id"})
	want := `{"id":"a","text":"x","fpdb_cluster":0,"fpdb_kept":"k0","fpdb_similarity":0.25}
{ "fpdb_cluster":1,"fpdb_kept":"k1","fpdb_similarity":1.25}
{"id":"b", "text":"y", "nested":{"k":[1,2]},"fpdb_cluster":2,"fpdb_kept":"k2","fpdb_similarity":2.25}
{"fpdb_raw":"{\"id\":","fpdb_cluster":3,"fpdb_kept":"k3","fpdb_similarity":3.25}
{"fpdb_raw":"[1]","fpdb_cluster":4,"fpdb_kept":"k4","fpdb_similarity":4.25}
{"id":"c","text":"\u00e9","fpdb_cluster":5,"fpdb_kept":"k5","fpdb_similarity":5.25}
`
	// The last record's own fpdb_cluster (an earlier run's) is replaced.
	if got := readText(t, dst); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	// Read back: the original fields keep their values and order.
	recs := readAll(t, dst, Options{IDField: "id", Raw: true})
	if got := fieldNames(recs[2].Fields); !equalStrings(got, []string{"id", "text", "nested", "fpdb_cluster", "fpdb_kept", "fpdb_similarity"}) {
		t.Errorf("fields %q", got)
	}
	if recs[2].ID != "b" || recs[2].Text != "y" || string(recs[2].Fields[2].Value.(json.RawMessage)) != `{"k":[1,2]}` {
		t.Errorf("record 3 read back: %+v", recs[2])
	}
}

func TestWriteCSVSameFormat(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "in.csv", []byte("id,text,url\na,\"x, y\",http://a\nb,\"two\nlines\",\nbad\n"))
	dst := filepath.Join(dir, "out.csv")
	copyFile(t, src, dst, Options{IDField: "id"})
	want := "id,text,url,fpdb_cluster,fpdb_kept,fpdb_similarity\n" +
		"a,\"x, y\",http://a,0,k0,0.25\n" +
		"b,\"two\nlines\",,1,k1,1.25\n" +
		"bad,,,2,k2,2.25\n"
	if got := readText(t, dst); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}

	// Another source with other columns is refused, naming both lists.
	other := writeFile(t, dir, "other.csv", []byte("id,text\nz,zz\n"))
	w, err := Create(filepath.Join(dir, "mix.csv"), FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendFile(t, w, src, Options{IDField: "id"}, 0); err != nil {
		t.Fatal(err)
	}
	err = appendFile(t, w, other, Options{IDField: "id"}, 10)
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "[id, text]") || !strings.Contains(err.Error(), "[id, text, url]") {
		t.Errorf("other columns: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// pqDocOut is pqDoc with the extras, to read a Parquet output back.
type pqDocOut struct {
	ID         string  `parquet:"id"`
	Text       string  `parquet:"text"`
	Meta       pqMeta  `parquet:"meta"`
	Score      float64 `parquet:"score"`
	Cluster    int64   `parquet:"fpdb_cluster"`
	Kept       string  `parquet:"fpdb_kept"`
	Similarity float64 `parquet:"fpdb_similarity"`
}

func TestWriteParquetSameFormat(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.parquet")
	docs := writeDocs(t, src, 25, 7)
	src2 := filepath.Join(dir, "in2.parquet")
	writeDocs(t, src2, 3, 7) // the same schema, another file
	dst := filepath.Join(dir, "out.parquet")
	w, err := Create(dst, FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	w.pqMaxRows = 10 // several row groups
	if err := appendFile(t, w, src, Options{IDField: "id"}, 0); err != nil {
		t.Fatal(err)
	}
	if err := appendFile(t, w, src2, Options{IDField: "id"}, 25); err != nil {
		t.Fatal(err)
	}
	// A Parquet source of another schema is refused.
	src3 := filepath.Join(dir, "other.parquet")
	if err := parquet.WriteFile(src3, []pqOptional{{ID: 1, Text: new(string)}}); err != nil {
		t.Fatal(err)
	}
	if err := appendFile(t, w, src3, Options{IDField: "id"}, 0); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "other.parquet") {
		t.Errorf("other schema: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	rows, err := parquet.ReadFile[pqDocOut](dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 28 {
		t.Fatalf("read back %d rows", len(rows))
	}
	for i, r := range rows[:25] {
		d := docs[i]
		want := pqDocOut{ID: d.ID, Text: d.Text, Meta: d.Meta, Score: d.Score, Cluster: int64(i), Kept: fmt.Sprintf("k%d", i), Similarity: 0.25 + float64(i)}
		if r != want {
			t.Errorf("row %d = %+v, want %+v", i, r, want)
		}
	}
	pf := openParquetFile(t, dst)
	if n := len(pf.RowGroups()); n != 3 {
		t.Errorf("%d row groups, want 3", n)
	}
	var names []string
	for _, fld := range pf.Schema().Fields() {
		names = append(names, fld.Name())
	}
	if want := []string{"id", "text", "meta", "score", "fpdb_cluster", "fpdb_kept", "fpdb_similarity"}; !equalStrings(names, want) {
		t.Errorf("columns %q, want %q", names, want)
	}
	for name, kind := range map[string]parquet.Kind{"fpdb_cluster": parquet.Int64, "fpdb_kept": parquet.ByteArray, "fpdb_similarity": parquet.Double} {
		leaf, ok := pf.Schema().Lookup(name)
		if !ok || leaf.Node.Type().Kind() != kind || !leaf.Node.Required() {
			t.Errorf("column %s: %v %v", name, ok, leaf.Node)
		}
	}
	if lt := pf.Schema().Fields()[5].Type().LogicalType(); lt == nil || lt.String() != "STRING" {
		t.Errorf("fpdb_kept logical type %v", lt)
	}
}

func TestWriteCrossFormat(t *testing.T) {
	dir := t.TempDir()
	pqSrc := filepath.Join(dir, "p.parquet")
	writeDocs(t, pqSrc, 2, 10)
	csvSrc := writeFile(t, dir, "c.csv", []byte("id,text,url\na,hello,http://a\n"))
	jsonlSrc := writeFile(t, dir, "j.jsonl", []byte(`{"id":"a","text":"x","meta":{"k":1},"n":2.5}
{"text":"y","n":null,"meta":"m","id":"b"}
`))

	// Parquet and CSV into JSON Lines.
	for _, tc := range []struct{ src, want string }{
		{pqSrc, `{"id":"d0","text":"text number 0","meta":{"url":"http://x/0"},"score":0,"fpdb_cluster":0,"fpdb_kept":"k0","fpdb_similarity":0.25}
{"id":"d1","text":"text number 1","meta":{"url":"http://x/1"},"score":0.5,"fpdb_cluster":1,"fpdb_kept":"k1","fpdb_similarity":1.25}
`},
		{csvSrc, `{"id":"a","text":"hello","url":"http://a","fpdb_cluster":0,"fpdb_kept":"k0","fpdb_similarity":0.25}
`},
	} {
		dst := filepath.Join(dir, "to.jsonl")
		copyFile(t, tc.src, dst, Options{IDField: "id"})
		if got := readText(t, dst); got != tc.want {
			t.Errorf("%s to JSON Lines:\n%s\nwant:\n%s", tc.src, got, tc.want)
		}
	}

	// JSON Lines, Parquet and CSV into CSV/TSV.
	for _, tc := range []struct{ src, dst, want string }{
		{jsonlSrc, "j.csv", "id,text,meta,n,fpdb_cluster,fpdb_kept,fpdb_similarity\n" +
			"a,x,\"{\"\"k\"\":1}\",2.5,0,k0,0.25\n" +
			"b,y,m,,1,k1,1.25\n"},
		{pqSrc, "p.csv", "id,text,meta,score,fpdb_cluster,fpdb_kept,fpdb_similarity\n" +
			"d0,text number 0,\"{\"\"url\"\":\"\"http://x/0\"\"}\",0,0,k0,0.25\n" +
			"d1,text number 1,\"{\"\"url\"\":\"\"http://x/1\"\"}\",0.5,1,k1,1.25\n"},
		{csvSrc, "c.tsv", "id\ttext\turl\tfpdb_cluster\tfpdb_kept\tfpdb_similarity\n" +
			"a\thello\thttp://a\t0\tk0\t0.25\n"},
	} {
		dst := filepath.Join(dir, tc.dst)
		copyFile(t, tc.src, dst, Options{IDField: "id"})
		if got := readText(t, dst); got != tc.want {
			t.Errorf("%s to %s:\n%s\nwant:\n%s", tc.src, tc.dst, got, tc.want)
		}
	}

	// A JSON Lines record that lacks members of the first (an optional
	// field) has empty cells for them, in any order.
	optional := writeFile(t, dir, "optional.jsonl", []byte(`{"id":"a","text":"x","url":"u","n":1}
{"text":"y","id":"b"}
{"n":2,"id":"c","text":"z"}
`))
	copyFile(t, optional, filepath.Join(dir, "optional.csv"), Options{IDField: "id"})
	if got, want := readText(t, filepath.Join(dir, "optional.csv")), "id,text,url,n,fpdb_cluster,fpdb_kept,fpdb_similarity\n"+
		"a,x,u,1,0,k0,0.25\nb,y,,,1,k1,1.25\nc,z,,2,2,k2,2.25\n"; got != want {
		t.Errorf("JSON Lines with optional members to CSV:\n%s\nwant:\n%s", got, want)
	}

	// A JSON Lines record with other members than the first is refused.
	other := writeFile(t, dir, "other.jsonl", []byte(`{"id":"a","text":"x"}
{"id":"b","text":"y","extra":1}
`))
	w, err := Create(filepath.Join(dir, "o.csv"), FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendFile(t, w, other, Options{IDField: "id"}, 0); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "[id, text, extra]") {
		t.Errorf("other members: %v", err)
	}
	w.Close()
}

// strDoc reads back a Parquet output of string columns.
type strDoc struct {
	ID         *string `parquet:"id,optional"`
	Text       *string `parquet:"text,optional"`
	Meta       *string `parquet:"meta,optional"`
	N          *string `parquet:"n,optional"`
	Cluster    int64   `parquet:"fpdb_cluster"`
	Kept       string  `parquet:"fpdb_kept"`
	Similarity float64 `parquet:"fpdb_similarity"`
}

func TestWriteParquetFromText(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 500 {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, `{"id":"r%d","text":"text \"%d\" %s","meta":{"i":%d},"n":%d}`+"\n", i, i, strings.Repeat("é", i%7), i, i)
		case 1:
			fmt.Fprintf(&b, `{"n":null,"text":"t%d","id":"r%d"}`+"\n", i, i) // another order, meta missing
		case 2:
			fmt.Fprintf(&b, `{"id":"r%d","text":"t%d","meta":null,"n":"s"}`+"\n", i, i)
		}
	}
	src := writeFile(t, dir, "j.jsonl", []byte(b.String()))
	dst := filepath.Join(dir, "out.parquet")
	w, err := Create(dst, FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	w.pqMaxBytes = 2000 // several row groups
	if err := appendFile(t, w, src, Options{IDField: "id"}, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.ReadFile[strDoc](dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 500 {
		t.Fatalf("%d rows", len(rows))
	}
	str := func(p *string) string {
		if p == nil {
			return "<null>"
		}
		return *p
	}
	for i, r := range rows {
		var want [4]string
		switch i % 3 {
		case 0:
			want = [4]string{fmt.Sprintf("r%d", i), fmt.Sprintf("text \"%d\" %s", i, strings.Repeat("é", i%7)), fmt.Sprintf(`{"i":%d}`, i), fmt.Sprint(i)}
		case 1:
			want = [4]string{fmt.Sprintf("r%d", i), fmt.Sprintf("t%d", i), "<null>", "<null>"}
		case 2:
			want = [4]string{fmt.Sprintf("r%d", i), fmt.Sprintf("t%d", i), "<null>", "s"}
		}
		got := [4]string{str(r.ID), str(r.Text), str(r.Meta), str(r.N)}
		if got != want || r.Cluster != int64(i) || r.Kept != fmt.Sprintf("k%d", i) || r.Similarity != 0.25+float64(i) {
			t.Errorf("row %d = %q %d %s %v, want %q", i, got, r.Cluster, r.Kept, r.Similarity, want)
		}
	}
	// Read back with this package: several row groups, all records good.
	recs := readAll(t, dst, Options{IDField: "id"})
	if len(recs) != 500 || recs[499].Pos.RowGroup == 0 || recs[499].ID != "r499" {
		t.Errorf("read back: %d records, last %+v", len(recs), recs[len(recs)-1])
	}

	// CSV into Parquet: a header of other names is refused.
	csv1 := writeFile(t, dir, "a.csv", []byte("id,text\na,x\n"))
	csv2 := writeFile(t, dir, "b.csv", []byte("id,body,text\nb,y,z\n"))
	w, err = Create(filepath.Join(dir, "c.parquet"), FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendFile(t, w, csv1, Options{IDField: "id"}, 0); err != nil {
		t.Fatal(err)
	}
	if err := appendFile(t, w, csv2, Options{IDField: "id"}, 1); !errors.Is(err, ErrSchema) {
		t.Errorf("other CSV header into Parquet: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs = readAll(t, filepath.Join(dir, "c.parquet"), Options{IDField: "id", Raw: true})
	if len(recs) != 1 || recs[0].ID != "a" || recs[0].Text != "x" || !equalStrings(fieldNames(recs[0].Fields), append([]string{"id", "text"}, extraNames...)) {
		t.Errorf("CSV into Parquet read back: %+v", recs)
	}
}

func TestWriteBadColumnar(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "j.jsonl", []byte(`{bad
{"id":"a","text":"x"}
{"id":"b"}
{bad again
`))
	dst := filepath.Join(dir, "o.csv")
	copyFile(t, src, dst, Options{IDField: "id"})
	want := "id,text,fpdb_cluster,fpdb_kept,fpdb_similarity\n" +
		",,0,k0,0.25\n" +
		"a,x,1,k1,1.25\n" +
		"b,,2,k2,2.25\n" +
		",,3,k3,3.25\n"
	if got := readText(t, dst); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}

	// Only records without columns: the raw lines in fpdb_raw.
	src = writeFile(t, dir, "only.jsonl", []byte("{bad\n[1,2]\n"))
	dst = filepath.Join(dir, "only.csv")
	copyFile(t, src, dst, Options{IDField: "id"})
	rows, err := csv.NewReader(strings.NewReader(readText(t, dst))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"fpdb_raw", "fpdb_cluster", "fpdb_kept", "fpdb_similarity"}, {"{bad", "0", "k0", "0.25"}, {"[1,2]", "1", "k1", "1.25"}}; fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
	dstPq := filepath.Join(dir, "only.parquet")
	copyFile(t, src, dstPq, Options{IDField: "id"})
	recs := readAll(t, dstPq, Options{TextField: "fpdb_raw"})
	if got := texts(recs); !equalStrings(got, []string{"{bad", "[1,2]"}) {
		t.Errorf("Parquet raw column: %q", got)
	}

	// A bad Parquet record (null text) keeps its row.
	pqSrc := filepath.Join(dir, "n.parquet")
	if err := parquet.WriteFile(pqSrc, []pqOptional{{ID: 1}, {ID: 2, Text: new(string)}}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "n.jsonl")
	copyFile(t, pqSrc, out, Options{IDField: "id"})
	if got, want := readText(t, out), `{"id":1,"text":null,"blob":"","fpdb_cluster":0,"fpdb_kept":"k0","fpdb_similarity":0.25}
{"id":2,"text":"","blob":"","fpdb_cluster":1,"fpdb_kept":"k1","fpdb_similarity":1.25}
`; got != want {
		t.Errorf("Parquet with a null text to JSON Lines:\n%s\nwant:\n%s", got, want)
	}
}

// closeRecorder is a stdout that records whether it was closed.
type closeRecorder struct {
	bytes.Buffer
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestCreate(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(filepath.Join(dir, "x.jsonl.bz2"), FormatAuto, nil, nil); err == nil || !strings.Contains(err.Error(), "bzip2") {
		t.Errorf(".bz2: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.jsonl.bz2")); !os.IsNotExist(err) {
		t.Errorf("the refused .bz2 file was created: %v", err)
	}
	if _, err := Create(filepath.Join(dir, "x.parquet.zst"), FormatAuto, nil, nil); err == nil {
		t.Error(".parquet.zst accepted")
	}
	if _, err := Create(filepath.Join(dir, "x.txt"), FormatAuto, nil, nil); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf(".txt: %v", err)
	}
	if _, err := Create(filepath.Join(dir, "x.jsonl"), FormatAuto, nil, []string{"a", "a"}); err == nil {
		t.Error("repeated extra names accepted")
	}

	// "-": standard output, JSON Lines, not closed.
	var out closeRecorder
	w, err := Create("-", FormatAuto, &out, []string{"n"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &Record{Raw: []byte(`{"text":"t"}`)}
	if err := w.Write(rec, []Extra{{"n", int64(1)}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec, nil); err == nil {
		t.Error("missing extras accepted")
	}
	if err := w.Write(rec, []Extra{{"n", math.NaN()}}); err == nil {
		t.Error("NaN extra accepted")
	}
	if err := w.Write(&Record{ID: "x", Text: []byte("t")}, []Extra{{"n", int64(1)}}); err == nil || !strings.Contains(err.Error(), "Options.Raw") {
		t.Errorf("record without raw content: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != `{"text":"t","n":1}`+"\n" || out.closed {
		t.Errorf("stdout got %q, closed %v", out.String(), out.closed)
	}

	// Compressed outputs read back.
	src := writeFile(t, dir, "in.jsonl", []byte(`{"id":"a","text":"x"}`+"\n"))
	for _, name := range []string{"o.jsonl.gz", "o.csv.zst", "o.tsv.gz", "o.ndjson.zstd"} {
		dst := filepath.Join(dir, name)
		copyFile(t, src, dst, Options{IDField: "id"})
		recs := readAll(t, dst, Options{IDField: "id", KeepFields: []string{"fpdb_kept"}})
		if len(recs) != 1 || recs[0].ID != "a" || recs[0].Text != "x" || recs[0].Meta != `{"fpdb_kept":"k0"}` {
			t.Errorf("%s read back: %+v", name, recs)
		}
	}

	// A Parquet output with no record is a valid file.
	empty := filepath.Join(dir, "empty.parquet")
	w, err = Create(empty, FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(empty, Options{TextField: "fpdb_kept"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("empty Parquet: %v", err)
	}
	r.Close()
}

// TestWriteFlatParquetCrossFormat: the fields of a Parquet file of flat
// columns, built only when a Writer needs them, are those of the row being
// written (JSON Lines and CSV outputs), nulls included; written as Parquet
// the rows are copied as they are, over several row groups.
func TestWriteFlatParquetCrossFormat(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "flat.parquet")
	var rows []pqOptional
	for i := range 700 {
		var text *string
		if i%3 != 1 {
			s := fmt.Sprintf("text %d", i)
			text = &s
		}
		rows = append(rows, pqOptional{ID: int64(i), Text: text, Blob: []byte{byte(i)}})
	}
	if err := parquet.WriteFile(src, rows); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{"jsonl", "csv", "parquet"} {
		dst := filepath.Join(dir, "out."+ext)
		w, err := Create(dst, FormatAuto, nil, extraNames)
		if err != nil {
			t.Fatal(err)
		}
		w.pqMaxRows = 64
		if err := appendFile(t, w, src, Options{IDField: "id"}, 0); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Open(dst, Options{IDField: "id", TextField: "text", Raw: true})
		if err != nil {
			t.Fatal(err)
		}
		recs := drain(t, r)
		r.Close()
		if len(recs) != len(rows) {
			t.Fatalf("%s: %d records, want %d", ext, len(recs), len(rows))
		}
		for i, g := range recs {
			// A null text is a bad record; CSV has no null (an empty text).
			wantErr, wantText := i%3 == 1 && ext != "csv", fmt.Sprintf("text %d", i)
			if i%3 == 1 {
				wantText = ""
			}
			if g.ID != fmt.Sprint(i) || (g.Err != "") != wantErr || g.Text != wantText {
				t.Fatalf("%s: record %d = %+v", ext, i, g)
			}
			if got := fieldNames(g.Fields); !equalStrings(got, []string{"id", "text", "blob", "fpdb_cluster", "fpdb_kept", "fpdb_similarity"}) {
				t.Fatalf("%s: record %d fields %v", ext, i, got)
			}
		}
	}
}

// TestWriteParquetDeterministic: row groups are encoded concurrently, yet
// the file is the same byte for byte whatever the number of cores.
func TestWriteParquetDeterministic(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.parquet")
	writeDocs(t, src, 500, 7)
	var files [][]byte
	for i, procs := range []int{1, 2, 4} {
		prev := runtime.GOMAXPROCS(procs)
		dst := filepath.Join(dir, fmt.Sprintf("out%d.parquet", i))
		w, err := Create(dst, FormatAuto, nil, extraNames)
		if err != nil {
			t.Fatal(err)
		}
		w.pqMaxRows, w.pqMaxBytes = 37, 4000 // many row groups, a small budget
		err = appendFile(t, w, src, Options{IDField: "id"}, 0)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, []byte(readText(t, dst)))
	}
	for i := 1; i < len(files); i++ {
		if !bytes.Equal(files[0], files[i]) {
			t.Errorf("output %d differs from output 0 (%d and %d bytes)", i, len(files[i]), len(files[0]))
		}
	}
	rows, err := parquet.ReadFile[pqDocOut](filepath.Join(dir, "out0.parquet"))
	if err != nil || len(rows) != 500 {
		t.Fatalf("read back %d rows: %v", len(rows), err)
	}
	for i, r := range rows {
		if r.Cluster != int64(i) {
			t.Fatalf("row %d has cluster %d", i, r.Cluster)
		}
	}
}

// TestWriteParquetSchemaDifference checks that a Parquet shard whose
// schema differs from the one the output keeps only in a column being
// optional rather than required is refused with an error that names that
// column and how it differs, not two equal lists of column names.
func TestWriteParquetSchemaDifference(t *testing.T) {
	dir := t.TempDir()
	type required struct {
		ID   string `parquet:"id"`
		Text string `parquet:"text"`
	}
	type optional struct {
		ID   string  `parquet:"id"`
		Text *string `parquet:"text,optional"`
	}
	type retyped struct {
		ID    int64   `parquet:"id"`
		Text  string  `parquet:"text"`
		Extra float64 `parquet:"extra"`
	}
	a, b, c := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet"), filepath.Join(dir, "c.parquet")
	x := "x"
	if err := parquet.WriteFile(a, []required{{"a", "one"}}); err != nil {
		t.Fatal(err)
	}
	if err := parquet.WriteFile(b, []optional{{"b", &x}}); err != nil {
		t.Fatal(err)
	}
	if err := parquet.WriteFile(c, []retyped{{3, "three", 1}}); err != nil {
		t.Fatal(err)
	}
	w, err := Create(filepath.Join(dir, "out.parquet"), FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := appendFile(t, w, a, Options{IDField: "id"}, 0); err != nil {
		t.Fatal(err)
	}
	err = appendFile(t, w, b, Options{IDField: "id"}, 1)
	if want := `column "text" is optional in ` + b + `, required in ` + a; !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), want) {
		t.Errorf("optional against required: %v\nwant it to say %q", err, want)
	}
	err = appendFile(t, w, c, Options{IDField: "id"}, 1)
	for _, want := range []string{`column "id" is INT(64,true) in ` + c + `, STRING in ` + a, `column "extra" is only in ` + c} {
		if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), want) {
			t.Errorf("another type and column: %v\nwant it to say %q", err, want)
		}
	}
}

// TestCreateRefusedNames checks that Create refuses, by the name alone
// (CheckOutput), an output it would write in another compression than its
// name says, whatever the format it is given, and creates no file.
func TestCreateRefusedNames(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		f    Format
		want string
	}{
		{"x.jsonl.bz2", FormatJSONL, "cannot write bzip2"},
		{"x.csv.xz", FormatCSV, "cannot write xz compression"},
		{"x.csv.xz", FormatAuto, "cannot write xz compression"},
		{"x.tsv.lz4", FormatTSV, "cannot write lz4 compression"},
		{"x.jsonl.lzma", FormatJSONL, "cannot write lzma compression"},
		{"x.jsonl.br", FormatJSONL, "cannot write brotli compression"},
		{"x.jsonl.sz", FormatJSONL, "cannot write snappy compression"},
		{"x.xz", FormatJSONL, "cannot write xz compression"},
		{"x.parquet.gz", FormatAuto, "cannot be gzip-compressed as a whole"},
		{"x.parquet.zst", FormatParquet, "cannot be zstd-compressed as a whole"},
		{"x.out.gz", FormatParquet, "cannot be gzip-compressed as a whole"},
	} {
		p := filepath.Join(dir, c.name)
		_, err := Create(p, c.f, nil, extraNames)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), p+": ") {
			t.Errorf("Create(%s, %v): %v, want an error naming it: %q", c.name, c.f, err, c.want)
		}
		if cerr := CheckOutput(p, c.f); cerr == nil || err != nil && cerr.Error() != err.Error() {
			t.Errorf("CheckOutput(%s, %v) = %v, Create's error %v", c.name, c.f, cerr, err)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the refused %s was created: %v", c.name, err)
		}
	}
	// An unknown extension after a format's is refused in a name a user
	// gives (CheckOutput), but Create writes it in the format it is
	// given: a shard is named after its input (logs.jsonl.1).
	for _, name := range []string{"x.csv.foo", "logs.jsonl.1"} {
		p := filepath.Join(dir, name)
		if err := CheckOutput(p, FormatAuto); err == nil || !strings.Contains(err.Error(), "after the format's extension") {
			t.Errorf("CheckOutput(%s) = %v, want it refused", name, err)
		}
		w, err := Create(p, FormatJSONL, nil, extraNames)
		if err != nil {
			t.Errorf("Create(%s, jsonl): %v", name, err)
			continue
		}
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	}
	// Names that tell no format fall back to the format given; a
	// compression fpdb writes is written.
	for _, c := range []struct {
		name string
		f    Format
	}{{"k.out", FormatJSONL}, {"k", FormatCSV}, {"k.csv.gz", FormatAuto}, {"k.tsv.zst", FormatTSV}, {"k.ndjson.zstd", FormatAuto}, {"k.parquet", FormatAuto}, {"k.2024.jsonl", FormatAuto}, {"k.out.gz", FormatJSONL}} {
		p := filepath.Join(dir, c.name)
		if err := CheckOutput(p, c.f); err != nil {
			t.Errorf("CheckOutput(%s, %v): %v", c.name, c.f, err)
		}
		w, err := Create(p, c.f, nil, extraNames)
		if err != nil {
			t.Errorf("Create(%s, %v): %v", c.name, c.f, err)
			continue
		}
		if err := w.Close(); err != nil {
			t.Errorf("Close(%s): %v", c.name, err)
		}
	}
	if err := CheckOutput("-", FormatParquet); err != nil {
		t.Errorf(`CheckOutput("-"): %v`, err)
	}
}
