package db

import (
	"math/rand/v2"
	"testing"
)

func TestCompactAndStorageStats(t *testing.T) {
	d := openTest(t, "", nil)
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
	if res.BytesAfter >= res.BytesBefore {
		t.Errorf("compaction did not shrink the database: %d → %d bytes", res.BytesBefore, res.BytesAfter)
	}
	// Queries are unchanged by compaction.
	for i := range 20 {
		q := nearFP(r, docs[2500+i].Fingerprint, 20)
		a, err := d.QueryFingerprint(ctx, q, QueryOptions{Threshold: 0.8})
		if err != nil {
			t.Fatal(err)
		}
		s, err := d.QueryFingerprint(ctx, q, QueryOptions{Threshold: 0.8, Plan: Plan{Kind: PlanScan}})
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Matches) == 0 || len(a.Matches) != len(s.Matches) {
			t.Fatalf("query %d: %v vs scan %v", i, a.Matches, s.Matches)
		}
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
