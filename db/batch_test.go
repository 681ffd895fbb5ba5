package db

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// randFP returns a random fingerprint of k bits.
func randFP(r *rand.Rand, k int) []uint64 {
	fp := make([]uint64, k/64)
	for i := range fp {
		fp[i] = r.Uint64()
	}
	return fp
}

// nearFP returns fp with up to flips random bits flipped.
func nearFP(r *rand.Rand, fp []uint64, flips int) []uint64 {
	out := slices.Clone(fp)
	for range flips {
		j := r.IntN(64 * len(fp))
		out[j/64] ^= 1 << (j % 64)
	}
	return out
}

// fpBatch returns n fingerprint documents "prefix-i", about a third of
// them near copies of an earlier one.
func fpBatch(r *rand.Rand, prefix string, n, k int) []Input {
	docs := make([]Input, n)
	for i := range docs {
		fp := randFP(r, k)
		if i > 0 && r.IntN(3) == 0 {
			fp = nearFP(r, docs[r.IntN(i)].Fingerprint, r.IntN(k/8))
		}
		docs[i] = Input{ID: fmt.Sprintf("%s-%05d", prefix, i), Fingerprint: fp}
	}
	return docs
}

// addBatch calls AddBatch and fails the test on an error or a skip.
func addBatch(t testing.TB, d *DB, docs []Input) *BatchResult {
	t.Helper()
	res, err := d.AddBatch(ctx, docs)
	if err != nil {
		t.Fatalf("AddBatch: %v", err)
	}
	if len(res.Skipped) > 0 {
		t.Fatalf("AddBatch skipped %d: first %v", len(res.Skipped), res.Skipped[0])
	}
	return res
}

// sameAnswers fails unless a and b answer every probe query alike.
func sameAnswers(t *testing.T, a, b *DB, probes [][]uint64, thresholds ...float64) {
	t.Helper()
	for _, thr := range thresholds {
		for i, q := range probes {
			ra, err := a.QueryFingerprint(ctx, q, QueryOptions{Threshold: thr})
			if err != nil {
				t.Fatal(err)
			}
			rb, err := b.QueryFingerprint(ctx, q, QueryOptions{Threshold: thr})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ra.Matches, rb.Matches) {
				t.Fatalf("probe %d at %.2f: %v vs %v", i, thr, ra.Matches, rb.Matches)
			}
		}
	}
}

