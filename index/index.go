package index

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// ErrCorrupt is returned when the stored index contradicts itself.
var ErrCorrupt = errors.New("index: corrupt")

// Index is the group-merging index of one database: the posting lists in
// Pebble (key 'p' ‖ y → the set of internal ids, package posting) and the fingerprints
// ('f' ‖ id), mirrored in memory as one contiguous array for verification
// and for the linear scan.
//
// An Index is safe for concurrent use. Any number of readers (Search,
// Snapshot, Fingerprint, …) run at once. Writers — a staged Write until it
// is applied or aborted, Defer, FlushDeferred, Warm, Check — run one at a
// time; readers wait only while a writer changes the index's memory (Write.Commit,
// the end of FlushDeferred), never while it builds a batch or reads Pebble.
type Index struct {
	db     *pebble.DB
	layout *Layout
	stride int // words per fingerprint

	// wmu serializes writers. Every change to the fields below happens
	// with wmu held and mu held exclusively, so a writer reads them
	// without mu, and a reader holds mu shared.
	wmu sync.Mutex
	mu  sync.RWMutex

	fps      fpStore  // the fingerprint of every id
	liveBits []uint64 // bit i set when id i is stored
	n        int      // live documents

	deferFrom uint32 // see deferred.go: ids ≥ deferFrom have no postings in Pebble
	deferring bool   // adds are deferred

	postingEnc posting.Encoding // what the writers may write (SetPostingEncoding)

	scratch  scratchPool
	counting countConfig
	cache    postingCache // its own synchronization: readers fill it
	recalls  recallCache
	plans    []atomic.Pointer[planMemo] // by radius: autoPlan
	// recentPlan is the memo of the last search (planFor).
	recentPlan atomic.Pointer[planMemo]
	// approxPlans, by radius, the plan of the last approximate search.
	approxPlans []atomic.Pointer[planMemo]
	replans     atomic.Int64 // plans chosen by planFor (tests)
	scanCal     scanCalibration
}

// New returns the index stored in db with the given layout. Call Load to
// read the stored fingerprints.
func New(db *pebble.DB, layout *Layout) *Index {
	ix := &Index{db: db, layout: layout, stride: layout.K / 64, fps: fpStore{stride: layout.K / 64}, deferFrom: NoDeferred, postingEnc: posting.Compact, counting: countConfig{hashMax: hashMaxPostings, shift: blockBits}}
	ix.plans = make([]atomic.Pointer[planMemo], layout.K+1)
	ix.approxPlans = make([]atomic.Pointer[planMemo], layout.K+1)
	ix.scanCal.bytes = calibrateBytes
	ix.cache.init(layout.Space())
	return ix
}

// SetHugePages sets whether the index asks the system to back its
// largest arrays with huge pages (package internal/hugepage): the
// fingerprints, and the posting lists Warm builds. On by default; call it
// before Load (it applies to the arrays made after it).
func (ix *Index) SetHugePages(on bool) {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.fps.noHuge = !on
}

// SetPostingEncoding sets the encodings the index's writers may use for
// posting values: posting.Compact (the default) writes each in the shorter
// of roaring's format and the compact one; posting.Roaring keeps a store
// readable by fpdb builds that predate the compact encoding. Values
// written already are read whatever their encoding.
func (ix *Index) SetPostingEncoding(enc posting.Encoding) {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	ix.postingEnc = enc
}

// Layout returns the group layout (immutable).
func (ix *Index) Layout() *Layout { return ix.layout }

// Len returns the number of live documents.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.n
}

// Cap returns one more than the largest internal id ever seen (the length of
// the in-memory arrays).
func (ix *Index) Cap() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.capacity()
}

func (ix *Index) capacity() int { return ix.fps.len() }

// Live reports whether internal id id is stored.
func (ix *Index) Live(id uint32) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.isLive(id)
}

func (ix *Index) isLive(id uint32) bool {
	w := int(id / 64)
	return w < len(ix.liveBits) && ix.liveBits[w]&(1<<(id%64)) != 0
}

// Fingerprint returns a copy of the stored fingerprint of id, or nil.
func (ix *Index) Fingerprint(id uint32) []uint64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return slices.Clone(ix.fingerprint(id))
}

// fingerprint returns the stored fingerprint of id, a view into memory, or
// nil.
func (ix *Index) fingerprint(id uint32) []uint64 {
	if !ix.isLive(id) {
		return nil
	}
	return ix.fps.at(int(id))
}

// Load reads every stored fingerprint into memory. next bounds the internal
// ids: a fingerprint of an id at or beyond it is refused with ErrCorrupt
// before any memory is sized by it, so that a damaged key cannot make Load
// allocate memory for ids that were never assigned; the caller bounds next.
func (ix *Index) Load(ctx context.Context, next uint32) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	lo, hi := keys.Range(keys.PrefixFingerprint)
	it, err := ix.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("index: load: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		id, err := keys.ParseFingerprint(it.Key())
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if id >= next {
			return fmt.Errorf("%w: fingerprint %d is at or beyond the next internal id %d", ErrCorrupt, id, next)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("index: load fingerprint %d: %w", id, err)
		}
		fp, err := bitvec.FromBytes(v, ix.layout.K)
		if err != nil {
			return fmt.Errorf("%w: fingerprint %d: %w", ErrCorrupt, id, err)
		}
		ix.applyAdd(id, fp)
	}
	if err := it.Error(); err != nil {
		return err
	}
	return ix.loadDeferredMark()
}

// applyAdd records in memory that id is stored with fingerprint fp.
func (ix *Index) applyAdd(id uint32, fp []uint64) {
	ix.storeFP(id, fp)
	if ix.isDeferred(id) || !ix.cache.tracking() {
		return // the cache mirrors Pebble, which has no postings of the deferred documents
	}
	for i := range ix.layout.Widths {
		ix.cache.add(ix.layout.Value(fp, i), id)
	}
}

// storeFP records fp as the fingerprint of live id id.
func (ix *Index) storeFP(id uint32, fp []uint64) {
	ix.fps.set(int(id), fp)
	if ix.deferAdds() && id < ix.deferFrom {
		ix.deferFrom = id
	}
	for int(id/64) >= len(ix.liveBits) {
		ix.liveBits = append(ix.liveBits, 0)
	}
	if !ix.isLive(id) {
		ix.n++
	}
	ix.liveBits[id/64] |= 1 << (id % 64)
}

// applyDelete records in memory that id is no longer stored.
func (ix *Index) applyDelete(id uint32) {
	if !ix.isLive(id) {
		return
	}
	fp := ix.fps.at(int(id))
	for i := range ix.layout.Widths {
		ix.cache.remove(ix.layout.Value(fp, i), id)
	}
	ix.liveBits[id/64] &^= 1 << (id % 64)
	clear(fp)
	ix.n--
}

// Posting returns the sorted ids of the posting list of merged value y,
// through the posting cache. The slice is shared with the cache: do not
// modify it; it is valid until the next write.
func (ix *Index) Posting(ctx context.Context, y uint32) ([]uint32, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ids, ok := ix.cache.get(y); ok {
		return ids, nil
	}
	r := ix.newReader(ctx)
	defer r.close()
	return r.read(y)
}

// decodeIDs decodes the posting list under the iterator's current key.
func decodeIDs(it *pebble.Iterator) ([]uint32, error) {
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, err
	}
	ids := []uint32{}
	err = posting.ForEach(v, func(id uint32) { ids = append(ids, id) })
	return ids, err
}
