package posting

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// postingOf returns the merged value of n random ids out of 1 M documents,
// the typical posting of a 16-bit group (n = 15) and a long list (n = 1000).
func postingOf(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	bm := roaring.New()
	for int(bm.GetCardinality()) < n {
		bm.Add(r.Uint32N(1_000_000))
	}
	return EncodeAdd(bm)
}

func BenchmarkForEach(b *testing.B) {
	for _, n := range []int{15, 1000} {
		v := postingOf(n)
		b.Run(fmt.Sprintf("ids=%d", n), func(b *testing.B) {
			var sum uint32
			b.ReportAllocs()
			for range b.N {
				if err := ForEach(v, func(id uint32) { sum += id }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/id")
			_ = sum
		})
		// For comparison: roaring's zero-copy FromBuffer plus Iterate.
		b.Run(fmt.Sprintf("ids=%d/roaring-FromBuffer", n), func(b *testing.B) {
			addB, _, _, _ := split(v)
			var sum uint32
			b.ReportAllocs()
			for range b.N {
				bm := roaring.New()
				if _, err := bm.FromBuffer(addB); err != nil {
					b.Fatal(err)
				}
				bm.Iterate(func(x uint32) bool { sum += x; return true })
			}
			_ = sum
		})
		b.Run(fmt.Sprintf("ids=%d/IDs", n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := IDs(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMerge merges 184 single-id add operands (a key whose operands
// still sit in the memtable) into one value.
func BenchmarkMerge(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	ops := make([][]byte, 184)
	for i := range ops {
		ops[i] = EncodeAdd(roaring.BitmapOf(r.Uint32N(1_000_000)))
	}
	b.ReportAllocs()
	for range b.N {
		vm, err := Merger().Merge(nil, ops[len(ops)-1])
		if err != nil {
			b.Fatal(err)
		}
		for i := len(ops) - 2; i >= 0; i-- {
			if err := vm.MergeOlder(ops[i]); err != nil {
				b.Fatal(err)
			}
		}
		if _, _, err := vm.Finish(true); err != nil {
			b.Fatal(err)
		}
	}
}
