package posting

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// model applies encoded operands in order (oldest first) to the empty set.
func model(t testing.TB, ops [][]byte) *roaring.Bitmap {
	t.Helper()
	x := roaring.New()
	for _, b := range ops {
		op, err := Decode(b)
		if err != nil {
			t.Fatalf("model: %v", err)
		}
		x.AndNot(op.Remove)
		x.Or(op.Add)
	}
	return x
}

// randOps returns n random add or remove operands over a small universe
// spanning three roaring containers, so that adds and removes collide.
func randOps(r *rand.Rand, n int) [][]byte {
	ops := make([][]byte, n)
	for i := range ops {
		bm := roaring.New()
		for j := r.IntN(6); j > 0; j-- {
			bm.Add(uint32(r.IntN(3))<<16 | uint32(r.IntN(24)))
		}
		if r.IntN(10) == 0 { // a large operand (decoded, not applied id by id)
			for j := 300 + r.IntN(300); j > 0; j-- {
				bm.Add(uint32(r.IntN(3))<<16 | uint32(r.IntN(1024)))
			}
		}
		ops[i] = encodeTest(bm, r.IntN(3) == 0, r.IntN(2) == 0)
	}
	return ops
}

// compactOp returns the operand (add, remove) in the compact encoding,
// shorter or not.
func compactOp(add, remove []uint32) []byte {
	return appendCompact(nil, add, remove, deltaSize(add), deltaSize(remove))
}

// encodeTest returns the operand that adds the ids of bm, or removes them
// (remove), in roaring's encoding or the compact one.
func encodeTest(bm *roaring.Bitmap, remove, compact bool) []byte {
	switch {
	case compact && remove:
		return compactOp(nil, bm.ToArray())
	case compact:
		return compactOp(bm.ToArray(), nil)
	case remove:
		return EncodeRemove(bm)
	}
	return EncodeAdd(bm)
}

// mergeRange merges ops[lo:hi] (non-empty) the way Pebble may: in one
// direction (all MergeNewer or all MergeOlder), finishing with includesBase
// only if the range starts at the base. It returns nil when the merger asks
// for deletion.
func mergeRange(t testing.TB, ops [][]byte, lo, hi int, newer, includesBase bool) []byte {
	t.Helper()
	m := Merger()
	var vm pebble.ValueMerger
	var err error
	if newer {
		vm, err = m.Merge([]byte("k"), ops[lo])
		for i := lo + 1; err == nil && i < hi; i++ {
			err = vm.MergeNewer(ops[i])
		}
	} else {
		vm, err = m.Merge([]byte("k"), ops[hi-1])
		for i := hi - 2; err == nil && i >= lo; i-- {
			err = vm.MergeOlder(ops[i])
		}
	}
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	v, closer, err := vm.Finish(includesBase)
	if err != nil || closer != nil {
		t.Fatalf("finish: %v %v", err, closer)
	}
	return v
}

// foldRandom merges ops in a random association tree; base says whether
// ops[0] is the oldest operand of the key.
func foldRandom(t testing.TB, r *rand.Rand, ops [][]byte, base bool) []byte {
	t.Helper()
	// Repeatedly merge a random window of adjacent values until one is left.
	vals := append([][]byte(nil), ops...)
	for len(vals) > 1 {
		lo := r.IntN(len(vals))
		hi := lo + 1 + r.IntN(len(vals)-lo)
		if hi-lo < 2 && len(vals) > 1 {
			continue
		}
		inclBase := base && lo == 0 && r.IntN(2) == 0
		merged := mergeRange(t, vals, lo, hi, r.IntN(2) == 0, inclBase)
		next := append([][]byte(nil), vals[:lo]...)
		if merged != nil {
			next = append(next, merged)
		}
		vals = append(next, vals[hi:]...)
		if len(vals) == 0 {
			return nil
		}
	}
	// A final read always includes the base.
	return mergeRange(t, vals, 0, 1, true, base)
}

