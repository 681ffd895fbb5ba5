package dedup

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/bitvec"
)

var ctx = context.Background()

// words returns n random words from a vocabulary of 5 000.
func words(rng *rand.Rand, n int) []string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("w%d", rng.IntN(5000))
	}
	return w
}

// edit changes about frac of the words of w.
func edit(rng *rand.Rand, w []string, frac float64) []string {
	out := slices.Clone(w)
	for i := range out {
		if rng.Float64() < frac {
			out[i] = fmt.Sprintf("x%d", rng.IntN(5000))
		}
	}
	return out
}

// rec is a test record.
type rec struct {
	ID    string  `json:"id" parquet:"id"`
	Text  string  `json:"text" parquet:"text"`
	Score float64 `json:"score" parquet:"score"`
}

// dataset returns n records: random texts of 150 words, and groups of
// near duplicates (a few words edited) planted among them.
func dataset(seed uint64, n int) []rec {
	rng := rand.New(rand.NewPCG(seed, 5))
	var out []rec
	for len(out) < n {
		base := words(rng, 150)
		out = append(out, rec{ID: fmt.Sprintf("r%05d", len(out)), Text: strings.Join(base, " "), Score: float64(rng.IntN(100))})
		if rng.IntN(3) == 0 {
			for range 1 + rng.IntN(3) {
				out = append(out, rec{ID: fmt.Sprintf("r%05d", len(out)), Text: strings.Join(edit(rng, base, 0.02), " "), Score: float64(rng.IntN(100))})
			}
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func writeJSONL(t *testing.T, path string, rs []rec) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, r := range rs {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// outRec is an output record.
type outRec struct {
	ID         string  `json:"id"`
	Text       any     `json:"text"`
	Score      any     `json:"score"`
	Cluster    int     `json:"fpdb_cluster"`
	Kept       string  `json:"fpdb_kept"`
	Similarity float64 `json:"fpdb_similarity"`
	Error      string  `json:"fpdb_error"`
}

func readOut(t *testing.T, path string) []outRec {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []outRec
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r outRec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Text())
		}
		out = append(out, r)
	}
	return out
}

func openDB(t *testing.T, dir string) *db.DB {
	t.Helper()
	d, err := db.Open(dir, &db.Options{BulkLoad: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Check(ctx); err != nil && !errors.Is(err, db.ErrClosed) {
			t.Errorf("Check: %v", err)
		}
		d.Close()
	})
	return d
}

// run deduplicates in into a new database and returns the kept and
// removed records.
func run(t *testing.T, o Options) (*Summary, []outRec, []outRec) {
	t.Helper()
	dir := t.TempDir()
	o.Out = filepath.Join(dir, "kept.jsonl")
	o.Removed = filepath.Join(dir, "removed.jsonl")
	d := openDB(t, filepath.Join(dir, "db"))
	sum, err := Run(ctx, d, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sum, readOut(t, o.Out), readOut(t, o.Removed)
}

// fingerprints returns the fingerprint of each text, computed by a
// database of its own.
func fingerprints(t *testing.T, texts map[string]string) map[string][]uint64 {
	t.Helper()
	d := openDB(t, t.TempDir())
	out := map[string][]uint64{}
	for id, text := range texts {
		fp, err := d.Fingerprint(ctx, strings.NewReader(text), db.TextOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[id] = fp
	}
	return out
}

// TestRunProperties checks a dedup of planted near duplicates against
// brute force: every record is written once, in input order; every
// removed record is within the threshold of a kept one, which is named in
// its fields; and no two kept records are near duplicates.
func TestRunProperties(t *testing.T) {
	const thr = 0.8
	rs := dataset(1, 400)
	in := filepath.Join(t.TempDir(), "in.jsonl")
	writeJSONL(t, in, rs)
	sum, kept, removed := run(t, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: thr})
	if sum.Records != int64(len(rs)) || sum.Kept+sum.Removed != int64(len(rs)) || int(sum.Kept) != len(kept) || int(sum.Removed) != len(removed) {
		t.Fatalf("summary %+v for %d records, %d kept, %d removed", sum, len(rs), len(kept), len(removed))
	}
	texts := map[string]string{}
	for _, r := range rs {
		texts[r.ID] = r.Text
	}
	fps := fingerprints(t, texts)
	sim := func(a, b string) float64 { return 1 - 2*float64(bitvec.Hamming(fps[a], fps[b]))/512 }
	// Input order, each record once.
	pos := map[string]int{}
	for i, r := range rs {
		pos[r.ID] = i
	}
	for _, out := range [][]outRec{kept, removed} {
		for i := 1; i < len(out); i++ {
			if pos[out[i-1].ID] >= pos[out[i].ID] {
				t.Fatalf("output not in input order: %s before %s", out[i-1].ID, out[i].ID)
			}
		}
	}
	isKept := map[string]bool{}
	for _, r := range kept {
		isKept[r.ID] = true
		if r.Kept != r.ID || r.Similarity != 1 || r.Error != "" || r.Text != texts[r.ID] {
			t.Fatalf("kept record %+v", r)
		}
	}
	for _, r := range removed {
		if isKept[r.ID] || !isKept[r.Kept] || r.Cluster < 1 {
			t.Fatalf("removed record %+v: its kept record is not kept", r)
		}
		want := 1 - 2*float64(bitvec.Hamming(fps[r.ID], fps[r.Kept]))/512
		if s := sim(r.ID, r.Kept); s < thr || abs(r.Similarity-want) > 1e-4 {
			t.Fatalf("removed %s: similarity to %s is %.4f (field %.4f, want %.4f)", r.ID, r.Kept, s, r.Similarity, want)
		}
	}
	for i, a := range kept {
		for _, b := range kept[i+1:] {
			if s := 1 - 2*float64(bitvec.Hamming(fps[a.ID], fps[b.ID]))/512; s >= thr {
				t.Fatalf("kept records %s and %s are near duplicates (%.3f)", a.ID, b.ID, s)
			}
		}
	}
	if len(removed) == 0 {
		t.Fatal("nothing removed: the planted near duplicates were not found")
	}
}

func abs(x float64) float64 { return max(x, -x) }

// TestRunDeterministic checks that the output does not depend on the
// number of cores or the batch size.
func TestRunDeterministic(t *testing.T) {
	rs := dataset(2, 300)
	in := filepath.Join(t.TempDir(), "in.jsonl")
	writeJSONL(t, in, rs)
	var first []byte
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for i, cfg := range []struct{ procs, batch int }{{1, 1000}, {4, 7}, {2, 64}, {8, 1}} {
		runtime.GOMAXPROCS(cfg.procs)
		dir := t.TempDir()
		o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}, Batch: cfg.batch}, Threshold: 0.8, Keep: "longest",
			Out: filepath.Join(dir, "k.jsonl"), Removed: filepath.Join(dir, "r.jsonl"), Clusters: filepath.Join(dir, "c.jsonl")}
		d := openDB(t, filepath.Join(dir, "db"))
		if _, err := Run(ctx, d, o); err != nil {
			t.Fatal(err)
		}
		var all []byte
		for _, p := range []string{o.Out, o.Removed, o.Clusters} {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		if i == 0 {
			first = all
		} else if !bytes.Equal(all, first) {
			t.Fatalf("GOMAXPROCS %d, batch %d: output differs from GOMAXPROCS 1", cfg.procs, cfg.batch)
		}
	}
}

