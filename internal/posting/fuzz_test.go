package posting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// roaringAccepts reports whether roaring's own decoder and Validate accept b
// as exactly one bitmap, and returns its elements. A panic inside roaring is
// reported as rejection, with the panic value.
func roaringAccepts(b []byte) (ids []uint32, ok bool, panicked any) {
	defer func() {
		if p := recover(); p != nil {
			ids, ok, panicked = nil, false, p
		}
	}()
	bm := roaring.New()
	n, err := bm.ReadFrom(bytes.NewReader(b))
	if err != nil || n != int64(len(b)) || bm.Validate() != nil {
		return nil, false, nil
	}
	return bm.ToArray(), true, nil
}

func FuzzDecode(f *testing.F) {
	// More seeds live in testdata/fuzz/FuzzDecode.
	f.Add([]byte{tagV1, 0})
	f.Add(EncodeAdd(roaring.BitmapOf(1, 2, 3, 1<<20)))
	f.Add((&Op{Add: roaring.BitmapOf(5), Remove: roaring.BitmapOf(6, 7)}).Encode())
	f.Add(compactOp([]uint32{0, 1, 300, 1 << 20, 1<<32 - 1}, nil))
	f.Add(compactOp([]uint32{5}, []uint32{6, 1 << 31}))
	f.Fuzz(func(t *testing.T, b []byte) {
		op, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
		} else {
			if op.Add.Intersects(op.Remove) {
				t.Fatal("decoded Add and Remove overlap")
			}
			op2, err := Decode(op.Encode())
			if err != nil {
				t.Fatalf("re-encoded value does not decode: %v", err)
			}
			if !op2.Add.Equals(op.Add) || !op2.Remove.Equals(op.Remove) {
				t.Fatal("re-encode round trip mismatch")
			}
		}
		// IDs and ForEach agree with each other and with Decode.
		ids, idsErr := IDs(b)
		var fe []uint32
		feErr := ForEach(b, func(id uint32) { fe = append(fe, id) })
		if (idsErr == nil) != (feErr == nil) {
			t.Fatalf("IDs err %v, ForEach err %v", idsErr, feErr)
		}
		if idsErr == nil {
			if !slices.Equal(fe, ids.ToArray()) && !(len(fe) == 0 && ids.IsEmpty()) {
				t.Fatal("ForEach and IDs disagree")
			}
			if err == nil && !ids.Equals(op.Add) {
				t.Fatal("IDs and Decode disagree")
			}
		}
		// The in-place walker accepts exactly what roaring accepts; the
		// compact decoder only the one encoding of a set.
		addB, _, tag, err := split(b)
		if err == nil && tag == tagV2 {
			var got []uint32
			if walkDelta(addB, func(x uint32) { got = append(got, x) }) == nil && !bytes.Equal(appendDelta(nil, got, deltaSize(got)), addB) {
				t.Fatalf("compact set %x accepted, encodes as %x", addB, appendDelta(nil, got, deltaSize(got)))
			}
		}
		if err == nil && tag == tagV1 && len(addB) > 0 {
			var got []uint32
			walkErr := walk(addB, func(x uint32) { got = append(got, x) })
			want, ok, p := roaringAccepts(addB)
			if ok != (walkErr == nil) {
				t.Fatalf("walk err %v, roaring accepts %v (panic %v)", walkErr, ok, p)
			}
			if ok && !slices.Equal(got, want) {
				t.Fatal("walk and roaring disagree on the elements")
			}
		}
	})
}

// opsFromBytes turns fuzz input into operands: each operand is a header
// byte (bit 0: remove, bits 1-3: id count, bit 4: add 300 more ids to
// container bits 5-7) and one byte per id, mapped onto 8 containers of 32
// values so that operands collide. Operand i is in the compact encoding
// when bit i%64 of compact is set.
func opsFromBytes(data []byte, compact uint64) [][]byte {
	var ops [][]byte
	for len(data) > 0 && len(ops) < 32 {
		h := data[0]
		data = data[1:]
		n := min(int(h>>1&7), len(data))
		bm := roaring.New()
		for _, x := range data[:n] {
			bm.Add(uint32(x&0x1f) | uint32(x>>5)<<16)
		}
		data = data[n:]
		if h&0x10 != 0 { // a large operand: 300 ids, every other value
			base := uint32(h>>5) << 16
			for i := uint32(0); i < 300; i++ {
				bm.Add(base | 2*i)
			}
		}
		ops = append(ops, encodeTest(bm, h&1 == 1, compact>>(len(ops)%64)&1 == 1))
	}
	return ops
}

