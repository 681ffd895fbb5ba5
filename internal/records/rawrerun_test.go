package records

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// fieldString returns a field's value as a string (a JSON string decoded).
func fieldString(t *testing.T, f Field) string {
	t.Helper()
	switch v := f.Value.(type) {
	case string:
		return v
	case json.RawMessage:
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			t.Fatalf("field %q: %s is not a JSON string: %v", f.Name, v, err)
		}
		return s
	case nil:
		return ""
	}
	t.Fatalf("field %q is a %T", f.Name, f.Value)
	return ""
}

// rawValues reads path back and returns the fpdb_raw values that are set.
func rawValues(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, r := range readAll(t, path, Options{TextField: rawColumn, Raw: true}) {
		for _, f := range r.Fields {
			if f.Name == rawColumn && f.Value != nil {
				if s := fieldString(t, f); s != "" {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// A bad CSV row keeps its original text (Record.Raw), and every output
// format writes it: a malformed row's fields are lost otherwise, and a
// row of too many fields loses the fields past the header's.
func TestWriteBadCSVKeepsRaw(t *testing.T) {
	dir := t.TempDir()
	bare := `a,he said "hi" to all`
	extra := `c,one two three,EXTRA`
	src := writeFile(t, dir, "in.csv", []byte("id,text\n"+bare+"\r\nb,plain text here\n"+extra+"\nd,last one\n"))
	recs := readAll(t, src, Options{IDField: "id", Raw: true})
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	for i, want := range []string{bare, "", extra, ""} {
		if recs[i].Raw != want {
			t.Errorf("record %d: Raw %q, want %q", i, recs[i].Raw, want)
		}
		if (want != "") != (recs[i].Err != "") {
			t.Errorf("record %d: Err %q", i, recs[i].Err)
		}
	}
	for _, ext := range []string{"csv", "tsv", "parquet", "jsonl"} {
		dst := filepath.Join(dir, "out."+ext)
		w, err := Create(dst, FormatAuto, nil, extraNames)
		if err != nil {
			t.Fatal(err)
		}
		w.AddRawColumn()
		if err := appendFile(t, w, src, Options{IDField: "id"}, 0); err != nil {
			t.Fatalf("%s: %v", ext, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := rawValues(t, dst); !equalStrings(got, []string{bare, extra}) {
			t.Errorf("%s: fpdb_raw values %q, want %q", ext, got, []string{bare, extra})
		}
	}
	// Without AddRawColumn a CSV output has no raw column (as before).
	dst := filepath.Join(dir, "plain.csv")
	copyChecked(t, src, dst, Options{IDField: "id"})
	if head, _, _ := strings.Cut(readText(t, dst), "\n"); head != "id,text,fpdb_cluster,fpdb_kept,fpdb_similarity" {
		t.Errorf("header %q", head)
	}
}

// A malformed JSON line written to a Parquet output whose columns are
// known keeps its line in fpdb_raw (it was written all null).
func TestWriteBadJSONLToParquetKeepsRaw(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "in.jsonl", []byte("{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\n{\"id\":\"b\",\"text\":\"y\"}\n"))
	for _, ext := range []string{"parquet", "csv"} {
		dst := filepath.Join(dir, "out."+ext)
		w, err := Create(dst, FormatAuto, nil, extraNames)
		if err != nil {
			t.Fatal(err)
		}
		w.AddRawColumn()
		if err := appendFile(t, w, src, Options{IDField: "id"}, 0); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := rawValues(t, dst); !equalStrings(got, []string{`{"id":`}) {
			t.Errorf("%s: fpdb_raw values %q", ext, got)
		}
	}
}

// checkRerunColumns checks that a Parquet output has each extra once.
func checkRerunColumns(t *testing.T, path string) {
	t.Helper()
	pf := openParquetFile(t, path)
	var names []string
	for _, fld := range pf.Schema().Fields() {
		names = append(names, fld.Name())
	}
	if want := []string{"id", "text", "meta", "score", "fpdb_cluster", "fpdb_kept", "fpdb_similarity"}; !equalStrings(names, want) {
		t.Errorf("%s: columns %q, want %q", path, names, want)
	}
}

// Writing an output of an earlier run again replaces its extras (they
// were added a second time: a Parquet file that could not be read back,
// JSON lines with duplicate members, a CSV header with the columns twice).
func TestWriteRerunReplacesExtras(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.parquet")
	docs := writeDocs(t, src, 12, 5)
	out1 := filepath.Join(dir, "out1.parquet")
	copyChecked(t, src, out1, Options{IDField: "id"})
	out2 := filepath.Join(dir, "out2.parquet")
	w, err := Create(out2, FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendFile(t, w, out1, Options{IDField: "id"}, 100); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkRerunColumns(t, out2)
	rows, err := parquet.ReadFile[pqDocOut](out2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(docs) {
		t.Fatalf("read back %d rows", len(rows))
	}
	for i, r := range rows {
		d := docs[i]
		want := pqDocOut{ID: d.ID, Text: d.Text, Meta: d.Meta, Score: d.Score, Cluster: int64(100 + i), Kept: fmt.Sprintf("k%d", 100+i), Similarity: 100.25 + float64(i)}
		if r != want {
			t.Errorf("row %d = %+v, want %+v", i, r, want)
		}
	}
	// A third run reads it (it failed: a column named twice).
	out3 := filepath.Join(dir, "out3.parquet")
	copyChecked(t, out2, out3, Options{IDField: "id"})
	checkRerunColumns(t, out3)

	// JSON Lines and CSV outputs of a Parquet output.
	for _, ext := range []string{"jsonl", "csv"} {
		a := filepath.Join(dir, "a."+ext)
		copyChecked(t, out2, a, Options{IDField: "id"})
		b := filepath.Join(dir, "b."+ext)
		w, err := Create(b, FormatAuto, nil, extraNames)
		if err != nil {
			t.Fatal(err)
		}
		if err := appendFile(t, w, a, Options{IDField: "id"}, 200); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		text := readText(t, b)
		first, _, _ := strings.Cut(text, "\n")
		if ext == "csv" {
			if want := "id,text,meta,score,fpdb_cluster,fpdb_kept,fpdb_similarity"; first != want {
				t.Errorf("csv header %q, want %q", first, want)
			}
			rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if got := rows[1][4:]; !equalStrings(got, []string{"200", "k200", "200.25"}) {
				t.Errorf("csv extras %q", got)
			}
			continue
		}
		if n := strings.Count(first, `"fpdb_cluster"`); n != 1 {
			t.Errorf("jsonl: fpdb_cluster %d times in %s", n, first)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(first), &m); err != nil {
			t.Fatal(err)
		}
		if m["fpdb_cluster"] != 200.0 || m["fpdb_kept"] != "k200" || m["id"] != "d0" {
			t.Errorf("jsonl: %s", first)
		}
	}

	// A Parquet output of string columns from a CSV output.
	c := filepath.Join(dir, "c.csv")
	copyChecked(t, out2, c, Options{IDField: "id"})
	p := filepath.Join(dir, "c.parquet")
	w, err = Create(p, FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendFile(t, w, c, Options{IDField: "id"}, 300); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, p, Options{IDField: "id", Raw: true})
	if len(recs) != len(docs) {
		t.Fatalf("parquet from csv: %d records", len(recs))
	}
	if got := fieldNames(recs[0].Fields); !equalStrings(got, []string{"id", "text", "meta", "score", "fpdb_cluster", "fpdb_kept", "fpdb_similarity"}) {
		t.Errorf("parquet from csv: fields %q", got)
	}
	if got := fieldString(t, recs[0].Fields[5]); got != "k300" {
		t.Errorf("parquet from csv: fpdb_kept %q", got)
	}
}

// copyChecked is copyFile that fails on a Write error.
func copyChecked(t *testing.T, src, dst string, o Options) {
	t.Helper()
	w, err := Create(dst, FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendFile(t, w, src, o, 0); err != nil {
		t.Fatalf("%s to %s: %v", src, dst, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// An output linked to another (ShareSchema) that gets no record has the
// columns of the other's first record: a Parquet output the source's
// schema and the extras of their types (it had only the extras, as
// strings, and could not be read back as a dataset), a CSV output its
// header (it was an empty file).
func TestWriteEmptySharesSchema(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.parquet")
	writeDocs(t, src, 3, 5)
	csvSrc := writeFile(t, dir, "in.csv", []byte("id,text,n\na,one two,1\n"))
	jsonlSrc := writeFile(t, dir, "in.jsonl", []byte("{\"id\":\"a\",\"text\":\"x\"}\n"))
	for _, c := range []struct{ src, ext string }{{src, "parquet"}, {csvSrc, "parquet"}, {csvSrc, "csv"}, {jsonlSrc, "tsv"}} {
		full := filepath.Join(dir, "full."+c.ext)
		empty := filepath.Join(dir, "empty."+c.ext)
		w1, err := Create(full, FormatAuto, nil, extraNames)
		if err != nil {
			t.Fatal(err)
		}
		w2, err := Create(empty, FormatAuto, nil, extraNames)
		if err != nil {
			t.Fatal(err)
		}
		w1.ShareSchema(w2)
		if err := appendFile(t, w1, c.src, Options{IDField: "id"}, 0); err != nil {
			t.Fatal(err)
		}
		if err := w1.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w2.Close(); err != nil {
			t.Fatal(err)
		}
		if c.ext != "parquet" {
			head, _, _ := strings.Cut(readText(t, full), "\n")
			if got := readText(t, empty); got != head+"\n" {
				t.Errorf("%s: empty output %q, want the header %q", c.src, got, head)
			}
			continue
		}
		schema := func(p string) *parquet.Schema { return openParquetFile(t, p).Schema() }
		if a, b := schema(full), schema(empty); !parquet.EqualNodes(a, b) {
			t.Errorf("%s: empty output's schema\n%v\nwant\n%v", c.src, b, a)
		}
		if recs := readAll(t, empty, Options{IDField: "id"}); len(recs) != 0 {
			t.Errorf("%s: %d records in the empty output", c.src, len(recs))
		}
	}

	// Malformed JSON lines alone in a linked output: the other's columns
	// and the lines in fpdb_raw.
	mixed := writeFile(t, dir, "mixed.jsonl", []byte("{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\n"))
	kept, removed := filepath.Join(dir, "k.csv"), filepath.Join(dir, "r.csv")
	w1, err := Create(kept, FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := Create(removed, FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	w1.ShareSchema(w2)
	r, err := Open(mixed, Options{IDField: "id", Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Err != nil {
			err = w2.WriteBad(rec, extrasFor(i))
		} else {
			err = w1.Write(rec, extrasFor(i))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	if err := w1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := readText(t, removed), "id,text,fpdb_raw,fpdb_cluster,fpdb_kept,fpdb_similarity\n,,\"{\"\"id\"\":\",1,k1,1.25\n"; got != want {
		t.Errorf("removed:\n%s\nwant:\n%s", got, want)
	}
}

// openParquetFile opens the Parquet file at path (closed when the test
// ends).
func openParquetFile(t *testing.T, path string) *parquet.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf
}
