package posting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// randBitmap returns a bitmap exercising array, bitmap and run containers.
func randBitmap(r *rand.Rand) *roaring.Bitmap {
	bm := roaring.New()
	switch r.IntN(6) {
	case 0: // empty
	case 1: // few sparse ids over a wide range (one container each)
		for i := r.IntN(20); i > 0; i-- {
			bm.Add(r.Uint32N(1 << 22))
		}
	case 2: // dense: bitmap container
		base := r.Uint32N(8) << 16
		for i := 5000 + r.IntN(3000); i > 0; i-- {
			bm.Add(base + r.Uint32N(1<<16))
		}
	case 3: // runs
		for i := 1 + r.IntN(5); i > 0; i-- {
			lo := uint64(r.Uint32N(1 << 20))
			bm.AddRange(lo, lo+1+uint64(r.IntN(70000)))
		}
	case 4: // many containers (offset header present)
		for c := uint32(0); c < 10; c++ {
			for i := r.IntN(50); i >= 0; i-- {
				bm.Add(c<<16 | r.Uint32N(1<<16))
			}
		}
	case 5: // high ids
		for i := r.IntN(10); i > 0; i-- {
			bm.Add(^uint32(0) - r.Uint32N(100))
		}
	}
	return bm
}

func forEachIDs(t testing.TB, b []byte) []uint32 {
	t.Helper()
	var ids []uint32
	if err := ForEach(b, func(id uint32) { ids = append(ids, id) }); err != nil {
		t.Fatalf("ForEach: %v", err)
	}
	return ids
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		add, rem := randBitmap(r), randBitmap(r)
		before := add.Clone()
		op := &Op{Add: add, Remove: rem}
		enc := op.Encode()
		if !add.Equals(before) {
			t.Fatal("Encode modified its input")
		}
		got, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if !got.Add.Equals(add) || !got.Remove.Equals(roaring.AndNot(rem, add)) {
			t.Fatalf("round trip mismatch")
		}
		ids, err := IDs(enc)
		if err != nil || !ids.Equals(add) {
			t.Fatalf("IDs: %v", err)
		}
		if fe := forEachIDs(t, enc); !slices.Equal(fe, add.ToArray()) && !(len(fe) == 0 && add.IsEmpty()) {
			t.Fatalf("ForEach mismatch: %d ids, want %d", len(fe), add.GetCardinality())
		}
		// The add-only and remove-only encoders.
		if got, err := Decode(EncodeAdd(add)); err != nil || !got.Add.Equals(add) || !got.Remove.IsEmpty() {
			t.Fatalf("EncodeAdd: %v", err)
		}
		if got, err := Decode(EncodeRemove(rem)); err != nil || !got.Remove.Equals(rem) || !got.Add.IsEmpty() {
			t.Fatalf("EncodeRemove: %v", err)
		}
		// Append form.
		if a := op.AppendEncode([]byte("pre")); !bytes.Equal(a[3:], enc) {
			t.Fatal("AppendEncode differs from Encode")
		}
	}
}

func TestEncodeCompact(t *testing.T) {
	if b := EncodeAdd(roaring.New()); !bytes.Equal(b, []byte{tagV1, 0}) {
		t.Fatalf("empty add = %x", b)
	}
	if b := (&Op{}).Encode(); !bytes.Equal(b, []byte{tagV1, 0}) {
		t.Fatalf("nil op = %x", b)
	}
	if b := EncodeAdd(roaring.BitmapOf(7)); len(b) != 2+8+4+4+2 { // tag, length, cookie+count, key/card, offset, value
		t.Fatalf("one id: %d bytes (%x)", len(b), b)
	}
	// Run optimization applies: a range of 100 000 ids is tiny.
	bm := roaring.New()
	bm.AddRange(0, 100000)
	if b := EncodeAdd(bm); len(b) > 40 {
		t.Fatalf("range not run-optimized: %d bytes", len(b))
	}
}

