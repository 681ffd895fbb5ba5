package db

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestCompactAndStorageStats(t *testing.T) {
	// With 4 MiB memtables the adds and the deletes are in different
	// tables, which Compact merges; with the default, one table holds
	// both, which Compact moves to the bottom level whole.
	for _, mem := range []int64{4 << 20, DefaultMemTableSize} {
		t.Run(fmt.Sprintf("memtable-%dMiB", mem>>20), func(t *testing.T) { testCompactAndStorageStats(t, mem) })
	}
}

func testCompactAndStorageStats(t *testing.T, memTableSize int64) {
	d := openTest(t, "", &Options{MemTableSize: memTableSize})
	r := rand.New(rand.NewPCG(8, 8))
	m := len(d.Params().GroupWidths)
	docs := fpBatch(r, "c", 3000, d.Params().K)
	addBatch(t, d, docs)
	st, err := d.StorageStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Docs != 3000 || st.DeletedNotCompacted != 0 || st.PostingIDs != int64(3000*m) || st.BytesPerDoc <= 0 {
		t.Fatalf("after adds: %+v", st)
	}
	var ids []string
	for _, bd := range docs[:2500] {
		ids = append(ids, bd.ID)
	}
	if _, err := d.DeleteMany(ctx, ids); err != nil {
		t.Fatal(err)
	}
	before, err := d.StorageStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.Docs != 500 || before.DeletedNotCompacted != 2500 || before.PostingIDs != int64(500*m) {
		t.Fatalf("after deletes: %+v", before)
	}
	keys, maxLen := 0, 0
	for _, b := range before.PostingLengths {
		keys += b.Keys
		if b.Min > b.Max || b.Max+1 != 2*b.Min {
			t.Fatalf("bad bucket %+v", b)
		}
		maxLen = b.Max
	}
	if keys != before.PostingKeys || before.MaxPosting > maxLen {
		t.Fatalf("buckets %v do not add up to %d keys / max %d", before.PostingLengths, before.PostingKeys, before.MaxPosting)
	}
	// Answers of every plan, before and after compaction, for queries near
	// kept and near deleted documents: the same sets, equal to the scan's.
	plans := []Plan{{Kind: PlanScan}, {Kind: PlanProbe, Tau: 1}, {Kind: PlanProbe, Tau: 2}, {Kind: PlanProbe, Tau: 3}}
	answers := func() [][]string {
		var out [][]string
		for i := range 40 {
			q := nearFP(r, docs[2480+i].Fingerprint, 20)
			var scan []string
			for j, p := range plans {
				res, err := d.QueryFingerprint(ctx, q, QueryOptions{Threshold: 0.8, Plan: p})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, m := range res.Matches {
					got = append(got, fmt.Sprintf("%s@%d", m.ID, m.Hamming))
				}
				if j == 0 {
					scan = got
				} else if !slices.Equal(got, scan) {
					t.Fatalf("query %d plan %v: %v, scan %v", i, p, got, scan)
				}
				out = append(out, got)
			}
		}
		return out
	}
	r = rand.New(rand.NewPCG(9, 9))
	want := answers()
	res, err := d.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after, err := d.StorageStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.DeletedNotCompacted != 0 || after.Docs != 500 || after.PostingIDs != before.PostingIDs {
		t.Fatalf("after compaction: %+v", after)
	}
	// Pebble may have compacted the deleted records already in the
	// background while the queries ran; Compact must not grow the store,
	// which must be smaller than before the deletes (when the documents
	// were on disk then: with the default memtable they were in memory).
	small := memTableSize < DefaultMemTableSize
	if res.BytesAfter > res.BytesBefore || small && res.BytesAfter >= st.DiskBytes {
		t.Errorf("compaction: %d → %d bytes, %d before the deletes", res.BytesBefore, res.BytesAfter, st.DiskBytes)
	}
	r = rand.New(rand.NewPCG(9, 9))
	got := answers()
	nonEmpty := 0
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("answer %d changed by compaction: %v, before %v", i, got[i], want[i])
		}
		if len(want[i]) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < len(want)/4 {
		t.Fatalf("only %d of %d answers hold a match: the test proves little", nonEmpty, len(want))
	}
	ro := d.Dir()
	closeChecked(t, d)
	rd := openTest(t, ro, &Options{ReadOnly: true})
	if _, err := rd.Compact(ctx); err == nil {
		t.Error("Compact on a read-only database succeeded")
	}
	if _, err := rd.StorageStats(ctx); err != nil {
		t.Errorf("StorageStats read-only: %v", err)
	}
}
