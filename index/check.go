package index

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// maxProblems caps the problems Check reports one by one.
const maxProblems = 20

// Check verifies the index's invariants against Pebble: every stored
// fingerprint is in memory and equal; every live document is in exactly its
// m postings; no posting names a document that is not stored; the posting
// cache equals Pebble (CheckCache). It returns
// nil or an error wrapping ErrCorrupt that lists the problems found.
// Writers wait while it runs; readers do not.
func (ix *Index) Check(ctx context.Context) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	var problems []error
	report := func(format string, args ...any) {
		if len(problems) < maxProblems {
			problems = append(problems, fmt.Errorf(format, args...))
		} else if len(problems) == maxProblems {
			problems = append(problems, errors.New("more problems not listed"))
		}
	}

	// Fingerprints on disk = fingerprints in memory.
	lo, hi := keys.Range(keys.PrefixFingerprint)
	it, err := ix.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	onDisk := 0
	for it.First(); it.Valid(); it.Next() {
		onDisk++
		id, err := keys.ParseFingerprint(it.Key())
		if err != nil {
			report("bad fingerprint key: %v", err)
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return err
		}
		fp, err := bitvec.FromBytes(v, ix.layout.K)
		if err != nil {
			report("fingerprint %d: %v", id, err)
			continue
		}
		mem := ix.fingerprint(id)
		if mem == nil || bitvec.Hamming(mem, fp) != 0 {
			report("fingerprint %d on disk differs from memory", id)
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	if onDisk != ix.n {
		report("%d fingerprints on disk, %d live in memory", onDisk, ix.n)
	}

	// Postings: each id live, in the right group value, once per group.
	seen := make([]uint16, ix.capacity())
	lo, hi = keys.Range(keys.PrefixPosting)
	it, err = ix.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			_ = it.Close()
			return err
		}
		y, err := keys.ParsePosting(it.Key())
		if err != nil {
			report("bad posting key: %v", err)
			continue
		}
		g := ix.layout.Group(y)
		if g < 0 {
			report("posting key %d is outside every group", y)
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return err
		}
		err = posting.ForEach(v, func(id uint32) {
			fp := ix.fingerprint(id)
			switch {
			case fp == nil:
				report("posting %d (group %d) names id %d, which is not stored", y, g, id)
			case ix.layout.Value(fp, g) != y:
				report("posting %d (group %d) names id %d, whose group value is %d", y, g, id, ix.layout.Value(fp, g))
			default:
				seen[id]++
			}
		})
		if err != nil {
			report("posting %d: %v", y, err)
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	if err := ix.checkCache(ctx); err != nil {
		report("%v", err)
	}
	onDiskMark, err := ReadDeferredMark(ix.db)
	if err != nil {
		report("%v", err)
	} else if onDiskMark != ix.deferFrom {
		report("deferred mark on disk is %d, in memory %d", onDiskMark, ix.deferFrom)
	}
	m := ix.layout.M()
	for id := range seen {
		want := m
		if uint32(id) >= onDiskMark {
			want = 0 // in the tail: postings not written yet
		}
		if ix.isLive(uint32(id)) && int(seen[id]) != want {
			report("id %d is in %d postings, want %d", id, seen[id], want)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, errors.Join(problems...))
}

func head32(ids []uint32) []uint32 { return ids[:min(len(ids), 8)] }

// CheckCache verifies that every cached posting list equals the one Pebble
// holds (a complete cache must also hold every non-empty list). It returns
// nil or an error wrapping ErrCorrupt that lists the differences.
// Writers wait while it runs; readers do not.
func (ix *Index) CheckCache(ctx context.Context) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	return ix.checkCache(ctx)
}

func (ix *Index) checkCache(ctx context.Context) error {
	var problems []error
	report := func(format string, args ...any) {
		if len(problems) < maxProblems {
			problems = append(problems, fmt.Errorf(format, args...))
		}
	}
	onDisk := map[uint32]bool{}
	lo, hi := keys.Range(keys.PrefixPosting)
	it, err := ix.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		y, err := keys.ParsePosting(it.Key())
		if err != nil {
			continue // Check reports bad keys
		}
		ids, err := decodeIDs(it)
		if err != nil {
			continue
		}
		onDisk[y] = true
		cached, ok := ix.cache.get(y)
		if ok && !slices.Equal(cached, ids) && !(len(cached) == 0 && len(ids) == 0) {
			report("posting %d: cached list %v differs from Pebble's %v", y, head32(cached), head32(ids))
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	ix.cache.each(func(y uint32, ids []uint32) {
		if len(ids) > 0 && !onDisk[y] {
			report("posting %d: cached list %v has no key in Pebble", y, head32(ids))
		}
	})
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: posting cache: %w", ErrCorrupt, errors.Join(problems...))
}

// mergeSorted returns the sorted union of the sorted lists a and b.
func mergeSorted(a, b []uint32) []uint32 {
	out := make([]uint32, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0] < b[0]:
			out, a = append(out, a[0]), a[1:]
		case b[0] < a[0]:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return append(append(out, a...), b...)
}
