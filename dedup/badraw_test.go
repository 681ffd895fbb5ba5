package dedup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/internal/records"
	"github.com/parquet-go/parquet-go"
)

// TestBadCSVRowsKeepText: a malformed CSV row and a row of too many fields
// are written to REMOVED with their original text (column or member
// fpdb_raw) in every output format; they lost their content (all cells
// empty) or the fields past the header's.
func TestBadCSVRowsKeepText(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "q.csv")
	bare := `a,he said "hi" to all of the people here`
	extra := "c,one two three four five six seven,EXTRA"
	content := "id,text\n" + bare + "\nb,plain text with five or more words\n" + extra + "\n"
	if err := os.WriteFile(in, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"csv", "tsv", "parquet", "jsonl"} {
		out := t.TempDir()
		d := openDB(t, filepath.Join(out, "db"))
		o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8,
			Out: filepath.Join(out, "kept."+f), Removed: filepath.Join(out, "removed."+f)}
		sum, err := Run(ctx, d, o)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if sum.Kept != 1 || sum.Skipped != 2 {
			t.Fatalf("%s: %+v", f, sum)
		}
		r, err := records.Open(o.Removed, records.Options{TextField: "fpdb_raw", Raw: true})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var raws []string
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if rec.Err == nil {
				raws = append(raws, string(rec.Text))
			}
		}
		r.Close()
		if strings.Join(raws, "|") != bare+"|"+extra {
			t.Errorf("%s: fpdb_raw of removed: %q", f, raws)
		}
	}
	// Without bad records, no fpdb_raw column.
	good := filepath.Join(dir, "good.csv")
	if err := os.WriteFile(good, []byte("id,text\nb,plain text with five or more words\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	d := openDB(t, filepath.Join(out, "db"))
	o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{good}}, Threshold: 0.8,
		Out: filepath.Join(out, "kept.csv"), Removed: filepath.Join(out, "removed.csv")}
	if _, err := Run(ctx, d, o); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(o.Out); strings.Contains(string(b), "fpdb_raw") {
		t.Errorf("kept.csv has fpdb_raw:\n%s", b)
	}
}

// TestEmptyRemovedKeepsSchema: with every record kept, the removed output
// still has the input's columns and the added ones (a Parquet file of the
// four fpdb_* string columns alone, which dedup could not read back; a
// CSV file without a header).
// idTextN is a Parquet row of the schema tests: an id, a text and a
// further column.
type idTextN struct {
	ID   string `parquet:"id"`
	Text string `parquet:"text"`
	N    int64  `parquet:"n"`
}

func TestEmptyRemovedKeepsSchema(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "one.parquet")
	if err := parquet.WriteFile(in, []idTextN{{"a", "one two three four five six seven", 1}}); err != nil {
		t.Fatal(err)
	}
	inCSV := filepath.Join(dir, "one.csv")
	if err := os.WriteFile(inCSV, []byte("id,text,n\na,one two three four five six seven,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, ext string }{{in, "parquet"}, {inCSV, "csv"}} {
		out := t.TempDir()
		d := openDB(t, filepath.Join(out, "db"))
		o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{c.in}}, Threshold: 0.8,
			Out: filepath.Join(out, "kept."+c.ext), Removed: filepath.Join(out, "removed."+c.ext)}
		if _, err := Run(ctx, d, o); err != nil {
			t.Fatalf("%s: %v", c.ext, err)
		}
		if got, want := outputColumns(t, o.Removed), "id,text,n,fpdb_cluster,fpdb_kept,fpdb_similarity,fpdb_error"; got != want {
			t.Errorf("removed.%s columns %s, want %s", c.ext, got, want)
		}
		if c.ext == "csv" {
			continue
		}
		// It is a dataset dedup reads.
		d2 := openDB(t, filepath.Join(out, "db2"))
		o2 := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{o.Removed}}, Threshold: 0.8,
			Out: filepath.Join(out, "again.jsonl")}
		if _, err := Run(ctx, d2, o2); err != nil {
			t.Errorf("dedup of removed.parquet: %v", err)
		}
	}
}

// outputColumns returns the columns of a CSV output (its header, which
// must be all it holds) or a Parquet output (its schema's top-level
// fields), comma-separated.
func outputColumns(t *testing.T, path string) string {
	t.Helper()
	if strings.HasSuffix(path, ".csv") {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(b), "\n") != 1 {
			t.Fatalf("%s holds more than a header: %q", path, b)
		}
		return strings.TrimSuffix(string(b), "\n")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRows() != 0 {
		t.Fatalf("%s holds %d rows", path, pf.NumRows())
	}
	var names []string
	for _, fld := range pf.Schema().Fields() {
		names = append(names, fld.Name())
	}
	return strings.Join(names, ",")
}

// TestNoRecordsKeepInputSchema: an input of no records (a CSV header, a
// Parquet file of no rows) gives outputs of its columns and the added
// ones, with --removed or without, rather than empty files.
func TestNoRecordsKeepInputSchema(t *testing.T) {
	dir := t.TempDir()
	inPQ := filepath.Join(dir, "none.parquet")
	if err := parquet.WriteFile(inPQ, []idTextN{}); err != nil {
		t.Fatal(err)
	}
	inCSV := filepath.Join(dir, "none.csv")
	if err := os.WriteFile(inCSV, []byte("id,text,n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "id,text,n,fpdb_cluster,fpdb_kept,fpdb_similarity,fpdb_error"
	for _, c := range []struct{ in, ext string }{{inPQ, "parquet"}, {inCSV, "csv"}} {
		for _, removed := range []bool{true, false} {
			out := t.TempDir()
			d := openDB(t, filepath.Join(out, "db"))
			o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{c.in}}, Threshold: 0.8,
				Out: filepath.Join(out, "kept."+c.ext)}
			if removed {
				o.Removed = filepath.Join(out, "removed."+c.ext)
			}
			if _, err := Run(ctx, d, o); err != nil {
				t.Fatalf("%s: %v", c.ext, err)
			}
			for _, p := range []string{o.Out, o.Removed} {
				if p == "" {
					continue
				}
				if got := outputColumns(t, p); got != want {
					t.Errorf("%s (removed given: %v): columns %q, want %q", filepath.Base(p), removed, got, want)
				}
			}
		}
	}
}

