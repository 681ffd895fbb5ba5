package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
)

// deleteChunkDocs is the number of documents the bulk deletes (DeleteMany,
// DeletePrefix, DeleteOlderThan) remove per atomic batch.
const deleteChunkDocs = 10_000

// ErrEmptyPrefix is returned by DeletePrefix for an empty prefix, which
// would delete every document.
var ErrEmptyPrefix = errors.New("fpdb: empty id prefix")

// DeleteResult is the outcome of a bulk delete.
type DeleteResult struct {
	// Deleted is the number of documents removed.
	Deleted int
	// NotFound are the ids of DeleteMany that were not stored, in the order
	// given (each once).
	NotFound []string
}

// Delete removes the document with id in one atomic batch. It returns
// ErrNotFound when there is none. In a database with the audit log the
// batch also records the deletion, and the document's entries stay (Forget
// erases them). So do the bulk deletes below.
func (d *DB) Delete(ctx context.Context, id string) error {
	if err := d.live(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validID(id); err != nil {
		return fmt.Errorf("fpdb: delete: %w", err)
	}
	if d.opts.ReadOnly {
		return fmt.Errorf("fpdb: delete %q: %w", id, ErrReadOnly)
	}
	if err := d.enter(ctx); err != nil {
		return err
	}
	defer d.leave()
	synced := pendingSync{d: d}
	defer synced.wait() // after writeMu is released: concurrent writes share a WAL sync
	if err := d.lockWriter(changer); err != nil {
		return fmt.Errorf("fpdb: delete %q: %w", id, err)
	}
	defer d.writeMu.Unlock()
	iid, found, err := d.lookup(id)
	if err != nil {
		return fmt.Errorf("fpdb: delete %q: %w", id, err)
	}
	if !found {
		return fmt.Errorf("fpdb: delete %q: %w", id, ErrNotFound)
	}
	vs := []victim{{ext: id, iid: iid}}
	if err := d.write(&change{removes: vs, unmap: []string{id}, log: d.deleteEntries(vs)}, &synced); err != nil {
		return fmt.Errorf("fpdb: delete %q: %w", id, err)
	}
	return nil
}

// DeleteMany removes the documents with the given ids. Ids that are not
// stored are listed in the result, not an error. The deletes are written in
// atomic batches of deleteChunkDocs documents, each with one posting merge
// operand per key; a crash or an error leaves every batch fully applied or
// not at all, and the result counts the documents deleted before an error.
func (d *DB) DeleteMany(ctx context.Context, ids []string) (*DeleteResult, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	return d.deleteMany(ctx, ids, deleteChunkDocs)
}

// deleteMany is DeleteMany with chunk documents per batch.
func (d *DB) deleteMany(ctx context.Context, ids []string, chunk int) (_ *DeleteResult, err error) {
	ctx, leave, err := d.enterWriter(ctx, "delete", true, changer)
	if err != nil {
		return nil, err
	}
	defer leave(&err)
	for _, id := range ids {
		if err := validID(id); err != nil {
			return nil, fmt.Errorf("fpdb: delete: %w", err)
		}
	}
	res := &DeleteResult{}
	seen := make(map[string]struct{}, len(ids))
	uniq := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			uniq = append(uniq, id)
		}
	}
	iids, err := d.lookupMany(uniq)
	if err != nil {
		return res, fmt.Errorf("fpdb: delete: %w", err)
	}
	var vs []victim
	for i, id := range uniq {
		if iids[i] == noIID {
			res.NotFound = append(res.NotFound, id)
			continue
		}
		vs = append(vs, victim{ext: id, iid: iids[i]})
	}
	n, err := d.deleteVictims(ctx, vs, chunk)
	res.Deleted = n
	return res, err
}

// DeletePrefix removes every document whose id starts with prefix (not
// empty), in atomic batches like DeleteMany, and returns how many it
// removed.
func (d *DB) DeletePrefix(ctx context.Context, prefix string) (_ int, err error) {
	if err := d.live(); err != nil {
		return 0, err
	}
	if prefix == "" {
		return 0, fmt.Errorf("fpdb: delete: %w", ErrEmptyPrefix)
	}
	ctx, leave, err := d.enterWriter(ctx, "delete", true, changer)
	if err != nil {
		return 0, err
	}
	defer leave(&err)
	lo := keys.ExtID(prefix)
	_, hi := keys.Range(keys.PrefixExtID)
	var vs []victim
	err = d.scanLocked(ctx, lo, hi, func(k, v []byte) (bool, error) {
		if !bytes.HasPrefix(k, lo) {
			return false, nil
		}
		ext, err := keys.ParseExtID(k)
		if err != nil {
			return false, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		iid, err := decodeIID(v)
		if err != nil {
			return false, err
		}
		vs = append(vs, victim{ext: ext, iid: iid})
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("fpdb: delete prefix %q: %w", prefix, err)
	}
	return d.deleteVictims(ctx, vs, deleteChunkDocs)
}

// DeleteOlderThan removes every document added before t, in atomic batches
// like DeleteMany, and returns how many it removed.
func (d *DB) DeleteOlderThan(ctx context.Context, t time.Time) (_ int, err error) {
	if err := d.live(); err != nil {
		return 0, err
	}
	ctx, leave, err := d.enterWriter(ctx, "delete", true, changer)
	if err != nil {
		return 0, err
	}
	defer leave(&err)
	lo, hi := keys.Range(keys.PrefixDoc)
	var vs []victim
	err = d.scanLocked(ctx, lo, hi, func(k, v []byte) (bool, error) {
		iid, err := keys.ParseDoc(k)
		if err != nil {
			return false, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		doc, err := decodeDocRecord(v)
		if err != nil {
			return false, fmt.Errorf("document %d: %w", iid, err)
		}
		if doc.Added.Before(t) {
			vs = append(vs, victim{ext: doc.ID, iid: iid})
		}
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("fpdb: delete older than %s: %w", t.Format(time.RFC3339), err)
	}
	return d.deleteVictims(ctx, vs, deleteChunkDocs)
}

// scanLocked calls fn for each key in [lo, hi) until fn returns false; the
// caller holds writeMu, so the keys stay as read.
func (d *DB) scanLocked(ctx context.Context, lo, hi []byte, fn func(k, v []byte) (bool, error)) error {
	it, err := d.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err == nil {
			var more bool
			more, err = fn(it.Key(), v)
			if err == nil && !more {
				break
			}
		}
		if err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// deleteVictims deletes vs in batches of chunk; writeMu is held. It returns
// the number deleted.
func (d *DB) deleteVictims(ctx context.Context, vs []victim, chunk int) (int, error) {
	done := 0
	for len(vs) > 0 {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		c := vs[:min(chunk, len(vs))]
		vs = vs[len(c):]
		if err := d.deleteChunk(c); err != nil {
			return done, err
		}
		done += len(c)
	}
	return done, nil
}

// deleteChunk deletes vs in one atomic batch; writeMu is held.
func (d *DB) deleteChunk(vs []victim) error {
	c := &change{removes: vs, unmap: make([]string, len(vs)), log: d.deleteEntries(vs)}
	for i, v := range vs {
		c.unmap[i] = v.ext
	}
	if err := d.write(c, nil); err != nil {
		return fmt.Errorf("fpdb: delete: %w", err)
	}
	return nil
}