// interruptedRun runs o in a database made in dir and cancels it once its
// load has read n records; it returns the documents stored.
func interruptedRun(t *testing.T, dir string, o Options, n int64) int {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o.Progress = func(p Progress) {
		if p.Phase == "load" && p.Records >= n {
			cancel()
		}
	}
	d, err := db.Open(dir, &db.Options{BulkLoad: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(cctx, d, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	stored := d.Len()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return stored
}

// TestRunResume interrupts a dedup during its load and checks that the
// rerun stores only what was missing and writes what an uninterrupted
// run writes.
func TestRunResume(t *testing.T) {
	rs := dataset(3, 500)
	in := filepath.Join(t.TempDir(), "in.jsonl")
	writeJSONL(t, in, rs)
	dir := t.TempDir()
	o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}, Batch: 50}, Threshold: 0.8,
		Out: filepath.Join(dir, "k.jsonl"), Removed: filepath.Join(dir, "r.jsonl")}
	stored := interruptedRun(t, filepath.Join(dir, "db"), o, 200)
	if stored < 200 || stored >= 500 {
		t.Fatalf("%d stored by the interrupted run", stored)
	}
	if _, err := os.Stat(o.Out); !os.IsNotExist(err) {
		t.Fatalf("the interrupted run left an output: %v", err)
	}
	sum, err := Run(ctx, openDB(t, filepath.Join(dir, "db")), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Resumed != int64(stored) || sum.Stored != int64(500-stored) {
		t.Fatalf("rerun: resumed %d, stored %d; the first run stored %d", sum.Resumed, sum.Stored, stored)
	}
	got, _ := os.ReadFile(o.Out)
	_, kept, _ := run(t, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8})
	var want bytes.Buffer
	for _, r := range kept {
		b, _ := json.Marshal(r)
		want.Write(b)
		want.WriteByte('\n')
	}
	var gotRecs bytes.Buffer
	for _, r := range readOut(t, o.Out) {
		b, _ := json.Marshal(r)
		gotRecs.Write(b)
		gotRecs.WriteByte('\n')
	}
	if !bytes.Equal(gotRecs.Bytes(), want.Bytes()) || len(got) == 0 {
		t.Fatal("the resumed run's output differs from an uninterrupted run's")
	}
}

