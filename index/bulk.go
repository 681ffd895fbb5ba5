package index

import (
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

// Apply records in memory a change whose batch (written by Stage with the
// same adds and removes) has committed: the ids of removes are no longer
// stored, the entries of adds are.
func (ix *Index) Apply(adds []Entry, removes []uint32) {
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
		if ix.inTail(e.ID) {
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
// adds must be distinct, not live and not in removes. Call Apply with the
// same adds and removes after the batch committed. Stage and Apply are the
// index's one write protocol: for one document, a batch of them, a bulk
// load (whose adds get no posting operands, see Defer) and deletes alike.
func (ix *Index) Stage(b *pebble.Batch, adds []Entry, removes []uint32) error {
	l := ix.Layout()
	m, stride := l.M(), l.K/64
	deferred := ix.deferAdds()
	var addKeys []uint64
	if !deferred {
		addKeys = make([]uint64, 0, len(adds)*m)
	}
	first := uint32(NoTail)
	for _, e := range adds {
		if len(e.FP) != stride {
			return fmt.Errorf("%w: id %d has %d words, want %d", bitvec.ErrBadFingerprint, e.ID, len(e.FP), stride)
		}
		if ix.Live(e.ID) {
			return fmt.Errorf("index: add of live id %d", e.ID)
		}
		if err := ix.checkDeferredID(e.ID); err != nil {
			return err
		}
		first = min(first, e.ID)
		if deferred {
			continue // the tail: no posting operands
		}
		for i := 0; i < m; i++ {
			addKeys = append(addKeys, uint64(l.Value(e.FP, i))<<32|uint64(e.ID))
		}
	}
	if deferred && len(adds) > 0 {
		if err := ix.stageTailMark(b, first); err != nil {
			return err
		}
	}
	remKeys := make([]uint64, 0, len(removes)*m)
	for _, id := range removes {
		fp := ix.Fingerprint(id)
		if fp == nil {
			return fmt.Errorf("index: delete of unknown id %d", id)
		}
		if ix.inTail(id) {
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
		val = posting.AppendSorted(val[:0], addIDs, remIDs)
		key = keys.AppendPosting(key[:0], uint32(y))
		if err := b.Merge(key, val, nil); err != nil {
			return err
		}
	}
	return nil
}
