package db

import (
	"iter"
	"math"
	"math/bits"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
)

// docTable is what queries need of each stored document, by internal id:
// its id and its content hash. The ids live in one byte arena rather than
// as a string each: a 10-byte id costs its 10 bytes and an 8-byte
// reference instead of a 16-byte string header and a 16-byte allocation
// (14 bytes per document less; 140 MB at 10 M documents).
//
// The arena's bytes are never written twice: ids are appended, a removed
// id's bytes stay until the arena is rebuilt into a new array. So the
// strings that ext hands out (which point into the arena) stay valid and
// unchanged for as long as anyone holds them, whatever happens to the
// table after; the garbage collector keeps an old arena alive while a
// string points into it. The table is changed under DB.writeMu and
// DB.mu, and read under either.
type docTable struct {
	hashes [][16]byte
	sizes  []uint32 // shingle set sizes, for containment (0: unknown)
	// maxSize is at least every document's size (removals do not lower it).
	maxSize uint32
	// bySize[c] holds the documents of size class c: sizes in
	// [2^c, 2^(c+1)) (sizeClass). A containment search scans the largest
	// classes apart (DB.planSearch).
	bySize [sizeClasses]*roaring.Bitmap
	refs   []uint64 // offset in arena << refLenBits | length; 0: no document
	arena  []byte
	dead   int // arena bytes of removed ids
}

// sizeClasses is the number of size classes: one per bit of a uint32.
const sizeClasses = 32

// sizeClass returns the class of size sz > 0: ⌊log2 sz⌋.
func sizeClass(sz uint32) int { return bits.Len32(sz) - 1 }

// docTableBytesPerID is the table's memory per internal id, ids' bytes
// not counted.
const docTableBytesPerID = 8 + 16 + 4

// refLenBits holds an id's length (MaxIDLen = 1024 needs 11 bits); the
// offset has the other 53.
const refLenBits = 11

// An id's length must fit in refLenBits.
const _ = uint(1<<refLenBits - 1 - MaxIDLen)

// rebuildMinDead is the least garbage (arena bytes of removed ids) that
// makes a removal rebuild the arena, once it is half of the arena.
const rebuildMinDead = 1 << 20

// reserve makes room for internal ids below n.
func (t *docTable) reserve(n int) {
	if cap(t.refs) < n {
		t.refs = append(make([]uint64, 0, n), t.refs...)
		t.hashes = append(make([][16]byte, 0, n), t.hashes...)
		t.sizes = append(make([]uint32, 0, n), t.sizes...)
	}
}

// len returns one more than the highest internal id the table has room for.
func (t *docTable) len() int { return len(t.refs) }

// ext returns the id of document iid, "" when there is none.
func (t *docTable) ext(iid uint32) string {
	if int(iid) >= len(t.refs) || t.refs[iid] == 0 {
		return ""
	}
	r := t.refs[iid]
	off, n := r>>refLenBits, r&(1<<refLenBits-1)
	return unsafe.String(&t.arena[off], int(n))
}

// hash returns the content hash of document iid (zero when there is none).
func (t *docTable) hash(iid uint32) [16]byte {
	if int(iid) >= len(t.hashes) {
		return [16]byte{}
	}
	return t.hashes[iid]
}

// size returns the shingle set size of document iid (0: unknown).
func (t *docTable) size(iid uint32) int {
	if int(iid) >= len(t.sizes) {
		return 0
	}
	return int(t.sizes[iid])
}

// set stores document iid's id, content hash and shingle set size; ext is
// not empty and at most MaxIDLen bytes (validID).
func (t *docTable) set(iid uint32, ext string, hash [16]byte, size int) {
	if int(iid) >= len(t.refs) {
		t.refs = append(t.refs, make([]uint64, int(iid)+1-len(t.refs))...)
		t.hashes = append(t.hashes, make([][16]byte, int(iid)+1-len(t.hashes))...)
		t.sizes = append(t.sizes, make([]uint32, int(iid)+1-len(t.sizes))...)
	}
	t.remove(iid)
	// An offset of 0 with length 0 would read as "no document": ids are
	// never empty, so every reference is non-zero.
	t.refs[iid] = uint64(len(t.arena))<<refLenBits | uint64(len(ext))
	t.arena = append(t.arena, ext...)
	t.hashes[iid] = hash
	sz := uint32(min(max(size, 0), math.MaxUint32))
	t.sizes[iid] = sz
	t.maxSize = max(t.maxSize, sz)
	if sz > 0 {
		c := sizeClass(sz)
		if t.bySize[c] == nil {
			t.bySize[c] = roaring.New()
		}
		t.bySize[c].Add(iid)
	}
}

// classIDs returns the documents of the size classes from c up.
func (t *docTable) classIDs(c int) iter.Seq[uint32] {
	return func(yield func(uint32) bool) {
		for ; c < sizeClasses; c++ {
			if t.bySize[c] == nil {
				continue
			}
			it := t.bySize[c].Iterator()
			for it.HasNext() {
				if !yield(it.Next()) {
					return
				}
			}
		}
	}
}

// countFrom returns the number of documents of the size classes from c up.
func (t *docTable) countFrom(c int) int {
	n := 0
	for ; c < sizeClasses; c++ {
		n += t.classCount(c)
	}
	return n
}

// classCount returns the number of documents of size class c.
func (t *docTable) classCount(c int) int {
	if t.bySize[c] == nil {
		return 0
	}
	return int(t.bySize[c].GetCardinality())
}

// remove forgets document iid, rebuilding the arena once removed ids fill
// half of it.
func (t *docTable) remove(iid uint32) {
	if int(iid) >= len(t.refs) || t.refs[iid] == 0 {
		return
	}
	t.dead += int(t.refs[iid] & (1<<refLenBits - 1))
	if sz := t.sizes[iid]; sz > 0 {
		t.bySize[sizeClass(sz)].Remove(iid)
	}
	t.refs[iid], t.hashes[iid], t.sizes[iid] = 0, [16]byte{}, 0
	if t.dead >= rebuildMinDead && 2*t.dead >= len(t.arena) {
		t.rebuild()
	}
}

// rebuild copies the live ids into a new arena. The old one is left as it
// is: strings handed out still point into it.
func (t *docTable) rebuild() {
	arena := make([]byte, 0, len(t.arena)-t.dead)
	for i, r := range t.refs {
		if r == 0 {
			continue
		}
		off, n := r>>refLenBits, r&(1<<refLenBits-1)
		t.refs[i] = uint64(len(arena))<<refLenBits | n
		arena = append(arena, t.arena[off:off+n]...)
	}
	t.arena, t.dead = arena, 0
}