// TestParquetSchemasCheckedFirst: Parquet inputs of two schemas written to
// one Parquet output are refused before anything is read or stored (the
// output keeps the first file's schema, so the second's rows could only
// fail once the load and the pairs were done); to a directory of shards,
// or to JSON Lines, they are deduplicated.
func TestParquetSchemasCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.parquet")
	if err := parquet.WriteFile(a, []idTextN{{"a1", "one two three four five six seven", 1}}); err != nil {
		t.Fatal(err)
	}
	type idText struct {
		ID   string `parquet:"id"`
		Text string `parquet:"text"`
	}
	b := filepath.Join(dir, "b.parquet")
	if err := parquet.WriteFile(b, []idText{{"b1", "one two three four five six seven"}}); err != nil {
		t.Fatal(err)
	}
	d := openDB(t, filepath.Join(dir, "db"))
	o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{a, b}}, Threshold: 0.8,
		Out: filepath.Join(dir, "kept.parquet")}
	_, err := Run(ctx, d, o)
	if !errors.Is(err, records.ErrSchema) || !strings.Contains(err.Error(), "b.parquet has another schema than") {
		t.Fatalf("two schemas to one Parquet output: %v", err)
	}
	if n := d.Stats().Docs; n != 0 {
		t.Errorf("the refused run stored %d documents", n)
	}
	for _, out := range []string{filepath.Join(dir, "kept.jsonl"), filepath.Join(dir, "shards") + string(filepath.Separator)} {
		o.Out = out
		if _, err := Run(ctx, d, o); err != nil {
			t.Errorf("to %s: %v", out, err)
		}
	}

	// A file without rows has no schema to keep: an empty first shard of
	// another schema is passed over.
	empty := filepath.Join(dir, "empty.parquet")
	if err := parquet.WriteFile(empty, []idText{}); err != nil {
		t.Fatal(err)
	}
	o.Inputs, o.Out = []string{empty, a}, filepath.Join(dir, "kept2.parquet")
	if _, err := Run(ctx, openDB(t, filepath.Join(dir, "db2")), o); err != nil {
		t.Errorf("an empty first shard of another schema: %v", err)
	}

	// A CSV file after a Parquet one: its records cannot go to an output
	// that keeps the Parquet schema (refused up front).
	c := filepath.Join(dir, "c.csv")
	if err := os.WriteFile(c, []byte("id,text\nc1,entirely different words about other things here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Inputs, o.Out = []string{a, c}, filepath.Join(dir, "kept4.parquet")
	d4 := openDB(t, filepath.Join(dir, "db4"))
	if _, err := Run(ctx, d4, o); !errors.Is(err, records.ErrSchema) || !strings.Contains(err.Error(), "c.csv is not a Parquet file") {
		t.Errorf("a CSV file after a Parquet one: %v", err)
	}
	if n := d4.Stats().Docs; n != 0 {
		t.Errorf("the refused run stored %d documents", n)
	}

	// Files named .parquet that --format says are JSON Lines are no
	// Parquet inputs (this panicked).
	j1, j2 := filepath.Join(dir, "j1.parquet"), filepath.Join(dir, "j2.parquet")
	for i, p := range []string{j1, j2} {
		if err := os.WriteFile(p, []byte(fmt.Sprintf(`{"id":"j%d","text":"words of record %d here"}`+"\n", i, i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o.Inputs, o.Format, o.Out = []string{j1, j2}, "jsonl", filepath.Join(dir, "kept3.parquet")
	if _, err := Run(ctx, openDB(t, filepath.Join(dir, "db3")), o); err != nil {
		t.Errorf("JSON Lines inputs named .parquet: %v", err)
	}
}

// TestRepeatedHeaderCheckedFirst: a CSV header that names a column twice
// cannot become a Parquet output (one file, or a directory of shards) nor
// a JSON Lines one (a repeated key): the run is refused before anything is
// stored; a CSV output keeps the header.
func TestRepeatedHeaderCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(in, []byte("id,text,a,a\n1,one two three four five six seven,x,y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := openDB(t, filepath.Join(dir, "db"))
	for _, c := range []struct{ out, format string }{
		{filepath.Join(dir, "kept.parquet"), "parquet"}, {filepath.Join(dir, "shards") + string(filepath.Separator), "parquet"},
		{filepath.Join(dir, "kept.jsonl"), "jsonl"},
	} {
		out := c.out
		o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8, Out: out, OutFormat: c.format}
		_, err := Run(ctx, d, o)
		if !errors.Is(err, records.ErrSchema) || !strings.Contains(err.Error(), `in.csv: the header names column "a" twice (columns 3 and 4), which a `) {
			t.Errorf("to %s: %v", out, err)
		}
		if n := d.Stats().Docs; n != 0 {
			t.Errorf("to %s: the refused run stored %d documents", out, n)
		}
	}
	kept := filepath.Join(dir, "kept.csv")
	if _, err := Run(ctx, d, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8, Out: kept}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(kept); err != nil || !strings.HasPrefix(string(b), "id,text,a,a,") {
		t.Errorf("CSV output: %q (%v)", b, err)
	}
}
