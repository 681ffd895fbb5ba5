package db

import (
	"bytes"
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/keys"
)

// Docs calls fn for every stored document, in the order they were stored,
// with its metadata and fingerprint. It reads a snapshot taken at the call:
// writes may proceed meanwhile (fn may call any method of d but Close) and
// are not seen. An error from fn stops the iteration and is returned.
func (d *DB) Docs(ctx context.Context, fn func(Doc) error) (err error) {
	if err := d.live(); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("fpdb: docs: %w: no function to call", ErrInvalidOptions)
	}
	ctx, leave, err := d.enterLong(ctx)
	if err != nil {
		return err
	}
	defer leave(&err)
	d.mu.RLock()
	snap := d.pdb.NewSnapshot()
	d.mu.RUnlock()
	defer snap.Close()
	var ferr error
	_, err = eachDoc(ctx, snap, d.params.K, func(doc *Doc) error {
		if err := fn(*doc); err != nil {
			ferr = err
			return err
		}
		return nil
	})
	if ferr != nil {
		return ferr
	}
	if err != nil {
		return fmt.Errorf("fpdb: docs: %w", err)
	}
	return nil
}

// Len returns the number of stored documents.
func (d *DB) Len() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.ix.Len()
}

// Has reports whether a document is stored under id.
func (d *DB) Has(ctx context.Context, id string) (bool, error) {
	if err := d.live(); err != nil {
		return false, err
	}
	if err := validID(id); err != nil {
		return false, fmt.Errorf("fpdb: has: %w", err)
	}
	if err := d.enter(ctx); err != nil {
		return false, err
	}
	defer d.leave()
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, found, err := d.lookup(id)
	if err != nil {
		return false, fmt.Errorf("fpdb: has %q: %w", id, storageError(err))
	}
	return found, nil
}

// eachDoc calls fn for every document of the snapshot in internal id
// order, with its record and its k-bit fingerprint (fn may keep the Doc).
// It returns the number of documents passed to fn.
func eachDoc(ctx context.Context, snap *pebble.Snapshot, k int, fn func(*Doc) error) (int, error) {
	flo, fhi := keys.Range(keys.PrefixFingerprint)
	fps, err := snap.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: flo, UpperBound: fhi})
	if err != nil {
		return 0, storageError(err)
	}
	defer fps.Close()
	fps.First()
	return eachRecord(ctx, snap, func(iid uint32, doc *Doc) error {
		// Both ranges are in internal id order: advance to iid.
		fkey := keys.Fingerprint(iid)
		for fps.Valid() && bytes.Compare(fps.Key(), fkey) < 0 {
			fps.Next()
		}
		if !fps.Valid() || !bytes.Equal(fps.Key(), fkey) {
			if err := fps.Error(); err != nil {
				return storageError(err)
			}
			return fmt.Errorf("%w: document %d has no fingerprint", ErrCorrupt, iid)
		}
		fv, err := fps.ValueAndErr()
		if err != nil {
			return storageError(err)
		}
		if doc.Fingerprint, err = bitvec.FromBytes(fv, k); err != nil {
			return fmt.Errorf("%w: fingerprint %d: %w", ErrCorrupt, iid, err)
		}
		doc.iid = iid
		return fn(doc)
	})
}

// eachRecord calls fn for every document record of the snapshot in
// internal id order (without the fingerprint). It returns the number of
// records passed to fn.
func eachRecord(ctx context.Context, snap *pebble.Snapshot, fn func(iid uint32, doc *Doc) error) (int, error) {
	lo, hi := keys.Range(keys.PrefixDoc)
	it, err := snap.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, storageError(err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		iid, err := keys.ParseDoc(it.Key())
		if err != nil {
			return n, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return n, storageError(err)
		}
		doc, err := decodeDocRecord(v)
		if err != nil {
			return n, fmt.Errorf("document %d: %w", iid, err)
		}
		if err := fn(iid, &doc); err != nil {
			return n, err
		}
		n++
	}
	return n, storageError(it.Error())
}

// DocsAfter returns up to limit stored documents, with their metadata and
// fingerprints, sorted by id: those whose id sorts after after (from the
// first with after ""). Paging through a database with it — after set to
// the last id of the page before, until a page is shorter than limit —
// lists every document once in id order, on any replica of the same data,
// however its documents were numbered; unlike Docs it reads no snapshot
// across pages, so writes between pages are seen.
func (d *DB) DocsAfter(ctx context.Context, after string, limit int) (_ []Doc, err error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("fpdb: docs after %q: %w: limit %d", after, ErrInvalidOptions, limit)
	}
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	defer d.leave()
	d.mu.RLock()
	defer d.mu.RUnlock()
	lo, hi := keys.Range(keys.PrefixExtID)
	if after != "" {
		lo = append(keys.ExtID(after), 0) // the least key after after's
	}
	it, err := d.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("fpdb: docs after %q: %w", after, storageError(err))
	}
	defer it.Close()
	var out []Doc
	for it.First(); it.Valid() && len(out) < limit; it.Next() {
		id, err := keys.ParseExtID(it.Key())
		if err != nil {
			return nil, fmt.Errorf("fpdb: docs after %q: %w: %w", after, ErrCorrupt, err)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("fpdb: docs after %q: %w", after, storageError(err))
		}
		iid, err := decodeIID(v)
		if err != nil {
			return nil, fmt.Errorf("fpdb: docs after %q: id %q: %w: %w", after, id, ErrCorrupt, err)
		}
		doc, err := d.readDocRecord(iid)
		if err != nil {
			return nil, fmt.Errorf("fpdb: docs after %q: id %q: %w", after, id, err)
		}
		if doc.ID != id {
			return nil, fmt.Errorf("fpdb: docs after %q: %w: id map names internal id %d for %q, its record says %q", after, ErrCorrupt, iid, id, doc.ID)
		}
		out = append(out, doc)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("fpdb: docs after %q: %w", after, storageError(err))
	}
	return out, nil
}
