package index

import (
	"slices"
	"sync"
	"sync/atomic"
)

// cacheShards is the number of independently locked parts of the cache.
const cacheShards = 64

// postingCache holds decoded posting lists (sorted ids) by merged value y.
// A list is read from Pebble on its first probe and kept; ApplyAdd and
// ApplyDelete keep cached lists equal to what Pebble holds. Once Warm has
// loaded every posting key the cache is complete: a value it does not hold
// has no documents, and no probe reads Pebble any more.
//
// Readers fill the cache concurrently (each shard has its own mutex);
// writers update it under the Index's caller-provided exclusive lock, when
// no reader runs, so a list returned by get is not modified while a reader
// iterates it. A complete cache is read without locks: only writers change
// it.
type postingCache struct {
	shards   [cacheShards]cacheShard
	keys     atomic.Int64 // cached values
	ids      atomic.Int64 // cached ids
	complete atomic.Bool
}

type cacheShard struct {
	mu sync.Mutex
	m  map[uint32][]uint32
}

func (c *postingCache) shard(y uint32) *cacheShard { return &c.shards[y%cacheShards] }

// get returns the cached list of y. ok is false on a miss.
func (c *postingCache) get(y uint32) (ids []uint32, ok bool) {
	s := c.shard(y)
	if c.complete.Load() {
		// A complete cache is only changed by writers, which run alone.
		return s.m[y], true
	}
	s.mu.Lock()
	ids, ok = s.m[y]
	s.mu.Unlock()
	if !ok && c.complete.Load() {
		return nil, true
	}
	return ids, ok
}

// put caches the list of y read from Pebble, unless it is cached already.
func (c *postingCache) put(y uint32, ids []uint32) {
	if ids == nil {
		ids = []uint32{} // cached as known empty
	}
	s := c.shard(y)
	s.mu.Lock()
	if _, ok := s.m[y]; !ok {
		if s.m == nil {
			s.m = make(map[uint32][]uint32)
		}
		s.m[y] = ids
		c.keys.Add(1)
		c.ids.Add(int64(len(ids)))
	}
	s.mu.Unlock()
}

// add records that id joined the list of y.
func (c *postingCache) add(y, id uint32) {
	s := c.shard(y)
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, ok := s.m[y]
	if !ok {
		if !c.complete.Load() {
			return // not cached: the next read gets it from Pebble
		}
		if s.m == nil {
			s.m = make(map[uint32][]uint32)
		}
		c.keys.Add(1)
	}
	n := len(ids)
	switch {
	case n == 0 || ids[n-1] < id:
		ids = append(ids, id) // new ids are the largest: the common case
	default:
		i, found := slices.BinarySearch(ids, id)
		if found {
			return
		}
		ids = slices.Insert(ids, i, id)
	}
	s.m[y] = ids
	c.ids.Add(1)
}

// remove records that id left the list of y.
func (c *postingCache) remove(y, id uint32) {
	s := c.shard(y)
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, ok := s.m[y]
	if !ok {
		return
	}
	if i, found := slices.BinarySearch(ids, id); found {
		s.m[y] = slices.Delete(ids, i, i+1)
		c.ids.Add(-1)
	}
}

// clear empties the cache.
func (c *postingCache) clear() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.m = nil
		s.mu.Unlock()
	}
	c.keys.Store(0)
	c.ids.Store(0)
	c.complete.Store(false)
}
