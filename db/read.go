package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/keys"
)

// Query fingerprints text and returns the stored documents whose estimated
// resemblance is at least opts.Threshold: exactly the set a linear scan of
// all stored fingerprints returns, unless opts.Plan is approximate
// (PlanApprox, or PlanProbe with MinHits above the exact count filter),
// whose answer may miss matches (QueryStats.Recall is its expected recall).
func (d *DB) Query(ctx context.Context, text []byte, opts QueryOptions) (*QueryResult, error) {
	return d.QueryReader(ctx, bytes.NewReader(text), opts)
}

// QueryReader is Query reading the text from r.
func (d *DB) QueryReader(ctx context.Context, r io.Reader, opts QueryOptions) (*QueryResult, error) {
	if err := checkQuery(ctx, opts); err != nil {
		return nil, err
	}
	res, _, err := d.build(r)
	if err != nil {
		return nil, fmt.Errorf("fpdb: query: %w", err)
	}
	return d.search(ctx, res.FP, res.ContentHash, true, opts)
}

// QueryFingerprint is Query for a fingerprint computed elsewhere. No match
// is flagged Exact, as there is no content hash to compare.
func (d *DB) QueryFingerprint(ctx context.Context, fp []uint64, opts QueryOptions) (*QueryResult, error) {
	if err := checkQuery(ctx, opts); err != nil {
		return nil, err
	}
	if want := d.params.K / 64; len(fp) != want {
		return nil, fmt.Errorf("fpdb: query: %w: %d bits, want K = %d", ErrBadFingerprint, 64*len(fp), d.params.K)
	}
	return d.search(ctx, fp, [16]byte{}, false, opts)
}

func checkQuery(ctx context.Context, o QueryOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validThreshold(o.Threshold); err != nil {
		return fmt.Errorf("fpdb: query: %w", err)
	}
	if o.Limit < 0 {
		return fmt.Errorf("fpdb: query: negative limit %d", o.Limit)
	}
	return nil
}

func (d *DB) search(ctx context.Context, fp []uint64, hash [16]byte, hasHash bool, o QueryOptions) (*QueryResult, error) {
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	defer d.leave()
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.searchLocked(ctx, fp, hash, hasHash, o, "")
}

// searchLocked runs a query; mu is held shared. Matches named skip are left
// out (an add's own previous version).
func (d *DB) searchLocked(ctx context.Context, fp []uint64, hash [16]byte, hasHash bool, o QueryOptions, skip string) (*QueryResult, error) {
	k := d.params.K
	rh := index.Radius(k, o.Threshold)
	hits, st, err := d.ix.Search(ctx, fp, rh, o.Plan)
	if err != nil {
		return nil, fmt.Errorf("fpdb: query: %w", err)
	}
	res := &QueryResult{Stats: st}
	res.Matches = make([]Match, 0, len(hits))
	for _, h := range hits {
		e := d.docs[h.ID]
		if e.ext == "" || e.ext == skip {
			continue
		}
		res.Matches = append(res.Matches, Match{
			ID:         e.ext,
			Similarity: index.Similarity(k, h.Dist),
			Hamming:    h.Dist,
			Exact:      hasHash && e.hash == hash,
		})
	}
	slices.SortFunc(res.Matches, func(a, b Match) int {
		if a.Hamming != b.Hamming {
			return a.Hamming - b.Hamming
		}
		return strings.Compare(a.ID, b.ID)
	})
	if o.Limit > 0 && len(res.Matches) > o.Limit {
		res.Matches = res.Matches[:o.Limit]
	}
	return res, nil
}

// Get returns the document stored under id, or ErrNotFound.
func (d *DB) Get(ctx context.Context, id string) (*Doc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validID(id); err != nil {
		return nil, fmt.Errorf("fpdb: get: %w", err)
	}
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	defer d.leave()
	d.mu.RLock()
	defer d.mu.RUnlock()
	seq, found, err := d.lookup(id)
	if err != nil {
		return nil, fmt.Errorf("fpdb: get %q: %w", id, err)
	}
	if !found {
		return nil, fmt.Errorf("fpdb: get %q: %w", id, ErrNotFound)
	}
	v, closer, err := d.pdb.Get(keys.Doc(seq))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("fpdb: get %q: %w: id map names internal id %d without a record", id, ErrCorrupt, seq)
	}
	if err != nil {
		return nil, fmt.Errorf("fpdb: get %q: %w", id, err)
	}
	doc, err := decodeDocRecord(v)
	_ = closer.Close()
	if err != nil {
		return nil, fmt.Errorf("fpdb: get %q: %w", id, err)
	}
	fp := d.ix.Fingerprint(seq)
	if fp == nil {
		return nil, fmt.Errorf("fpdb: get %q: %w: internal id %d has no fingerprint", id, ErrCorrupt, seq)
	}
	doc.seq = seq
	doc.Fingerprint = slices.Clone(fp)
	return &doc, nil
}

// Stats returns a summary of the database. On a closed DB the counts are
// those at Close.
func (d *DB) Stats() Stats {
	d.mu.RLock()
	defer d.mu.RUnlock()
	s := Stats{Params: d.Params(), Docs: d.ix.Len(), Deferred: d.ix.TailLen()}
	if !d.closed {
		s.DiskBytes = int64(d.pdb.Metrics().DiskSpaceUsage())
	}
	return s
}

// Warm loads every posting list into memory, so that no query reads posting
// lists from disk afterwards (queries fill this cache lazily otherwise). It
// costs about 4 bytes per document and group. Writes keep the cache in
// sync. Servers that answer many queries call it once after Open. Queries
// go on while it runs (they fill the same cache); writers wait.
func (d *DB) Warm(ctx context.Context) (err error) {
	// Writers change cached lists; readers only add lists read from the
	// store, which writeMu keeps as Warm reads them.
	ctx, leave, err := d.enterWriter(ctx, "warm", false)
	if err != nil {
		return err
	}
	defer leave(&err)
	d.at("warm")
	if err := d.ix.Warm(ctx); err != nil {
		return fmt.Errorf("fpdb: warm: %w", err)
	}
	return nil
}
