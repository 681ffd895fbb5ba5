package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// ReadDeferredMark reads the deferred mark of the store r: the internal id of the
// first document whose postings are deferred, or NoDeferred when there is none
// (as in format version 1). A mark that does not decode is ErrCorrupt.
func ReadDeferredMark(r pebble.Reader) (uint32, error) {
	v, closer, err := r.Get(keys.DeferredMark())
	if errors.Is(err, pebble.ErrNotFound) {
		return NoDeferred, nil
	}
	if err != nil {
		return 0, fmt.Errorf("index: read deferred mark: %w", err)
	}
	defer closer.Close()
	if len(v) != 4 {
		return 0, fmt.Errorf("%w: deferred mark %x: want 4 bytes", ErrCorrupt, v)
	}
	return binary.BigEndian.Uint32(v), nil
}

// PostingVerifier receives what VerifyPostings finds.
type PostingVerifier struct {
	// Fingerprint returns the stored fingerprint of an internal id, or nil
	// when there is none.
	Fingerprint func(id uint32) []uint64
	// Found is called for every id found in the posting key of its value
	// of group g.
	Found func(id uint32, g int)
	// Problem is called for every posting that is wrong; key is the posting
	// key when the key itself cannot be used (it does not decode, lies
	// outside every group, or its value does not decode) and a rebuild
	// should delete it, nil otherwise.
	Problem func(msg string, key []byte)
	// RoaringOnly says the store's posting values must all be in
	// roaring's format (a store written with posting.Roaring, see
	// Index.SetPostingEncoding, that builds predating the compact encoding
	// must read): a compact value is then a problem.
	RoaringOnly bool
}

// VerifyPostings reads every posting key of the store r and checks each id
// it names against the stored fingerprints: the id must have a fingerprint
// whose value in the key's group is the key. Ids whose postings are
// deferred are in no posting key; the caller checks that with Found. It
// returns only read errors (and ctx's).
func VerifyPostings(ctx context.Context, r pebble.Reader, l *Layout, v PostingVerifier) error {
	lo, hi := keys.Range(keys.PrefixPosting)
	it, err := r.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("index: read postings: %w", err)
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			break
		}
		k := it.Key()
		y, err := keys.ParsePosting(k)
		if err != nil {
			v.Problem(fmt.Sprintf("posting key %x: %v", k, err), slices.Clone(k))
			continue
		}
		g := l.Group(y)
		if g < 0 {
			v.Problem(fmt.Sprintf("posting key %d is outside every group", y), slices.Clone(k))
			continue
		}
		val, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("index: read posting key %d: %w", y, err)
		}
		err = posting.ForEach(val, func(id uint32) {
			fp := v.Fingerprint(id)
			switch {
			case fp == nil:
				v.Problem(fmt.Sprintf("posting key %d (group %d) names internal id %d, which has no fingerprint", y, g, id), nil)
			case l.Value(fp, g) != y:
				v.Problem(fmt.Sprintf("posting key %d (group %d) names internal id %d, whose group value is key %d", y, g, id, l.Value(fp, g)), nil)
			default:
				v.Found(id, g)
			}
		})
		if err != nil {
			v.Problem(fmt.Sprintf("posting key %d: %v", y, err), slices.Clone(k))
		} else if v.RoaringOnly && posting.IsCompact(val) {
			v.Problem(fmt.Sprintf("posting key %d is in the compact encoding, which this database's format does not allow (fpdb builds of its format cannot read it)", y), nil)
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("index: read postings: %w", err)
	}
	return ctx.Err()
}

// StageRebuild stages into b the replacement of every posting key of the
// store by the posting lists of the documents ids (ascending, each with
// its fingerprint fp(id)), and the removal of the deferred mark: afterwards
// every one of them has its postings. It returns the number of posting
// keys written, in the encodings enc allows (see
// Index.SetPostingEncoding). The in-memory state of an Index open on the
// store is not changed: rebuild a closed store.
func StageRebuild(b *pebble.Batch, l *Layout, ids []uint32, fp func(id uint32) []uint64, enc posting.Encoding) (int, error) {
	lo, hi := keys.Range(keys.PrefixPosting)
	if err := b.DeleteRange(lo, hi, nil); err != nil {
		return 0, err
	}
	lists := make(map[uint32][]uint32) // ids ascending: each list too
	for _, id := range ids {
		f := fp(id)
		for g := range l.M() {
			y := l.Value(f, g)
			lists[y] = append(lists[y], id)
		}
	}
	ys := make([]uint32, 0, len(lists))
	for y := range lists {
		ys = append(ys, y)
	}
	slices.Sort(ys)
	var val []byte
	for _, y := range ys {
		// The shortest encoding enc allows, run containers included.
		val = posting.AppendSorted(val[:0], lists[y], nil, enc)
		if err := b.Set(keys.Posting(y), val, nil); err != nil { // Set copies val
			return 0, err
		}
	}
	if err := b.Delete(keys.DeferredMark(), nil); err != nil {
		return 0, err
	}
	return len(ys), nil
}
