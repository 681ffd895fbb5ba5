package minhash

import (
	"fmt"
	"math/bits"

	"github.com/fpdb/fpdb/internal/splitmix"
)

// MaxK is the largest fingerprint size New accepts.
const MaxK = 1 << 16

// Sketcher builds the k-bit one-permutation min-hash fingerprint of a set of
// 64-bit hashes. It is reusable (call Reset between sets) but not safe for
// concurrent use.
type Sketcher struct {
	k      int
	seed   uint64 // element re-mix seed
	probe  uint64 // densification probe seed
	out    uint64 // output-bit seed
	min    []uint64
	filled []uint64 // bit i set when bin i holds an element
	src    []uint32 // Fingerprint's scratch: the bin each bin copies
	first  []uint64 // the first four probes of densify for each bin
	n      int      // non-empty bins
}

// New returns a Sketcher for k-bit fingerprints whose bits depend on seed.
// k must be a positive multiple of 64, at most MaxK.
func New(k int, seed uint64) (*Sketcher, error) {
	if k <= 0 || k%64 != 0 || k > MaxK {
		return nil, fmt.Errorf("minhash: k = %d is not a positive multiple of 64 up to %d", k, MaxK)
	}
	s := &Sketcher{
		k:      k,
		min:    make([]uint64, k),
		filled: make([]uint64, k/64),
		src:    make([]uint32, k),
	}
	s.seed = splitmix.Next(&seed)
	s.probe = splitmix.Next(&seed)
	s.out = splitmix.Next(&seed)
	s.first = make([]uint64, k)
	for i := range s.first {
		s.first[i] = s.firstProbes(i)
	}
	return s, nil
}

// K returns the number of bits of the fingerprint.
func (s *Sketcher) K() int { return s.k }

// Reset empties the set.
func (s *Sketcher) Reset() {
	clear(s.filled)
	s.n = 0
}

// Add adds one element (a shingle hash) to the set. Adding an element twice
// has no further effect.
func (s *Sketcher) Add(h uint64) { s.AddAll([]uint64{h}) }

// AddAll adds every element of hs, as Add does one.
func (s *Sketcher) AddAll(hs []uint64) {
	k := uint64(s.k)
	for _, h := range hs {
		v := splitmix.Mix(h ^ s.seed)
		bin, _ := bits.Mul64(v, k)
		w, b := bin>>6, uint64(1)<<(bin&63)
		switch {
		case s.filled[w]&b == 0:
			s.filled[w] |= b
			s.min[bin] = v
			s.n++
		case v < s.min[bin]:
			s.min[bin] = v
		}
	}
}

// Empty reports whether no element was added since the last Reset.
func (s *Sketcher) Empty() bool { return s.n == 0 }

// Fingerprint writes the k-bit fingerprint of the set into dst, which must
// hold k/64 words (extra words are left alone): bit j is bit j%64 of
// dst[j/64]. The fingerprint of the empty set is all zeros. Fingerprint does
// not change the set. If dst is too short, only the bits that fit are
// written.
func (s *Sketcher) Fingerprint(dst []uint64) {
	words := min(len(dst), s.k/64)
	clear(dst[:words])
	if s.n == 0 {
		return
	}
	// Which bin each bin takes its minimum from: itself, or for an empty
	// bin the one densify picks. The empty bins are found a word of
	// filled at a time, and the output bits then computed without a
	// branch per bin: about half the bins of a 2 KB document are empty, at
	// random, and a test per bin was mispredicted half the time.
	src := s.src[:words*64]
	for i := range src {
		src[i] = uint32(i)
	}
	only := -1 // with a single non-empty bin, every bin copies it
	if s.n == 1 {
		only = s.nextFilled(0)
	}
	for w := range words {
		for e := ^s.filled[w]; e != 0; e &= e - 1 {
			i := w*64 + bits.TrailingZeros64(e)
			j := only
			if j < 0 {
				j = s.densify(i)
			}
			src[i] = uint32(j)
		}
	}
	mins := s.min
	for w := range words {
		var out uint64
		for b, j := range src[w*64 : w*64+64] {
			i := uint64(w*64 + b)
			out |= (splitmix.Mix(mins[j]^s.out+i*splitmix.Phi) >> 63) << b
		}
		dst[w] = out
	}
}

// maxProbes bounds the random probes of densify, per bin of the sketch,
// before it falls back to a scan; with at least one non-empty bin the
// fallback runs with probability below (1−1/k)^(64k) < e^−64.
const maxProbes = 64

// densify returns the non-empty bin that empty bin i copies its minimum
// from: the first non-empty bin of a pseudo-random probe sequence that
// depends only on the seed and i. Each 64-bit output of a SplitMix64 stream
// seeded with (seed, i) yields four probes, one per 16-bit chunk c, at bin
// ⌊c·k/2^16⌋. (For k not a power of two the probes are very slightly
// non-uniform; that does not bias the estimator, which only needs A and B to
// use the same sequence.) It requires s.n > 0.
func (s *Sketcher) densify(i int) int {
	// The first four probes are the same for every set: New computed
	// them. They are tested at once, without a branch each (each is a
	// coin toss for a half-empty sketch); the first non-empty one wins.
	p, f := s.first[i], s.filled
	j0, j1, j2, j3 := p&0xffff, p>>16&0xffff, p>>32&0xffff, p>>48
	hit := f[j0>>6]>>(j0&63)&1 | f[j1>>6]>>(j1&63)&1<<1 | f[j2>>6]>>(j2&63)&1<<2 | f[j3>>6]>>(j3&63)&1<<3
	if hit != 0 {
		return int(p >> (16 * bits.TrailingZeros64(hit)) & 0xffff)
	}
	k := uint64(s.k)
	x := s.probe ^ uint64(i)*splitmix.Psi + splitmix.Phi
	for probes := 4; probes < maxProbes*s.k; probes += 4 {
		x += splitmix.Phi
		r := splitmix.Mix(x)
		for c := 0; c < 4; c++ {
			j := (r & 0xffff) * k >> 16
			if s.filled[j>>6]&(1<<(j&63)) != 0 {
				return int(j)
			}
			r >>= 16
		}
	}
	return s.nextFilled(i)
}

// firstProbes returns the first four bins densify probes for bin i, 16
// bits each (k ≤ 2^16).
func (s *Sketcher) firstProbes(i int) uint64 {
	k := uint64(s.k)
	r := splitmix.Mix(s.probe ^ uint64(i)*splitmix.Psi + splitmix.Phi)
	var p uint64
	for c := range 4 {
		p |= ((r >> (16 * c) & 0xffff) * k >> 16) << (16 * c)
	}
	return p
}

// nextFilled returns the first non-empty bin after bin i, cyclically (bin i
// itself last). It requires s.n > 0.
func (s *Sketcher) nextFilled(i int) int {
	for d := 1; d <= s.k; d++ {
		j := (i + d) % s.k
		if s.filled[j>>6]&(1<<(j&63)) != 0 {
			return j
		}
	}
	return i // unreachable while s.n > 0
}