// TestRunResumeRefused interrupts a dedup whose input has records the
// database refuses (no words, an id with a NUL byte) in the part the
// interrupted run stored: the rerun writes them with the reasons an
// uninterrupted run gives, so both outputs and summaries are the same.
func TestRunResumeRefused(t *testing.T) {
	rs := dataset(4, 300)
	rs[3].Text = "  ...  !!!  "
	rs[40].ID = "nul\x00id"
	rs[120].Text = ""
	in := filepath.Join(t.TempDir(), "in.jsonl")
	writeJSONL(t, in, rs)
	opts := func(dir string) Options {
		return Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}, Batch: 50}, Threshold: 0.8,
			Out: filepath.Join(dir, "k.jsonl"), Removed: filepath.Join(dir, "r.jsonl")}
	}
	// With an archive as the database, it holds documents under the ids
	// of the two records it refuses, one of them a copy of another record:
	// a rerun must not take them for the records' own (they are written
	// as bad, and the archive's take no part in the clusters, as in a run
	// that was not interrupted).
	archive := func(t *testing.T, dir string) {
		d, err := db.Open(dir, &db.Options{BulkLoad: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.AddBatch(ctx, []db.Input{{ID: rs[3].ID, Text: []byte(rs[7].Text)}, {ID: rs[120].ID, Text: []byte("words of an archived document, stored before")}}); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, withArchive := range []bool{false, true} {
		t.Run(fmt.Sprintf("archive=%v", withArchive), func(t *testing.T) {
			ref := opts(t.TempDir())
			refDB := filepath.Join(t.TempDir(), "db")
			dir := t.TempDir()
			if withArchive {
				archive(t, refDB)
				archive(t, filepath.Join(dir, "db"))
			}
			want, err := Run(ctx, openDB(t, refDB), ref)
			if err != nil {
				t.Fatal(err)
			}
			if want.Skipped != 3 {
				t.Fatalf("uninterrupted run: %d skipped (%v), want 3", want.Skipped, want.SkippedReasons)
			}
			o := opts(dir)
			interruptedRun(t, filepath.Join(dir, "db"), o, 150)
			sum, err := Run(ctx, openDB(t, filepath.Join(dir, "db")), o)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Resumed < 150 {
				t.Fatalf("rerun resumed %d records", sum.Resumed)
			}
			if sum.Skipped != want.Skipped || !maps.Equal(sum.SkippedReasons, want.SkippedReasons) {
				t.Errorf("rerun: %d skipped %v, uninterrupted: %d %v", sum.Skipped, sum.SkippedReasons, want.Skipped, want.SkippedReasons)
			}
			sameFiles(t, filepath.Dir(ref.Out), dir, "k.jsonl", "r.jsonl")
		})
	}
}

// TestRunResumeStaleRefusedMarks checks that the refused marks of an
// interrupted run are not trusted by a run over another version of the
// file, or one told to Restart: a record refused then but not now is
// stored, and written as an uninterrupted run writes it.
func TestRunResumeStaleRefusedMarks(t *testing.T) {
	rs := dataset(5, 300)
	rs[3].Text = "  ...  !!!  "
	rs[20].Text = ""
	for _, how := range []string{"changed file", "restart"} {
		t.Run(how, func(t *testing.T) {
			in := filepath.Join(t.TempDir(), "in.jsonl")
			writeJSONL(t, in, rs)
			dir := t.TempDir()
			o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}, Batch: 50}, Threshold: 0.8,
				Out: filepath.Join(dir, "k.jsonl"), Removed: filepath.Join(dir, "r.jsonl")}
			interruptedRun(t, filepath.Join(dir, "db"), o, 150)
			// The file's refused records now have words.
			fixed := slices.Clone(rs)
			fixed[3].Text, fixed[20].Text = "fine words", "other words here"
			if how == "changed file" {
				writeJSONL(t, in, fixed)
				if err := os.Chtimes(in, time.Now(), time.Now().Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
			} else {
				// Same file, same marks: only Restart stores it again.
				// The records stay refused; Restart must read them again.
				fixed = rs
			}
			o2 := o
			o2.Restart = how == "restart"
			interruptedRun(t, filepath.Join(dir, "db"), o2, 150)
			sum, err := Run(ctx, openDB(t, filepath.Join(dir, "db")), o)
			if err != nil {
				t.Fatal(err)
			}
			ref := t.TempDir()
			ro := o
			ro.Out, ro.Removed = filepath.Join(ref, "k.jsonl"), filepath.Join(ref, "r.jsonl")
			want, err := Run(ctx, openDB(t, filepath.Join(t.TempDir(), "db")), ro)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Resumed < 150 || sum.Skipped != want.Skipped || !maps.Equal(sum.SkippedReasons, want.SkippedReasons) {
				t.Errorf("rerun: resumed %d, %d skipped %v; uninterrupted: %d %v", sum.Resumed, sum.Skipped, sum.SkippedReasons, want.Skipped, want.SkippedReasons)
			}
			sameFiles(t, ref, dir, "k.jsonl", "r.jsonl")
		})
	}
}

// sameFiles checks that the files names in dirs got and want are equal,
// naming the first line that differs.
func sameFiles(t *testing.T, want, got string, names ...string) {
	t.Helper()
	for _, f := range names {
		g, _ := os.ReadFile(filepath.Join(got, f))
		w, _ := os.ReadFile(filepath.Join(want, f))
		if len(w) == 0 {
			t.Fatalf("%s of an uninterrupted run is empty", f)
		}
		gl, wl := strings.Split(string(g), "\n"), strings.Split(string(w), "\n")
		for i := range max(len(gl), len(wl)) {
			if i >= len(gl) || i >= len(wl) || gl[i] != wl[i] {
				t.Errorf("%s of the resumed run differs from an uninterrupted run's at line %d (%d and %d lines):\n%.300s\nwant\n%.300s", f, i+1, len(gl), len(wl), gl[min(i, len(gl)-1)], wl[min(i, len(wl)-1)])
				break
			}
		}
	}
}

// TestShortDocuments checks the rule for documents shorter than the
// shingle width: one shingle of all their words, so that they are near
// duplicates only of documents with the same words.
func TestShortDocuments(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	var rs []rec
	seen := map[string]bool{}
	for len(rs) < 600 {
		text := strings.Join(words(rng, 1+rng.IntN(3)), " ")
		if seen[text] {
			continue
		}
		seen[text] = true
		rs = append(rs, rec{ID: fmt.Sprintf("s%04d", len(rs)), Text: text})
	}
	// Copies of the first 20, in other case and spacing.
	for i := range 20 {
		rs = append(rs, rec{ID: fmt.Sprintf("copy%02d", i), Text: "  " + strings.ToUpper(rs[i].Text) + " "})
	}
	in := filepath.Join(t.TempDir(), "short.jsonl")
	writeJSONL(t, in, rs)
	sum, kept, removed := run(t, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.5})
	if len(kept) != 600 || len(removed) != 20 || sum.Clusters != 20 {
		t.Fatalf("%d kept, %d removed, %d clusters; want 600, 20, 20", len(kept), len(removed), sum.Clusters)
	}
	for _, r := range removed {
		var i int
		fmt.Sscanf(r.ID, "copy%d", &i)
		if r.Kept != fmt.Sprintf("s%04d", i) || r.Similarity != 1 {
			t.Fatalf("removed %+v, want kept s%04d at similarity 1", r, i)
		}
	}
}