func TestAddBatchEqualsAddOneByOne(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	bulk := openTest(t, "", nil)
	single := openTest(t, "", nil)
	k := bulk.Params().K
	var probes [][]uint64
	for round := range 4 {
		docs := fpBatch(r, fmt.Sprint("fp", round), 300, k)
		// Texts too, and ids that replace documents of earlier rounds.
		for i := range 20 {
			docs = append(docs, Input{ID: fmt.Sprintf("text-%d-%d", round, i), Text: []byte(text(uint64(i), 200)), Source: "s"})
		}
		for i := range 10 {
			if round > 0 {
				docs[i].ID = fmt.Sprintf("text-%d-%d", round-1, i) // replaces a text of the last round
			}
		}
		res := addBatch(t, bulk, docs)
		if round > 0 && res.Replaced != 10 {
			t.Fatalf("round %d: %d replaced, want 10", round, res.Replaced)
		}
		for _, bd := range docs {
			var err error
			if bd.Text != nil {
				_, err = single.Add(ctx, Input{ID: bd.ID, Text: bd.Text, Source: bd.Source}, nil)
			} else {
				_, err = single.Add(ctx, Input{ID: bd.ID, Fingerprint: bd.Fingerprint}, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			if bd.Fingerprint != nil {
				probes = append(probes, nearFP(r, bd.Fingerprint, 20))
			}
		}
	}
	if bulk.Stats().Docs != single.Stats().Docs {
		t.Fatalf("%d documents in bulk, %d one by one", bulk.Stats().Docs, single.Stats().Docs)
	}
	sameAnswers(t, bulk, single, probes[:200], 0.6, 0.9)
	// Text documents: same fingerprint, hash and metadata as Add.
	for i := range 20 {
		id := fmt.Sprintf("text-3-%d", i)
		a, err := bulk.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		b, err := single.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Fingerprint, b.Fingerprint) || a.ContentHash != b.ContentHash ||
			a.Size != b.Size || a.Words != b.Words || a.Source != b.Source {
			t.Fatalf("%s: bulk %+v, one by one %+v", id, a, b)
		}
	}
}

func TestAddBatchSkips(t *testing.T) {
	d := openTest(t, "", nil)
	k := d.Params().K
	openErr := errors.New("cannot open")
	docs := []Input{
		{ID: "ok", Text: []byte("a perfectly fine little document")},
		{ID: "", Text: []byte("no id")},
		{ID: "binary", Text: []byte("abc\x00\x01\x02def")},
		{ID: "empty", Text: []byte(" ... ")},
		{ID: "short-fp", Fingerprint: []uint64{1}},
		{ID: "ok", Text: []byte("the same id again")},
		{ID: "both", Text: []byte("x"), Fingerprint: make([]uint64, k/64)},
		{ID: "none"},
		{ID: "open-fails", Open: func() (io.ReadCloser, error) { return nil, openErr }},
		{ID: "opened", Open: func() (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader("text read through Open")), nil
		}},
		{ID: "fp", Fingerprint: make([]uint64, k/64), Added: time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)},
	}
	res, err := d.AddBatch(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]error{
		"": ErrInvalidID, "binary": ErrBinary, "empty": ErrNoWords, "short-fp": ErrBadFingerprint,
		"ok": ErrDuplicateInBatch, "both": ErrBadInput, "none": ErrBadInput, "open-fails": openErr,
	}
	if res.Stored != 3 || len(res.Skipped) != len(want) {
		t.Fatalf("stored %d, skipped %v", res.Stored, res.Skipped)
	}
	for _, s := range res.Skipped {
		if !errors.Is(s.Err, want[s.ID]) || docs[s.Index].ID != s.ID {
			t.Errorf("skip %d %q: %v, want %v", s.Index, s.ID, s.Err, want[s.ID])
		}
	}
	doc, err := d.Get(ctx, "fp")
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Added.Equal(docs[10].Added) {
		t.Errorf("Added %v, want %v", doc.Added, docs[10].Added)
	}
	if doc, err := d.Get(ctx, "opened"); err != nil || doc.Words != 4 {
		t.Errorf("opened: %+v, %v", doc, err)
	}
	// Nothing to store: no error, nothing written.
	res, err = d.AddBatch(ctx, []Input{{ID: "x"}})
	if err != nil || res.Stored != 0 || len(res.Skipped) != 1 {
		t.Fatalf("all skipped: %+v, %v", res, err)
	}
}

func TestAddBatchReadOnlyAndClosed(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, nil)
	addBatch(t, d, []Input{{ID: "a", Text: []byte("one two three four five")}})
	closeChecked(t, d)
	if _, err := d.AddBatch(ctx, []Input{{ID: "b", Text: []byte("six seven")}}); !errors.Is(err, ErrClosed) {
		t.Errorf("closed: %v", err)
	}
	ro := openTest(t, dir, &Options{ReadOnly: true})
	if _, err := ro.AddBatch(ctx, []Input{{ID: "b", Text: []byte("six seven")}}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only: %v", err)
	}
}

// TestAddBatchCrash loads batches without sync and simulates power losses
// that keep a random part of the unsynced data: each reopened database
// must hold exactly the first j batches for some j, and pass Check.
func TestAddBatchCrash(t *testing.T) {
	t.Run("postings per batch", func(t *testing.T) { testAddBatchCrash(t, false, false, false) })
	t.Run("bulk load", func(t *testing.T) { testAddBatchCrash(t, true, false, false) })
	t.Run("texts kept", func(t *testing.T) { testAddBatchCrash(t, true, true, false) })
	t.Run("checked (AddEach)", func(t *testing.T) { testAddBatchCrash(t, false, true, true) })
}

