package index

import "github.com/fpdb/fpdb/internal/hugepage"

// fpChunkBits sets the fingerprints per chunk of an fpStore: 2^16, 4 MiB
// at K = 512, which is also the scan's block between context checks.
const fpChunkBits = 16

// fpStore holds the fingerprint of every internal id in memory, in chunks
// of 2^fpChunkBits ids: growing never copies more than one chunk, and never
// holds twice the memory it needs (as one array grown by doubling would:
// 640 MB of fingerprints at 10 M documents).
type fpStore struct {
	stride int        // words per fingerprint
	chunks [][]uint64 // chunk c holds ids [c·2^fpChunkBits, (c+1)·2^fpChunkBits)
	n      int        // one more than the largest id stored
	noHuge bool       // no huge-page advice (Index.SetHugePages)
}

// len returns one more than the largest id stored.
func (s *fpStore) len() int { return s.n }

// at returns the fingerprint of id < len(), a view into the store.
func (s *fpStore) at(id int) []uint64 {
	c, i := id>>fpChunkBits, (id&(1<<fpChunkBits-1))*s.stride
	return s.chunks[c][i : i+s.stride]
}

// set stores fp as the fingerprint of id, growing the store to hold it.
func (s *fpStore) set(id int, fp []uint64) {
	c, i := id>>fpChunkBits, (id&(1<<fpChunkBits-1))*s.stride
	if c >= len(s.chunks) {
		// Every chunk below the last is full: ids between the old end and
		// id read as zero.
		full := s.stride << fpChunkBits
		if k := len(s.chunks) - 1; k >= 0 {
			s.chunks[k] = grow(s.chunks[k], full, !s.noHuge)
		}
		for len(s.chunks) < c {
			s.chunks = append(s.chunks, newChunk(full, full, !s.noHuge))
		}
		s.chunks = append(s.chunks, nil)
	}
	if need := i + s.stride; len(s.chunks[c]) < need {
		s.chunks[c] = grow(s.chunks[c], need, !s.noHuge)
	}
	copy(s.chunks[c][i:], fp)
	s.n = max(s.n, id+1)
}

// grow returns b extended with zeros to length n, at least doubling its
// capacity when it must move (up to a chunk), advised as newChunk.
func grow(b []uint64, n int, huge bool) []uint64 {
	if n <= cap(b) {
		return b[:n]
	}
	g := newChunk(n, max(n, 2*cap(b)), huge)
	copy(g, b)
	return g
}

// newChunk returns a zeroed slice of length n and capacity c, advised
// for huge pages when huge is set (on them where the system gives them:
// verification reads fingerprints at random, see package hugepage).
func newChunk(n, c int, huge bool) []uint64 {
	g := make([]uint64, n, c)
	if huge {
		hugepage.Zeroed(g[:c])
	}
	return g
}

// span returns the fingerprints of ids [from, to), which must lie in one
// chunk, as one slice.
func (s *fpStore) span(from, to int) []uint64 {
	c := from >> fpChunkBits
	lo, hi := (from&(1<<fpChunkBits-1))*s.stride, (to-c<<fpChunkBits)*s.stride
	return s.chunks[c][lo:hi]
}
