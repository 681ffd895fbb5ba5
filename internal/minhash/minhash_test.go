package minhash

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fpdb/fpdb/internal/splitmix"
)

func mustNew(t testing.TB, k int, seed uint64) *Sketcher {
	t.Helper()
	s, err := New(k, seed)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func fingerprint(s *Sketcher, elems []uint64) []uint64 {
	s.Reset()
	for _, e := range elems {
		s.Add(e)
	}
	fp := make([]uint64, s.K()/64)
	s.Fingerprint(fp)
	return fp
}

func randomSet(rng *rand.Rand, n int) []uint64 {
	out := make([]uint64, n)
	distinct(rng, out)
	return out
}

func TestNewValidates(t *testing.T) {
	for _, k := range []int{0, -64, 1, 63, 65, 100, MaxK + 64} {
		if _, err := New(k, 0); err == nil {
			t.Errorf("New(%d) succeeded", k)
		}
	}
	for _, k := range []int{64, 128, 512, MaxK} {
		if s, err := New(k, 0); err != nil || s.K() != k {
			t.Errorf("New(%d): %v", k, err)
		}
	}
}

func TestEmpty(t *testing.T) {
	s := mustNew(t, 128, 1)
	if !s.Empty() {
		t.Fatal("new sketcher not empty")
	}
	fp := []uint64{^uint64(0), ^uint64(0)}
	s.Fingerprint(fp)
	if fp[0] != 0 || fp[1] != 0 {
		t.Fatal("empty fingerprint not zero")
	}
	s.Add(7)
	if s.Empty() {
		t.Fatal("not empty after Add")
	}
	s.Reset()
	if !s.Empty() {
		t.Fatal("not empty after Reset")
	}
}

func TestSetSemantics(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 5, 100, 5000} {
		elems := randomSet(rng, n)
		s := mustNew(t, 256, 99)
		a := fingerprint(s, elems)
		// Order and duplicates do not matter; a fresh sketcher agrees.
		shuffled := slices.Clone(elems)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		shuffled = append(shuffled, elems[:n/2+1]...)
		b := fingerprint(mustNew(t, 256, 99), shuffled)
		if !slices.Equal(a, b) {
			t.Fatalf("n=%d: order or duplicates changed the fingerprint", n)
		}
		// Fingerprint does not change the set.
		c := make([]uint64, 4)
		s.Fingerprint(c)
		if !slices.Equal(a, c) {
			t.Fatalf("n=%d: second Fingerprint differs", n)
		}
		// A different seed gives an unrelated fingerprint.
		d := fingerprint(mustNew(t, 256, 100), elems)
		if h := hamming(a, d); h < 80 || h > 176 {
			t.Fatalf("n=%d: other seed at Hamming distance %d", n, h)
		}
	}
}

func TestSingleElement(t *testing.T) {
	// One element fills one bin; the other bins copy it, and the re-hash
	// with the bin index makes their bits fair coins.
	s := mustNew(t, 512, 3)
	fp := fingerprint(s, []uint64{42})
	ones := 0
	for _, w := range fp {
		ones += popcount(w)
	}
	if ones < 200 || ones > 312 {
		t.Fatalf("%d ones in the fingerprint of a single element", ones)
	}
	if !slices.Equal(fp, fingerprint(mustNew(t, 512, 3), []uint64{42})) {
		t.Fatal("not deterministic")
	}
}

func popcount(w uint64) int { return hamming([]uint64{w}, []uint64{0}) }

func TestSimilarity(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const k = 512
	a := randomSet(rng, 1000)
	s := mustNew(t, k, 11)
	fa := fingerprint(s, a)
	// Identical sets: distance 0. Disjoint sets: about k/2.
	if h := hamming(fa, fingerprint(s, a)); h != 0 {
		t.Fatalf("identical sets at distance %d", h)
	}
	if h := hamming(fa, fingerprint(s, randomSet(rng, 1000))); h < 200 || h > 312 {
		t.Fatalf("disjoint sets at distance %d", h)
	}
	// Replace 5 % of the elements: R = 950/1050 ≈ 0.905, E[H] = k(1−R)/2 ≈ 24.
	b := slices.Clone(a)
	copy(b[:50], randomSet(rng, 50))
	if h := hamming(fa, fingerprint(s, b)); h > 50 {
		t.Fatalf("near-duplicate set at distance %d", h)
	}
}

func TestShortDst(t *testing.T) {
	s := mustNew(t, 256, 1)
	for _, e := range []uint64{1, 2, 3} {
		s.Add(e)
	}
	full := make([]uint64, 4)
	s.Fingerprint(full)
	short := make([]uint64, 2)
	s.Fingerprint(short)
	if !slices.Equal(short, full[:2]) {
		t.Fatal("short dst not a prefix")
	}
	s.Fingerprint(nil) // must not panic
	long := []uint64{0, 0, 0, 0, 77}
	s.Fingerprint(long)
	if long[4] != 77 || !slices.Equal(long[:4], full) {
		t.Fatal("long dst mishandled")
	}
}