// TestCJKNearDuplicates checks scripts without spaces end to end: a
// Chinese text with one phrase changed is a near duplicate of the
// original; an unrelated Chinese text is not.
func TestCJKNearDuplicates(t *testing.T) {
	a := "自然语言处理是计算机科学领域与人工智能领域中的一个重要方向。它研究能实现人与计算机之间用自然语言进行有效通信的各种理论和方法。自然语言处理是一门融语言学、计算机科学、数学于一体的科学。因此，这一领域的研究将涉及自然语言，即人们日常使用的语言，所以它与语言学的研究有着密切的联系，但又有重要的区别。"
	b := strings.Replace(a, "有着密切的联系", "关系非常紧密", 1)
	c := "长江是亚洲第一长河和世界第三长河，也是世界上完全在一国境内的最长河流，全长六千三百多公里。长江流域是中国经济最发达的地区之一，沿岸有许多重要的城市。"
	in := filepath.Join(t.TempDir(), "zh.jsonl")
	writeJSONL(t, in, []rec{{ID: "a", Text: a}, {ID: "b", Text: b}, {ID: "c", Text: c}})
	_, kept, removed := run(t, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.7})
	if len(kept) != 2 || kept[0].ID != "a" || kept[1].ID != "c" || len(removed) != 1 || removed[0].ID != "b" || removed[0].Kept != "a" {
		t.Fatalf("kept %v, removed %v", kept, removed)
	}
	t.Logf("similarity of the edited Chinese text: %.3f", removed[0].Similarity)
}

// TestBadRecords checks that bad records are reported with their
// position, written to the removed output with the reason, and stop a
// Strict run.
func TestBadRecords(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bad.jsonl")
	lines := []string{
		`{"id": "a", "text": "one two three four five six seven"}`,
		`{"id": "b"}`,
		`{"id": "c", "text": 42}`,
		`not json`,
		`{"id": "a", "text": "the same id again here"}`,
		`{"id": "e", "text": "   ...   "}`,
		`{"id": "f", "text": "one two three four five six seven"}`,
		`{"id": "g", "text": ""}`,
	}
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var bad []string
	o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}, Bad: func(pos string, err error) { bad = append(bad, pos+": "+err.Error()) }}, Threshold: 0.8}
	sum, kept, removed := run(t, o)
	wantPos := []string{"bad.jsonl:2", "bad.jsonl:3", "bad.jsonl:4", "bad.jsonl:5", "bad.jsonl:6", "bad.jsonl:8"}
	if len(bad) != len(wantPos) {
		t.Fatalf("bad records reported: %q", bad)
	}
	for i, p := range wantPos {
		if !strings.Contains(bad[i], p+": ") {
			t.Fatalf("bad record %d reported as %q, want position %s", i, bad[i], p)
		}
	}
	// An empty text has no words, as a text of punctuation.
	if sum.Skipped != 6 || sum.SkippedReasons["id given twice"] != 1 || sum.SkippedReasons["no words"] != 2 {
		t.Fatalf("summary %+v", sum)
	}
	if len(kept) != 1 || kept[0].ID != "a" || len(removed) != 7 {
		t.Fatalf("kept %v, removed %v", kept, removed)
	}
	for _, r := range removed {
		if r.ID == "f" {
			if r.Kept != "a" || r.Error != "" {
				t.Fatalf("f: %+v", r)
			}
			continue
		}
		if r.Cluster != -1 || r.Error == "" {
			t.Fatalf("bad record written as %+v", r)
		}
	}
	o.Strict = true
	o.Out = filepath.Join(dir, "k.jsonl")
	d := openDB(t, filepath.Join(dir, "db2"))
	if _, err := Run(ctx, d, o); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Fatalf("strict run: %v", err)
	}
}

// TestKeepField checks max:FIELD and min:FIELD.
func TestKeepField(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	base := words(rng, 120)
	var rs []rec
	for i, s := range []float64{3, 9, 1, 9, 4} {
		rs = append(rs, rec{ID: fmt.Sprintf("v%d", i), Text: strings.Join(edit(rng, base, 0.01), " "), Score: s})
	}
	in := filepath.Join(t.TempDir(), "v.jsonl")
	writeJSONL(t, in, rs)
	for keep, want := range map[string]string{"max:score": "v1", "min:score": "v2", "first": "v0"} {
		_, kept, removed := run(t, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.7, Keep: keep})
		if len(kept) != 1 || kept[0].ID != want || len(removed) != 4 {
			t.Fatalf("keep %s: kept %v, want %s", keep, kept, want)
		}
	}
}

// TestKeepFieldExact: max:FIELD and min:FIELD compare values exactly:
// integers beyond 2^53 (nanosecond timestamps) and dates a few nanoseconds
// apart, which float64 would make equal (the first record then kept).
func TestKeepFieldExact(t *testing.T) {
	base := words(rand.New(rand.NewPCG(7, 7)), 120)
	dir := t.TempDir()
	for name, values := range map[string][2]string{
		"ns":     {`1704067200000000100`, `1704067200000000000`},
		"string": {`"1704067200000000100"`, `"1704067200000000000"`},
		"date":   {`"2024-01-01T00:00:00.0000001Z"`, `"2024-01-01T00:00:00Z"`},
		// Fractions: negative ones near 0 too, where 1 + f rounds.
		"negative": {`-0.3`, `-0.30000000000000004`},
		"tiny":     {`-1e-20`, `-5e-20`},
		"mixed":    {`"1e3"`, `999.5`},
	} {
		in := filepath.Join(dir, name+".jsonl")
		var b strings.Builder
		text := strings.Join(base, " ") // exact copies: one cluster, whatever the estimate
		for i, id := range []string{"late", "early"} {
			fmt.Fprintf(&b, "{\"id\": %q, \"text\": %q, \"at\": %s}\n", id, text, values[i])
		}
		if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		for keep, want := range map[string]string{"min:at": "early", "max:at": "late"} {
			_, kept, _ := run(t, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.7, Keep: keep})
			if len(kept) != 1 || kept[0].ID != want {
				t.Errorf("%s, keep %s: kept %v, want %s", name, keep, kept, want)
			}
		}
	}
}