// testAddBatchCrash takes crash clones while batches are added (bulk: with
// postings deferred and flushed every 700 documents, so clones catch
// flushes too; texts: text documents in a database that keeps texts;
// each: every batch checked and stored by AddEach); each clone must hold
// whole batches, with their texts, and pass Check.
func testAddBatchCrash(t *testing.T, bulk, texts, each bool) {
	r := rand.New(rand.NewPCG(9, 9))
	mem := vfs.NewCrashableMem()
	d, err := Open("db", &Options{fs: mem, NoSync: true, BulkLoad: bulk, KeepTexts: texts})
	if err != nil {
		t.Fatal(err)
	}
	d.flushAt = 700
	const batches, per = 12, 150
	k := d.Params().K
	textOf := func(j int) string { return text(uint64(j), 40) }
	for j := range batches {
		docs := fpBatch(r, fmt.Sprintf("b%02d", j), per, k)
		if texts {
			for i := range docs {
				docs[i].Fingerprint, docs[i].Text = nil, []byte(textOf(j*per+i))
			}
		}
		if !each {
			addBatch(t, d, docs)
			continue
		}
		res, err := d.AddEach(ctx, docs, &AddOptions{Threshold: 0.5, Reject: true})
		if err != nil || len(res.Skipped) > 0 {
			t.Fatalf("AddEach: %v %+v", err, res)
		}
		for i, r := range res.Results {
			if !r.Stored {
				t.Fatalf("AddEach: %s not stored: %+v", docs[i].ID, r)
			}
		}
	}
	var clones []*vfs.MemFS
	for range 6 {
		clones = append(clones, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: r.IntN(101), RNG: r}))
	}
	if bulk && d.Stats().Deferred == 0 {
		t.Fatal("no deferred postings at the end: the bulk case proves nothing")
	}
	closeChecked(t, d)
	for i, fs := range clones {
		c, err := Open("db", &Options{fs: fs})
		if err != nil {
			t.Fatalf("clone %d: %v", i, err)
		}
		n := c.Stats().Docs
		if n%per != 0 {
			t.Fatalf("clone %d: %d documents, not a whole number of batches of %d", i, n, per)
		}
		for j := range batches {
			id := fmt.Sprintf("b%02d-%05d", j, per-1)
			_, err := c.Get(ctx, id)
			present := j < n/per
			if present != (err == nil) {
				t.Fatalf("clone %d with %d batches: batch %d present=%v (%v)", i, n/per, j, err == nil, err)
			}
			if texts && present {
				if st, err := c.Text(ctx, id); err != nil || string(st.Text) != textOf(j*per+per-1) {
					t.Fatalf("clone %d: text of %s: %v", i, id, err)
				}
			}
		}
		closeChecked(t, c)
	}
}