func FuzzMerge(f *testing.F) {
	f.Add(uint64(1), []byte{0x06, 1, 2, 3, 0x03, 2, 0x02, 2})
	f.Add(uint64(2), []byte{0x0e, 0, 0x20, 0x40, 0x60, 0x80, 0xa0, 0xc0, 0x0f, 0x20, 0x40})
	f.Add(uint64(3), []byte{0x01, 0x00, 0x03, 7, 0x02, 7, 0x03, 7})
	f.Fuzz(func(t *testing.T, seed uint64, data []byte) {
		ops := opsFromBytes(data, seed)
		if len(ops) == 0 {
			return
		}
		r := rand.New(rand.NewPCG(seed, uint64(len(data))))
		want := model(t, ops)
		got := foldRandom(t, r, ops, true)
		ids := roaring.New()
		if got != nil {
			var err error
			if ids, err = IDs(got); err != nil {
				t.Fatal(err)
			}
		}
		if !ids.Equals(want) {
			t.Fatalf("merged %v, model %v", ids, want)
		}
		// Without the base, a partial merge composes like its operands.
		partial := foldRandomNoBase(t, r, ops)
		below := EncodeAdd(roaring.BitmapOf(0, 1, 2, 3, 1<<16, 2<<16|5))
		lhs := model(t, append([][]byte{below}, partial...))
		rhs := model(t, append([][]byte{below}, ops...))
		if !lhs.Equals(rhs) {
			t.Fatalf("partial merge: %v, want %v", lhs, rhs)
		}
	})
}

// TestWriteFuzzSeeds regenerates testdata/fuzz/FuzzDecode when run with
// -run TestWriteFuzzSeeds -write-seeds (never in normal runs).
func TestWriteFuzzSeeds(t *testing.T) {
	if !*writeSeeds {
		t.Skip("pass -write-seeds to regenerate the seed corpus")
	}
	seeds := map[string][]byte{}
	dense := roaring.New()
	for i := uint32(0); i < 20000; i += 3 {
		dense.Add(i)
	}
	runs := roaring.New()
	runs.AddRange(10, 5000)
	runs.AddRange(70000, 70100)
	many := roaring.New()
	for c := uint32(0); c < 12; c++ {
		many.Add(c<<16 | c*7)
	}
	seeds["empty_op"] = []byte{tagV1, 0}
	seeds["add_one"] = EncodeAdd(roaring.BitmapOf(42))
	seeds["add_many_containers"] = EncodeAdd(many)
	seeds["add_dense_bitmap"] = EncodeAdd(dense)
	seeds["add_runs"] = EncodeAdd(runs)
	seeds["add_remove"] = (&Op{Add: roaring.BitmapOf(1, 2), Remove: runs}).Encode()
	seeds["remove_only"] = EncodeRemove(many)
	seeds["bad_tag"] = []byte{7, 0}
	seeds["truncated"] = EncodeAdd(many)[:30]
	seeds["huge_length"] = binary.AppendUvarint([]byte{tagV1}, 1<<40)
	seeds["compact_add"] = compactOp(many.ToArray(), nil)
	seeds["compact_add_remove"] = compactOp([]uint32{1, 2, 1 << 31}, []uint32{3, 1<<32 - 1})
	seeds["compact_not_minimal"] = []byte{tagV2, 2, 0x80, 0x00}
	seeds["compact_beyond_32_bits"] = []byte{tagV2, 5, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00}
	for name, b := range seeds {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := writeFile("testdata/fuzz/FuzzDecode/"+name, content); err != nil {
			t.Fatal(err)
		}
	}
}
