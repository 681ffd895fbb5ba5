package index

import (
	"context"
	"errors"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// ErrCorrupt is returned when the stored index contradicts itself.
var ErrCorrupt = errors.New("index: corrupt")

// Index is the group-merging index of one database: the posting lists in
// Pebble (key 'p' ‖ y → roaring bitmap of internal ids) and the fingerprints
// ('f' ‖ id), mirrored in memory as one contiguous array for verification
// and for the linear scan.
//
// Index does no locking of its own: the caller serializes writers against
// each other and against readers (Search, Fingerprint, Check). Any number of
// readers may run at once.
type Index struct {
	db     *pebble.DB
	layout *Layout
	stride int // words per fingerprint

	fps  []uint64 // fingerprint of id i at fps[i*stride:(i+1)*stride]
	live []uint64 // bit i set when id i is stored
	n    int      // live documents

	counters counterPool
}

// New returns the index stored in db with the given layout. Call Load to
// read the stored fingerprints.
func New(db *pebble.DB, layout *Layout) *Index {
	return &Index{db: db, layout: layout, stride: layout.K / 64}
}

// Layout returns the group layout.
func (ix *Index) Layout() *Layout { return ix.layout }

// Len returns the number of live documents.
func (ix *Index) Len() int { return ix.n }

// Cap returns one more than the largest internal id ever seen (the length of
// the in-memory arrays).
func (ix *Index) Cap() int { return len(ix.fps) / ix.stride }

// Live reports whether internal id id is stored.
func (ix *Index) Live(id uint32) bool {
	w := int(id / 64)
	return w < len(ix.live) && ix.live[w]&(1<<(id%64)) != 0
}

// Fingerprint returns the stored fingerprint of id (a view into the index's
// memory: do not modify; valid until the next write), or nil.
func (ix *Index) Fingerprint(id uint32) []uint64 {
	if !ix.Live(id) {
		return nil
	}
	return ix.fps[int(id)*ix.stride : (int(id)+1)*ix.stride]
}

// Load reads every stored fingerprint into memory.
func (ix *Index) Load(ctx context.Context) error {
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
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("index: load fingerprint %d: %w", id, err)
		}
		fp, err := bitvec.FromBytes(v, ix.layout.K)
		if err != nil {
			return fmt.Errorf("%w: fingerprint %d: %w", ErrCorrupt, id, err)
		}
		ix.ApplyAdd(id, fp)
	}
	return it.Error()
}

// StageAdd writes fingerprint fp of id and its m postings into batch b.
func (ix *Index) StageAdd(b *pebble.Batch, id uint32, fp []uint64) error {
	if len(fp) != ix.stride {
		return fmt.Errorf("%w: %d words, want %d", bitvec.ErrBadFingerprint, len(fp), ix.stride)
	}
	if err := b.Set(keys.Fingerprint(id), bitvec.AppendBytes(nil, fp), nil); err != nil {
		return err
	}
	op := posting.EncodeAdd(roaring.BitmapOf(id))
	for i := range ix.layout.Widths {
		if err := b.Merge(keys.Posting(ix.layout.Value(fp, i)), op, nil); err != nil {
			return err
		}
	}
	return nil
}

// StageDelete writes the removal of id (its fingerprint and its postings)
// into batch b. id must be live.
func (ix *Index) StageDelete(b *pebble.Batch, id uint32) error {
	fp := ix.Fingerprint(id)
	if fp == nil {
		return fmt.Errorf("index: delete of unknown id %d", id)
	}
	if err := b.Delete(keys.Fingerprint(id), nil); err != nil {
		return err
	}
	op := posting.EncodeRemove(roaring.BitmapOf(id))
	for i := range ix.layout.Widths {
		if err := b.Merge(keys.Posting(ix.layout.Value(fp, i)), op, nil); err != nil {
			return err
		}
	}
	return nil
}

// ApplyAdd records in memory that id is stored with fingerprint fp. Call it
// after the batch of StageAdd committed.
func (ix *Index) ApplyAdd(id uint32, fp []uint64) {
	need := (int(id) + 1) * ix.stride
	if need > len(ix.fps) {
		if need > cap(ix.fps) {
			grown := make([]uint64, need, max(need, 2*cap(ix.fps)))
			copy(grown, ix.fps)
			ix.fps = grown
		} else {
			ix.fps = ix.fps[:need]
		}
	}
	copy(ix.fps[int(id)*ix.stride:], fp)
	for int(id/64) >= len(ix.live) {
		ix.live = append(ix.live, 0)
	}
	if !ix.Live(id) {
		ix.n++
	}
	ix.live[id/64] |= 1 << (id % 64)
}

// ApplyDelete records in memory that id is no longer stored.
func (ix *Index) ApplyDelete(id uint32) {
	if !ix.Live(id) {
		return
	}
	ix.live[id/64] &^= 1 << (id % 64)
	clear(ix.fps[int(id)*ix.stride : (int(id)+1)*ix.stride])
	ix.n--
}

// Posting returns the ids of the posting list of merged value y, sorted
// (a fresh slice).
func (ix *Index) Posting(ctx context.Context, y uint32) ([]uint32, error) {
	v, closer, err := ix.db.Get(keys.Posting(y))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("index: posting %d: %w", y, err)
	}
	defer closer.Close()
	var ids []uint32
	if err := posting.ForEach(v, func(id uint32) { ids = append(ids, id) }); err != nil {
		return nil, fmt.Errorf("%w: posting %d: %w", ErrCorrupt, y, err)
	}
	return ids, nil
}