// TestLoadRepeatedID checks that Load lets a later record replace an
// earlier one with its id whatever the batch size (as across batches).
func TestLoadRepeatedID(t *testing.T) {
	in := filepath.Join(t.TempDir(), "rep.jsonl")
	writeJSONL(t, in, []rec{{ID: "a", Text: "first version of the text here"}, {ID: "b", Text: "another record with other words"}, {ID: "a", Text: "second version of the text now"}})
	for _, batch := range []int{1, 2, 10} {
		d := openDB(t, t.TempDir())
		sum, err := Load(ctx, d, LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}, Batch: batch})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Stored != 3 || sum.Replaced != 1 || sum.Skipped != 0 || d.Len() != 2 {
			t.Fatalf("batch %d: %+v, %d documents", batch, sum, d.Len())
		}
		doc, err := d.Get(ctx, "a")
		if err != nil || !strings.Contains(doc.Source, "rep.jsonl:3") {
			t.Fatalf("batch %d: a is %+v (%v), want the record of line 3", batch, doc, err)
		}
	}
}

// TestPrefingerprintSameDocuments: a database that keeps no text gets its
// batches fingerprinted ahead of their write (db.Prepare); the documents
// stored and the records refused are those of the plain path (a database
// that keeps texts), bad records and refused documents included.
func TestPrefingerprintSameDocuments(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	rs := dataset(21, 300)
	rs = append(rs, rec{ID: "blank", Text: "  ... !! "}, rec{ID: "nul\x00id", Text: "a text with a bad id"}, rec{ID: "short", Text: "two words"})
	writeJSONL(t, in, rs)
	f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{\"id\": \"x\"}\nnot json\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	type loaded struct {
		sum  *LoadSummary
		bad  []string
		docs map[string]db.Doc
	}
	load := func(keepTexts bool) loaded {
		d, err := db.Open(filepath.Join(dir, fmt.Sprint("db-", keepTexts)), &db.Options{BulkLoad: true, NoSync: true, KeepTexts: keepTexts})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		var l loaded
		l.sum, err = Load(ctx, d, LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}, Batch: 37,
			Bad: func(pos string, err error) { l.bad = append(l.bad, pos+": "+err.Error()) }})
		if err != nil {
			t.Fatal(err)
		}
		l.docs = map[string]db.Doc{}
		for _, r := range rs {
			doc, err := d.Get(ctx, r.ID)
			if err == nil {
				doc.Added = time.Time{}
				l.docs[r.ID] = *doc
			}
		}
		if err := d.Check(ctx); err != nil {
			t.Fatal(err)
		}
		return l
	}
	pre, plain := load(false), load(true)
	if pre.sum.Stored != plain.sum.Stored || pre.sum.Skipped != plain.sum.Skipped || fmt.Sprint(pre.sum.SkippedReasons) != fmt.Sprint(plain.sum.SkippedReasons) || pre.sum.Skipped < 4 {
		t.Fatalf("summaries differ: %+v and %+v", pre.sum, plain.sum)
	}
	if !slices.Equal(pre.bad, plain.bad) {
		t.Fatalf("bad records differ:\n%q\n%q", pre.bad, plain.bad)
	}
	if len(pre.docs) != len(plain.docs) || len(pre.docs) < 300 {
		t.Fatalf("%d and %d documents", len(pre.docs), len(plain.docs))
	}
	for id, a := range pre.docs {
		b := plain.docs[id]
		if !slices.Equal(a.Fingerprint, b.Fingerprint) || a.ContentHash != b.ContentHash || a.Size != b.Size || a.Words != b.Words || a.Shingles != b.Shingles || a.Source != b.Source {
			t.Fatalf("%s: %+v, plain path %+v", id, a, b)
		}
	}
}

// TestLoadCancelled: a load cancelled midway returns an error, or, when
// the cancellation came too late to stop it, stored every record: never
// success with documents missing.
func TestLoadCancelled(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.jsonl")
	rs := dataset(8, 400)
	writeJSONL(t, in, rs)
	for i := range 20 {
		d := openDB(t, t.TempDir())
		cctx, cancel := context.WithCancel(ctx)
		batches := 0
		sum, err := Load(cctx, d, LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}, Batch: 10 + i,
			Bad: func(string, error) {},
			Progress: func(Progress) {
				if batches++; batches == 1+i%7 {
					cancel()
				}
			}})
		cancel()
		if err == nil && (sum.Records != int64(len(rs)) || d.Len() != len(rs)) {
			t.Fatalf("run %d: no error, but %d records read and %d documents stored of %d", i, sum.Records, d.Len(), len(rs))
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("run %d: %v", i, err)
		}
	}
}

// TestRunPlans checks that every exact plan of the pairs gives the same
// output, and that an approximate one is reported with its expected recall
// and removes only records within the threshold of a kept one.
func TestRunPlans(t *testing.T) {
	const thr = 0.8
	rs := dataset(4, 300)
	in := filepath.Join(t.TempDir(), "in.jsonl")
	writeJSONL(t, in, rs)
	tau, err := openDB(t, t.TempDir()).ExactTau(thr)
	if err != nil {
		t.Fatal(err)
	}
	var first []byte
	var exact *Summary
	for i, p := range []db.Plan{{}, {Kind: db.PlanScan}, {Kind: db.PlanProbe, Tau: tau}, {Kind: db.PlanProbe, Tau: tau + 1}} {
		dir := t.TempDir()
		o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: thr,
			Out: filepath.Join(dir, "k.jsonl"), Removed: filepath.Join(dir, "r.jsonl"), Plan: p}
		sum, err := Run(ctx, openDB(t, filepath.Join(dir, "db")), o)
		if err != nil {
			t.Fatalf("plan %v: %v", p, err)
		}
		if sum.Recall != 1 || sum.Plan == "" {
			t.Fatalf("plan %v: summary plan %q, recall %v", p, sum.Plan, sum.Recall)
		}
		var all []byte
		for _, f := range []string{o.Out, o.Removed} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		if i == 0 {
			first, exact = all, sum
		} else if !bytes.Equal(all, first) || sum.Pairs != exact.Pairs {
			t.Fatalf("plan %v (%s): %d pairs, output differs from the auto plan's (%d pairs)", p, sum.Plan, sum.Pairs, exact.Pairs)
		}
	}
	if exact.Pairs == 0 {
		t.Fatal("no pairs found: the test proves nothing")
	}
	for _, p := range []db.Plan{{Kind: db.PlanApprox, MinRecall: 0.5}, {Kind: db.PlanProbe, Tau: tau, MinHits: 32}} {
		sum, kept, removed := run(t, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: thr, Plan: p})
		if sum.Pairs > exact.Pairs || sum.Kept+sum.Removed != int64(len(rs)) || sum.Recall < p.MinRecall {
			t.Fatalf("plan %v (%s): %d pairs (exact %d), %d kept + %d removed of %d, recall %v", p, sum.Plan, sum.Pairs, exact.Pairs, sum.Kept, sum.Removed, len(rs), sum.Recall)
		}
		if p.Kind == db.PlanProbe && !(sum.Recall < 1) {
			t.Fatalf("plan %v: a count filter of every group is reported exact (recall %v)", p, sum.Recall)
		}
		isKept := map[string]bool{}
		for _, r := range kept {
			isKept[r.ID] = true
		}
		for _, r := range removed {
			if !isKept[r.Kept] || r.Similarity < thr {
				t.Fatalf("plan %v: removed %+v", p, r)
			}
		}
	}
}

