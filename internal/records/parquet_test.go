package records

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

type pqMeta struct {
	URL string `parquet:"url"`
}

type pqDoc struct {
	ID    string  `parquet:"id"`
	Text  string  `parquet:"text"`
	Meta  pqMeta  `parquet:"meta"`
	Score float64 `parquet:"score"`
}

// writeDocs writes n documents to a Parquet file with row groups of
// rowGroup rows.
func writeDocs(t testing.TB, path string, n, rowGroup int) []pqDoc {
	t.Helper()
	var docs []pqDoc
	for i := range n {
		docs = append(docs, pqDoc{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("text number %d", i), Meta: pqMeta{URL: fmt.Sprintf("http://x/%d", i)}, Score: float64(i) / 2})
	}
	if err := parquet.WriteFile(path, docs, parquet.MaxRowsPerRowGroup(int64(rowGroup))); err != nil {
		t.Fatal(err)
	}
	return docs
}

func TestParquetRead(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.parquet")
	docs := writeDocs(t, p, 10, 4)
	recs := readAll(t, p, Options{IDField: "id", TextField: "text", KeepFields: []string{"meta.url", "score", "absent"}})
	if len(recs) != len(docs) {
		t.Fatalf("got %d records, want %d", len(recs), len(docs))
	}
	for i, d := range docs {
		g := recs[i]
		wantPos := Position{File: p, RowGroup: i / 4, Row: int64(i % 4), Index: int64(i)}
		wantMeta := fmt.Sprintf(`{"meta.url":%q,"score":%s}`, d.Meta.URL, mustJSON(d.Score))
		if g.ID != d.ID || g.Text != d.Text || g.Meta != wantMeta || g.Pos != wantPos || g.Err != "" {
			t.Errorf("record %d = %+v\nwant id %s text %q meta %s pos %+v", i, g, d.ID, d.Text, wantMeta, wantPos)
		}
	}
	if recs[5].Pos.String() != p+": row group 1, row 1" {
		t.Errorf("position string %q", recs[5].Pos)
	}

	// Without an id field, the id is the row index in the file.
	recs = readAll(t, p, Options{})
	if recs[7].ID != "a.parquet:7" {
		t.Errorf("position id = %q", recs[7].ID)
	}

	r, err := Open(p, Options{IDField: "id"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Columns(); !equalStrings(got, []string{"id", "text", "meta", "score"}) || r.Format() != FormatParquet {
		t.Errorf("Columns = %q, Format %v", got, r.Format())
	}
	drain(t, r)
	st, _ := os.Stat(p)
	if done, size := r.Progress(); done != st.Size() || size != st.Size() {
		t.Errorf("Progress at the end = %d, %d; size %d", done, size, st.Size())
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestParquetSkip(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.parquet")
	writeDocs(t, p, 10, 4)
	for _, tc := range []struct {
		skips  []int64
		wantID string
		rg     int
		row    int64
	}{
		{[]int64{8}, "d8", 2, 0},
		{[]int64{5}, "d5", 1, 1},
		{[]int64{1, 1, 1}, "d3", 0, 3},
		{[]int64{3, 4}, "d7", 1, 3},
		{[]int64{0}, "d0", 0, 0},
	} {
		r, err := Open(p, Options{IDField: "id"})
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		for _, n := range tc.skips {
			got, err := r.Skip(n)
			if got != n || err != nil {
				t.Fatalf("Skip(%d) = %d, %v", n, got, err)
			}
			total += n
		}
		rec, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if rec.ID != tc.wantID || rec.Pos.RowGroup != tc.rg || rec.Pos.Row != tc.row || rec.Pos.Index != total {
			t.Errorf("skips %v: got %s at %+v", tc.skips, rec.ID, rec.Pos)
		}
		// Skip in the middle of reading, then past the end.
		if n, err := r.Skip(100); n != 10-total-1 || err != nil {
			t.Errorf("Skip(100) = %d, %v; want %d", n, err, 10-total-1)
		}
		r.Close()
	}
	// A skip after reading within a row group.
	r, _ := Open(p, Options{IDField: "id"})
	defer r.Close()
	r.Next()
	r.Next()
	if n, err := r.Skip(3); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	if rec, err := r.Next(); err != nil || rec.ID != "d5" || rec.Pos.Index != 5 {
		t.Errorf("after Next, Next, Skip(3): %+v, %v", rec, err)
	}
}

type pqOptional struct {
	ID   int64   `parquet:"id"`
	Text *string `parquet:"text,optional"`
	Blob []byte  `parquet:"blob"`
}

func TestParquetBadRecords(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "o.parquet")
	s := func(x string) *string { return &x }
	rows := []pqOptional{
		{ID: 1, Text: s("ok"), Blob: []byte("b")},
		{ID: 2, Text: nil},
		{ID: 3, Text: s("bad \xff utf8")},
		{ID: -4, Text: s(strings.Repeat("x", 20))},
	}
	if err := parquet.WriteFile(p, rows); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, p, Options{IDField: "id", MaxText: 10})
	want := []struct{ id, err string }{
		{"1", ""},
		{"", `bad record: field "text" is null`},
		{"3", `bad record: invalid UTF-8 in field "text"`},
		{"-4", `bad record: field "text" is too long (20 bytes > 10)`},
	}
	for i, w := range want {
		if recs[i].Err != w.err || (w.err == "" && recs[i].ID != w.id) || recs[i].Pos.Row != int64(i) {
			t.Errorf("record %d = %+v, want id %s error %q", i, recs[i], w.id, w.err)
		}
	}
	recs = readAll(t, p, Options{IDField: "blob", TextField: "id"})
	if recs[0].Err != `bad record: field "id" is not a string (int64)` {
		t.Errorf("int text: %q", recs[0].Err)
	}
	// Raw fields of an optional column: nil for null.
	recs = readAll(t, p, Options{IDField: "id", Raw: true})
	if recs[1].Fields[1].Value != nil || recs[0].Fields[1].Value != "ok" || recs[0].Fields[0].Value != int64(1) {
		t.Errorf("raw fields: %#v / %#v", recs[0].Fields, recs[1].Fields)
	}
}

type pqNested struct {
	ID   string            `parquet:"id"`
	Text string            `parquet:"text"`
	Tags []string          `parquet:"tags,list"`
	Meta pqMeta            `parquet:"meta"`
	Attr map[string]string `parquet:"attr"`
}

func TestParquetSchemaErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "n.parquet")
	if err := parquet.WriteFile(p, []pqNested{{ID: "a", Text: "t", Tags: []string{"x"}, Meta: pqMeta{URL: "u"}, Attr: map[string]string{"k": "v"}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{IDField: "id", TextField: "body"}, `no text column "body"`},
		{Options{IDField: "key"}, `no id column "key"`},
		{Options{IDField: "meta"}, `id field "meta" is a group`},
		{Options{IDField: "id", TextField: "tags"}, `text field "tags" is a group`},
		{Options{IDField: "id", TextField: "tags.list.element"}, `text field "tags.list.element" is a repeated (list) column`},
		{Options{IDField: "id", KeepFields: []string{"meta"}}, `kept field "meta" is a group`},
	} {
		_, err := Open(p, tc.o)
		if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), p+": ") {
			t.Errorf("Open(%+v) = %v, want ErrSchema with %q", tc.o, err, tc.want)
		}
	}
	recs := readAll(t, p, Options{IDField: "meta.url", Raw: true})
	if recs[0].ID != "u" {
		t.Errorf("nested id = %q", recs[0].ID)
	}
	if got := fieldNames(recs[0].Fields); !equalStrings(got, []string{"id", "text", "tags", "meta", "attr"}) {
		t.Errorf("fields %q", got)
	}
	for i, want := range map[int]string{2: `["x"]`, 3: `{"url":"u"}`, 4: `{"k":"v"}`} {
		if v, ok := recs[0].Fields[i].Value.(json.RawMessage); !ok || string(v) != want {
			t.Errorf("field %d = %#v, want %s", i, recs[0].Fields[i].Value, want)
		}
	}

	notPq := writeFile(t, dir, "fake.parquet", []byte(`{"id":"a","text":"not parquet"}`))
	if _, err := Open(notPq, Options{}); err == nil || !strings.Contains(err.Error(), "not a Parquet file") {
		t.Errorf("Open of a JSON file named .parquet: %v", err)
	}
	trunc := writeFile(t, dir, "trunc.parquet", []byte("PAR1\x00\x00\x00\x00\xff\xff\xff\x7fPAR1"))
	if _, err := Open(trunc, Options{}); err == nil {
		t.Error("Open of a corrupt Parquet footer succeeded")
	}
	gz := writeFile(t, dir, "x.parquet.gz", []byte("whatever"))
	if _, err := Open(gz, Options{}); err == nil || !strings.Contains(err.Error(), "cannot be gzip-compressed") {
		t.Errorf("Open of .parquet.gz: %v", err)
	}
	for _, tc := range []struct {
		name string
		f    Format
	}{{"-", FormatParquet}, {"x.parquet", FormatAuto}} {
		if _, err := NewReader(strings.NewReader("PAR1"), tc.name, CompressionNone, Options{Format: tc.f}); err == nil || !strings.Contains(err.Error(), "stream") {
			t.Errorf("NewReader(%s, %v) of Parquet: %v", tc.name, tc.f, err)
		}
	}
}

