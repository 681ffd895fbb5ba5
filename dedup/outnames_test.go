package dedup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/db"
)

// TestCheckOutputNames: an output whose name says another format or
// compression than Run would write it in is refused by Check, before any
// input is read, naming the user's path (not a temporary one); names
// that tell no format keep the default format.
func TestCheckOutputNames(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, in, dataset(7, 20))
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, c := range []struct {
		out, removed, clusters, outFormat string
		want                              string // "": accepted
	}{
		{out: p("mm.csv"), removed: p("mm.parquet"), want: "--removed " + p("mm.parquet") + " is named as a parquet file, but the outputs are written as csv (told by the extension of --out " + p("mm.csv") + ")"},
		{out: p("k.jsonl.zst"), removed: p("r.csv.gz"), want: "--removed " + p("r.csv.gz") + " is named as a csv file, but the outputs are written as jsonl"},
		{out: p("k.out"), removed: p("r.csv"), want: "the outputs are written as jsonl (the input's format: --out " + p("k.out") + " names none)"},
		{out: "-", removed: p("r.parquet"), want: "--removed " + p("r.parquet") + " is named as a parquet file"},
		{out: p("k.csv"), removed: p("r.jsonl"), outFormat: "csv", want: "--removed " + p("r.jsonl") + " is named as a jsonl file, but the outputs are written as csv (told by --out-format csv)"},
		{out: p("k.parquet"), outFormat: "csv", want: "--out " + p("k.parquet") + " is named as a parquet file"},
		{out: p("ck.jsonl.bz2"), want: "--out " + p("ck.jsonl.bz2") + ": cannot write bzip2"},
		{out: p("ck.parquet.gz"), want: "--out " + p("ck.parquet.gz") + ": a Parquet file cannot be gzip-compressed as a whole"},
		{out: p("k.out.gz"), outFormat: "parquet", want: "--out " + p("k.out.gz") + ": a Parquet file cannot be gzip-compressed"},
		{out: p("k.jsonl"), removed: p("r.jsonl.bz2"), want: "--removed " + p("r.jsonl.bz2") + ": cannot write bzip2"},
		{out: p("ck.csv.xz"), want: "--out " + p("ck.csv.xz") + ": cannot write xz compression"},
		{out: p("k.jsonl"), removed: p("r.jsonl.lz4"), want: "cannot write lz4 compression"},
		{out: p("k.csv.foo"), want: ".foo after the format's extension"},
		{out: p("k.jsonl"), clusters: p("c.jsonl.gz"), want: "--clusters " + p("c.jsonl.gz") + ": the clusters file is written as uncompressed JSON Lines"},
		{out: p("k.jsonl"), clusters: p("c.csv"), want: "--clusters " + p("c.csv") + ": the clusters file is written as uncompressed JSON Lines"},
		{out: p("k.jsonl"), clusters: p("c.jsonl.xz"), want: "the clusters file is written as uncompressed JSON Lines"},

		{out: p("k.jsonl"), removed: p("r.jsonl"), clusters: p("c.jsonl")},
		{out: p("k.csv"), removed: p("r.csv.gz")},
		{out: p("k.jsonl.zst"), removed: p("r.ndjson.gz")},
		{out: p("k.out"), removed: p("r.txt"), clusters: p("c.out")},
		{out: p("kept"), removed: p("r.jsonl")},
		{out: "-", removed: p("r.jsonl"), clusters: p("c")},
		{out: p("k.out"), removed: p("r.csv"), outFormat: "csv"},
		{out: p("k.parquet"), removed: "-"},
		{out: p("kept") + "/", removed: p("removed") + "/", outFormat: "csv"},
	} {
		o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8,
			Out: c.out, Removed: c.removed, Clusters: c.clusters, OutFormat: c.outFormat}
		err := Check(o)
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c, err)
			}
			continue
		}
		if !errors.Is(err, db.ErrInvalidOptions) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), ".fpdb-part") {
			t.Errorf("%+v: %v, want %q", c, err, c.want)
		}
	}

	// Run refuses them before it stores a record or creates a file.
	d := openDB(t, filepath.Join(t.TempDir(), "db"))
	o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8, Out: p("k.jsonl.bz2")}
	if _, err := Run(ctx, d, o); !errors.Is(err, db.ErrInvalidOptions) || d.Len() != 0 {
		t.Fatalf("Run: %v, %d documents stored", err, d.Len())
	}
	if left, _ := filepath.Glob(p("*k.jsonl*")); len(left) > 0 {
		t.Fatalf("left %q", left)
	}
}

// TestKeepFieldMissing: a keep policy on a field that no record has (a
// misspelt name) stops the run after the load, naming the field, before
// an output is written; a field that only some records have is taken.
func TestKeepFieldMissing(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, in, dataset(5, 30))
	csv := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(csv, []byte("id,text,score\na,one two three four five,1\nb,one two three four five,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, keep string }{{in, "max:scor"}, {in, "min:nope"}, {csv, "max:fetched"}} {
		out := t.TempDir()
		o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{c.in}}, Threshold: 0.8, Keep: c.keep,
			Out: filepath.Join(out, "k.jsonl"), Removed: filepath.Join(out, "r.jsonl")}
		d := openDB(t, filepath.Join(out, "db"))
		field := c.keep[4:]
		_, err := Run(ctx, d, o)
		if !errors.Is(err, db.ErrInvalidOptions) || !strings.Contains(err.Error(), "has a field \""+field+"\"") || !strings.Contains(err.Error(), "keep policy "+c.keep) {
			t.Errorf("%s, keep %s: %v", c.in, c.keep, err)
		}
		if left, _ := filepath.Glob(filepath.Join(out, "*.jsonl")); len(left) > 0 {
			t.Errorf("%s, keep %s: wrote %q", c.in, c.keep, left)
		}
	}
	// The field in every record, but never a value to order by: refused
	// as well.
	tagged := filepath.Join(dir, "tagged.csv")
	if err := os.WriteFile(tagged, []byte("id,text,tag\na,one two three four five,blue\nb,one two three four five,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	_, err := Run(ctx, openDB(t, filepath.Join(out, "db")), Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{tagged}},
		Threshold: 0.8, Keep: "max:tag", Out: filepath.Join(out, "k.csv")})
	if !errors.Is(err, db.ErrInvalidOptions) || !strings.Contains(err.Error(), `the field "tag" of the 2 records read is never a number`) {
		t.Errorf("keep max:tag over texts: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "*.csv")); len(left) > 0 {
		t.Errorf("keep max:tag over texts: wrote %q", left)
	}
	// The field in one record only: the policy runs.
	rs := dataset(5, 30)
	rs[3].Score = 7
	some := filepath.Join(dir, "some.jsonl")
	f, err := os.Create(some)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		line := `{"id":"` + r.ID + `","text":"` + r.Text + `"}`
		if i == 3 {
			line = `{"id":"` + r.ID + `","text":"` + r.Text + `","rank":7}`
		}
		f.WriteString(line + "\n")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	run(t, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{some}}, Threshold: 0.8, Keep: "max:rank"})
}