func TestDecodeErrors(t *testing.T) {
	valid := EncodeAdd(roaring.BitmapOf(1, 2, 3))
	rm := EncodeRemove(roaring.BitmapOf(1, 2, 3))
	// roaring bytes of {1,2,3}: cookie 12346, n=1, key 0 card-1 2, offset, 3 values.
	bm := valid[2:]
	withAdd := func(b []byte) []byte {
		return append(binary.AppendUvarint([]byte{tagV1}, uint64(len(b))), b...)
	}
	mutate := func(b []byte, i int, v byte) []byte {
		c := bytes.Clone(b)
		c[i] = v
		return c
	}
	arrayAt := 4 + 4 + 4 + 4 // cookie, count, header, offsets
	cases := map[string][]byte{
		"empty":   nil,
		"bad tag": {3, 0},
		"tag 0":   {0, 0},
		// The compact encoding (tag 2).
		"compact truncated":       {tagV2, 1, 0x80},
		"compact not minimal":     {tagV2, 2, 0x80, 0x00},
		"compact 2^32":            {tagV2, 5, 0x80, 0x80, 0x80, 0x80, 0x10},
		"compact past 2^32 - 1":   {tagV2, 6, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00},
		"compact 64-bit overflow": {tagV2, 10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
		"compact bad remove":      {tagV2, 1, 0x05, 0x80},
		"no length":               {tagV1},
		"bad varint":              {tagV1, 0x80},
		"length too long":         {tagV1, 5, 0, 0},
		"truncated add":           valid[:len(valid)-1],
		"trailing in add":         withAdd(append(bytes.Clone(bm), 0)),
		"truncated remove":        rm[:len(rm)-1],
		"bad cookie":              withAdd(mutate(bm, 0, 0)),
		"unsorted array":          withAdd(mutate(bm, arrayAt, 9)),
		"duplicate in arr":        withAdd(mutate(bm, arrayAt+2, 1)),
		"card too large":          withAdd(mutate(bm, 10, 3)),
		"container count":         withAdd(mutate(bm, 6, 1)),
		"short roaring":           withAdd([]byte{0x3a, 0x30}),
		"trailing garbage2":       append(bytes.Clone(rm), 1),
	}
	for name, b := range cases {
		if _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Decode err = %v", name, err)
		}
		if name == "truncated remove" || name == "trailing garbage2" || name == "compact bad remove" {
			continue // IDs and ForEach ignore Remove
		}
		if _, err := IDs(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: IDs err = %v", name, err)
		}
		if err := ForEach(b, func(uint32) {}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: ForEach err = %v", name, err)
		}
	}
}

// TestWalkRunsAndBitmaps builds corrupt run and bitmap containers by hand.
func TestWalkRunsAndBitmaps(t *testing.T) {
	run := func(runs ...uint16) []byte { // one run container, key 0
		b := binary.LittleEndian.AppendUint32(nil, serialCookie) // n-1 = 0
		b = append(b, 1)                                         // run bitmap
		b = append(b, 0, 0, 0, 0)                                // key 0, card ignored
		b = binary.LittleEndian.AppendUint16(b, uint16(len(runs)/2))
		for _, x := range runs {
			b = binary.LittleEndian.AppendUint16(b, x)
		}
		return b
	}
	var got []uint32
	if err := walk(run(1, 2, 10, 0), func(x uint32) { got = append(got, x) }); err != nil || !slices.Equal(got, []uint32{1, 2, 3, 10}) {
		t.Fatalf("valid runs: %v %v", got, err)
	}
	for name, b := range map[string][]byte{
		"no runs":     run(),
		"adjacent":    run(1, 2, 4, 0),
		"overlapping": run(1, 5, 3, 0),
		"unsorted":    run(10, 0, 1, 0),
		"overflow":    run(65000, 1000),
	} {
		if err := walk(b, nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v", name, err)
		}
		// roaring must agree that these are invalid.
		bm := roaring.New()
		if err := bm.UnmarshalBinary(b); err == nil && bm.Validate() == nil {
			t.Errorf("%s: roaring accepts it", name)
		}
	}
	dense := roaring.New()
	dense.AddRange(0, 8000)
	for i := uint32(0); i < 8000; i += 3 {
		dense.Remove(i)
	}
	b, err := dense.ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := walk(b, nil); err != nil {
		t.Fatalf("bitmap container: %v", err)
	}
	b[len(b)-1] ^= 0x80 // popcount no longer matches the header
	if err := walk(b, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad bitmap popcount: err = %v", err)
	}
}

// TestWalkMatchesRoaring compares the in-place walk with roaring's decoder
// on many serialized bitmaps.
func TestWalkMatchesRoaring(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 500; trial++ {
		bm := randBitmap(r)
		if r.IntN(2) == 0 {
			bm.RunOptimize()
		}
		b, err := bm.ToBytes()
		if err != nil {
			t.Fatal(err)
		}
		var got []uint32
		if err := walk(b, func(x uint32) { got = append(got, x) }); err != nil {
			t.Fatalf("walk: %v", err)
		}
		if want := bm.ToArray(); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("walk: %d ids, want %d", len(got), len(want))
		}
	}
}