// BenchmarkAddBatch stores fingerprints in synced batches into a database
// on disk; FPDB_BULK_N sets the total (default 200 000) and FPDB_BULK_BATCH
// the batch size (default 10 000) and FPDB_BULK_MEMTABLE_MB the memtable
// size (default 64, as `fpdb add --bulk` uses), FPDB_GROUP_BITS the width
// of the index groups (default 16). It reports documents per
// second, Close included, with Options.BulkLoad (as `fpdb add --bulk`) and
// without (postings written with every batch).
func BenchmarkAddBatch(b *testing.B) {
	n, batch, memMB, bits := 200_000, 10_000, 64, DefaultGroupWidth
	for name, p := range map[string]*int{"FPDB_BULK_N": &n, "FPDB_BULK_BATCH": &batch, "FPDB_BULK_MEMTABLE_MB": &memMB, "FPDB_GROUP_BITS": &bits} {
		if v := os.Getenv(name); v != "" {
			var err error
			if *p, err = strconv.Atoi(v); err != nil || *p <= 0 {
				b.Fatalf("%s=%q: want a positive integer", name, v)
			}
		}
	}
	// The fingerprints in one flat array, the inputs made batch by batch:
	// a loader streams its input, and n inputs held at once (1.2 GB of
	// small objects at 10 M) would make the load a garbage collector
	// benchmark.
	r := rand.New(rand.NewPCG(1, 1))
	flat := make([]uint64, n*DefaultK/64)
	for i := range flat {
		flat[i] = r.Uint64()
	}
	docs := make([]Input, 0, batch)
	batchAt := func(lo int) []Input {
		docs = docs[:0]
		for i := lo; i < min(lo+batch, n); i++ {
			docs = append(docs, Input{ID: "doc-" + strconv.Itoa(i), Fingerprint: flat[i*DefaultK/64 : (i+1)*DefaultK/64]})
		}
		return docs
	}
	for _, bulk := range []bool{true, false} {
		name := "bulk-load"
		if !bulk {
			name = "postings-per-batch"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				d, err := Open(b.TempDir(), &Options{MemTableSize: int64(memMB) << 20, BulkLoad: bulk, GroupWidths: EqualWidths(DefaultK, bits)})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				for lo := 0; lo < n; lo += batch {
					addBatch(b, d, batchAt(lo))
				}
				// Close writes the deferred postings: part of the load.
				if err := d.Close(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(n)/time.Since(start).Seconds(), "docs/s")
			}
		})
	}
}

