package bitvec

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkScan scans 1e6 fingerprints of k=512 bits (stride 8, 64 MB) with a
// threshold that almost nothing passes; it reports ns per fingerprint and the
// read bandwidth.
func BenchmarkScan(b *testing.B) {
	for _, stride := range []int{8, 4, 16} {
		b.Run(map[int]string{4: "k256", 8: "k512", 16: "k1024"}[stride], func(b *testing.B) {
			const n = 1_000_000
			r := rand.New(rand.NewPCG(1, 1))
			flat := randVec(r, n*stride)
			q := randVec(r, stride)
			hits := 0
			b.SetBytes(int64(8 * len(flat)))
			b.ResetTimer()
			for range b.N {
				Scan(flat, stride, q, 64*stride/4, func(i, d int) { hits++ })
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/fp")
			_ = hits
		})
	}
}

func BenchmarkHamming(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, y := randVec(r, 8), randVec(r, 8)
	s := 0
	for range b.N {
		s += Hamming(x, y)
	}
	_ = s
}

func BenchmarkNeighbors16r2(b *testing.B) {
	s := uint32(0)
	for range b.N {
		Neighbors(0x1234, 16, 2, func(u uint32, d int) { s += u })
	}
	_ = s
}
