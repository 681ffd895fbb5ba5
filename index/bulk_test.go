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
		if err := bulk.Stage(b, adds, dels); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		for _, id := range dels {
			bulk.Apply(nil, []uint32{id})
		}
		for _, e := range adds {
			bulk.Apply([]Entry{{ID: e.ID, FP: e.FP}}, nil)
		}

		for _, id := range dels {
			b := pdbB.NewBatch()
			if err := single.Stage(b, nil, []uint32{id}); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			single.Apply(nil, []uint32{id})
		}
		for _, e := range adds {
			b := pdbB.NewBatch()
			if err := single.Stage(b, []Entry{{ID: e.ID, FP: e.FP}}, nil); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			single.Apply([]Entry{{ID: e.ID, FP: e.FP}}, nil)
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
	if err := ix.Stage(b, []Entry{{ID: 1, FP: []uint64{1, 2}}}, nil); err == nil {
		t.Error("a fingerprint of the wrong length was accepted")
	}
	if err := ix.Stage(b, nil, []uint32{9}); err == nil {
		t.Error("the delete of an unknown id was accepted")
	}
	fp := []uint64{7}
	if err := ix.Stage(b, []Entry{{ID: 3, FP: fp}, {ID: 3, FP: fp}}, nil); err == nil {
		t.Error("an id added twice was accepted")
	}
}
