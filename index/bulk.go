package index

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// Entry is a document to add: its internal id and fingerprint.
type Entry struct {
	ID uint32
	FP []uint64
}

// Write is a change staged into a Pebble batch by Stage. Until it is
// committed or aborted, no other writer runs on the index.
type Write struct {
	ix      *Index
	adds    []Entry
	removes []uint32
	done    bool
}

// Commit calls commit, which must commit the batch Stage wrote into, with
// readers excluded, and when it succeeds records the change in memory (the
// ids of removes are no longer stored, the entries of adds are) before
// readers resume: a search sees the change whole or not at all. It returns
// commit's error, after which the index is unchanged.
func (w *Write) Commit(commit func() error) error {
	if w.done {
		return errors.New("index: write committed or aborted already")
	}
	w.done = true
	defer w.ix.wmu.Unlock()
	w.ix.mu.Lock()
	defer w.ix.mu.Unlock()
	if err := commit(); err != nil {
		return err
	}
	w.ix.apply(w.adds, w.removes)
	return nil
}

// Abort ends a write that is not committed; after Commit it does nothing,
// so it may be deferred.
func (w *Write) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.ix.wmu.Unlock()
}

// apply records a committed change in memory; wmu and mu are held.
func (ix *Index) apply(adds []Entry, removes []uint32) {
	for _, id := range removes {
		ix.applyDelete(id)
	}
	ix.applyMany(adds)
}

// applyMany records in memory that every entry of adds is stored, like
// applyAdd for each, but updates each cached posting list once.
func (ix *Index) applyMany(adds []Entry) {
	if len(adds) < 64 {
		for _, e := range adds {
			ix.applyAdd(e.ID, e.FP)
		}
		return
	}
	for _, e := range adds {
		ix.storeFP(e.ID, e.FP)
	}
	if !ix.cache.tracking() {
		return // an empty cache reads every list from Pebble when probed
	}
	l := ix.layout
	m := l.M()
	var ks []uint64
	for _, e := range adds {
		if ix.isDeferred(e.ID) {
			continue // the cache mirrors Pebble
		}
		for i := 0; i < m; i++ {
			ks = append(ks, uint64(l.Value(e.FP, i))<<32|uint64(e.ID))
		}
	}
	sortKeys(ks)
	_ = eachRun(ks, nil, ix.cache.addRun)
}

// eachRun calls fn for each run of the sorted keys ks (y<<32 | id) that
// share y, with the run's ids in increasing order (in buf, reused). It
// stops at fn's first error.
func eachRun(ks []uint64, buf []uint32, fn func(y uint32, ids []uint32) error) error {
	for i := 0; i < len(ks); {
		y := ks[i] >> 32
		buf = buf[:0]
		for ; i < len(ks) && ks[i]>>32 == y; i++ {
			buf = append(buf, uint32(ks[i]))
		}
		if err := fn(uint32(y), buf); err != nil {
			return err
		}
	}
	return nil
}

// Stage writes into batch b the addition of every entry of adds (their
// fingerprints and postings) and the removal of every id of removes (which
// must be live), with ONE merge operand per posting key for the whole
// batch: the operation "remove these ids, add those" on that key. The ids of
// adds must be distinct, not live and not in removes. It returns the
// staged Write: commit b through its Commit, or call its Abort; no other
// writer runs in between (the adds and removes must not change meanwhile).
// Stage and Commit are the index's one write protocol: for one document, a
// batch of them, a bulk load (whose adds get no posting operands, see
// Defer) and deletes alike.
func (ix *Index) Stage(b *pebble.Batch, adds []Entry, removes []uint32) (*Write, error) {
	ix.wmu.Lock()
	if err := ix.stage(b, adds, removes); err != nil {
		ix.wmu.Unlock()
		return nil, err
	}
	return &Write{ix: ix, adds: adds, removes: removes}, nil
}

// stage is Stage; wmu is held.
func (ix *Index) stage(b *pebble.Batch, adds []Entry, removes []uint32) error {
	l := ix.layout
	m, stride := l.M(), l.K/64
	deferred := ix.deferAdds()
	var addKeys []uint64
	if !deferred {
		addKeys = make([]uint64, 0, len(adds)*m)
	}
	first := uint32(NoDeferred)
	for _, e := range adds {
		if len(e.FP) != stride {
			return fmt.Errorf("%w: id %d has %d words, want %d", bitvec.ErrBadFingerprint, e.ID, len(e.FP), stride)
		}
		if ix.isLive(e.ID) {
			return fmt.Errorf("index: add of live id %d", e.ID)
		}
		if err := ix.checkDeferredID(e.ID); err != nil {
			return err
		}
		first = min(first, e.ID)
		if deferred {
			continue // deferred: no posting operands
		}
		for i := 0; i < m; i++ {
			addKeys = append(addKeys, uint64(l.Value(e.FP, i))<<32|uint64(e.ID))
		}
	}
	if deferred && len(adds) > 0 {
		if err := ix.stageDeferredMark(b, first); err != nil {
			return err
		}
	}
	remKeys := make([]uint64, 0, len(removes)*m)
	for _, id := range removes {
		fp := ix.fingerprint(id)
		if fp == nil {
			return fmt.Errorf("index: delete of unknown id %d", id)
		}
		if ix.isDeferred(id) {
			continue // no postings in Pebble
		}
		for i := 0; i < m; i++ {
			remKeys = append(remKeys, uint64(l.Value(fp, i))<<32|uint64(id))
		}
	}
	sortKeys(addKeys)
	sortKeys(remKeys)

	// Fingerprint records, in id order.
	buf := make([]byte, 0, 8*stride)
	for _, id := range removes {
		if err := b.Delete(keys.Fingerprint(id), nil); err != nil {
			return err
		}
	}
	for _, e := range adds {
		buf = bitvec.AppendBytes(buf[:0], e.FP)
		if err := b.Set(keys.Fingerprint(e.ID), buf, nil); err != nil {
			return err
		}
	}

	// One operand per key: walk both sorted lists by y.
	var addIDs, remIDs []uint32
	key := make([]byte, 0, 5)
	var val []byte
	// run appends to ids the ids of the run of ks with key y and returns
	// them and the rest of ks.
	run := func(ids []uint32, ks []uint64, y uint64) ([]uint32, []uint64) {
		for len(ks) > 0 && ks[0]>>32 == y {
			ids = append(ids, uint32(ks[0]))
			ks = ks[1:]
		}
		return ids, ks
	}
	for len(addKeys) > 0 || len(remKeys) > 0 {
		y := uint64(1) << 32
		if len(addKeys) > 0 {
			y = addKeys[0] >> 32
		}
		if len(remKeys) > 0 && remKeys[0]>>32 < y {
			y = remKeys[0] >> 32
		}
		addIDs, addKeys = run(addIDs[:0], addKeys, y)
		remIDs, remKeys = run(remIDs[:0], remKeys, y)
		for _, ids := range [][]uint32{addIDs, remIDs} {
			for j := 1; j < len(ids); j++ {
				if ids[j] == ids[j-1] {
					return fmt.Errorf("index: id %d given twice in one batch", ids[j])
				}
			}
		}
		val = posting.AppendSorted(val[:0], addIDs, remIDs, ix.postingEnc)
		key = keys.AppendPosting(key[:0], uint32(y))
		if err := b.Merge(key, val, nil); err != nil {
			return err
		}
	}
	return nil
}
