package dedup

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/records"
)

func TestShardNames(t *testing.T) {
	for _, tc := range []struct {
		rel  string
		to   records.Format
		want string
	}{
		{"train-0.parquet", records.FormatAuto, "train-0.parquet"},
		{"a/b.jsonl.zst", records.FormatAuto, "a/b.jsonl.zst"},
		{"b.csv.bz2", records.FormatAuto, "b.csv.gz"},
		{"b.jsonl.zst", records.FormatParquet, "b.parquet"},
		{"b.parquet", records.FormatJSONL, "b.jsonl"},
		{"b.ndjson.gz", records.FormatCSV, "b.csv.gz"},
		{"b.jsonl", records.FormatJSONL, "b.jsonl"},
		{"b.ndjson", records.FormatJSONL, "b.ndjson"},
		{"data.txt", records.FormatAuto, "data.txt"},
		{"data.txt", records.FormatCSV, "data.txt.csv"},
	} {
		if got := shardName(tc.rel, tc.to); got != filepath.FromSlash(tc.want) {
			t.Errorf("shardName(%q, %v) = %q, want %q", tc.rel, tc.to, got, tc.want)
		}
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"x/a.jsonl"}, []string{"a.jsonl"}},
		{[]string{"x/a.jsonl", "x/b.jsonl"}, []string{"a.jsonl", "b.jsonl"}},
		{[]string{"x/d/a.jsonl", "x/e/a.jsonl", "x/b.jsonl"}, []string{"d/a.jsonl", "e/a.jsonl", "b.jsonl"}},
		{[]string{"x/d/a.jsonl", "xy/a.jsonl"}, []string{"x/d/a.jsonl", "xy/a.jsonl"}},
	} {
		var in []string
		for _, p := range tc.in {
			in = append(in, filepath.Join(dir, p))
		}
		got, err := shardRels(in)
		var want []string
		for _, p := range tc.want {
			want = append(want, filepath.FromSlash(p))
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("shardRels(%q) = %q, %v; want %q", tc.in, got, err, want)
		}
	}
}

