package minhash

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// pairStats fingerprints n random set pairs with exact Jaccard r (|A∪B| =
// union; |A∩B| = r·union; the rest split evenly between A\B and B\A) and
// returns the mean and the sample variance of R̂ = 1 − 2H/k.
func pairStats(t testing.TB, k, union int, r float64, n int, rng *rand.Rand) (mean, variance float64) {
	t.Helper()
	inter := int(math.Round(r * float64(union)))
	if float64(inter)/float64(union) != r {
		t.Fatalf("union %d cannot give Jaccard %v exactly", union, r)
	}
	fa, fb := make([]uint64, k/64), make([]uint64, k/64)
	elems := make([]uint64, union)
	var sum, sumSq float64
	for p := 0; p < n; p++ {
		// A fresh seed per pair: the randomness is over the hash functions
		// as well as over the elements.
		seed := rng.Uint64()
		sa, sb := mustNew(t, k, seed), mustNew(t, k, seed)
		distinct(rng, elems)
		for i, e := range elems {
			switch {
			case i < inter:
				sa.Add(e)
				sb.Add(e)
			case (i-inter)%2 == 0:
				sa.Add(e)
			default:
				sb.Add(e)
			}
		}
		sa.Fingerprint(fa)
		sb.Fingerprint(fb)
		est := 1 - 2*float64(hamming(fa, fb))/float64(k)
		sum += est
		sumSq += est * est
	}
	mean = sum / float64(n)
	variance = (sumSq - float64(n)*mean*mean) / float64(n-1)
	return mean, variance
}

func hamming(a, b []uint64) int {
	h := 0
	for w := range a {
		h += bits.OnesCount64(a[w] ^ b[w])
	}
	return h
}

// distinct fills dst with distinct random values.
func distinct(rng *rand.Rand, dst []uint64) {
	seen := make(map[uint64]bool, len(dst))
	for i := range dst {
		v := rng.Uint64()
		for seen[v] {
			v = rng.Uint64()
		}
		seen[v] = true
		dst[i] = v
	}
}

// TestEstimatorStatistics checks that R̂ = 1 − 2H/k is unbiased and has the
// variance of docs/algorithm.md §1.5, (1−R²)/k.
//
// Measured (N = 1000 pairs each, fixed seeds; ratio = sample variance /
// ((1−R²)/k), for R = 0.3 / 0.5 / 0.7 / 0.9):
//
//	k=512 |A∪B|=2000: 0.95 0.86 0.90 0.87  (below: bins sample without replacement)
//	k=128 |A∪B|=2000: 1.00 1.02 0.96 0.94
//	k=512 |A∪B|=300:  1.04 1.05 1.01 1.00  (56 % of the bins densified)
//	k=128 |A∪B|=300:  0.96 0.93 0.97 0.86
//	k=512 |A∪B|=20:   1.17 1.17 1.21 1.27  (≈ 2 % of the bins hold an element)
//
// For sets much larger than k, theory predicts (1 + R·f)/(1 + R) with the
// finite-population factor f ≈ (n−k)/(n−1) of one-permutation hashing
// (0.92 / 0.88 at R = 0.5 / 0.9 for n = 2000, k = 512), matching the
// measurements. When most bins are densified the variance is a little above
// (1−R²)/k: copied bins share their minimum, so their match indicators are
// positively correlated (their output bits are still independent coins on a
// mismatch). Sets of 2000 and 300 assert ±25 %; for 20 elements in 512 bins
// the variance must lie within [0.75, 1.5] of the theory (1.5 = the measured
// 1.27 plus about 5 standard errors of a sample variance, sqrt(2/N) ≈ 4.5 %).
// The means were all within 2 SE of R.
func TestEstimatorStatistics(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 400
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		k, union int
		lo, hi   float64 // allowed variance ratio
	}{
		{512, 2000, 0.75, 1.25},
		{128, 2000, 0.75, 1.25},
		{512, 300, 0.75, 1.25},
		{128, 300, 0.75, 1.25},
		{512, 20, 0.75, 1.5},
	} {
		for _, r := range []float64{0.3, 0.5, 0.7, 0.9} {
			mean, v := pairStats(t, tc.k, tc.union, r, n, rng)
			theory := (1 - r*r) / float64(tc.k)
			se := math.Sqrt(theory / float64(n))
			ratio := v / theory
			t.Logf("k=%d |A∪B|=%d R=%.1f: mean %.4f (%+.1f SE), variance %.3g = %.3f × (1−R²)/k",
				tc.k, tc.union, r, mean, (mean-r)/se, v, ratio)
			if math.Abs(mean-r) > 3*se {
				t.Errorf("k=%d |A∪B|=%d R=%.1f: mean R̂ %.4f more than 3 SE (%.4f) from R", tc.k, tc.union, r, mean, se)
			}
			if ratio < tc.lo || ratio > tc.hi {
				t.Errorf("k=%d |A∪B|=%d R=%.1f: variance ratio %.3f outside [%.2f, %.2f]", tc.k, tc.union, r, ratio, tc.lo, tc.hi)
			}
		}
	}
}

// TestBitUniformity checks that every bit position is 1 in about half of the
// fingerprints of random sets, including small (densified) ones.
func TestBitUniformity(t *testing.T) {
	const k, docs = 512, 4000
	rng := rand.New(rand.NewPCG(3, 4))
	s := mustNew(t, k, 0x5eed)
	fp := make([]uint64, k/64)
	var ones [k]int
	var total int
	for d := 0; d < docs; d++ {
		s.Reset()
		size := 1 + rng.IntN(3000)
		if d%4 == 0 {
			size = 1 + rng.IntN(20)
		}
		for i := 0; i < size; i++ {
			s.Add(rng.Uint64())
		}
		s.Fingerprint(fp)
		for j := 0; j < k; j++ {
			b := int(fp[j/64] >> (j % 64) & 1)
			ones[j] += b
			total += b
		}
	}
	// Binomial(docs, 1/2) per position: sd = sqrt(docs)/2 ≈ 31.6. With 512
	// positions a 5 sd band is crossed by chance with probability < 3e-4.
	sd := math.Sqrt(docs) / 2
	for j, c := range ones {
		if math.Abs(float64(c)-docs/2) > 5*sd {
			t.Errorf("bit %d is 1 in %d of %d fingerprints", j, c, docs)
		}
	}
	// All bits together: Binomial(docs·k, 1/2), again 5 sd.
	if n := float64(docs * k); math.Abs(float64(total)-n/2) > 5*math.Sqrt(n)/2 {
		t.Errorf("%d of %.0f bits are 1", total, n)
	}
}
