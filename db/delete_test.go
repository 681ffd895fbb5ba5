package db

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// liveIDs returns the ids that Get finds among ids.
func liveIDs(t *testing.T, d *DB, ids []string) []string {
	t.Helper()
	var out []string
	for id := range allDocs(t, d, ids) {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func TestDeleteMany(t *testing.T) {
	d := openTest(t, "", nil)
	r := rand.New(rand.NewPCG(4, 4))
	k := d.Params().K
	const chunk = 500 // deleteChunkDocs in small, so that the test runs several
	docs := fpBatch(r, "a", 4*chunk+100, k)
	addBatch(t, d, docs)
	var ids, del []string
	model := map[string]bool{}
	for i, bd := range docs {
		ids = append(ids, bd.ID)
		model[bd.ID] = true
		if i%4 != 0 {
			del = append(del, bd.ID)
			delete(model, bd.ID)
		}
	}
	del = append(del, "missing-1", del[0], "missing-2") // a repeat and two unknown ids
	res, err := d.deleteMany(ctx, del, chunk)
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != len(del)-3 || !slices.Equal(res.NotFound, []string{"missing-1", "missing-2"}) {
		t.Fatalf("deleted %d (want %d), not found %v", res.Deleted, len(del)-3, res.NotFound)
	}
	if d.Stats().Docs != len(model) {
		t.Fatalf("%d documents left, want %d", d.Stats().Docs, len(model))
	}
	// Queries still agree with a linear scan over what is left.
	for i := range 50 {
		q := nearFP(r, docs[r.IntN(len(docs))].Fingerprint, 10)
		auto, err := d.QueryFingerprint(ctx, q, QueryOptions{Threshold: 0.8})
		if err != nil {
			t.Fatal(err)
		}
		scan, err := d.QueryFingerprint(ctx, q, QueryOptions{Threshold: 0.8, Plan: Plan{Kind: PlanScan}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(auto.Matches, scan.Matches) {
			t.Fatalf("query %d: index %v, scan %v", i, auto.Matches, scan.Matches)
		}
		for _, m := range auto.Matches {
			if !model[m.ID] {
				t.Fatalf("query %d found deleted %q", i, m.ID)
			}
		}
	}
	if _, err := d.DeleteMany(ctx, []string{""}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("empty id: %v", err)
	}
	// The public entry point, with the default chunk.
	rest := liveIDs(t, d, ids)
	if res, err := d.DeleteMany(ctx, rest); err != nil || res.Deleted != len(rest) || d.Stats().Docs != 0 {
		t.Fatalf("delete the rest: %+v, %v, %d left", res, err, d.Stats().Docs)
	}
}

func TestDeletePrefixAndOlderThan(t *testing.T) {
	d := openTest(t, "", nil)
	r := rand.New(rand.NewPCG(6, 6))
	k := d.Params().K
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	var docs []Input
	var ids []string
	for i := range 300 {
		id := fmt.Sprintf("%s/%03d", []string{"crawl-a", "crawl-b", "crawl-ab", "other"}[i%4], i)
		docs = append(docs, Input{ID: id, Fingerprint: randFP(r, k), Added: t0.Add(time.Duration(i) * time.Hour)})
		ids = append(ids, id)
	}
	addBatch(t, d, docs)
	n, err := d.DeletePrefix(ctx, "crawl-a")
	if err != nil {
		t.Fatal(err)
	}
	if n != 150 { // crawl-a/ and crawl-ab/
		t.Fatalf("DeletePrefix deleted %d, want 150", n)
	}
	for _, id := range liveIDs(t, d, ids) {
		if strings.HasPrefix(id, "crawl-a") {
			t.Fatalf("%q survived", id)
		}
	}
	if n, err := d.DeletePrefix(ctx, "nothing-has-this"); err != nil || n != 0 {
		t.Fatalf("no match: %d, %v", n, err)
	}
	if _, err := d.DeletePrefix(ctx, ""); !errors.Is(err, ErrEmptyPrefix) {
		t.Fatalf("empty prefix: %v", err)
	}
	cut := t0.Add(100 * time.Hour) // documents 0..99 are older
	n, err = d.DeleteOlderThan(ctx, cut)
	if err != nil {
		t.Fatal(err)
	}
	if n != 50 { // the crawl-b and other among 0..99
		t.Fatalf("DeleteOlderThan deleted %d, want 50", n)
	}
	left := liveIDs(t, d, ids)
	if len(left) != 100 {
		t.Fatalf("%d left, want 100", len(left))
	}
	for _, id := range left {
		doc, err := d.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if doc.Added.Before(cut) {
			t.Fatalf("%q added %v survived", id, doc.Added)
		}
	}
}

// BenchmarkDeleteMany deletes 100 000 documents of a compacted
// 110 000-document database by id list (synced batches of deleteChunkDocs).
func BenchmarkDeleteMany(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const n, del = 110_000, 100_000
	docs := make([]Input, n)
	ids := make([]string, del)
	for i := range docs {
		docs[i] = Input{ID: fmt.Sprintf("doc-%06d", i), Fingerprint: randFP(r, DefaultK)}
		if i < del {
			ids[i] = docs[i].ID
		}
	}
	for b.Loop() {
		b.StopTimer()
		d, err := Open(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		for lo := 0; lo < n; lo += 10_000 {
			addBatch(b, d, docs[lo:min(lo+10_000, n)])
		}
		// Settle the load's compactions, so that they are not billed to
		// the deletes.
		if _, err := d.Compact(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		res, err := d.DeleteMany(ctx, ids)
		if err != nil || res.Deleted != del {
			b.Fatalf("%+v, %v", res, err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/100k-deletes")
		b.StopTimer()
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func TestBulkDeletesClosedAndReadOnly(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, nil)
	addBatch(t, d, []Input{{ID: "a", Text: []byte("one two three four five")}})
	closeChecked(t, d)
	if _, err := d.DeleteMany(ctx, []string{"a"}); !errors.Is(err, ErrClosed) {
		t.Errorf("DeleteMany closed: %v", err)
	}
	if _, err := d.DeletePrefix(ctx, "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("DeletePrefix closed: %v", err)
	}
	if _, err := d.DeleteOlderThan(ctx, time.Now()); !errors.Is(err, ErrClosed) {
		t.Errorf("DeleteOlderThan closed: %v", err)
	}
	if _, err := d.Compact(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Compact closed: %v", err)
	}
	if _, err := d.Export(ctx, io.Discard); !errors.Is(err, ErrClosed) {
		t.Errorf("Export closed: %v", err)
	}
	if _, err := d.Pairs(ctx, PairsOptions{Threshold: 0.9}, func(Pair) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Pairs closed: %v", err)
	}
	ro := openTest(t, dir, &Options{ReadOnly: true})
	if _, err := ro.DeleteMany(ctx, []string{"a"}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("DeleteMany read-only: %v", err)
	}
	if _, err := ro.DeletePrefix(ctx, "a"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("DeletePrefix read-only: %v", err)
	}
	if ro.Stats().Docs != 1 {
		t.Error("a read-only delete deleted")
	}
}

// TestAddUnchanged: re-adding a document whose content is unchanged leaves
// it as it is (its time added and place in storing order stay), alone or
// in a batch; ReplaceUnchanged forces the replace; a changed text replaces.
func TestAddUnchanged(t *testing.T) {
	d := openTest(t, "", nil)
	txt := []byte(text(77, 120))
	t0 := time.Date(2021, 5, 1, 0, 0, 0, 0, time.UTC)
	if _, err := d.Add(ctx, Input{ID: "a", Text: txt, Added: t0}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := d.Add(ctx, Input{ID: "a", Text: txt}, &AddOptions{Threshold: 0.5})
	if err != nil || !res.Unchanged || res.Stored || res.Replaced || len(res.Matches) != 0 {
		t.Fatalf("re-add of an unchanged text: %+v, %v", res, err)
	}
	if doc, _ := d.Get(ctx, "a"); !doc.Added.Equal(t0) {
		t.Fatalf("time added changed to %v", doc.Added)
	}
	br, err := d.AddBatch(ctx, []Input{{ID: "a", Text: txt}, {ID: "b", Text: []byte(text(78, 120))}})
	if err != nil || br.Unchanged != 1 || br.Stored != 1 || br.Replaced != 0 {
		t.Fatalf("batch with an unchanged text: %+v, %v", br, err)
	}
	if doc, _ := d.Get(ctx, "a"); !doc.Added.Equal(t0) {
		t.Fatalf("time added changed by the batch to %v", doc.Added)
	}
	res, err = d.Add(ctx, Input{ID: "a", Text: txt, ReplaceUnchanged: true}, nil)
	if err != nil || !res.Stored || !res.Replaced || res.Unchanged {
		t.Fatalf("forced re-add: %+v, %v", res, err)
	}
	if doc, _ := d.Get(ctx, "a"); doc.Added.Equal(t0) {
		t.Fatal("forced re-add kept the old time added")
	}
	// With Reject, a stored copy of the same content under another id:
	// still unchanged (it stays stored), the copy reported as a match.
	if _, err := d.Add(ctx, Input{ID: "copy", Text: txt}, nil); err != nil {
		t.Fatal(err)
	}
	res, err = d.Add(ctx, Input{ID: "a", Text: txt}, &AddOptions{Threshold: 0.9, Reject: true})
	if err != nil || !res.Unchanged || res.Stored || len(res.Matches) != 1 || res.Matches[0].ID != "copy" {
		t.Fatalf("re-add of an unchanged text with Reject: %+v, %v", res, err)
	}
	// A changed text under a stored id is rejected: the stored one stays.
	changed := []byte(edit(string(txt), 40))
	res, err = d.Add(ctx, Input{ID: "a", Text: changed}, &AddOptions{Threshold: 0.5, Reject: true})
	if err != nil || res.Unchanged || res.Stored || len(res.Matches) != 1 {
		t.Fatalf("re-add of a changed text with Reject: %+v, %v", res, err)
	}
	if doc, _ := d.Get(ctx, "a"); doc.ContentHash == res.Doc.ContentHash {
		t.Fatal("a rejected add replaced the stored document")
	}
	res, err = d.Add(ctx, Input{ID: "a", Text: []byte(edit(string(txt), 5))}, nil)
	if err != nil || !res.Stored || !res.Replaced {
		t.Fatalf("re-add of a changed text: %+v, %v", res, err)
	}
}

// TestAddUnchangedFingerprintSizes: a document added by fingerprint
// without a content hash is unchanged only when its sizes are the same
// too; re-added with other sizes it is replaced, alone or in a batch, and
// containment then uses the new set size. It used to be kept with the old
// sizes (reported unchanged), so containment answered from them.
func TestAddUnchangedFingerprintSizes(t *testing.T) {
	d := openTest(t, "", &Options{K: 64, GroupWidths: []int{16, 16, 16, 16}})
	fp := []uint64{0x1234}
	if _, err := d.Add(ctx, Input{ID: "a", Fingerprint: fp, Shingles: 1000}, nil); err != nil {
		t.Fatal(err)
	}
	if res, err := d.Add(ctx, Input{ID: "a", Fingerprint: fp, Shingles: 1000}, nil); err != nil || !res.Unchanged {
		t.Fatalf("the same fingerprint and sizes: %+v, %v; want unchanged", res, err)
	}
	res, err := d.Add(ctx, Input{ID: "a", Fingerprint: fp, Shingles: 10}, nil)
	if err != nil || res.Unchanged || !res.Replaced {
		t.Fatalf("other shingles: %+v, %v; want a replace", res, err)
	}
	if g, err := d.Get(ctx, "a"); err != nil || g.Shingles != 10 {
		t.Fatalf("stored shingles: %+v, %v; want 10", g, err)
	}
	// 10 shingles cannot hold all of a 500-shingle query.
	q, err := d.QueryFingerprint(ctx, fp, QueryOptions{Containment: 1, Shingles: 500})
	if err != nil || len(q.Matches) != 0 {
		t.Errorf("containment after the replace: %+v, %v; want no match", q, err)
	}
	br, err := d.AddBatch(ctx, []Input{{ID: "a", Fingerprint: fp, Shingles: 10, Words: 12, Size: 80}})
	if err != nil || br.Unchanged != 0 || br.Replaced != 1 {
		t.Fatalf("a batch with other words and size: %+v, %v; want a replace", br, err)
	}
	if g, err := d.Get(ctx, "a"); err != nil || g.Words != 12 || g.Size != 80 {
		t.Fatalf("stored after the batch: %+v, %v", g, err)
	}
	if br, err := d.AddBatch(ctx, []Input{{ID: "a", Fingerprint: fp, Shingles: 10, Words: 12, Size: 80}}); err != nil || br.Unchanged != 1 {
		t.Fatalf("the same batch again: %+v, %v; want unchanged", br, err)
	}
}
