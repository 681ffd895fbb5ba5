package index

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
)

// The count filter: a probe plan counts, for every document, how many of
// the probed posting lists hold it, and keeps those counted at least t
// times. Its cost is memory latency: the lists are spread over the posting
// cache, and a counter per document is an array as large as the database,
// touched at random. So the lists are first gathered (their addresses
// looked up a chunk at a time, and each list's first line touched, so that
// those memory reads overlap), and then counted in memory that stays in
// the CPU's caches:
//   - few postings (at most hashMaxPostings): an open-addressing table of
//     twice their number;
//   - more: the ids are partitioned by their high bits into blocks of
//     2^blockBits ids (sequential writes: into regions sized for ids
//     spread evenly over the blocks from the least id to the largest, or
//     by a counting sort when they are not), and each block is counted in
//     one 64 KiB array, reset after the block.
//
// Tests shrink both limits (countConfig) so that small indexes take every
// path.
const (
	hashMaxPostings = 1 << 13
	blockBits       = 16 // at most 16: countBlocks indexes its counters by 16 bits
)

// countConfig chooses between the ways of counting.
type countConfig struct {
	hashMax int  // hash when the postings are at most this many
	shift   uint // a block holds 2^shift ids
	exact   bool // blocks are always partitioned by the counting sort
}

// probeScratch is the memory of one probe, kept between queries.
type probeScratch struct {
	ys    []uint32   // the probed values
	lists [][]uint32 // the probed lists, in probe order
	total int        // their total length
	touch uint32     // keeps the touching reads of gather

	hashIDs   []uint32
	hashCount []uint8
	hist      []uint32        // ids per block, then block starts
	part      []uint32        // the ids partitioned by block
	block     *[1 << 16]uint8 // the counters of one block
	evenSkips int             // counts to partition by the counting sort (countBlocks)
	cands     []uint32

	// big keeps the heap arrays of larger probes between queries. Each
	// phase of a probe knows its size before it starts (the probe count
	// from the groups, the lists from the probes, the count table from
	// the postings; the candidates are at most total/t) and picks the
	// inline array when it fits: a small query after a large one still
	// uses the inline arrays.
	big struct {
		ys        []uint32
		lists     [][]uint32
		hashIDs   []uint32
		hashCount []uint8
		cands     []uint32
	}

	// inline holds a small probe's arrays in the scratch's own
	// allocation, on adjacent pages whose page-table entries share a
	// cache line or two: a query in cold CPU caches then reads the page
	// tables from memory once or twice for all of them, where separate
	// allocations would each cost such a read (and a cache line of their
	// own).
	inline struct {
		ys        [inlineProbes]uint32
		lists     [inlineProbes][]uint32
		hashCount [inlineHash]uint8
		hashIDs   [inlineHash]uint32
		cands     [inlineCands]uint32
	}
}

// The capacities of a scratch's inline arrays, 18 KiB in all: enough for
// the probes of τ = 0 over up to 255 groups and the count of up to 1 023
// postings (an r = 0.9 query at 1 M documents in 32 groups of 16 bits
// counts about 420).
const (
	inlineProbes = 256
	inlineHash   = 2048
	inlineCands  = 256
)

// newProbeScratch returns a scratch whose slices use its inline arrays.
func newProbeScratch() *probeScratch {
	sc := new(probeScratch)
	in := &sc.inline
	sc.ys, sc.lists, sc.cands = in.ys[:0], in.lists[:0], in.cands[:0]
	sc.hashIDs, sc.hashCount = in.hashIDs[:], in.hashCount[:]
	return sc
}

// pick returns an empty slice of capacity at least n: inline's when n
// fits it, else *big's, replaced by a larger one first if it is too small.
func pick[T any](inline []T, big *[]T, n int) []T {
	if n <= len(inline) {
		return inline[:0]
	}
	if cap(*big) < n {
		*big = make([]T, 0, n)
	}
	return (*big)[:0]
}

// startProbes readies sc.ys for n probed values.
func (sc *probeScratch) startProbes(n int) []uint32 {
	sc.ys = pick(sc.inline.ys[:], &sc.big.ys, n)
	return sc.ys
}

// bytes is the memory of sc's heap arrays.
func (sc *probeScratch) bytes() int {
	b := &sc.big
	return 4*(cap(b.ys)+cap(b.hashIDs)+cap(sc.hist)+cap(sc.part)+cap(b.cands)) + cap(b.hashCount) + 24*cap(b.lists)
}

// scratchPool keeps up to scratchKeep probe scratches (and one hot)
// between queries.
// Unlike a sync.Pool, which drops its items at garbage collections, it
// keeps them: a fresh scratch costs page faults on its first use (a
// millisecond for the counting arrays of a large probe), which would show
// as tail latency every few collections. A scratch that grew beyond
// scratchKeepBytes is dropped instead, so that one huge query does not
// hold its memory for good. One scratch sits in hot, taken and returned
// with one atomic operation: a query one at a time touches neither the
// mutex nor the list.
type scratchPool struct {
	hot  atomic.Pointer[probeScratch]
	mu   sync.Mutex
	free []*probeScratch
}