// shardInputs writes rs in four shards of different formats and
// compressions, in nested directories under dir/in, and returns them in
// order.
func shardInputs(t *testing.T, dir string, rs []rec) []string {
	t.Helper()
	q := len(rs) / 4
	parts := [][]rec{rs[:q], rs[q : 2*q], rs[2*q : 3*q], rs[3*q:]}
	paths := []string{"in/a/part-0.jsonl.zst", "in/a/part-1.csv", "in/b/part-2.parquet", "in/part-3.jsonl.gz"}
	for i, p := range paths {
		paths[i] = filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(paths[i]), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var jl bytes.Buffer
	for _, part := range []int{0, 3} {
		jl.Reset()
		tmp := filepath.Join(dir, "tmp.jsonl")
		writeJSONL(t, tmp, parts[part])
		b, err := os.ReadFile(tmp)
		if err != nil {
			t.Fatal(err)
		}
		var data []byte
		if part == 0 {
			enc, _ := zstd.NewWriter(nil)
			data = enc.EncodeAll(b, nil)
		} else {
			zw := gzip.NewWriter(&jl)
			zw.Write(b)
			zw.Close()
			data = jl.Bytes()
		}
		if err := os.WriteFile(paths[part], data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var cb bytes.Buffer
	cw := csv.NewWriter(&cb)
	cw.Write([]string{"id", "text", "score"})
	for _, r := range parts[1] {
		cw.Write([]string{r.ID, r.Text, strconv.FormatFloat(r.Score, 'g', -1, 64)})
	}
	cw.Flush()
	if err := os.WriteFile(paths[1], cb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(paths[2])
	if err != nil {
		t.Fatal(err)
	}
	pw := parquet.NewGenericWriter[rec](f)
	if _, err := pw.Write(parts[2]); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return paths
}

// TestRunShards: directories of shards as outputs get one file per input,
// named as the input within the inputs' common directory, in its format
// (or OutFormat's), holding that input's records as a single output
// would, in order; a second run replaces them, and outputs that are not
// both directories, that share one, or a directory holding other files
// are refused before anything is read.
func TestRunShards(t *testing.T) {
	rs := dataset(11, 240)
	dir := t.TempDir()
	inputs := shardInputs(t, dir, rs)
	base := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: inputs}, Threshold: 0.8}
	_, kept0, removed0 := run(t, base)
	if len(removed0) == 0 {
		t.Fatal("nothing removed")
	}
	want := [2][]string{keptPairs(kept0), keptPairs(removed0)}
	for _, outFormat := range []string{"", "parquet"} {
		o := base
		o.OutFormat = outFormat
		sub := t.TempDir()
		o.Out, o.Removed = filepath.Join(sub, "kept")+"/", filepath.Join(sub, "removed")+"/"
		names := []string{"a/part-0.jsonl.zst", "a/part-1.csv", "b/part-2.parquet", "part-3.jsonl.gz"}
		if outFormat == "parquet" {
			names = []string{"a/part-0.parquet", "a/part-1.parquet", "b/part-2.parquet", "part-3.parquet"}
		}
		for round := range 2 { // the second run replaces the first's shards
			d := openDB(t, filepath.Join(sub, "db"+strconv.Itoa(round)))
			if _, err := Run(ctx, d, o); err != nil {
				t.Fatalf("out-format %q, run %d: %v", outFormat, round, err)
			}
			for i, out := range []string{o.Out, o.Removed} {
				var got []string
				for _, n := range names {
					got = append(got, readIDs(t, filepath.Join(out, filepath.FromSlash(n)))...)
				}
				if !slices.Equal(got, want[i]) {
					t.Fatalf("out-format %q, run %d, %s: %v, want %v", outFormat, round, out, got, want[i])
				}
				var files []string
				filepath.WalkDir(out, func(p string, de os.DirEntry, err error) error {
					if err == nil && !de.IsDir() {
						rel, _ := filepath.Rel(out, p)
						files = append(files, filepath.ToSlash(rel))
					}
					return err
				})
				slices.Sort(files)
				if !slices.Equal(files, names) {
					t.Fatalf("out-format %q: %s holds %q, want %q", outFormat, out, files, names)
				}
			}
			left, _ := filepath.Glob(filepath.Join(sub, ".fpdb-*"))
			if len(left) > 0 {
				t.Fatalf("temporary files left: %q", left)
			}
		}
		// The Parquet input's shard keeps its schema (the score column a
		// double); a JSON Lines input's Parquet shard has string columns.
		pf, err := os.Open(filepath.Join(o.Out, "b", "part-2.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := pf.Stat()
		f, err := parquet.OpenFile(pf, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := f.Schema().Lookup("score"); !ok || c.Node.Type().Kind() != parquet.Double {
			t.Errorf("the Parquet shard's score column: %v", c.Node)
		}
		pf.Close()
	}

	// Refused before anything is read.
	sub := t.TempDir()
	if err := os.MkdirAll(filepath.Join(sub, "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "full", "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(sub, "full"), filepath.Join(sub, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		out, removed, clusters, want string
	}{
		{"k/", "r.jsonl", "", "give both a directory of shards"},
		{"k.jsonl", "r/", "", "give both a directory of shards"},
		{"k/", "k/", "", "the same directory"},
		{"k/", "r/", "k/c.jsonl", "inside the directory of shards"},
		{"full/", "r/", "", "holds notes.txt, which is not a shard"},
		{"full", "r/", "", "give both a directory of shards"},
		{"k/", "k/r/", "", "one directory of shards is inside the other"},
		{"link/", "r/", "", "is a symbolic link"},
		{"in/", "r/", "", "is inside the directory of shards"},
		{"k/", "r/", "c/", "is a directory"},
		{"nodir/k/", "r/", "", "no directory"},
		{"k/", "r/", "", "would both be written to the shard " + filepath.Join("a", "part-0.parquet")},
	} {
		o := base
		if tc.out == "in/" {
			o.Inputs = []string{filepath.Join(sub, "in", "x.jsonl")}
		}
		if strings.Contains(tc.want, "would both") {
			// part-0.jsonl.zst and part-0.jsonl, both part-0.parquet.
			o.OutFormat = "parquet"
			o.Inputs = append(slices.Clone(inputs), filepath.Join(dir, "in", "a", "part-0.jsonl"))
		}
		o.Out, o.Removed = filepath.Join(sub, tc.out), filepath.Join(sub, tc.removed)
		if strings.HasSuffix(tc.out, "/") {
			o.Out += "/"
		}
		if strings.HasSuffix(tc.removed, "/") {
			o.Removed += "/"
		}
		if tc.clusters != "" {
			o.Clusters = filepath.Join(sub, tc.clusters)
			if strings.HasSuffix(tc.clusters, "/") {
				o.Clusters += "/"
			}
		}
		err := Check(o)
		if !errors.Is(err, db.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("out %s, removed %s, clusters %s: %v, want %q", tc.out, tc.removed, tc.clusters, err, tc.want)
		}
	}
	// The working directory, or a directory above it ("./", "../").
	t.Chdir(filepath.Join(sub, "full"))
	elsewhere := t.TempDir()
	for _, out := range []string{"./", "../"} {
		o := base
		o.Out, o.Removed = out, filepath.Join(elsewhere, "r")+"/"
		if err := Check(o); !errors.Is(err, db.ErrInvalidOptions) || !strings.Contains(err.Error(), "holds the working directory") {
			t.Errorf("out %s: %v, want the working directory refused", out, err)
		}
	}
}
