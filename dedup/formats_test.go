package dedup

import (
	"encoding/json"
	"io"

	"bytes"
	"compress/gzip"
	"encoding/csv"
	"github.com/fpdb/fpdb/internal/records"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
)

// TestFormatsAgree deduplicates the same records as JSON Lines (plain,
// gzip, zstd), CSV, TSV and Parquet, each into its own format and into
// JSON Lines, and checks that all keep and remove the same records.
func TestFormatsAgree(t *testing.T) {
	rs := dataset(7, 200)
	dir := t.TempDir()
	var jl bytes.Buffer
	writeJSONL(t, filepath.Join(dir, "in.jsonl"), rs)
	b, err := os.ReadFile(filepath.Join(dir, "in.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	jl.Write(b)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(jl.Bytes())
	zw.Close()
	enc, _ := zstd.NewWriter(nil)
	for name, data := range map[string][]byte{"in.jsonl.gz": gz.Bytes(), "in.jsonl.zst": enc.EncodeAll(jl.Bytes(), nil)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, sep := range []rune{',', '\t'} {
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		w.Comma = sep
		w.Write([]string{"id", "text", "score"})
		for _, r := range rs {
			w.Write([]string{r.ID, r.Text, strconv.FormatFloat(r.Score, 'g', -1, 64)})
		}
		w.Flush()
		name := "in.csv"
		if sep == '\t' {
			name = "in.tsv"
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(dir, "in.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	pw := parquet.NewGenericWriter[rec](f, parquet.MaxRowsPerRowGroup(37))
	if _, err := pw.Write(rs); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	_, kept0, removed0 := run(t, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{filepath.Join(dir, "in.jsonl")}}, Threshold: 0.8, Keep: "max:score"})
	want := [2][]string{keptPairs(kept0), keptPairs(removed0)}
	if len(removed0) == 0 {
		t.Fatal("nothing removed")
	}
	for _, in := range []string{"in.jsonl.gz", "in.jsonl.zst", "in.csv", "in.tsv", "in.parquet"} {
		for _, outFormat := range []string{"", "jsonl"} {
			o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{filepath.Join(dir, in)}}, Threshold: 0.8, Keep: "max:score", OutFormat: outFormat}
			if outFormat == "" {
				// The input's own format: read back to JSON Lines here.
				sub := t.TempDir()
				ext := filepath.Ext(in)
				if ext == ".gz" || ext == ".zst" {
					ext = ".jsonl" + ext
				}
				o.Out, o.Removed = filepath.Join(sub, "kept"+ext), filepath.Join(sub, "removed"+ext)
				d := openDB(t, filepath.Join(sub, "db"))
				if _, err := Run(ctx, d, o); err != nil {
					t.Fatalf("%s: %v", in, err)
				}
				for i, p := range []string{o.Out, o.Removed} {
					got := readIDs(t, p)
					if !slices.Equal(got, want[i]) {
						t.Fatalf("%s in its own format: %v, want %v", in, got, want[i])
					}
				}
				continue
			}
			_, kept, removed := run(t, o)
			if !slices.Equal(keptPairs(kept), want[0]) || !slices.Equal(keptPairs(removed), want[1]) {
				t.Fatalf("%s into JSON Lines: kept %v removed %v, want %v %v", in, keptPairs(kept), keptPairs(removed), want[0], want[1])
			}
		}
	}
}

// keptPairs returns "ID→KEPT" for each output record, as readIDs.
func keptPairs(out []outRec) []string {
	var s []string
	for _, r := range out {
		s = append(s, r.ID+"→"+r.Kept)
	}
	return s
}

// readIDs reads an output in any format: "ID→KEPT" for each record.
func readIDs(t *testing.T, path string) []string {
	t.Helper()
	r, err := records.Open(path, records.Options{IDField: "id", TextField: "text", KeepFields: []string{FieldKept}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil || rec.Err != nil {
			t.Fatalf("%s: %v %v", path, err, rec.Err)
		}
		var m map[string]string
		if err := json.Unmarshal(rec.Meta, &m); err != nil {
			t.Fatalf("%s: %v: %s", path, err, rec.Meta)
		}
		out = append(out, rec.ID+"→"+m[FieldKept])
	}
}
