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

// TestStageManyEqualsOneByOne applies the same random adds and deletes in
// batches with StageMany and one document at a time with StageAdd and
// StageDelete: the posting lists must be equal, and both indexes pass Check.
func TestStageManyEqualsOneByOne(t *testing.T) {
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
		if err := bulk.StageMany(b, adds, dels); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		for _, id := range dels {
			bulk.ApplyDelete(id)
		}
		for _, e := range adds {
			bulk.ApplyAdd(e.ID, e.FP)
		}

		for _, id := range dels {
			b := pdbB.NewBatch()
			if err := single.StageDelete(b, id); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			single.ApplyDelete(id)
		}
		for _, e := range adds {
			b := pdbB.NewBatch()
			if err := single.StageAdd(b, e.ID, e.FP); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			single.ApplyAdd(e.ID, e.FP)
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

func TestStageManyRejects(t *testing.T) {
	pdb, ix := openMemIndex(t, 64, []int{16, 16, 16, 16})
	b := pdb.NewBatch()
	defer b.Close()
	if err := ix.StageMany(b, []Entry{{ID: 1, FP: []uint64{1, 2}}}, nil); err == nil {
		t.Error("a fingerprint of the wrong length was accepted")
	}
	if err := ix.StageMany(b, nil, []uint32{9}); err == nil {
		t.Error("the delete of an unknown id was accepted")
	}
	fp := []uint64{7}
	if err := ix.StageMany(b, []Entry{{ID: 3, FP: fp}, {ID: 3, FP: fp}}, nil); err == nil {
		t.Error("an id added twice was accepted")
	}
}