const (
	scratchKeep      = 16
	scratchKeepBytes = 64 << 20
)

func (sp *scratchPool) get() *probeScratch {
	if sc := sp.hot.Swap(nil); sc != nil {
		return sc
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if n := len(sp.free); n > 0 {
		sc := sp.free[n-1]
		sp.free[n-1] = nil
		sp.free = sp.free[:n-1]
		return sc
	}
	return newProbeScratch()
}

func (sp *scratchPool) put(sc *probeScratch) {
	clear(sc.lists) // do not keep lists alive
	sc.lists, sc.cands, sc.total = sc.lists[:0], sc.cands[:0], 0
	if sc.bytes() > scratchKeepBytes {
		return
	}
	if sp.hot.CompareAndSwap(nil, sc) {
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if len(sp.free) < scratchKeep {
		sp.free = append(sp.free, sc)
	}
}

// gather looks up the posting lists of ys (through the cache; misses are
// read from Pebble by r) into sc.lists.
func (sc *probeScratch) gather(ctx context.Context, ix *Index, r *postingReader, ys []uint32) error {
	sc.lists = pick(sc.inline.lists[:], &sc.big.lists, len(ys))
	if f := ix.cache.frozenOnly(); f != nil {
		// Every list is in the frozen base (after Warm, no write since):
		// look up every list, then read each one's first and last id; the
		// reads of each loop are independent, so their misses overlap.
		// Values beyond the key space have no list (as in getMany).
		lists := sc.lists[:len(ys)]
		for i, y := range ys {
			lists[i] = nil
			if int(y) < len(f.offs)-1 {
				lists[i] = f.list(y)
			}
		}
		for _, ids := range lists {
			if len(ids) > 0 {
				sc.touch += ids[0] + ids[len(ids)-1]
			}
			sc.total += len(ids)
		}
		sc.lists = lists
		return ctx.Err()
	}
	var chunk [probeChunk][]uint32
	var cached [probeChunk]bool
	for j := 0; j < len(ys); j += probeChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		part := ys[j:min(j+probeChunk, len(ys))]
		ix.cache.getMany(part, chunk[:len(part)], cached[:len(part)])
		for k, y := range part {
			ids := chunk[k]
			if !cached[k] {
				var err error
				if ids, err = r.read(y); err != nil {
					return err
				}
			}
			if len(ids) > 0 {
				sc.touch += ids[0] // start the list's first read now
			}
			sc.lists = append(sc.lists, ids)
			sc.total += len(ids)
		}
	}
	return nil
}

// count returns the ids that occur in at least t of the gathered lists
// (each list holds an id at most once). Every id must be below limit.
func (sc *probeScratch) count(t int, limit uint32, cfg countConfig) ([]uint32, error) {
	// The least and the largest id, from each list's first and last (the
	// lists are sorted).
	lo, hi := uint32(math.MaxUint32), uint32(0)
	for _, ids := range sc.lists {
		if len(ids) > 0 {
			if ids[len(ids)-1] >= limit {
				return nil, fmt.Errorf("%w: a posting list names unknown id %d", ErrCorrupt, ids[len(ids)-1])
			}
			lo, hi = min(lo, ids[0]), max(hi, ids[len(ids)-1])
		}
	}
	// An id counted t times is in t lists: at most total/t candidates,
	// so the inline array serves when total/t fits it. Otherwise the heap
	// array starts with room for min(total/t, 512) (t = 1 over many
	// postings need not allocate them all); appends grow it, and the
	// grown array is kept in big.
	sc.cands = pick(sc.inline.cands[:], &sc.big.cands, min(sc.total/max(t, 1), 2*inlineCands))
	switch {
	case sc.total == 0:
	case sc.total <= cfg.hashMax:
		sc.countHash(t)
	default:
		sc.countBlocks(t, lo, hi, cfg.shift, cfg.exact)
	}
	if cap(sc.cands) > inlineCands {
		sc.big.cands = sc.cands[:0]
	}
	return sc.cands, nil
}

// countHash counts in an open-addressing table of at least twice as many
// slots as postings.
func (sc *probeScratch) countHash(t int) {
	size := 1 << max(6, bits.Len(uint(2*sc.total)))
	sc.hashIDs = pick(sc.inline.hashIDs[:], &sc.big.hashIDs, size)[:size]
	sc.hashCount = pick(sc.inline.hashCount[:], &sc.big.hashCount, size)[:size]
	keys, counts := sc.hashIDs, sc.hashCount
	// Clear the counters and read the keys in order before counting: the
	// table is then read into the CPU's caches as a stream, where the
	// counting's random reads, each followed by a branch on what it read,
	// would wait for its lines one at a time.
	clear(counts)
	var touch uint32
	for i := 0; i < len(keys); i += 16 {
		touch += keys[i]
	}
	sc.touch += touch
	mask := uint32(size - 1)
	for _, ids := range sc.lists {
		for _, id := range ids {
			h := (id * 0x9E3779B1) >> 7 & mask
			for counts[h] != 0 && keys[h] != id {
				h = (h + 1) & mask
			}
			keys[h] = id
			c := counts[h] + 1
			counts[h] = c
			if int(c) == t {
				sc.cands = append(sc.cands, id)
			}
		}
	}
}

// countBlocks partitions the ids, from lo to hi, into blocks of 2^shift
// ids and counts each block in one small array.
func (sc *probeScratch) countBlocks(t int, lo, hi uint32, shift uint, exact bool) {
	first := lo >> shift // the blocks from first on
	nb := int(hi>>shift-first) + 1
	if cap(sc.hist) < 2*nb {
		sc.hist = make([]uint32, 2*nb)
	}
	// Block first+b's ids are part[start[b]:end[b]].
	start, end := sc.hist[:nb], sc.hist[nb:2*nb]
	even := !exact && sc.total >= evenMinPerBlock*nb && sc.total <= evenMaxPostings
	if even && sc.evenSkips > 0 {
		sc.evenSkips--
		even = false
	}
	if even && !sc.partitionEven(start, end, first, shift) {
		sc.evenSkips = evenBackoff
		even = false
	}
	if !even {
		sc.partitionExact(start, end, first, shift)
	}
	// A block's counters are indexed by the low 16 bits of the id (shift
	// ≤ 16), which needs no bounds check.
	if sc.block == nil {
		sc.block = new([1 << 16]uint8)
	}
	block := sc.block
	mask := uint32(1)<<shift - 1
	tt := uint8(min(t, 255))
	for b := range nb {
		ids := sc.part[start[b]:end[b]]
		for _, id := range ids {
			c := block[uint16(id&mask)] + 1
			block[uint16(id&mask)] = c
			if c == tt {
				sc.cands = append(sc.cands, id)
			}
		}
		for _, id := range ids {
			block[uint16(id&mask)] = 0
		}
	}
}

// The even partition is tried when the blocks hold at least
// evenMinPerBlock ids each on average (with fewer, the regions' slack
// would outweigh the ids) and there are at most evenMaxPostings (its
// array, 2.5 times the postings, stays below 20 MiB: larger probes cost
// far more than their partition anyway). After it fails, a scratch
// partitions the next evenBackoff counts by the counting sort: ids that
// crowd into some blocks (a database whose older documents were deleted
// leaves its low blocks empty) would make it fail again, each time at the
// cost of a pass over the lists.
const (
	evenMinPerBlock = 8
	evenMaxPostings = 1 << 21
	evenBackoff     = 16
)

// partitionEven partitions the ids into the blocks from first on in one
// pass over the lists, assuming that they spread about evenly over those
// blocks, as the documents of random fingerprints do: each block gets a
// region of 1.5 times its even share (plus a little), and its ids are
// written there. It reports false when a block outgrew its region (ids
// crowded into some blocks), having then written over the next region:
// the partition must be made again. The array is large enough that no
// write falls outside it, however the ids fall. The counting sort of
// partitionExact needs a second pass over the lists (to count each
// block's ids first), which costs about a third of the whole count
// (BenchmarkCountBlocks).
func (sc *probeScratch) partitionEven(start, end []uint32, first uint32, shift uint) bool {
	nb := len(start)
	per := sc.total/nb + sc.total/(2*nb) + 16
	// Block b's ids are written from b·per on, and there are total of
	// them at most: below (nb−1)·per + total.
	size := (nb-1)*per + sc.total
	if cap(sc.part) < size {
		sc.part = make([]uint32, size)
	}
	part := sc.part[:size]
	for b := range start {
		start[b] = uint32(b * per)
		end[b] = start[b]
	}
	for _, ids := range sc.lists {
		for _, id := range ids {
			b := id>>shift - first
			part[end[b]] = id
			end[b]++
		}
	}
	for b := 1; b < nb; b++ {
		if end[b-1] > start[b] {
			return false
		}
	}
	return true
}

// partitionExact partitions the ids into their blocks by a counting sort
// (sequential writes, whatever the ids).
func (sc *probeScratch) partitionExact(start, end []uint32, first uint32, shift uint) {
	clear(start)
	for _, ids := range sc.lists {
		for _, id := range ids {
			start[id>>shift-first]++
		}
	}
	sum := uint32(0)
	for b, c := range start {
		start[b], end[b] = sum, sum
		sum += c
	}
	if cap(sc.part) < sc.total {
		sc.part = make([]uint32, sc.total)
	}
	part := sc.part[:sc.total]
	for _, ids := range sc.lists {
		for _, id := range ids {
			b := id>>shift - first
			part[end[b]] = id
			end[b]++
		}
	}
}
