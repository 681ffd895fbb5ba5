package db

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
)

// Add fingerprints text and stores it under id, replacing any document with
// that id. With opts.Threshold > 0 it first finds the stored near duplicates
// (see AddOptions). The write is one atomic batch, durable on return unless
// Options.NoSync. A nil opts means no check.
func (d *DB) Add(ctx context.Context, id string, text []byte, opts *AddOptions) (*AddResult, error) {
	return d.AddReader(ctx, id, bytes.NewReader(text), opts)
}

// AddReader is Add reading the text from r; long texts are streamed in
// bounded memory.
func (d *DB) AddReader(ctx context.Context, id string, r io.Reader, opts *AddOptions) (*AddResult, error) {
	o, err := d.addPrecheck(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	res, size, err := d.build(r)
	if err != nil {
		return nil, fmt.Errorf("fpdb: add %q: %w", id, err)
	}
	doc := Doc{ID: id, Fingerprint: res.FP, ContentHash: res.ContentHash, Source: o.Source, Size: size, Words: res.Words}
	return d.store(ctx, doc, true, o)
}

// AddFingerprint stores a fingerprint computed elsewhere (with the same K,
// ShingleWidth and Seed) under id. opts.ContentHash, when non-zero, is
// stored as its content hash.
func (d *DB) AddFingerprint(ctx context.Context, id string, fp []uint64, opts *AddOptions) (*AddResult, error) {
	o, err := d.addPrecheck(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	if want := d.params.K / 64; len(fp) != want {
		return nil, fmt.Errorf("fpdb: add %q: %w: %d bits, want K = %d", id, ErrBadFingerprint, 64*len(fp), d.params.K)
	}
	doc := Doc{ID: id, Fingerprint: slices.Clone(fp), ContentHash: o.ContentHash, Source: o.Source}
	return d.store(ctx, doc, o.ContentHash != [16]byte{}, o)
}

func (d *DB) addPrecheck(ctx context.Context, id string, opts *AddOptions) (*AddOptions, error) {
	o := &AddOptions{}
	if opts != nil {
		*o = *opts
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validID(id); err != nil {
		return nil, fmt.Errorf("fpdb: add: %w", err)
	}
	if o.Threshold != 0 {
		if err := validThreshold(o.Threshold); err != nil {
			return nil, fmt.Errorf("fpdb: add %q: %w", id, err)
		}
	}
	if o.Limit < 0 {
		return nil, fmt.Errorf("fpdb: add %q: negative limit %d", id, o.Limit)
	}
	if d.opts.ReadOnly {
		return nil, fmt.Errorf("fpdb: add %q: %w", id, ErrReadOnly)
	}
	return o, nil
}

// store runs the optional check and writes doc in one batch.
func (d *DB) store(ctx context.Context, doc Doc, hasHash bool, o *AddOptions) (*AddResult, error) {
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	defer d.leave()
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	defer d.maybeFlushTail(ctx) // runs after mu is released
	d.mu.RLock()
	res := &AddResult{}
	var err error
	if o.Threshold > 0 {
		var qr *QueryResult
		qr, err = d.searchLocked(ctx, doc.Fingerprint, doc.ContentHash, hasHash, QueryOptions{Threshold: o.Threshold}, doc.ID)
		if err == nil {
			res.Matches = qr.Matches
			if o.Limit > 0 && len(res.Matches) > o.Limit {
				res.Matches = res.Matches[:o.Limit]
			}
		}
	}
	d.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("fpdb: add %q: %w", doc.ID, err)
	}
	doc.Added = time.Now().UTC()
	if o.Reject && len(res.Matches) > 0 {
		res.Doc = doc
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	old, found, err := d.lookup(doc.ID)
	if err != nil {
		return nil, fmt.Errorf("fpdb: add %q: %w", doc.ID, err)
	}
	c := &change{adds: []Doc{doc}}
	if found {
		c.removes = []victim{{ext: doc.ID, seq: old}}
	}
	if err := d.write(c); err != nil {
		return nil, fmt.Errorf("fpdb: add %q: %w", doc.ID, err)
	}
	res.Stored, res.Replaced, res.Doc = true, found, c.adds[0]
	return res, nil
}

// lookup returns the internal id stored for ext. Callers hold writeMu (or
// accept a racing answer).
func (d *DB) lookup(ext string) (uint32, bool, error) {
	v, closer, err := d.pdb.Get(keys.ExtID(ext))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer closer.Close()
	seq, err := decodeSeq(v)
	return seq, err == nil, err
}

func encodeSeq(seq uint32) []byte { return binary.BigEndian.AppendUint32(nil, seq) }

func decodeSeq(b []byte) (uint32, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("%w: internal id is %d bytes, want 4", ErrCorrupt, len(b))
	}
	return binary.BigEndian.Uint32(b), nil
}