func TestParquetSkipWithinRowGroup(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.parquet")
	writeDocs(t, p, 1000, 300)
	r, err := Open(p, Options{IDField: "id"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if rec, err := r.Next(); err != nil || rec.ID != "d0" {
		t.Fatalf("first: %v %v", rec, err)
	}
	// Past the rows read in advance, within the same row group.
	if n, err := r.Skip(200); n != 200 || err != nil {
		t.Fatalf("Skip(200) = %d, %v", n, err)
	}
	rec, err := r.Next()
	if err != nil || rec.ID != "d201" || rec.Pos.RowGroup != 0 || rec.Pos.Row != 201 || rec.Pos.Index != 201 {
		t.Fatalf("after Skip(200): %+v, %v", rec, err)
	}
	done, size := r.Progress()
	if done <= 0 || done >= size {
		t.Errorf("Progress in the first row group = %d of %d", done, size)
	}
	// Into the middle of a later row group.
	if n, err := r.Skip(450); n != 450 || err != nil {
		t.Fatalf("Skip(450) = %d, %v", n, err)
	}
	rec, err = r.Next()
	if err != nil || rec.ID != "d652" || rec.Pos.RowGroup != 2 || rec.Pos.Row != 52 {
		t.Fatalf("after Skip(450): %+v, %v", rec, err)
	}
	if done2, _ := r.Progress(); done2 <= done {
		t.Errorf("Progress did not advance: %d then %d", done, done2)
	}
	var n int
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		if want := fmt.Sprintf("d%d", 653+n); rec.ID != want {
			t.Fatalf("got %s, want %s", rec.ID, want)
		}
		n++
	}
	if n != 1000-653 {
		t.Errorf("read %d records after the skips", n)
	}
}

type pqIDKinds struct {
	I32  int32   `parquet:"i32"`
	U64  uint64  `parquet:"u64"`
	F64  float64 `parquet:"f64"`
	B    bool    `parquet:"b"`
	S    string  `parquet:"s"`
	Text string  `parquet:"text"`
}

func TestParquetIDKinds(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k.parquet")
	if err := parquet.WriteFile(p, []pqIDKinds{
		{I32: -5, U64: 1<<64 - 1, F64: 3, B: true, S: "", Text: "t"},
		{I32: 7, U64: 2, F64: 2.5, S: "s", Text: "u"},
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		want  [2]string // id or error
	}{
		{"i32", [2]string{"-5", "7"}},
		{"u64", [2]string{"18446744073709551615", "2"}},
		{"f64", [2]string{"3", "2.5"}},
		{"b", [2]string{`bad record: field "b" is not a string (boolean)`, `bad record: field "b" is not a string (boolean)`}},
		{"s", [2]string{`bad record: field "s" is empty`, "s"}},
	} {
		recs := readAll(t, p, Options{IDField: tc.field, KeepFields: []string{"i32", "u64", "f64", "b"}})
		for i, r := range recs {
			got := r.ID
			if r.Err != "" {
				got = r.Err
			}
			if got != tc.want[i] {
				t.Errorf("id field %s, record %d: %q, want %q", tc.field, i, got, tc.want[i])
			}
		}
		if tc.field == "i32" {
			if recs[0].Meta != `{"i32":-5,"u64":18446744073709551615,"f64":3,"b":true}` || recs[1].Meta != `{"i32":7,"u64":2,"f64":2.5,"b":false}` {
				t.Errorf("Meta = %s, %s", recs[0].Meta, recs[1].Meta)
			}
		}
	}
}