// TestRunRefusesBadPlan: a plan that cannot run is refused before any
// record is read, and leaves the database empty.
func TestRunRefusesBadPlan(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.jsonl")
	writeJSONL(t, in, dataset(5, 20))
	for _, p := range []db.Plan{{Kind: db.PlanProbe, Tau: 0}, {Kind: db.PlanApprox}, {Kind: db.PlanApprox, MinRecall: 1.5}, {Kind: db.PlanKind(99)}} {
		dir := t.TempDir()
		d := openDB(t, filepath.Join(dir, "db"))
		_, err := Run(ctx, d, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8,
			Out: filepath.Join(dir, "k.jsonl"), Plan: p})
		if err == nil || d.Len() != 0 {
			t.Fatalf("plan %v: error %v, %d documents stored", p, err, d.Len())
		}
		if p.Kind == db.PlanProbe && !errors.Is(err, db.ErrInfeasiblePlan) {
			t.Errorf("plan %v: %v, want ErrInfeasiblePlan", p, err)
		}
	}
}

// TestRunRefusesLinkedOutputs: an output that is an input or another
// output under another name (a symbolic link to it, a hard link, a path
// through a linked directory) is refused before any record is read, and
// the input is left intact; an input read through a link to another file
// is not refused.
func TestRunRefusesLinkedOutputs(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.jsonl")
	writeJSONL(t, data, dataset(6, 20))
	want, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	link, hard, sub, subLink := filepath.Join(dir, "link.jsonl"), filepath.Join(dir, "hard.jsonl"), filepath.Join(dir, "sub"), filepath.Join(dir, "sublink")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("data.jsonl", link); err != nil {
		t.Skipf("no symbolic links: %v", err)
	}
	if err := os.Link(data, hard); err != nil {
		t.Skipf("no hard links: %v", err)
	}
	if err := os.Symlink("sub", subLink); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name                   string
		in                     string
		out, removed, clusters string
		want                   string
	}{
		{"out is the input's target", link, data, "", "", "the out file " + data + " is the input " + link},
		{"out links to the input", data, link, "", "", "the out file " + link + " is the input " + data},
		{"out is a hard link of the input", hard, data, "", "", "the out file " + data + " is the input " + hard},
		{"removed links to the input", data, filepath.Join(dir, "k.jsonl"), link, "", "the removed file " + link + " is the input " + data},
		{"clusters is a hard link of the input", link, filepath.Join(dir, "k.jsonl"), "", hard, "the clusters file " + hard + " is the input " + link},
		{"removed is out through a linked directory", data, filepath.Join(sub, "k.jsonl"), filepath.Join(subLink, "k.jsonl"), "", "the removed file " + filepath.Join(subLink, "k.jsonl") + " is the out file " + filepath.Join(sub, "k.jsonl")},
		{"clusters is removed through a linked directory", data, filepath.Join(dir, "k.jsonl"), filepath.Join(subLink, "r.jsonl"), filepath.Join(sub, "r.jsonl"), "the clusters file " + filepath.Join(sub, "r.jsonl") + " is the removed file " + filepath.Join(subLink, "r.jsonl")},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := openDB(t, filepath.Join(t.TempDir(), "db"))
			_, err := Run(ctx, d, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{c.in}}, Threshold: 0.8,
				Out: c.out, Removed: c.removed, Clusters: c.clusters})
			if !errors.Is(err, db.ErrInvalidOptions) || !strings.Contains(err.Error(), c.want) || d.Len() != 0 {
				t.Fatalf("error %v (want %q), %d documents stored", err, c.want, d.Len())
			}
			if got, err := os.ReadFile(data); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("the input was changed (%d bytes, %v)", len(got), err)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*", ".fpdb-part.*")); len(left) > 0 {
				t.Fatalf("left %q", left)
			}
		})
	}
	// An input read through a link, with outputs of other files, runs.
	d := openDB(t, filepath.Join(t.TempDir(), "db"))
	if _, err := Run(ctx, d, Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{link}}, Threshold: 0.8,
		Out: filepath.Join(subLink, "k.jsonl"), Removed: filepath.Join(sub, "r.jsonl")}); err != nil {
		t.Fatalf("an input through a link: %v", err)
	}
	if got, err := os.ReadFile(data); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the input was changed (%d bytes, %v)", len(got), err)
	}
}

