package index

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/hugepage"
	"github.com/fpdb/fpdb/internal/keys"
)

// Warm loads every posting list into memory, after which no probe reads
// Pebble. Writers wait while it runs; readers do not.
//
// On the dense layout (a key space of at most 2^23 values: groups of up to
// 18 bits) the lists are built from the fingerprints in memory, which the
// postings in Pebble mirror (Check verifies that they agree), into one
// array of 4 bytes per document and group plus 4 bytes per value, on every
// core. Otherwise they are read from Pebble, about 4 bytes per id plus a
// map entry per key.
func (ix *Index) Warm(ctx context.Context) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if ix.cache.slots != nil {
		f, err := ix.buildFrozen(ctx)
		if err != nil {
			return fmt.Errorf("index: warm: %w", err)
		}
		if f != nil {
			ix.mu.Lock()
			ix.cache.install(f)
			ix.mu.Unlock()
			return nil
		}
	}
	return ix.warmFromPebble(ctx)
}

// WarmsInMemory reports whether Warm builds the lists from the
// fingerprints in memory (the dense layout, at most 2^32 postings) rather
// than reading them from Pebble, which takes far longer.
func (ix *Index) WarmsInMemory() bool {
	return ix.cache.slots != nil && uint64(ix.layout.M())*uint64(ix.Len()) <= math.MaxUint32
}

// warmFromPebble reads every posting list of Pebble into the cache. It
// checks ctx every warmCheck lists (the iterator does not).
func (ix *Index) warmFromPebble(ctx context.Context) error {
	lo, hi := keys.Range(keys.PrefixPosting)
	it, err := ix.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("index: warm: %w", err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if n++; n%warmCheck == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("index: warm: %w", err)
			}
		}
		y, err := keys.ParsePosting(it.Key())
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		ids, err := decodeIDs(it)
		if err != nil {
			return fmt.Errorf("%w: posting %d: %w", ErrCorrupt, y, err)
		}
		ix.cache.put(y, ids)
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("index: warm: %w", err)
	}
	ix.cache.complete.Store(true)
	return nil
}

// warmCheck is how many lists warmFromPebble reads between checks of its
// context.
const warmCheck = 4096

// buildFrozen builds the posting lists that Pebble holds — of every live
// document whose postings are not deferred — from the fingerprints in
// memory, one group per goroutine at a time. Group i's lists fill
// ids[i·L, (i+1)·L) for L documents. It returns nil when the ids would not
// fit 32-bit offsets. The caller holds wmu, so the fingerprints do not
// change.
func (ix *Index) buildFrozen(ctx context.Context) (*frozen, error) {
	docs := make([]uint32, 0, ix.n)
	for id := range ix.capacity() {
		if ix.isLive(uint32(id)) && !ix.isDeferred(uint32(id)) {
			docs = append(docs, uint32(id))
		}
	}
	l := ix.layout
	m, L := l.M(), len(docs)
	if uint64(m)*uint64(L) > math.MaxUint32 {
		return nil, nil
	}
	f := &frozen{offs: make([]uint32, l.Space()+1), ids: make([]uint32, m*L)}
	// Probes read both at random: on huge pages they miss the TLB far
	// less (see package hugepage).
	if !ix.fps.noHuge {
		hugepage.Zeroed(f.offs)
		hugepage.Zeroed(f.ids)
	}
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		if first != nil || next == m {
			return -1
		}
		if err := ctx.Err(); err != nil {
			first = err
			return -1
		}
		next++
		return next - 1
	}
	for range max(1, min(runtime.GOMAXPROCS(0), m)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pos []uint32
			for g := take(); g >= 0; g = take() {
				pos = ix.buildGroup(f, docs, g, pos)
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return f, nil
}

// buildGroup fills group g's lists of f with docs (a counting sort by
// value) and returns its scratch space for the next group. Group g writes
// offs[Offset[g]+1 … Offset[g]+2^w] only: offs[Offset[g]] = g·L is written
// by the group before it (offs[0] = 0 by make).
func (ix *Index) buildGroup(f *frozen, docs []uint32, g int, pos []uint32) []uint32 {
	l := ix.layout
	w, off := l.Widths[g], l.Offset[g]
	size := 1 << w
	if cap(pos) < size {
		pos = make([]uint32, size)
	}
	pos = pos[:size]
	clear(pos)
	value := func(id uint32) uint32 {
		return l.Value(ix.fps.at(int(id)), g) - off
	}
	for _, id := range docs {
		pos[value(id)]++
	}
	run := uint32(g * len(docs))
	for v := range pos {
		c := pos[v]
		pos[v] = run
		run += c
		f.offs[int(off)+v+1] = run
	}
	for _, id := range docs {
		v := value(id)
		f.ids[pos[v]] = id
		pos[v]++
	}
	return pos
}
