package index

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
)

// envInt returns the integer in environment variable name, or def.
func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// postingsOf returns every posting list of pdb, by key.
func postingsOf(t *testing.T, pdb *pebble.DB, ix *Index) map[uint32][]uint32 {
	t.Helper()
	out := map[uint32][]uint32{}
	lo, hi := keys.Range(keys.PrefixPosting)
	it, err := pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		y, err := keys.ParsePosting(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		ids, err := ix.Posting(context.Background(), y)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > 0 {
			out[y] = ids
		}
	}
	return out
}

// TestStageBatchEqualsOneByOne applies the same random adds and deletes in
// batches and one document at a time with Stage: the posting lists must be
// equal, and both indexes pass Check.
func TestStageBatchEqualsOneByOne(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	widths := []int{4, 4, 4, 4, 8, 8, 16, 16}
	pdbA, bulk := openMemIndex(t, 64, widths)
	pdbB, single := openMemIndex(t, 64, widths)
	next := uint32(0)
	var live []uint32
	for round := range 30 {
		var adds []Entry
		for range r.IntN(50) {
			adds = append(adds, Entry{ID: next, FP: []uint64{r.Uint64() & 0xffff_0000_ffff}})
			next++
		}
		var dels []uint32
		r.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
		nd := r.IntN(len(live)/2 + 1)
		dels, live = slices.Clone(live[:nd]), live[nd:]

		b := pdbA.NewBatch()
		w, err := bulk.Stage(b, adds, dels)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(func() error { return b.Commit(pebble.NoSync) }); err != nil {
			t.Fatal(err)
		}

		for _, id := range dels {
			b := pdbB.NewBatch()
			w, err := single.Stage(b, nil, []uint32{id})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(func() error { return b.Commit(pebble.NoSync) }); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range adds {
			b := pdbB.NewBatch()
			w, err := single.Stage(b, []Entry{{ID: e.ID, FP: e.FP}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(func() error { return b.Commit(pebble.NoSync) }); err != nil {
				t.Fatal(err)
			}
			live = append(live, e.ID)
		}
		if err := bulk.Check(context.Background()); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	a, b := postingsOf(t, pdbA, bulk), postingsOf(t, pdbB, single)
	if len(a) != len(b) {
		t.Fatalf("%d posting keys in bulk, %d one by one", len(a), len(b))
	}
	for y, ids := range a {
		if !slices.Equal(ids, b[y]) {
			t.Fatalf("posting %d: bulk %v, one by one %v", y, ids, b[y])
		}
	}
}

func TestStageRejects(t *testing.T) {
	pdb, ix := openMemIndex(t, 64, []int{16, 16, 16, 16})
	b := pdb.NewBatch()
	defer b.Close()
	if _, err := ix.Stage(b, []Entry{{ID: 1, FP: []uint64{1, 2}}}, nil); err == nil {
		t.Error("a fingerprint of the wrong length was accepted")
	}
	if _, err := ix.Stage(b, nil, []uint32{9}); err == nil {
		t.Error("the delete of an unknown id was accepted")
	}
	fp := []uint64{7}
	if _, err := ix.Stage(b, []Entry{{ID: 3, FP: fp}, {ID: 3, FP: fp}}, nil); err == nil {
		t.Error("an id added twice was accepted")
	}
}

// addBatch adds the documents of adds in one Stage and one Apply (the path
// of a batch: 64 or more entries update the cached lists in runs).
func (s *testStore) addBatch(adds []Entry) {
	s.t.Helper()
	b := s.db.NewBatch()
	w, err := s.ix.Stage(b, adds, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := w.Commit(func() error { return b.Commit(pebble.NoSync) }); err != nil {
		s.t.Fatal(err)
	}
	for _, e := range adds {
		s.model[e.ID] = slices.Clone(e.FP)
	}
}

// TestDeferredBatchesWithTrackingCache bulk-loads batches of deferred
// documents into an index whose posting cache is complete (so every write
// updates it) while every plan is checked against the oracle between the
// batches: the cache must mirror Pebble, which holds no postings of the
// deferred documents, or a probe would count them twice (once from the
// cache, once from the scan of the deferred ones).
func TestDeferredBatchesWithTrackingCache(t *testing.T) {
	const k = 128
	s := newTestStore(t, k, []int{16, 16, 16, 16, 16, 16, 16, 16})
	r := rand.New(rand.NewPCG(17, 4))
	id := uint32(0)
	var queries [][]uint64
	var first []Entry
	for i := range 400 {
		fp := randFP(r, k/64)
		if i%40 == 0 {
			queries = append(queries, fp)
		}
		first = append(first, Entry{ID: id, FP: fp})
		id++
	}
	s.addBatch(first)
	if err := s.ix.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.ix.Defer()
	for batch := range 4 {
		var adds []Entry
		for i := range 100 {
			fp := randFP(r, k/64)
			if i%10 == 0 { // near neighbours of the queries, deferred
				fp = flipN(r, queries[(batch*10+i/10)%len(queries)], r.IntN(12))
			}
			adds = append(adds, Entry{ID: id, FP: fp})
			id++
		}
		s.addBatch(adds)
		found := 0
		for _, q := range queries {
			for _, thr := range []float64{0.95, 0.85} {
				found += s.checkAllPlans(q, thr)
			}
		}
		if found <= len(queries) {
			t.Fatalf("batch %d: the queries found only themselves; the test proves nothing", batch)
		}
	}
	if s.ix.DeferredLen() != 400 {
		t.Fatalf("%d deferred documents, want 400", s.ix.DeferredLen())
	}
}
