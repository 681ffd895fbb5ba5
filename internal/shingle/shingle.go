package shingle

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/fpdb/fpdb/internal/splitmix"
)

// MaxWidth is the largest shingle width New accepts.
const MaxWidth = 64

// Shingler hashes the w-shingles of a word stream. It is reusable (call
// Reset between documents) but not safe for concurrent use.
type Shingler struct {
	w     int
	seed  uint64 // word-hash seed
	init  uint64 // initial chain value of a shingle hash
	ring  []uint64
	pos   int      // ring index of the oldest word hash once the ring is full
	count int      // words added since Reset
	win   []uint64 // AddHashes' scratch
}

// New returns a Shingler for shingles of w words whose hashes depend on seed.
// w must be in [1, MaxWidth].
func New(w int, seed uint64) (*Shingler, error) {
	if w < 1 || w > MaxWidth {
		return nil, fmt.Errorf("shingle: width %d out of range [1, %d]", w, MaxWidth)
	}
	return &Shingler{
		w:    w,
		seed: splitmix.Mix(seed ^ 0x736869_6e676c65), // "shingle"
		init: splitmix.Mix(seed + 0x9e3779b97f4a7c15),
		ring: make([]uint64, w),
	}, nil
}

// Width returns the shingle width w.
func (s *Shingler) Width() int { return s.w }

// Reset forgets the words added so far, readying s for a new document.
func (s *Shingler) Reset() {
	s.pos, s.count = 0, 0
}

// Add takes the next word of the document and calls emit with the hash of
// the shingle it completes, if any (from the w-th word on, one per word).
// Add does not retain word.
func (s *Shingler) Add(word []byte, emit func(uint64)) {
	h := HashBytes(word, s.seed)
	if s.count < s.w {
		s.ring[s.count] = h
		s.count++
		if s.count == s.w {
			emit(s.hash(0, s.w))
		}
		return
	}
	s.count++
	s.ring[s.pos] = h
	s.pos++
	if s.pos == s.w {
		s.pos = 0
	}
	emit(s.hash(s.pos, s.w))
}

// Finish ends the document. If fewer than w words were added (but at least
// one), it emits one shingle hash of all of them; otherwise it emits
// nothing. It returns the number of words added since Reset. Finish does not
// reset s.
func (s *Shingler) Finish(emit func(uint64)) int {
	if s.count > 0 && s.count < s.w {
		emit(s.hash(0, s.count))
	}
	return s.count
}

// hash combines the n word hashes in the ring starting at index start.
func (s *Shingler) hash(start, n int) uint64 {
	x := s.init
	j := start
	for i := 0; i < n; i++ {
		x = step(x, s.ring[j], i)
		if j++; j == len(s.ring) {
			j = 0
		}
	}
	return final(x, n)
}

// step combines the i-th word hash h of a shingle into its chain value x.
func step(x, h uint64, i int) uint64 {
	return bits.RotateLeft64((x^h)*prime1+uint64(i+1)*splitmix.Phi, 29)
}

// final returns the hash of a shingle of n words with chain value x.
func final(x uint64, n int) uint64 { return splitmix.Mix(x ^ uint64(n)*splitmix.Psi) }

// WordHash returns the hash that Add computes for word, for AddHashes.
func (s *Shingler) WordHash(word []byte) uint64 { return HashBytes(word, s.seed) }

// AddHashes is Add for many words at once, given their WordHash: it
// appends to dst the hashes of the shingles they complete, in order, and
// returns it. A loop over many shingles lets the processor overlap their
// hash chains, which one call per word does not.
func (s *Shingler) AddHashes(dst, words []uint64) []uint64 {
	for len(words) > 0 && s.count < s.w-1 {
		// The first words of a document complete no shingle (w > 1).
		s.ring[s.count] = words[0]
		s.count++
		words = words[1:]
	}
	if len(words) == 0 {
		return dst
	}
	// The window: the last w−1 words added before, oldest first, then
	// words.
	w := s.w
	win := s.win[:0]
	for i := range w - 1 {
		j := s.pos + i
		if s.count >= w {
			j++ // the ring is full: its oldest word leaves the window
		}
		win = append(win, s.ring[j%w])
	}
	win = append(win, words...)
	for p := w; p <= len(win); p++ {
		x := s.init
		for i, h := range win[p-w : p] {
			x = step(x, h, i)
		}
		dst = append(dst, final(x, w))
	}
	// The ring holds the last w words, oldest first.
	copy(s.ring, win[len(win)-w:])
	s.pos = 0
	s.count += len(words)
	s.win = win[:0]
	return dst
}

// XXH64 primes.
const (
	prime1 = 0x9e3779b185ebca87
	prime2 = 0xc2b2ae3d27d4eb4f
	prime3 = 0x165667b19e3779f9
	prime4 = 0x85ebca77c2b2ae63
	prime5 = 0x27d4eb2f165667c5
)

// HashBytes returns a seeded 64-bit hash of b. It follows the structure of
// XXH64's path for short inputs at any length (fpdb hashes words, which are
// short): one multiply-rotate round per 8 bytes, the last 1-7 bytes packed
// into one more round, then the XXH64 avalanche. It is deterministic across
// machines (bytes are read little-endian) and depends on every byte and on
// the length.
func HashBytes(b []byte, seed uint64) uint64 {
	h := seed + prime5 + uint64(len(b))
	for len(b) >= 8 {
		k := bits.RotateLeft64(binary.LittleEndian.Uint64(b)*prime2, 31) * prime1
		h = bits.RotateLeft64(h^k, 27)*prime1 + prime4
		b = b[8:]
	}
	// The 0-7 byte tail is packed into one word (overlapping reads, as in
	// wyhash); with the length already in h the packing is injective.
	if n := len(b); n > 0 {
		var v uint64
		if n >= 4 {
			v = uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<32
		} else {
			v = uint64(b[0])<<16 | uint64(b[n>>1])<<8 | uint64(b[n-1])
		}
		h = bits.RotateLeft64(h^v*prime1, 23)*prime2 + prime3
	}
	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	h ^= h >> 32
	return h
}
