package posting

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// sortedSet returns a random increasing id list: sometimes dense (bitmap
// containers), sometimes spread over several containers, sometimes empty.
func sortedSet(r *rand.Rand) []uint32 {
	bm := roaring.New()
	switch r.IntN(4) {
	case 0:
	case 1:
		for range r.IntN(5) + 1 {
			bm.Add(r.Uint32())
		}
	case 2:
		base := r.Uint32N(1 << 20)
		for range r.IntN(10_000) {
			bm.Add(base + r.Uint32N(1<<17))
		}
	default:
		for range r.IntN(300) {
			bm.Add(r.Uint32N(1 << 18))
		}
	}
	return bm.ToArray()
}

func TestAppendSortedDecodes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 500 {
		add := sortedSet(r)
		var remove []uint32
		for _, id := range sortedSet(r) {
			if _, found := slices.BinarySearch(add, id); !found {
				remove = append(remove, id)
			}
		}
		enc := Encoding(i % 2)
		b := AppendSorted([]byte("prefix"), add, remove, enc)
		if string(b[:6]) != "prefix" {
			t.Fatal("dst prefix overwritten")
		}
		// Roaring writes tag 1 only; Compact writes the shorter encoding.
		if roar := AppendSorted(nil, add, remove, Roaring); roar[0] != tagV1 {
			t.Fatalf("case %d: Roaring wrote tag %d", i, roar[0])
		} else if compact := compactOp(add, remove); enc == Compact && !bytes.Equal(b[6:], roar) && !(len(compact) < len(roar) && bytes.Equal(b[6:], compact)) {
			t.Fatalf("case %d: Compact wrote %d bytes, roaring takes %d and compact %d", i, len(b)-6, len(roar), len(compact))
		} else if enc == Compact && len(compact) < len(roar) && !bytes.Equal(b[6:], compact) {
			t.Fatalf("case %d: Compact wrote roaring's %d bytes, compact takes %d", i, len(roar), len(compact))
		}
		op, err := Decode(b[6:])
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got := op.Add.ToArray(); !slices.Equal(got, add) && !(len(got) == 0 && len(add) == 0) {
			t.Fatalf("case %d: Add %d ids, want %d", i, len(got), len(add))
		}
		if got := op.Remove.ToArray(); !slices.Equal(got, remove) && !(len(got) == 0 && len(remove) == 0) {
			t.Fatalf("case %d: Remove %d ids, want %d", i, len(got), len(remove))
		}
		var walked []uint32
		if err := ForEach(b[6:], func(id uint32) { walked = append(walked, id) }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(walked, add) && !(len(walked) == 0 && len(add) == 0) {
			t.Fatalf("case %d: ForEach differs", i)
		}
		// The same operation as the roaring-built encoding.
		want := (&Op{Add: roaring.BitmapOf(add...), Remove: roaring.BitmapOf(remove...)}).Encode()
		wop, err := Decode(want)
		if err != nil {
			t.Fatal(err)
		}
		if !wop.Add.Equals(op.Add) || !wop.Remove.Equals(op.Remove) {
			t.Fatalf("case %d: differs from Encode", i)
		}
	}
}

func BenchmarkAppendSorted(b *testing.B) {
	var dst []byte
	for b.Loop() {
		dst = AppendSorted(dst[:0], []uint32{123456}, nil, Compact)
	}
}

