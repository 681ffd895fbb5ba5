package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/keys"
)

// EachResult is the outcome of AddEach.
type EachResult struct {
	// Results are the outcomes of the documents, by batch position, as Add
	// would have returned them; nil for a skipped document.
	Results []*AddResult
	// Skipped are the documents that were neither checked nor stored, in
	// batch order, and why (see BatchSkip).
	Skipped []BatchSkip
}

// AddEach adds each of docs as Add with opts would, one after the other in
// batch order, and writes them all in ONE atomic Pebble batch with one
// sync: a crash leaves the whole batch present or absent. Document i is
// checked against the stored documents and against the documents of docs
// before it that were stored (not those Reject refused), so the results,
// the stored documents and the audit-log entries are those of calling Add
// for each document in turn; the check and the write hold the writer lock
// throughout, so no other write comes between them. Three things differ
// from Add in turn: an id given twice is skipped the second time (split a
// stream at a repeated id, as fpdb add does, to have the later version
// replace the earlier); the documents without Input.Added share one time
// added; and a failure of the write stores none of them.
//
// Where Add syncs once per document, AddEach syncs once per batch: on a
// disk where a sync takes milliseconds, a stream of checked adds goes many
// times faster in batches of a few hundred. The texts are fingerprinted
// on all cores first, as AddBatch does; the whole batch is held in memory.
//
// Documents that cannot be added (bad id, binary or empty text, wrong
// fingerprint length, a text to keep longer than Options.MaxTextSize, an
// id given twice: the later ones wrap ErrDuplicateInBatch) are skipped and
// listed in EachResult.Skipped; the others are still added. The returned
// error is for failures of the whole batch (bad opts, closed or read-only
// database, cancelled context, write error), in which case nothing was
// stored.
func (d *DB) AddEach(ctx context.Context, docs []Input, opts *AddOptions) (*EachResult, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	o, err := checkAddOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("fpdb: add each: %w", err)
	}
	return d.addDocs(ctx, docs, o, writeSpec{op: OpAdd, what: "add each"})
}

// writeSpec says how addDocs writes a batch.
type writeSpec struct {
	// op is the operation each decision is recorded as in the audit log
	// (0: none).
	op LogOp
	// mark, if not nil, is written in the same batch, as are the marks
	// marksOf makes from the skipped documents (if set).
	mark    *Mark
	marksOf func(skipped []BatchSkip) []Mark
	// what names the call in errors.
	what string
	// whole asks for the batch to be stored whole, every document new, or
	// not at all, as ImportInto's (which passes while it runs, see
	// lockWriter): a document that would be skipped, or whose id is
	// stored already (as errStoredBefore), is listed in
	// EachResult.Skipped and nothing is written.
	whole bool
}

// errStoredBefore is the skip of a document whose id is stored already,
// in a batch to be stored whole (writeSpec.whole).
var errStoredBefore = errors.New("id stored already")

