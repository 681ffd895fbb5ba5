package index

import (
	"slices"
	"sync"
	"sync/atomic"
)

// MaxDenseSpace is the largest merged key space (Layout.Space) whose
// posting cache is dense: a slot per value (8 bytes each, so 64 MiB at
// most), and after Warm one array of every list. A larger key space gets a
// sparse cache (a map, slower to probe) that Warm does not freeze.
const MaxDenseSpace = 1 << 23

// cacheShards is the number of shards of a sparse cache.
const cacheShards = 64

// postingCache holds decoded posting lists (sorted ids) by merged value y.
// A list is read from Pebble on its first probe and kept; Apply keeps
// cached lists equal to what Pebble holds. Once Warm has
// loaded every posting key the cache is complete: a value it does not hold
// has no documents, and no probe reads Pebble any more.
//
// Readers fill the cache concurrently (an atomic slot per value, or a map
// shard under its mutex); writers update it under the Index's
// caller-provided exclusive lock, when no reader runs, so a list returned by
// get is not modified while a reader iterates it.
//
// Warm installs a frozen base (dense layout only): every list in one array,
// 4 bytes per id and 4 per value, built from the fingerprints. A slot that
// holds a list overrides the base for its value; writers put the lists they
// change in slots. A removal may shorten a base list in place, after which
// that value's part of the base belongs to its slot and is never read
// through the base again.
type postingCache struct {
	slots  []atomic.Pointer[[]uint32] // dense: by y; nil when not cached
	shards []cacheShard               // sparse, when the key space is large

	// base, when set (offs not nil), holds every list not in a slot; it
	// is set only while no reader runs, with complete set. It is held by
	// value: a query reads its arrays' addresses from the Index's own
	// memory, one dependent read fewer in cold CPU caches.
	base frozen
	// slotsUsed counts the slots holding a list, so that lookups skip the
	// slots while none does (the common case after Warm).
	slotsUsed atomic.Int64

	keys     atomic.Int64 // cached values
	ids      atomic.Int64 // cached ids
	complete atomic.Bool
}

// frozen holds the posting lists of a dense key space in one array: the
// sorted ids of value y are ids[offs[y]:offs[y+1]].
type frozen struct {
	offs []uint32 // one more than the key space
	ids  []uint32
}

// list returns the ids of y, with no spare capacity, so that appending to
// it copies.
func (f *frozen) list(y uint32) []uint32 {
	lo, hi := f.offs[y], f.offs[y+1]
	return f.ids[lo:hi:hi]
}

type cacheShard struct {
	mu sync.Mutex
	m  map[uint32][]uint32
}

// init sizes the cache for a key space of `space` merged values.
func (c *postingCache) init(space uint64) {
	if space <= MaxDenseSpace {
		c.slots = make([]atomic.Pointer[[]uint32], space)
	} else {
		c.shards = make([]cacheShard, cacheShards)
	}
}

// get returns the cached list of y. ok is false on a miss.
func (c *postingCache) get(y uint32) (ids []uint32, ok bool) {
	if c.slots != nil {
		if int(y) < len(c.slots) {
			if c.slotsUsed.Load() > 0 {
				if p := c.slots[y].Load(); p != nil {
					return *p, true
				}
			}
			if c.base.offs != nil {
				return c.base.list(y), true
			}
		}
	} else {
		s := &c.shards[y%cacheShards]
		s.mu.Lock()
		ids, ok = s.m[y]
		s.mu.Unlock()
		if ok {
			return ids, true
		}
	}
	return nil, c.complete.Load()
}

// setLocked stores the list of y; the caller holds whatever excludes other
// setters of y (a shard lock, or the writers' exclusive lock).
func (c *postingCache) setLocked(s *cacheShard, y uint32, ids []uint32) {
	if c.slots != nil {
		// Writers run alone (see postingCache), so a slot that holds a
		// list is updated in place, without allocating a new pointer.
		if p := c.slots[y].Load(); p != nil {
			*p = ids
		} else {
			c.slots[y].Store(&ids)
			c.slotsUsed.Add(1)
		}
		return
	}
	if s.m == nil {
		s.m = make(map[uint32][]uint32)
	}
	s.m[y] = ids
}

// probeChunk is the number of lists getMany looks up at once.
const probeChunk = 64

// getMany is get for each of ys (at most probeChunk): out[i], ok[i] =
// get(ys[i]). On the dense layout it loads all the slots first and then the
// lists they point to, so that the memory reads of one phase overlap
// instead of waiting for each other: a probe's values are far apart.
func (c *postingCache) getMany(ys []uint32, out [][]uint32, ok []bool) {
	if c.slots == nil {
		for i, y := range ys {
			out[i], ok[i] = c.get(y)
		}
		return
	}
	var ptrs [probeChunk]*[]uint32
	if c.slotsUsed.Load() > 0 {
		for i, y := range ys {
			ptrs[i] = nil
			if int(y) < len(c.slots) {
				ptrs[i] = c.slots[y].Load()
			}
		}
	}
	complete := c.complete.Load()
	if b := &c.base; b.offs != nil {
		for i, y := range ys {
			if p := ptrs[i]; p != nil {
				out[i], ok[i] = *p, true
			} else if int(y) < len(c.slots) {
				out[i], ok[i] = b.list(y), true
			} else {
				out[i], ok[i] = nil, true
			}
		}
		return
	}
	for i := range ys {
		if p := ptrs[i]; p != nil {
			out[i], ok[i] = *p, true
		} else {
			out[i], ok[i] = nil, complete
		}
	}
}