// TestCompactRuns: ids that follow each other are shorter in roaring's run
// containers than as gaps (a byte each), and Compact writes them so, from
// AppendSorted, EncodeAddAs and a merge of two runs alike.
func TestCompactRuns(t *testing.T) {
	seq := func(lo, n uint32) []uint32 {
		ids := make([]uint32, n)
		for i := range ids {
			ids[i] = lo + uint32(i)
		}
		return ids
	}
	for _, n := range []uint32{64, 4096, 1 << 20} {
		ids := seq(1000, n)
		for name, v := range map[string][]byte{
			"AppendSorted": AppendSorted(nil, ids, nil, Compact),
			"EncodeAddAs":  EncodeAddAs(roaring.BitmapOf(ids...), Compact),
			"merge":        mergeRange(t, [][]byte{AppendSorted(nil, ids[:n/2], nil, Compact), AppendSorted(nil, ids[n/2:], nil, Compact)}, 0, 2, true, true),
			// Two compact halves, which the merge does not concatenate.
			"merge of compact halves": mergeRange(t, [][]byte{compactOp(ids[:n/2], nil), compactOp(ids[n/2:], nil)}, 0, 2, true, true),
		} {
			if limit := 16 + 16*int(n>>16+2); len(v) > limit { // a run container each
				t.Errorf("%d consecutive ids, %s: %d bytes (tag %d), want roaring's runs", n, name, len(v), v[0])
			}
			if got, err := IDs(v); err != nil || got.GetCardinality() != uint64(n) || got.Minimum() != 1000 || got.Maximum() != 1000+n-1 {
				t.Errorf("%d consecutive ids, %s: %v", n, name, err)
			}
		}
	}
	// Sparse ids with a few short runs stay compact.
	var ids []uint32
	for i := uint32(0); i < 300; i++ {
		ids = append(ids, i<<16)
		if i%10 == 0 {
			ids = append(ids, i<<16+1)
		}
	}
	if v := AppendSorted(nil, ids, nil, Compact); v[0] != tagV2 {
		t.Errorf("sparse ids with few runs: tag %d, want compact", v[0])
	}
}

// TestRoaringSizes: roaringSizes gives the lengths of roaring's own
// serialization, without run containers and run-optimized, and
// AppendSorted writes the shortest encoding its enc allows, also for lists
// whose runs sit beside bitmap containers.
func TestRoaringSizes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var sets [][]uint32
	for range 300 {
		sets = append(sets, sortedSet(r))
	}
	// Runs beside containers of every other id (bitmap containers).
	var mixed []uint32
	for c := uint32(0); c < 11; c++ {
		for i := uint32(0); i < 4096; i++ {
			if c < 8 {
				mixed = append(mixed, c<<16|i)
			} else {
				mixed = append(mixed, c<<16|2*i, c<<16|2*i+8192)
			}
		}
	}
	slices.Sort(mixed)
	sets = append(sets, mixed)
	// Bitmap containers of about 2 048 runs, which roaring makes run
	// containers a little larger than the bitmap; with a short run beside.
	for _, nruns := range []int{2040, 2048, 2050, 2055, 2060} {
		var ids []uint32
		v := uint32(0)
		for i := range nruns {
			n := uint32(2)
			if i < 4200-2*nruns {
				n = 3
			}
			for range n {
				ids = append(ids, v)
				v++
			}
			v++ // a gap: the next run
		}
		sets = append(sets, ids, append(slices.Clone(ids), 5<<16, 5<<16+1, 5<<16+2, 5<<16+3))
	}
	for i := range 50 { // random runs
		bm := roaring.New()
		for range 1 + r.IntN(20) {
			lo := r.Uint32N(1 << 22)
			bm.AddRange(uint64(lo), uint64(lo+1+r.Uint32N(uint32(1+i*100))))
		}
		sets = append(sets, bm.ToArray())
	}
	for i, ids := range sets {
		bm := roaring.BitmapOf(ids...)
		plain, runs := roaringSizes(ids)
		if want := int(bm.GetSerializedSizeInBytes()); len(ids) > 0 && plain != want {
			t.Fatalf("set %d (%d ids): plain %d, roaring %d", i, len(ids), plain, want)
		}
		bm.RunOptimize()
		if want := int(bm.GetSerializedSizeInBytes()); len(ids) > 0 && runs != want {
			t.Fatalf("set %d (%d ids): with runs %d, roaring %d", i, len(ids), runs, want)
		}
		for _, enc := range []Encoding{Roaring, Compact} {
			got, best := AppendSorted(nil, ids, nil, enc), EncodeAddAs(roaring.BitmapOf(ids...), enc)
			if len(got) > len(best) {
				t.Errorf("set %d (%d ids), encoding %d: %d bytes, the shortest %d", i, len(ids), enc, len(got), len(best))
			}
		}
	}
}