// TestRunRefusesTwoStdouts: two outputs on standard output ("-") are
// refused by Check before any input is read (a missing input is not
// noticed), and by Run before any record is stored or written.
func TestRunRefusesTwoStdouts(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, in, dataset(7, 20))
	for _, c := range []struct {
		out, removed, clusters string
		want                   string
	}{
		{"-", "-", "", "--out - and --removed - both write to standard output"},
		{"-", "", "-", "--out - and --clusters - both write to standard output"},
		{filepath.Join(dir, "k.jsonl"), "-", "-", "--removed - and --clusters - both write to standard output"},
		{"-", "-", "-", "--out - and --removed - both write to standard output"},
	} {
		o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{filepath.Join(dir, "missing.jsonl")}}, Threshold: 0.8,
			Out: c.out, Removed: c.removed, Clusters: c.clusters}
		if err := Check(o); !errors.Is(err, db.ErrInvalidOptions) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check %+v: %v, want %q", c, err, c.want)
		}
		var stdout bytes.Buffer
		o.Inputs, o.Stdout = []string{in}, &stdout
		d := openDB(t, filepath.Join(t.TempDir(), "db"))
		if _, err := Run(ctx, d, o); !errors.Is(err, db.ErrInvalidOptions) || !strings.Contains(err.Error(), c.want) || d.Len() != 0 || stdout.Len() != 0 {
			t.Errorf("Run %+v: %v (want %q), %d documents stored, %d bytes written", c, err, c.want, d.Len(), stdout.Len())
		}
	}
}

// TestLoadTextsIntact: texts copied into the reused arrays of batches
// reach the database intact, whatever the batch size, with ids repeated
// within and across batches (a repeat starts a new batch), fingerprinted
// ahead (no texts kept) or not.
func TestLoadTextsIntact(t *testing.T) {
	rs := dataset(6, 400)
	for i := 0; i < len(rs); i += 7 {
		rs[i].ID = rs[max(0, i-3)].ID // a repeat: the later record replaces the earlier
	}
	in := filepath.Join(t.TempDir(), "in.jsonl")
	writeJSONL(t, in, rs)
	last := map[string]string{}
	for _, r := range rs {
		last[r.ID] = r.Text
	}
	want := fingerprints(t, last)
	for _, batch := range []int{1, 5, 64} {
		for _, keep := range []bool{true, false} {
			dir := t.TempDir()
			d, err := db.Open(dir, &db.Options{BulkLoad: true, NoSync: true, KeepTexts: keep, AuditLog: keep})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Load(ctx, d, LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}, Batch: batch}); err != nil {
				t.Fatal(err)
			}
			for id, fp := range want {
				doc, err := d.Get(ctx, id)
				if err != nil || !slices.Equal(doc.Fingerprint, fp) {
					t.Fatalf("batch %d, texts kept %v: %s: fingerprint differs from its text's (%v)", batch, keep, id, err)
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestBadRecordsColumnarOutputs: JSON Lines records bad for their text
// (missing, not a string) are written as bad records to CSV and Parquet
// outputs, whose columns come from the good records.
func TestBadRecordsColumnarOutputs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bad.jsonl")
	lines := `{"id": "b"}` + "\n" + `{"id": "a", "text": "one two three four five six seven"}` + "\n" +
		`{"id": "c", "text": 42}` + "\n" + `{"id": "f", "text": "one two three four five six seven"}` + "\n"
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"csv", "parquet"} {
		out := t.TempDir()
		d := openDB(t, filepath.Join(out, "db"))
		o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8,
			Out: filepath.Join(out, "kept."+f), Removed: filepath.Join(out, "removed."+f)}
		sum, err := Run(ctx, d, o)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if sum.Kept != 1 || sum.Removed != 3 || sum.Skipped != 2 {
			t.Fatalf("%s: %+v", f, sum)
		}
		if f == "csv" {
			b, err := os.ReadFile(o.Removed)
			if err != nil || !strings.Contains(string(b), `missing field`) || !strings.Contains(string(b), "not a string") {
				t.Fatalf("removed.csv (%v):\n%s", err, b)
			}
		}
	}
}

// TestRerunDisowns reruns a dedup on the database of an earlier run with a
// smaller MaxText, which makes the record kept for a cluster bad: the
// rerun writes it as bad and no record names it as kept (its stored
// document takes no part in the clusters), and a record the database
// refused in the earlier run is written as bad too. Resumed or restarted,
// the rerun keeps what a run on a new database keeps.
func TestRerunDisowns(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	base := words(rng, 150)
	long := strings.Join(append(slices.Clone(base), "and", "some", "more", "words"), " ")
	lines := []rec{
		{ID: "long", Text: long},
		{ID: "near1", Text: strings.Join(edit(rng, base, 0.01), " ")},
		{ID: "near2", Text: strings.Join(edit(rng, base, 0.01), " ")},
		{ID: "nowords", Text: "   ...   "},
	}
	for _, r := range dataset(8, 60) {
		lines = append(lines, r)
	}
	maxText := len(long) - 1
	for _, r := range lines[1:] {
		if len(r.Text) > maxText {
			t.Fatalf("record %s is longer than %d", r.ID, maxText)
		}
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, in, lines)
	opts := func(out string) Options {
		return Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8,
			Out: filepath.Join(dir, out+"-kept.jsonl"), Removed: filepath.Join(dir, out+"-removed.jsonl")}
	}
	d := openDB(t, filepath.Join(dir, "db"))
	first, err := Run(ctx, d, opts("first"))
	if err != nil {
		t.Fatal(err)
	}
	if kept := readOut(t, filepath.Join(dir, "first-kept.jsonl")); !slices.ContainsFunc(kept, func(r outRec) bool { return r.ID == "long" }) || first.Clusters == 0 {
		t.Fatalf("the first run did not keep the long record for its cluster: %+v", kept)
	}
	// The reference: a new database, the smaller MaxText.
	o := opts("fresh")
	o.MaxText = maxText
	if _, err := Run(ctx, openDB(t, filepath.Join(dir, "fresh-db")), o); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	for _, restart := range []bool{false, true} {
		name := fmt.Sprintf("restart-%v", restart)
		o := opts(name)
		o.MaxText, o.Restart = maxText, restart
		sum, err := Run(ctx, d, o)
		if err != nil {
			t.Fatal(err)
		}
		if !restart && sum.Resumed != int64(len(lines)) {
			t.Fatalf("%s: resumed %d of %d records", name, sum.Resumed, len(lines))
		}
		kept, removed := readOut(t, o.Out), readOut(t, o.Removed)
		isKept := map[string]bool{}
		for _, r := range kept {
			isKept[r.ID] = true
		}
		errs := map[string]string{}
		for _, r := range removed {
			switch {
			case r.Error != "":
				errs[r.ID] = r.Error
				if r.Cluster != -1 {
					t.Fatalf("%s: bad record %+v", name, r)
				}
			case !isKept[r.Kept]:
				t.Fatalf("%s: removed record %s names %q as kept, which is not in the kept output", name, r.ID, r.Kept)
			}
		}
		if !strings.Contains(errs["long"], "too long") || !strings.Contains(errs["nowords"], "refused") && !strings.Contains(errs["nowords"], "no words") || len(errs) != 2 {
			t.Fatalf("%s: bad records %q", name, errs)
		}
		// Refused by this run's database, or by the earlier run's: the
		// same reason either way.
		wantReason := "no words"
		if sum.Skipped != 2 || sum.SkippedReasons["too long"] != 1 || sum.SkippedReasons[wantReason] != 1 || sum.Excluded != 1 {
			t.Fatalf("%s: %d skipped (%v), %d stored documents excluded; want 2 (too long, %s), 1 excluded", name, sum.Skipped, sum.SkippedReasons, sum.Excluded, wantReason)
		}
		got, err := os.ReadFile(o.Out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the kept output differs from a run on a new database:\n%s\nwant\n%s", name, got, want)
		}
	}
}