// addDocs is AddEach with the options o (checked) and AddBatch (o zero: no
// check), writing as w says.
func (d *DB) addDocs(ctx context.Context, docs []Input, o *AddOptions, w writeSpec) (_ *EachResult, err error) {
	op, m, what := w.op, w.mark, w.what
	d.tmplMu.RLock()
	defer d.tmplMu.RUnlock()
	if d.opts.ReadOnly {
		return nil, fmt.Errorf("fpdb: %s: %w", what, ErrReadOnly)
	}
	ctx, leave, err := d.enterLong(ctx)
	if err != nil {
		return nil, err
	}
	defer leave(&err)
	res := &EachResult{Results: make([]*AddResult, len(docs))}
	docsOut, ok, skipped, err := d.batchDocs(ctx, docs)
	if err != nil {
		return nil, err
	}
	var extra []keyValue // the marks
	if m != nil {
		extra = append(extra, keyValue{keys.Mark(m.Name), m.Value})
	}
	if w.marksOf != nil {
		for _, m := range w.marksOf(slices.Clone(skipped)) {
			if err := validMark(&m); err != nil {
				return nil, fmt.Errorf("fpdb: %s: %w", what, err)
			}
			extra = append(extra, keyValue{keys.Mark(m.Name), m.Value})
		}
	}
	if res.Skipped = skipped; len(ok) == 0 && len(extra) == 0 || w.whole && len(skipped) > 0 {
		return res, nil
	}

	synced := pendingSync{d: d}
	defer synced.wait() // after writeMu is released: concurrent writes share a WAL sync
	if err := d.lockWriter(writerOf(w.whole)); err != nil {
		return nil, fmt.Errorf("fpdb: %s: %w", what, err)
	}
	defer d.writeMu.Unlock()
	defer d.maybeFlushDeferred(ctx) // runs after mu is released
	olds, err := d.lookupDocs(docsOut, ok)
	if err != nil {
		return nil, fmt.Errorf("fpdb: %s: %w", what, err)
	}
	if w.whole {
		for j, i := range ok {
			if olds[j] != noIID {
				res.Skipped = append(res.Skipped, BatchSkip{Index: i, ID: docs[i].ID, Err: errStoredBefore})
			}
		}
		if len(res.Skipped) > 0 {
			return res, nil
		}
	}
	now := time.Now().UTC()
	c := &change{adds: make([]Doc, 0, len(ok)), extra: extra}
	stored := make([]int, 0, len(ok)) // the batch positions of c.adds
	// replaced are the ids whose stored version a document of the batch
	// replaces: a later check finds the new version (among c.adds), not the
	// stored one.
	replaced := map[string]bool{}
	for j, i := range ok {
		doc := docsOut[i]
		r := &AddResult{}
		res.Results[i] = r
		var found []Match // every match, for the audit log
		if o.Threshold > 0 {
			if found, err = d.checkInBatch(ctx, &doc, o.Threshold, c.adds, replaced); err != nil {
				return nil, fmt.Errorf("fpdb: add %q: %w", doc.ID, err)
			}
			r.Matches = found
			if o.Limit > 0 && len(r.Matches) > o.Limit {
				r.Matches = r.Matches[:o.Limit]
			}
		}
		if doc.Added.IsZero() {
			doc.Added = now
		}
		record := func(x Decision) {
			if op != 0 && d.params.AuditLog {
				c.log = append(c.log, addEntry(&doc, x, op, o, docs[i].ReplaceUnchanged, found))
			}
		}
		r.Doc = doc
		r.Doc.text = nil
		if olds[j] != noIID && !docs[i].ReplaceUnchanged {
			same, err := d.unchanged(olds[j], &doc)
			if err != nil {
				return nil, fmt.Errorf("fpdb: add %q: %w", doc.ID, err)
			}
			if same {
				r.Unchanged = true
				record(DecisionUnchanged)
				continue
			}
		}
		if o.Reject && len(found) > 0 {
			record(DecisionRejected)
			continue
		}
		if olds[j] != noIID {
			c.removes = append(c.removes, victim{ext: doc.ID, iid: olds[j]})
			replaced[doc.ID] = true
			r.Replaced = true
			record(DecisionReplaced)
		} else {
			record(DecisionStored)
		}
		r.Stored = true
		c.adds = append(c.adds, doc)
		stored = append(stored, i)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.adds) == 0 && len(c.extra) == 0 {
		if err := d.writeLog(c.log, &synced); err != nil {
			return nil, fmt.Errorf("fpdb: %s: %w", what, err)
		}
		return res, nil
	}
	if err := d.write(c, &synced); err != nil {
		return nil, fmt.Errorf("fpdb: %s: %w", what, err)
	}
	for k, i := range stored {
		res.Results[i].Doc = c.adds[k]
		res.Results[i].Doc.text = nil
	}
	return res, nil
}

// checkInBatch returns the matches of doc at threshold, sorted as a
// query's: the stored documents (less its own stored version and those
// whose id is in replaced) and the documents of batch, which are to be
// stored before it. writeMu is held.
func (d *DB) checkInBatch(ctx context.Context, doc *Doc, threshold float64, batch []Doc, replaced map[string]bool) ([]Match, error) {
	q := d.docQuery(doc)
	qo := QueryOptions{Threshold: threshold}
	d.mu.RLock()
	qr, err := d.searchLocked(ctx, q, qo, doc.ID)
	d.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	found := qr.Matches
	if len(replaced) > 0 {
		kept := found[:0]
		for _, m := range found {
			if !replaced[m.ID] {
				kept = append(kept, m)
			}
		}
		found = kept
	}
	more := false
	for k := range batch {
		b := &batch[k]
		dist := bitvec.Hamming(doc.Fingerprint, b.Fingerprint)
		if m, ok := d.match(q, qo, b.ID, dist, b.ContentHash, SetSize(b.Shingles, b.Words, d.params.ShingleWidth)); ok {
			found = append(found, m)
			more = true
		}
	}
	if more {
		sortMatches(found, qo)
	}
	return found, nil
}

// docQuery returns the query that checks doc before it is stored.
func (d *DB) docQuery(doc *Doc) query {
	return query{fp: doc.Fingerprint, hash: doc.ContentHash, hasHash: doc.ContentHash != [16]byte{},
		size: SetSize(doc.Shingles, doc.Words, d.params.ShingleWidth)}
}

// checkAddOptions returns a copy of opts (nil: no check) after checking
// its threshold and limit.
func checkAddOptions(opts *AddOptions) (*AddOptions, error) {
	o := &AddOptions{}
	if opts != nil {
		*o = *opts
	}
	if o.Threshold != 0 {
		if err := validThreshold(o.Threshold); err != nil {
			return nil, err
		}
	}
	if o.Limit < 0 {
		return nil, fmt.Errorf("%w: negative limit %d", ErrInvalidOptions, o.Limit)
	}
	return o, nil
}