func TestMergeAlgebra(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 3000; trial++ {
		ops := randOps(r, 1+r.IntN(12))
		want := model(t, ops)
		got := foldRandom(t, r, ops, true)
		if got == nil {
			if !want.IsEmpty() {
				t.Fatalf("trial %d: deleted, want %v", trial, want)
			}
			continue
		}
		ids, err := IDs(got)
		if err != nil {
			t.Fatal(err)
		}
		if !ids.Equals(want) {
			t.Fatalf("trial %d: got %v, want %v", trial, ids, want)
		}
		if op, _ := Decode(got); !op.Remove.IsEmpty() {
			t.Fatalf("trial %d: Remove kept although the base is included", trial)
		}
	}
}

// TestMergePartial checks that a partial merge (no base) of a suffix of the
// operands composes with any set below it like the operands themselves.
func TestMergePartial(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 2000; trial++ {
		below := randOps(r, 1+r.IntN(4))
		ops := randOps(r, 1+r.IntN(10))
		partial := foldRandomNoBase(t, r, ops)
		all := append(append([][]byte(nil), below...), ops...)
		want := model(t, all)
		folded := append(append([][]byte(nil), below...), partial...)
		got := model(t, folded)
		if !got.Equals(want) {
			t.Fatalf("trial %d: got %v, want %v", trial, got, want)
		}
		// The composition is canonical: any grouping gives the same op.
		seq := mergeRange(t, ops, 0, len(ops), true, false)
		a, b := decodeOrIdentity(t, seq), decodeOrIdentity(t, nil)
		if len(partial) == 1 {
			b = decodeOrIdentity(t, partial[0])
		}
		if !a.Add.Equals(b.Add) || !a.Remove.Equals(b.Remove) {
			t.Fatalf("trial %d: grouping changed the op: %v %v vs %v %v", trial, a.Add, a.Remove, b.Add, b.Remove)
		}
	}
}