// TestRefusedMarksRoundTrip checks the refused marks' encoding, parts
// included, and that a corrupt value is an error.
func TestRefusedMarksRoundTrip(t *testing.T) {
	nums := []int64{0, 1, 7, 1 << 40}
	for i := range 2*refusedPart + 5 {
		nums = append(nums, 1<<40+int64(3*i+1))
	}
	ms := refusedMarksOf("refused:/x#", 1<<41, nums)
	if len(ms) != 3 {
		t.Fatalf("%d marks for %d numbers", len(ms), len(nums))
	}
	var got []int64
	for _, m := range ms {
		if len(m.Value) > db.MaxMarkValue || !strings.HasPrefix(m.Name, "refused:/x#0000020000000000") || len(m.Name) != len("refused:/x#")+20 {
			t.Fatalf("mark %q of %d bytes", m.Name, len(m.Value))
		}
		var err error
		if got, err = decodeRefused(m.Value, got); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, nums) {
		t.Fatalf("decoded %d numbers, want %d", len(got), len(nums))
	}
	for _, bad := range [][]byte{nil, {2}, {1, 0x80}, {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}} {
		if _, err := decodeRefused(bad, nil); err == nil {
			t.Errorf("decodeRefused(%x) accepted", bad)
		}
	}
}

// TestRunResumeOddCases checks that a run writes what a fresh run writes
// after: a Restart run given the same file twice (its second reading must
// not delete the refused marks the first wrote), and a Load of the file
// whose records repeat an id, the later one refused (Load keeps the last
// record of an id and Run the first: Run does not resume from Load's
// marks).
func TestRunResumeOddCases(t *testing.T) {
	for _, c := range []string{"restart twice", "load then run"} {
		t.Run(c, func(t *testing.T) {
			rs := dataset(4, 300)
			rs[3].Text = "  ...  !!!  "
			rs[120].Text = ""
			rs[150].ID, rs[150].Text = rs[10].ID, ""
			in := filepath.Join(t.TempDir(), "in.jsonl")
			writeJSONL(t, in, rs)
			opts := func(dir string) Options {
				o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}, Batch: 50}, Threshold: 0.8,
					Out: filepath.Join(dir, "k.jsonl"), Removed: filepath.Join(dir, "r.jsonl")}
				if c == "restart twice" {
					o.Inputs = []string{in, in}
				}
				return o
			}
			ref := t.TempDir()
			if _, err := Run(ctx, openDB(t, filepath.Join(t.TempDir(), "db")), opts(ref)); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			dbDir := filepath.Join(dir, "db")
			d, err := db.Open(dbDir, &db.Options{BulkLoad: true})
			if err != nil {
				t.Fatal(err)
			}
			o := opts(dir)
			if c == "restart twice" {
				o.Restart = true
				_, err = Run(ctx, d, o)
				o.Restart = false
			} else {
				_, err = Load(ctx, d, o.LoadOptions)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(ctx, openDB(t, dbDir), o); err != nil {
				t.Fatal(err)
			}
			sameFiles(t, ref, dir, "k.jsonl", "r.jsonl")
		})
	}
}

// TestLongPathRefusedMarks checks that a file whose absolute path is as
// long as a mark name allows gets refused marks too (their names do not
// grow with the path).
func TestLongPathRefusedMarks(t *testing.T) {
	p := t.TempDir()
	for len(p) < 4075-260 {
		p = filepath.Join(p, strings.Repeat("d", 200))
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Skipf("this file system does not take a path of %d bytes: %v", len(p), err)
	}
	in := filepath.Join(p, strings.Repeat("f", 4075-len(p)-1-6)+".jsonl")
	rs := dataset(4, 120)
	rs[80].Text = ""
	writeJSONL(t, in, rs)
	d := openDB(t, filepath.Join(t.TempDir(), "db"))
	sum, err := Load(ctx, d, LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}, Batch: 50})
	if err != nil || sum.Stored != 119 || sum.Skipped != 1 {
		t.Fatalf("Load: %+v, %v", sum, err)
	}
	if ms, err := d.Marks(ctx, refusedPrefix); err != nil || len(ms) != 1 {
		t.Fatalf("refused marks: %+v, %v", ms, err)
	}
}