// BenchmarkAddBatchText fingerprints and stores 2 000-word texts in batches
// of 1 000 (fingerprinting on all cores).
func BenchmarkAddBatchText(b *testing.B) {
	const n = 4000
	docs := make([]Input, n)
	for i := range docs {
		docs[i] = Input{ID: "doc-" + strconv.Itoa(i), Text: []byte(text(uint64(i), 2000))}
	}
	for b.Loop() {
		b.StopTimer()
		d, err := Open(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		for lo := 0; lo < n; lo += 1000 {
			addBatch(b, d, docs[lo:lo+1000])
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "docs/s")
		b.StopTimer()
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// TestBulkLoadEqualsNormal loads the same batches, replacements and
// deletes into a bulk-load database (postings deferred, flushed every 700
// documents) and a normal one: both answer every query alike while
// loading, after Close and reopen, and Check passes throughout.
func TestBulkLoadEqualsNormal(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	bulk, err := Open(dir, &Options{BulkLoad: true})
	if err != nil {
		t.Fatal(err)
	}
	bulk.flushAt = 700
	normal := openTest(t, "", nil)
	k := normal.Params().K
	var probes [][]uint64
	flushes, last := 0, 0
	for round := range 5 {
		docs := fpBatch(r, fmt.Sprint("fp", round), 300, k)
		for i := range 10 {
			if round > 0 {
				docs[i].ID = fmt.Sprintf("fp%d-%05d", round-1, i+50) // replaces
			}
		}
		for _, d := range []*DB{bulk, normal} {
			addBatch(t, d, docs)
			if _, err := d.Add(ctx, Input{ID: fmt.Sprint("single", round), Fingerprint: docs[20].Fingerprint}, nil); err != nil {
				t.Fatal(err)
			}
			for i := range 15 {
				if err := d.Delete(ctx, fmt.Sprintf("fp%d-%05d", round, 100+i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, bd := range docs[:40] {
			probes = append(probes, nearFP(r, bd.Fingerprint, 15))
		}
		n := bulk.Stats().Deferred
		if n < last {
			flushes++
		}
		last = n
		sameAnswers(t, bulk, normal, probes, 0.6, 0.8, 0.95)
		if err := bulk.Check(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if bulk.Stats().Deferred == 0 {
		t.Fatal("nothing deferred at the end: the test proves nothing")
	}
	if bulk.Stats().Docs != normal.Stats().Docs {
		t.Fatalf("%d documents in bulk, %d in normal", bulk.Stats().Docs, normal.Stats().Docs)
	}
	if err := bulk.Close(); err != nil {
		t.Fatal(err)
	}
	re := openTest(t, dir, nil)
	if n := re.Stats().Deferred; n != 0 {
		t.Fatalf("%d documents still deferred after Close", n)
	}
	sameAnswers(t, re, normal, probes, 0.6, 0.8, 0.95)
	if flushes == 0 {
		t.Fatal("no flush while loading: the test proves less than it says")
	}
}

// BenchmarkDiskPerTextDoc bulk-loads FPDB_DISK_N (default 20 000) text
// documents of 330 words with 10-byte ids and 17-byte sources, compacts the
// database and reports its size on disk per document.
func BenchmarkDiskPerTextDoc(b *testing.B) {
	n := envInt(b, "FPDB_DISK_N", 20_000)
	for b.Loop() {
		dir := b.TempDir()
		d, err := Open(dir, &Options{BulkLoad: true, MemTableSize: 64 << 20})
		if err != nil {
			b.Fatal(err)
		}
		for lo := 0; lo < n; lo += 10_000 {
			var docs []Input
			for i := lo; i < min(n, lo+10_000); i++ {
				docs = append(docs, Input{ID: fmt.Sprintf("doc%07d", i), Text: []byte(text(uint64(i), 330)),
					Source: fmt.Sprintf("crawl/%07d.txt", i)})
			}
			addBatch(b, d, docs)
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
		if d, err = Open(dir, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := d.Compact(ctx); err != nil {
			b.Fatal(err)
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(treeSize(b, dir))/float64(n), "B/doc")
	}
}

// treeSize returns the bytes of the regular files under dir.
func treeSize(tb testing.TB, dir string) int64 {
	tb.Helper()
	var size int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			fi, err := e.Info()
			if err == nil {
				size += fi.Size()
			}
			return err
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return size
}

// TestBulkLoadClose checks that Close writes the deferred postings and
// leaves nothing pending, and that a write after Close returns ErrClosed
// (it once tried to write the postings again, on the closed store, and
// panicked).
func TestBulkLoadClose(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{BulkLoad: true})
	if err != nil {
		t.Fatal(err)
	}
	d.flushAt = 1 << 30
	r := rand.New(rand.NewPCG(3, 4))
	addBatch(t, d, fpBatch(r, "a", 50, d.Params().K))
	if n := d.Stats().Deferred; n != 50 {
		t.Fatalf("%d deferred, want 50", n)
	}
	d.flushAt = 10 // pending documents above the threshold at Close
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if n := d.Stats().Deferred; n != 0 {
		t.Fatalf("%d documents still deferred after Close", n)
	}
	if _, err := d.AddBatch(ctx, fpBatch(r, "b", 5, 512)); !errors.Is(err, ErrClosed) {
		t.Fatalf("AddBatch after Close: %v, want ErrClosed", err)
	}
	if _, err := d.Add(ctx, Input{ID: "c", Fingerprint: randFP(r, 512)}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("AddFingerprint after Close: %v, want ErrClosed", err)
	}
	re := openTest(t, dir, nil)
	if n := re.Stats().Docs; n != 50 {
		t.Fatalf("%d documents after reopen, want 50", n)
	}
}

// TestBulkFlushSyncsDocuments: with NoSync, writing the deferred postings
// (an sstable ingestion, durable at once) first makes the documents they
// name durable. The memtable is flushed after the first deferred batch,
// so that the ingestion does not overlap it (an overlap flushes it, which
// hid the bug): a power loss that keeps none of the unsynced WAL must then
// still find every document the postings name.
func TestBulkFlushSyncsDocuments(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	mem := vfs.NewCrashableMem()
	d, err := Open("db", &Options{fs: mem, NoSync: true, BulkLoad: true})
	if err != nil {
		t.Fatal(err)
	}
	k := d.Params().K
	addBatch(t, d, fpBatch(r, "a", 100, k))
	if err := d.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	addBatch(t, d, fpBatch(r, "b", 100, k))
	if err := d.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: r})
	closeChecked(t, d)
	c, err := Open("db", &Options{fs: clone})
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Len(); n != 200 {
		t.Errorf("%d documents after the power loss, want the 200 whose postings were written", n)
	}
	closeChecked(t, c)
}
