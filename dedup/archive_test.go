package dedup

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/db"
)

// TestRerunAfterDeletes: documents deleted from the database after a run
// stored them are stored again by a rerun of the same command, whose
// output is then the first run's (it used to resume past them and keep
// both members of their pairs, in no cluster).
func TestRerunAfterDeletes(t *testing.T) {
	rs := dataset(11, 300)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, in, rs)
	// And a bad record (no text) at the end.
	f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"id": "nothing"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8,
		Out: filepath.Join(dir, "k1.jsonl"), Removed: filepath.Join(dir, "r1.jsonl")}
	d := openDB(t, filepath.Join(dir, "db"))
	sum1, err := Run(ctx, d, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum1.Removed == 0 {
		t.Fatal("no near duplicates in the dataset")
	}
	// Delete the records the first run removed, and one it kept.
	removed := readOut(t, o.Removed)
	ids := []string{readOut(t, o.Out)[0].ID}
	for _, r := range removed {
		if r.Error == "" {
			ids = append(ids, r.ID)
		}
	}
	if res, err := d.DeleteMany(ctx, ids); err != nil || res.Deleted != len(ids) {
		t.Fatalf("DeleteMany: %+v, %v", res, err)
	}
	o2 := o
	o2.Out, o2.Removed = filepath.Join(dir, "k2.jsonl"), filepath.Join(dir, "r2.jsonl")
	// With a new input too, with a bad record: reported once, though the
	// rerun reads its inputs twice.
	in2 := filepath.Join(dir, "new.jsonl")
	if err := os.WriteFile(in2, []byte(`{"id": "empty"}`+"\n"+`{"id": "fresh", "text": "a new record of a few words that resembles none"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o2.Inputs = []string{in, in2}
	var bad []string
	o2.Bad = func(pos string, err error) { bad = append(bad, pos) }
	sum2, err := Run(ctx, d, o2)
	if err != nil {
		t.Fatal(err)
	}
	// The bad record is reported once, though the rerun read the input twice.
	if len(bad) != 1 {
		t.Fatalf("bad records reported: %q, want the one once", bad)
	}
	if sum2.Resumed+int64(len(ids)) != sum1.Records {
		t.Fatalf("rerun: %d resumed, want %d (the first run's records but the deleted)", sum2.Resumed, sum1.Records-int64(len(ids)))
	}
	k2, r2 := readOut(t, o2.Out), readOut(t, o2.Removed)
	if len(k2) > 0 && k2[len(k2)-1].ID == "fresh" {
		k2 = k2[:len(k2)-1]
	}
	if len(r2) > 0 && r2[len(r2)-1].ID == "empty" {
		r2 = r2[:len(r2)-1]
	}
	if !slices.Equal(k2, readOut(t, o.Out)) || !slices.Equal(r2, removed) {
		t.Fatalf("the rerun after deletes wrote other outputs: %d kept, %d removed (first run %d, %d)", sum2.Kept, sum2.Removed, sum1.Kept, sum1.Removed)
	}
	if sum2.Stored != int64(len(ids))+1 || sum2.Clusters != sum1.Clusters {
		t.Fatalf("rerun: %d stored (want the %d deleted and the fresh record), %d clusters (want %d)", sum2.Stored, len(ids), sum2.Clusters, sum1.Clusters)
	}
}

// TestArchiveKeptWhateverThePolicy: a record near a document the database
// held before the run (an archive) is removed under every keep policy,
// the archive's document named as kept; clusters of archive documents
// alone are not this run's and are not reported.
func TestArchiveKeptWhateverThePolicy(t *testing.T) {
	base := strings.Repeat("the quick brown fox jumps over the lazy dog and then runs away into the forest ", 3)
	for _, keep := range []string{"first", "oldest", "longest", "shortest", "max:score", "min:score"} {
		t.Run(keep, func(t *testing.T) {
			dir := t.TempDir()
			d := openDB(t, filepath.Join(dir, "db"))
			// The archive: one document, and a pair of near duplicates of
			// each other that no record of the run resembles.
			other := strings.Join(words(rand.New(rand.NewPCG(5, 5)), 120), " ")
			if _, err := d.AddBatch(ctx, []db.Input{
				{ID: "old", Text: []byte(base)},
				{ID: "o1", Text: []byte(other)}, {ID: "o2", Text: []byte(other + " more")},
			}); err != nil {
				t.Fatal(err)
			}
			in := filepath.Join(dir, "new.jsonl")
			// Longer, shorter, higher and lower scored than the archive's
			// document would win each policy against it.
			writeJSONL(t, in, []rec{{ID: "new1", Text: base + "today", Score: 1e9}, {ID: "new2", Text: strings.TrimSuffix(base, "forest "), Score: -1e9}})
			o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8, Keep: keep,
				Out: filepath.Join(dir, "k.jsonl"), Removed: filepath.Join(dir, "r.jsonl")}
			sum, err := Run(ctx, d, o)
			if err != nil {
				t.Fatal(err)
			}
			kept, removed := readOut(t, o.Out), readOut(t, o.Removed)
			if len(kept) != 0 || len(removed) != 2 {
				t.Fatalf("%d kept, %d removed: want both records removed", len(kept), len(removed))
			}
			for _, r := range removed {
				if r.Kept != "old" || r.Cluster != 1 {
					t.Errorf("%s: cluster %d, kept %q: want cluster 1, kept \"old\"", r.ID, r.Cluster, r.Kept)
				}
			}
			if sum.Clusters != 1 {
				t.Errorf("%d clusters: want 1 (the archive's own pair is not this run's)", sum.Clusters)
			}
		})
	}
}

// TestArchiveChain: two archive documents near each other are both kept
// (neither is clustered under the other), so a record near one of them is
// removed for it even when it is not near the other; it used to be kept,
// its neighbour taken into the other's cluster.
func TestArchiveChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	block := make([]string, 12)
	for i := range block {
		block[i] = strings.Join(words(rng, 30), " ")
	}
	blocks := func(from, to int) string { return strings.Join(block[from:to], " ") }
	dir := t.TempDir()
	d := openDB(t, filepath.Join(dir, "db"))
	// A0 ~ A and A ~ R at about 0.8, A0 ~ R at about 0.64.
	if _, err := d.AddBatch(ctx, []db.Input{{ID: "A0", Text: []byte(blocks(1, 10))}, {ID: "A", Text: []byte(blocks(2, 11))}}); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "new.jsonl")
	writeJSONL(t, in, []rec{{ID: "R", Text: blocks(3, 12)}})
	o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.72,
		Out: filepath.Join(dir, "k.jsonl"), Removed: filepath.Join(dir, "r.jsonl")}
	sum, err := Run(ctx, d, o)
	if err != nil {
		t.Fatal(err)
	}
	removed := readOut(t, o.Removed)
	if len(removed) != 1 || removed[0].Kept != "A" || sum.Clusters != 1 || sum.Pairs != 1 {
		t.Fatalf("removed %+v, %d clusters, %d pairs: want R removed for A, 1 cluster, 1 pair (A0 ~ A is not this run's)", removed, sum.Clusters, sum.Pairs)
	}
}

// TestOldMarkOfSniffedFile: a mark of an earlier build (version 2) is
// trusted for a file read as its name says, but not for one compressed
// though its name does not say so: that build read its compressed bytes
// as records, so the file is read again.
func TestOldMarkOfSniffedFile(t *testing.T) {
	var plain bytes.Buffer
	for i := range 20 {
		fmt.Fprintf(&plain, `{"id":"r%d","text":"record %d says something about %d things"}`+"\n", i, i, i*7)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain.Bytes())
	zw.Close()
	for _, c := range []struct {
		name    string
		data    []byte
		resumed bool
	}{{"plain.jsonl", plain.Bytes(), true}, {"shard.jsonl", gz.Bytes(), false}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, c.name)
			if err := os.WriteFile(in, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			d := openDB(t, filepath.Join(dir, "db"))
			o := LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}
			if sum, err := Load(ctx, d, o); err != nil || sum.Stored != 20 {
				t.Fatalf("load: %+v, %v", sum, err)
			}
			// As an earlier build left it: version 2.
			abs, _ := filepath.Abs(in)
			v, err := d.Mark(ctx, markName(abs))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.UseNumber() // the size and time keep their digits
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			m["v"] = 2
			v, _ = json.Marshal(m)
			if err := d.SetMark(ctx, db.Mark{Name: markName(abs), Value: v}); err != nil {
				t.Fatal(err)
			}
			sum, err := Load(ctx, d, o)
			if err != nil {
				t.Fatal(err)
			}
			if resumed := sum.Resumed == 20; resumed != c.resumed {
				t.Fatalf("rerun: %+v: want resumed %v", sum, c.resumed)
			}
		})
	}
}
