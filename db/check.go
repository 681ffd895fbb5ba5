package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
)

// Check verifies every on-disk invariant: the meta record is valid and
// matches the open parameters; each stored document has its record, its
// ext-id entry, its content-hash entry, its fingerprint and exactly its m
// postings; no map or posting names a document that is not stored; memory
// agrees with disk. It returns nil, or an error wrapping ErrCorrupt that
// lists the problems found.
func (d *DB) Check(ctx context.Context) error {
	if err := d.readLocked(); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	var problems []error
	report := func(format string, args ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Errorf(format, args...))
		}
	}

	raw, closer, err := d.pdb.Get(keys.Meta())
	if err != nil {
		report("meta record: %v", err)
	} else {
		p, err := decodeMeta(raw)
		_ = closer.Close()
		if err != nil {
			report("%v", err)
		} else if fmt.Sprint(p) != fmt.Sprint(d.params) {
			report("meta record %+v differs from the open parameters %+v", p, d.params)
		}
	}

	// Document records against ext ids, hashes, memory and the index.
	records := 0
	err = d.each(ctx, keys.PrefixDoc, func(k, v []byte) {
		records++
		seq, err := keys.ParseDoc(k)
		if err != nil {
			report("%v", err)
			return
		}
		doc, err := decodeDocRecord(v)
		if err != nil {
			report("document %d: %v", seq, err)
			return
		}
		if seq >= d.nextSeq {
			report("document %d is at or beyond the next id %d", seq, d.nextSeq)
		}
		if got, found, err := d.lookup(doc.ID); err != nil || !found || got != seq {
			report("document %d (%q): ext-id entry names %d (found %v, err %v)", seq, doc.ID, got, found, err)
		}
		if _, closer, err := d.pdb.Get(keys.Hash(doc.ContentHash, seq)); err != nil {
			report("document %d (%q): content-hash entry: %v", seq, doc.ID, err)
		} else {
			_ = closer.Close()
		}
		if int(seq) >= len(d.docs) || d.docs[seq] != (docEntry{ext: doc.ID, hash: doc.ContentHash}) {
			report("document %d (%q): memory differs from disk", seq, doc.ID)
		}
		if !d.ix.Live(seq) {
			report("document %d (%q) has no fingerprint", seq, doc.ID)
		}
	})
	if err != nil {
		return err
	}
	if records != d.ix.Len() {
		report("%d document records, %d fingerprints", records, d.ix.Len())
	}
	err = d.each(ctx, keys.PrefixExtID, func(k, v []byte) {
		ext, err := keys.ParseExtID(k)
		seq, serr := decodeSeq(v)
		if err != nil || serr != nil {
			report("ext-id entry %q: %v %v", k, err, serr)
			return
		}
		if int(seq) >= len(d.docs) || d.docs[seq].ext != ext {
			report("ext-id %q names internal id %d, which is not that document", ext, seq)
		}
	})
	if err != nil {
		return err
	}
	err = d.each(ctx, keys.PrefixHash, func(k, _ []byte) {
		h, seq, err := keys.ParseHash(k)
		if err != nil {
			report("%v", err)
			return
		}
		if int(seq) >= len(d.docs) || d.docs[seq].ext == "" || d.docs[seq].hash != h {
			report("content-hash entry %x names internal id %d, which does not have it", h, seq)
		}
	})
	if err != nil {
		return err
	}
	if err := d.ix.Check(ctx); err != nil {
		report("%v", err)
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("fpdb: check %s: %w: %w", d.dir, ErrCorrupt, errors.Join(problems...))
}

// each calls fn for every key of the range with prefix p.
func (d *DB) each(ctx context.Context, p byte, fn func(k, v []byte)) error {
	lo, hi := keys.Range(p)
	it, err := d.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return err
		}
		fn(it.Key(), v)
	}
	return it.Close()
}
