package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
)

// ErrDuplicateInBatch is the reason a document of AddBatch is skipped when
// an earlier document of the same batch has its id.
var ErrDuplicateInBatch = errors.New("fpdb: id given twice in one batch")

// BatchSkip is a document of a batch that was not stored, and why.
type BatchSkip struct {
	// Index is the document's position in the batch.
	Index int
	// ID is the document's id.
	ID string
	// Err is the reason: wraps ErrInvalidID, ErrBinary, ErrNoWords,
	// ErrBadFingerprint, ErrDuplicateInBatch, ErrBadInput, ErrTextTooLarge
	// or the error of Open or of reading the text.
	Err error
}

// BatchResult is the outcome of AddBatch.
type BatchResult struct {
	// Stored is the number of documents written.
	Stored int
	// Replaced is the number of them that replaced a stored document.
	Replaced int
	// Unchanged is the number of documents left as they were: the document
	// stored under the id has the same content (see Input.ReplaceUnchanged).
	Unchanged int
	// Skipped are the documents not written, in batch order.
	Skipped []BatchSkip
}

// AddBatch stores many documents at once, without any near-duplicate check:
// the texts are fingerprinted on all cores, then every document that could
// be fingerprinted is written in ONE atomic Pebble batch (a crash leaves
// the whole batch present or absent), with one posting merge operand per
// key for the whole batch (with Options.BulkLoad, none: the postings are
// written later, see BulkLoad). Documents that cannot be stored (bad id, binary
// or empty text, wrong fingerprint length, an id given twice, a text to keep
// longer than Options.MaxTextSize) are skipped
// and listed in the result; the others are still stored. The returned
// error is for failures of the whole batch (closed or read-only database,
// cancelled context, write error), in which case nothing was stored.
//
// Batches of 1 000 to 10 000 documents amortize the sync and the posting
// operands well; the whole batch is held in memory.
//
// In a database with the audit log (Options.AuditLog), each document
// stored, replaced or left unchanged gets an entry (op "batch", no
// threshold, no matches: AddBatch checks nothing), written in the same
// batch; a skipped document gets none (it is an input error, reported in
// the result, not a decision).
func (d *DB) AddBatch(ctx context.Context, docs []Input) (*BatchResult, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	return d.addBatchMarked(ctx, docs, OpAddBatch, nil)
}

// addBatchMarked is AddBatch recording its decisions in the audit log as
// op and writing the mark m (if not nil) in the same batch.
func (d *DB) addBatchMarked(ctx context.Context, docs []Input, op LogOp, m *Mark) (*BatchResult, error) {
	return d.addBatchSpec(ctx, docs, writeSpec{op: op, mark: m, what: "add batch"})
}

// addBatchSpec is AddBatch writing as w says.
func (d *DB) addBatchSpec(ctx context.Context, docs []Input, w writeSpec) (*BatchResult, error) {
	each, err := d.addDocs(ctx, docs, &AddOptions{}, w)
	if err != nil {
		return nil, err
	}
	res := &BatchResult{Skipped: each.Skipped}
	for _, r := range each.Results {
		switch {
		case r == nil: // skipped
		case r.Unchanged:
			res.Unchanged++
		case r.Replaced:
			res.Replaced++
			res.Stored++
		default:
			res.Stored++
		}
	}
	return res, nil
}

// batchDocs fingerprints docs (fingerprintBatch) and returns them with
// the positions of those to store and the skips (batchSkips); err is ctx's
// when it ended.
func (d *DB) batchDocs(ctx context.Context, docs []Input) (out []Doc, ok []int, skipped []BatchSkip, err error) {
	out, errs := d.fingerprintBatch(ctx, docs)
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	ok, skipped = batchSkips(docs, errs)
	return out, ok, skipped, nil
}

// batchSkips returns the positions of the documents of a batch to store
// — those without an error in errs (errs[i] is docs[i]'s) whose id no
// earlier one has — and the others, as skips (a repeated id with
// ErrDuplicateInBatch).
func batchSkips(docs []Input, errs []error) (ok []int, skipped []BatchSkip) {
	seen := make(map[string]struct{}, len(docs))
	for i := range docs {
		err := errs[i]
		if err == nil {
			if _, dup := seen[docs[i].ID]; dup {
				err = ErrDuplicateInBatch
			} else {
				seen[docs[i].ID] = struct{}{}
				ok = append(ok, i)
			}
		}
		if err != nil {
			skipped = append(skipped, BatchSkip{Index: i, ID: docs[i].ID, Err: err})
		}
	}
	return ok, skipped
}

// lookupDocs returns the internal id stored for the id of each of
// docs[ok[j]], or noIID (lookupMany). writeMu is held.
func (d *DB) lookupDocs(docs []Doc, ok []int) ([]uint32, error) {
	ids := make([]string, len(ok))
	for j, i := range ok {
		ids[j] = docs[i].ID
	}
	return d.lookupMany(ids)
}

// noIID marks an id that is not stored in lookupMany's answer.
const noIID = math.MaxUint32

// lookupMany returns the internal id stored for each of ids, or noIID. It
// seeks one iterator in key order, which is much cheaper than a Get per id.
// writeMu is held.
func (d *DB) lookupMany(ids []string) ([]uint32, error) {
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	out := make([]uint32, len(ids))
	lo, hi := keys.Range(keys.PrefixExtID)
	it, err := d.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	for _, i := range order {
		k := keys.ExtID(ids[i])
		out[i] = noIID
		if it.SeekGE(k) && bytes.Equal(it.Key(), k) {
			v, err := it.ValueAndErr()
			if err == nil {
				out[i], err = decodeIID(v)
			}
			if err != nil {
				_ = it.Close()
				return nil, fmt.Errorf("%q: %w", ids[i], err)
			}
		}
	}
	return out, it.Close()
}

// fingerprintBatch checks docs and fingerprints their texts (and
// compresses the texts a database that keeps texts stores) on GOMAXPROCS
// goroutines. It returns the documents to store (by batch position) and,
// for each, nil or why it is skipped.
func (d *DB) fingerprintBatch(ctx context.Context, docs []Input) ([]Doc, []error) {
	out := make([]Doc, len(docs))
	errs := make([]error, len(docs))
	var texts []int
	for i := range docs {
		switch {
		case validID(docs[i].ID) != nil:
			errs[i] = validID(docs[i].ID)
		case docs[i].Fingerprint != nil && docs[i].keptText == nil:
			out[i], errs[i] = d.prepare(ctx, &docs[i])
		default:
			texts = append(texts, i)
		}
	}
	switch len(texts) {
	case 0:
		return out, errs
	case 1: // no goroutine for one text
		i := texts[0]
		out[i], errs[i] = d.prepare(ctx, &docs[i])
		return out, errs
	}
	// The work is queued whole: a worker takes its next text without
	// waiting for a sender to be scheduled.
	work := make(chan int, len(texts))
	for _, i := range texts {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(texts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if ctx.Err() != nil {
					return
				}
				out[i], errs[i] = d.prepare(ctx, &docs[i])
			}
		}()
	}
	wg.Wait()
	return out, errs
}