// frozenOnly returns the frozen base when it answers every lookup: the
// cache is complete and no slot overrides the base (the usual state after
// Warm); nil otherwise. Every value below the key space has its list in
// the base then.
func (c *postingCache) frozenOnly() *frozen {
	if c.base.offs == nil || c.slotsUsed.Load() > 0 || !c.complete.Load() {
		return nil
	}
	return &c.base
}

// lookup returns the cached list of y and its shard (locked when sparse;
// the caller unlocks it with done).
func (c *postingCache) lookup(y uint32) (ids []uint32, cached bool, s *cacheShard) {
	if c.slots != nil {
		if p := c.slots[y].Load(); p != nil {
			return *p, true, nil
		}
		if c.base.offs != nil {
			return c.base.list(y), true, nil
		}
		return nil, false, nil
	}
	s = &c.shards[y%cacheShards]
	s.mu.Lock()
	ids, cached = s.m[y]
	return ids, cached, s
}

func done(s *cacheShard) {
	if s != nil {
		s.mu.Unlock()
	}
}

// put caches the list of y read from Pebble, unless it is cached already.
func (c *postingCache) put(y uint32, ids []uint32) {
	if ids == nil {
		ids = []uint32{} // cached as known empty
	}
	if c.slots != nil {
		if int(y) < len(c.slots) && c.base.offs == nil && c.slots[y].CompareAndSwap(nil, &ids) {
			c.slotsUsed.Add(1)
			c.keys.Add(1)
			c.ids.Add(int64(len(ids)))
		}
		return
	}
	_, cached, s := c.lookup(y)
	defer done(s)
	if !cached {
		c.setLocked(s, y, ids)
		c.keys.Add(1)
		c.ids.Add(int64(len(ids)))
	}
}

// add records that id joined the list of y.
func (c *postingCache) add(y, id uint32) {
	ids := [1]uint32{id}
	c.addSorted(y, ids[:])
}

// addSorted records that the ids (sorted, distinct) joined the list of y.
// It does not retain ids.
func (c *postingCache) addSorted(y uint32, ids []uint32) {
	if c.slots != nil && int(y) >= len(c.slots) {
		return
	}
	cur, cached, s := c.lookup(y)
	defer done(s)
	if !cached {
		if !c.complete.Load() {
			return // not cached: the next read gets it from Pebble
		}
		c.keys.Add(1)
	}
	var out []uint32
	if len(cur) == 0 || cur[len(cur)-1] < ids[0] {
		out = append(cur, ids...) // new ids are the largest: the common case
	} else {
		out = mergeSorted(cur, ids)
	}
	c.ids.Add(int64(len(out) - len(cur)))
	c.setLocked(s, y, out)
}

// tracking reports whether the cache holds any list, so that writes must
// keep lists up to date (an empty, incomplete cache needs no updates).
func (c *postingCache) tracking() bool { return c.complete.Load() || c.keys.Load() > 0 }

// addRun is addSorted in the form eachRun calls.
func (c *postingCache) addRun(y uint32, ids []uint32) error {
	c.addSorted(y, ids)
	return nil
}

// remove records that id left the list of y.
func (c *postingCache) remove(y, id uint32) {
	if c.slots != nil && int(y) >= len(c.slots) {
		return
	}
	ids, cached, s := c.lookup(y)
	defer done(s)
	if !cached {
		return
	}
	if i, found := slices.BinarySearch(ids, id); found {
		c.setLocked(s, y, slices.Delete(ids, i, i+1))
		c.ids.Add(-1)
	}
}

// each calls fn for every cached list.
func (c *postingCache) each(fn func(y uint32, ids []uint32)) {
	for y := range c.slots {
		if p := c.slots[y].Load(); p != nil {
			fn(uint32(y), *p)
		} else if c.base.offs != nil {
			if ids := c.base.list(uint32(y)); len(ids) > 0 {
				fn(uint32(y), ids)
			}
		}
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for y, ids := range s.m {
			fn(y, ids)
		}
		s.mu.Unlock()
	}
}

// install makes f the cache's base: every slot is emptied and the cache is
// complete. The caller excludes readers and writers.
func (c *postingCache) install(f *frozen) {
	for i := range c.slots {
		c.slots[i].Store(nil)
	}
	c.slotsUsed.Store(0)
	c.base = *f
	var keys int64
	for y := range len(f.offs) - 1 {
		if f.offs[y+1] > f.offs[y] {
			keys++
		}
	}
	c.keys.Store(keys)
	c.ids.Store(int64(len(f.ids)))
	c.complete.Store(true)
}