func FuzzSketcher(f *testing.F) {
	f.Add([]byte{1, 2, 3}, uint64(0), uint8(1))
	f.Add([]byte{}, uint64(7), uint8(8))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, kw uint8) {
		k := 64 * (1 + int(kw%16))
		s := mustNew(t, k, seed)
		var elems []uint64
		for i := 0; i+8 <= len(data); i += 8 {
			var v uint64
			for _, c := range data[i : i+8] {
				v = v<<8 | uint64(c)
			}
			elems = append(elems, v)
		}
		a := fingerprint(s, elems)
		slices.Reverse(elems)
		if !slices.Equal(a, fingerprint(s, elems)) {
			t.Fatal("order changed the fingerprint")
		}
		if s.Empty() != (len(elems) == 0) {
			t.Fatal("Empty wrong")
		}
	})
}

func BenchmarkAdd(b *testing.B) {
	s := mustNew(b, 512, 1)
	var x uint64
	for b.Loop() {
		x += 0x9e3779b97f4a7c15
		s.Add(x)
	}
}

func benchmarkFingerprint(b *testing.B, n int) {
	s := mustNew(b, 512, 1)
	rng := rand.New(rand.NewPCG(1, 1))
	for range n {
		s.Add(rng.Uint64())
	}
	fp := make([]uint64, 8)
	for b.Loop() {
		s.Fingerprint(fp)
	}
}

func BenchmarkFingerprint1(b *testing.B)    { benchmarkFingerprint(b, 1) }
func BenchmarkFingerprint2(b *testing.B)    { benchmarkFingerprint(b, 2) }
func BenchmarkFingerprint20(b *testing.B)   { benchmarkFingerprint(b, 20) }
func BenchmarkFingerprint300(b *testing.B)  { benchmarkFingerprint(b, 300) }
func BenchmarkFingerprint2000(b *testing.B) { benchmarkFingerprint(b, 2000) }

// BenchmarkFingerprintSets sketches 64 different sets of 330 elements in
// turn (a 2 KB document has about 330 shingles), so that the branch
// predictor cannot learn one set's empty bins.
func BenchmarkFingerprintSets(b *testing.B) {
	s := mustNew(b, 512, 1)
	rng := rand.New(rand.NewPCG(1, 1))
	sets := make([][]uint64, 64)
	for i := range sets {
		for range 330 {
			sets[i] = append(sets[i], rng.Uint64())
		}
	}
	fp := make([]uint64, 8)
	i := 0
	for b.Loop() {
		s.Reset()
		s.AddAll(sets[i%len(sets)])
		s.Fingerprint(fp)
		i++
	}
}

// refFingerprint is the definition of the fingerprint, computed the plain
// way: bin by bin, an empty bin probing four bins per SplitMix64 output
// until it finds a non-empty one.
func refFingerprint(s *Sketcher, dst []uint64) {
	k := uint64(s.k)
	filled := func(j uint64) bool { return s.filled[j>>6]&(1<<(j&63)) != 0 }
	clear(dst)
	if s.n == 0 {
		return
	}
	for i := 0; i < min(len(dst)*64, s.k); i++ {
		j := uint64(i)
		if !filled(j) {
			x := s.probe ^ uint64(i)*splitmix.Psi
			found := false
			for probes := 0; probes < maxProbes*s.k && !found; probes += 4 {
				x += splitmix.Phi
				r := splitmix.Mix(x)
				for c := 0; c < 4 && !found; c++ {
					j = (r & 0xffff) * k >> 16
					found = filled(j)
					r >>= 16
				}
			}
			if !found {
				j = uint64(s.nextFilled(i))
			}
		}
		dst[i>>6] |= (splitmix.Mix(s.min[j]^s.out+uint64(i)*splitmix.Phi) >> 63) << (i & 63)
	}
}

// TestFingerprintMatchesDefinition checks Fingerprint against
// refFingerprint for sketches from empty to full, at several k.
func TestFingerprintMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{64, 192, 512, 1024} {
		s := mustNew(t, k, uint64(k))
		for _, n := range []int{0, 1, 2, 3, 5, 20, k / 4, k, 4 * k} {
			for trial := range 5 {
				s.Reset()
				for range n {
					s.Add(rng.Uint64())
				}
				got, want := make([]uint64, k/64), make([]uint64, k/64)
				s.Fingerprint(got)
				refFingerprint(s, want)
				if !slices.Equal(got, want) {
					t.Fatalf("k=%d n=%d trial %d: Fingerprint differs from the definition", k, n, trial)
				}
			}
		}
	}
}
