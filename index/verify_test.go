package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// rebuildStore returns an empty store in memory, closed when the test
// ends, and a layout of 8 groups of 16 bits.
func rebuildStore(t *testing.T) (*pebble.DB, *Layout) {
	t.Helper()
	pdb, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Merger: posting.Merger(), FormatMajorVersion: pebble.FormatNewest, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pdb.Close() })
	l, err := NewLayout(128, []int{16, 16, 16, 16, 16, 16, 16, 16})
	if err != nil {
		t.Fatal(err)
	}
	return pdb, l
}

// TestRebuildAndVerify rebuilds the postings of a store with StageRebuild
// (over stale keys and a deferred mark), checks that VerifyPostings finds every
// id in each of its groups and no problem, then damages postings and checks
// that each damage is reported (and which keys a rebuild must delete).
func TestRebuildAndVerify(t *testing.T) {
	ctx := context.Background()
	pdb, l := rebuildStore(t)
	r := rand.New(rand.NewPCG(1, 2))
	fps := map[uint32][]uint64{}
	var ids []uint32
	for id := uint32(0); id < 300; id += 1 + uint32(r.IntN(3)) {
		fps[id] = []uint64{r.Uint64(), r.Uint64()}
		ids = append(ids, id)
	}
	fp := func(id uint32) []uint64 { return fps[id] }
	// Stale state the rebuild must replace.
	_ = pdb.Set(keys.Posting(5), posting.EncodeAdd(roaring.BitmapOf(999)), nil)
	_ = pdb.Set(keys.DeferredMark(), []byte{0, 0, 0, 7}, nil)

	b := pdb.NewBatch()
	n, err := StageRebuild(b, l, ids, fp, posting.Roaring)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if tail, err := ReadDeferredMark(pdb); err != nil || tail != NoDeferred {
		t.Fatalf("deferred mark after rebuild: %d, %v", tail, err)
	}
	roaringOnly := true
	verify := func() (map[[2]int]bool, []string, int) {
		found := map[[2]int]bool{}
		var problems []string
		badKeys := 0
		err := VerifyPostings(ctx, pdb, l, PostingVerifier{
			RoaringOnly: roaringOnly,
			Fingerprint: fp,
			Found:       func(id uint32, g int) { found[[2]int{int(id), g}] = true },
			Problem: func(msg string, key []byte) {
				problems = append(problems, msg)
				if key != nil {
					badKeys++
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return found, problems, badKeys
	}
	found, problems, _ := verify()
	if len(problems) != 0 || len(found) != len(ids)*l.M() || n == 0 {
		t.Fatalf("after rebuild: %d keys, %d of %d found, problems %q", n, len(found), len(ids)*l.M(), problems)
	}
	// The first byte of each posting value: 1 roaring, 2 compact.
	tags := func() map[byte]int {
		lo, hi := keys.Range(keys.PrefixPosting)
		it, err := pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		m := map[byte]int{}
		for it.First(); it.Valid(); it.Next() {
			m[it.Value()[0]]++
		}
		return m
	}
	if m := tags(); m[1] != n || len(m) != 1 {
		t.Fatalf("rebuilt with posting.Roaring: tags %v, want %d of tag 1", m, n)
	}
	// With posting.Compact, these short lists are compact.
	b = pdb.NewBatch()
	if _, err := StageRebuild(b, l, ids, fp, posting.Compact); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if m := tags(); m[2] != n || len(m) != 1 {
		t.Fatalf("rebuilt with posting.Compact: tags %v, want %d of tag 2", m, n)
	}
	// A store that must be read by builds without the compact encoding
	// has a problem per compact value; one written with it has none.
	if found, problems, _ = verify(); len(problems) != n || !strings.Contains(problems[0], "compact encoding") || len(found) != len(ids)*l.M() {
		t.Fatalf("after the compact rebuild, roaring only: %d of %d found, %d problems (want %d): %.200q", len(found), len(ids)*l.M(), len(problems), n, problems)
	}
	roaringOnly = false
	if found, problems, _ = verify(); len(problems) != 0 || len(found) != len(ids)*l.M() {
		t.Fatalf("after the compact rebuild: %d of %d found, problems %.200q", len(found), len(ids)*l.M(), problems)
	}

	y := l.Value(fps[ids[0]], 0)
	_ = pdb.Merge(keys.Posting(y), posting.EncodeAdd(roaring.BitmapOf(ids[1], 100000)), nil)
	_ = pdb.Set(keys.Posting(1<<30), posting.EncodeAdd(roaring.BitmapOf(1)), nil)
	_ = pdb.Set(keys.Posting(l.Value(fps[ids[2]], 1)), []byte{0xff, 0xff}, nil)
	_, problems, badKeys := verify()
	want := []string{
		"names internal id 100000, which has no fingerprint",
		"whose group value is key",
		"is outside every group",
		fmt.Sprintf("posting key %d:", l.Value(fps[ids[2]], 1)),
	}
	for _, w := range want {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, w) }) {
			t.Errorf("problems lack %q: %q", w, problems)
		}
	}
	if badKeys != 2 {
		t.Errorf("%d keys to delete, want 2 (outside every group, undecodable)", badKeys)
	}
	_ = pdb.Set(keys.DeferredMark(), []byte{1, 2, 3}, nil)
	if _, err := ReadDeferredMark(pdb); err == nil || !strings.Contains(err.Error(), "deferred mark 010203: want 4 bytes") {
		t.Fatalf("ReadDeferredMark of 3 bytes: %v", err)
	}
}

// TestRebuildRuns: posting lists of consecutive ids (documents that share
// a group value, one after another) are rebuilt in roaring's run
// containers, in either encoding: a few bytes, not 2 or 1 per id.
func TestRebuildRuns(t *testing.T) {
	pdb, l := rebuildStore(t)
	ids := make([]uint32, 5000)
	for i := range ids {
		ids[i] = uint32(i)
	}
	same := []uint64{0x1234, 0x5678} // every document's fingerprint
	for _, enc := range []posting.Encoding{posting.Roaring, posting.Compact} {
		b := pdb.NewBatch()
		n, err := StageRebuild(b, l, ids, func(uint32) []uint64 { return same }, enc)
		if err != nil || n != l.M() {
			t.Fatalf("encoding %d: %d keys, %v", enc, n, err)
		}
		if err := b.Commit(pebble.Sync); err != nil {
			t.Fatal(err)
		}
		v, closer, err := pdb.Get(keys.Posting(l.Value(same, 0)))
		if err != nil {
			t.Fatal(err)
		}
		size := len(v)
		ids, err := posting.IDs(v)
		closer.Close()
		if err != nil || ids.GetCardinality() != 5000 || size > 32 {
			t.Fatalf("encoding %d: %d bytes, %v ids, %v; want a run container", enc, size, ids, err)
		}
	}
}