// decodeOrIdentity decodes b; nil (a deleted merge result) is the identity.
func decodeOrIdentity(t testing.TB, b []byte) *Op {
	t.Helper()
	if b == nil {
		return &Op{Add: roaring.New(), Remove: roaring.New()}
	}
	op, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// foldRandomNoBase merges ops without the base; the result is zero or one
// value (zero when the composition is the identity).
func foldRandomNoBase(t testing.TB, r *rand.Rand, ops [][]byte) [][]byte {
	vals := append([][]byte(nil), ops...)
	for len(vals) > 1 {
		lo := r.IntN(len(vals) - 1)
		hi := lo + 2 + r.IntN(len(vals)-lo-1)
		merged := mergeRange(t, vals, lo, hi, r.IntN(2) == 0, false)
		next := append([][]byte(nil), vals[:lo]...)
		if merged != nil {
			next = append(next, merged)
		}
		vals = append(next, vals[hi:]...)
	}
	return vals
}

func TestMergerCorruptOperand(t *testing.T) {
	m := Merger()
	if m.Name != MergerName || Merger() == m {
		t.Fatal("Merger must return a fresh value named MergerName")
	}
	if _, err := m.Merge([]byte("k"), []byte{9}); err == nil {
		t.Fatal("corrupt first operand accepted")
	}
	vm, err := m.Merge([]byte("k"), EncodeAdd(roaring.BitmapOf(1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := vm.MergeNewer([]byte{tagV1, 3}); err == nil {
		t.Fatal("corrupt newer operand accepted")
	}
	if err := vm.MergeOlder(nil); err == nil {
		t.Fatal("corrupt older operand accepted")
	}
}

func TestMergeKeepsOperandsUnowned(t *testing.T) {
	a := EncodeAdd(roaring.BitmapOf(1, 2, 3))
	b := EncodeRemove(roaring.BitmapOf(2))
	vm, err := Merger().Merge(nil, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := vm.MergeNewer(b); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		a[i] = 0xff
	}
	for i := range b {
		b[i] = 0xff
	}
	v, _, err := vm.Finish(true)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := IDs(v)
	if err != nil || !ids.Equals(roaring.BitmapOf(1, 3)) {
		t.Fatalf("got %v, %v", ids, err)
	}
}

// testLogger keeps Pebble's informational messages out of the test output.
type testLogger struct{ t testing.TB }

func (l testLogger) Infof(format string, args ...any)  {}
func (l testLogger) Errorf(format string, args ...any) { l.t.Errorf(format, args...) }
func (l testLogger) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// TestPebble merges random operands into a real Pebble database with
// flushes and compactions in between and compares every key with the model.
func TestPebble(t *testing.T) {
	fs := vfs.NewMem()
	opts := &pebble.Options{
		FS:                 fs,
		Merger:             Merger(),
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             testLogger{t},
	}
	db, err := pebble.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	const nKeys = 40
	key := func(i int) []byte { return []byte(fmt.Sprintf("p%03d", i)) }
	ops := make([][][]byte, nKeys)
	check := func(stage string) {
		t.Helper()
		for i := 0; i < nKeys; i++ {
			want := model(t, ops[i])
			v, closer, err := db.Get(key(i))
			if err == pebble.ErrNotFound {
				if !want.IsEmpty() {
					t.Fatalf("%s: key %d missing, want %v", stage, i, want)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			ids, err := IDs(v)
			if err != nil {
				t.Fatal(err)
			}
			var fe []uint32
			if err := ForEach(v, func(id uint32) { fe = append(fe, id) }); err != nil {
				t.Fatal(err)
			}
			_ = closer.Close()
			if !ids.Equals(want) || !ids.Equals(roaring.BitmapOf(fe...)) {
				t.Fatalf("%s: key %d = %v, want %v", stage, i, ids, want)
			}
		}
	}
	for round := 0; round < 12; round++ {
		b := db.NewBatch()
		for j := 0; j < 200; j++ {
			i := r.IntN(nKeys)
			op := randOps(r, 1)[0]
			ops[i] = append(ops[i], op)
			if err := b.Merge(key(i), op, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("round %d", round))
		switch round % 4 {
		case 1:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("round %d after flush", round))
		case 3:
			if err := db.Compact(context.Background(), []byte("p"), []byte("q"), true); err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("round %d after compaction", round))
		}
	}
	// An iterator sees the same values (empty lists stay as empty values).
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for it.First(); it.Valid(); it.Next() {
		var i int
		if _, err := fmt.Sscanf(string(it.Key()), "p%03d", &i); err != nil {
			t.Fatal(err)
		}
		ids, err := IDs(it.Value())
		if err != nil || !ids.Equals(model(t, ops[i])) {
			t.Fatalf("iterator: key %d = %v (%v)", i, ids, err)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The merger name is recorded: reopening with another merger fails,
	// reopening with ours sees the same data.
	other := *opts
	other.Merger = &pebble.Merger{Name: "other", Merge: pebble.DefaultMerger.Merge}
	if db2, err := pebble.Open("db", &other); err == nil {
		_ = db2.Close()
		t.Fatal("reopened with a different merger")
	}
	opts.Merger = Merger()
	db, err = pebble.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	check("reopened")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMergeSmallPathMatchesDecodePath checks that applying small operands id
// by id gives the same op as decoding them.
func TestMergeSmallPathMatchesDecodePath(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 2000; trial++ {
		ops := randOps(r, 2+r.IntN(8))
		newer := r.IntN(2) == 0
		fast := mergeRange(t, ops, 0, len(ops), newer, false)
		// The reference folds with Decode only.
		ref := &valueMerger{op: Op{Add: roaring.New(), Remove: roaring.New()}}
		for _, b := range ops {
			n, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			ref.op.Add.AndNot(n.Remove)
			ref.op.Add.Or(n.Add)
			ref.op.Remove.AndNot(n.Add)
			ref.op.Remove.Or(n.Remove)
		}
		a, b := decodeOrIdentity(t, fast), &ref.op
		if !a.Add.Equals(b.Add) || !a.Remove.Equals(b.Remove) {
			t.Fatalf("trial %d (newer=%v): %v %v vs %v %v", trial, newer, a.Add, a.Remove, b.Add, b.Remove)
		}
	}
}

// TestMergeEncoding: a merge of operands all in roaring's encoding stays in
// it (a store written by an older fpdb must stay readable by it), whatever
// would be shorter; once an operand in the compact encoding is merged, the
// result is the shorter of the two.
func TestMergeEncoding(t *testing.T) {
	sparse := func(lo uint32) *roaring.Bitmap { // one id per container: compact is shorter
		bm := roaring.New()
		for i := range uint32(40) {
			bm.Add((lo+i)<<16 | i)
		}
		return bm
	}
	dense := roaring.New() // a run: roaring is shorter
	dense.AddRange(0, 50_000)
	for _, c := range []struct {
		name string
		ops  [][]byte
		tag  byte
	}{
		{"roaring, sparse", [][]byte{EncodeAdd(sparse(0)), EncodeAdd(sparse(100))}, tagV1},
		{"roaring then compact, sparse", [][]byte{EncodeAdd(sparse(0)), encodeTest(sparse(100), false, true)}, tagV2},
		{"compact then roaring, sparse", [][]byte{encodeTest(sparse(0), false, true), EncodeAdd(sparse(100))}, tagV2},
		{"compact, dense", [][]byte{encodeTest(dense, false, true), encodeTest(sparse(100), false, true)}, tagV1},
		{"roaring, remove", [][]byte{EncodeAdd(sparse(0)), EncodeRemove(sparse(0))}, tagV1},
	} {
		for _, newer := range []bool{true, false} {
			for _, base := range []bool{true, false} {
				v := mergeRange(t, c.ops, 0, len(c.ops), newer, base)
				if v[0] != c.tag {
					t.Errorf("%s (newer %v, base %v): tag %d, want %d", c.name, newer, base, v[0], c.tag)
				}
				want := model(t, c.ops)
				ids, err := IDs(v)
				if err != nil || !ids.Equals(want) {
					t.Errorf("%s (newer %v, base %v): %v %v, want %v", c.name, newer, base, ids, err, want)
				}
			}
		}
	}
}

// TestMergeConcat: compact add-only operands whose ids follow each other
// (a bulk load's flushes) are merged by concatenating their bytes; in every
// association and direction the result is the model's set, and merged
// whole it is the very encoding of the union. Operands that overlap, or
// whose union passes maxSliceIDs, take the general path.
func TestMergeConcat(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	run := func(lo, n, span uint32) []uint32 {
		bm := roaring.New()
		for bm.GetCardinality() < uint64(n) {
			bm.Add(lo + r.Uint32N(span))
		}
		return bm.ToArray()
	}
	for _, c := range []struct {
		name  string
		sizes []uint32 // ids per operand, each run above the last
		span  uint32
	}{
		{"bulk flushes", []uint32{150, 40, 80, 3, 1, 200}, 1 << 22},
		{"adjacent ids", []uint32{5, 5, 5, 5}, 5},
		{"past maxSliceIDs", []uint32{3000, 1000, 500}, 1 << 20},
	} {
		var ops [][]byte
		var all []uint32
		lo := uint32(r.IntN(1000))
		for _, n := range c.sizes {
			ids := run(lo, n, max(c.span, n))
			ops = append(ops, AppendSorted(nil, ids, nil, Compact))
			all = append(all, ids...)
			lo = ids[len(ids)-1] + 1
		}
		want := roaring.BitmapOf(all...)
		for i := range 50 {
			got, err := IDs(foldRandom(t, r, ops, true))
			if err != nil || !got.Equals(want) {
				t.Fatalf("%s, fold %d: %d ids, %v; want %d", c.name, i, got.GetCardinality(), err, len(all))
			}
		}
		for _, newer := range []bool{true, false} {
			v := mergeRange(t, ops, 0, len(ops), newer, true)
			if enc := AppendSorted(nil, all, nil, Compact); !bytes.Equal(v, enc) {
				t.Errorf("%s (newer %v): merged %d bytes, the union encodes in %d", c.name, newer, len(v), len(enc))
			}
		}
	}
	// Interleaved runs, or runs that share an id: no concatenation, the
	// same set.
	for _, c := range [][2][]uint32{{{1, 5, 9}, {3, 7}}, {{1, 5, 9}, {9, 12}}, {{9, 12}, {1, 5, 9}}} {
		ops := [][]byte{AppendSorted(nil, c[0], nil, Compact), AppendSorted(nil, c[1], nil, Compact)}
		want := roaring.BitmapOf(append(c[0], c[1]...)...)
		for _, newer := range []bool{true, false} {
			if got, err := IDs(mergeRange(t, ops, 0, 2, newer, true)); err != nil || !got.Equals(want) {
				t.Errorf("%v then %v (newer %v): %v, %v", c[0], c[1], newer, got, err)
			}
		}
	}
}
