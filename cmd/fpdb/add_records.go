package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/dedup"
)

// errStrictStop stops addRecords at a bad record with --strict (the record
// is reported and counted already).
var errStrictStop = errors.New("stopped at a bad record (--strict)")

// checkedBatch is the most documents add checks and stores in one write
// (db.AddEach: one sync for all) unless --batch says otherwise. A batch
// takes the records read while the one before was written, so a slow
// stream of records is added one by one, each as soon as it comes, and a
// fast one in batches.
const checkedBatch = 256

// bulkBatch is the default --batch of add --bulk.
const bulkBatch = 1000

// serverBatch is the most documents add sends to a server in one request:
// the server writes a checked batch in atomic chunks of that many.
const serverBatch = 1000

// addItem is a document for add (a file, a record): the document, or why
// it is bad.
type addItem struct {
	doc db.Input
	pos string // a record's position, a file's path
	bad error
	p   dedup.Progress // a record's progress
}

// eachFunc checks and adds documents in order (db.AddEach, oneByOne). On
// an error it returns either nil (nothing was stored) or the outcomes of
// the documents stored before the failure, the others nil.
type eachFunc func(context.Context, []db.Input, *db.AddOptions) (*db.EachResult, error)

// addRecords adds each record with the near-duplicate check, in order, as
// add does each file: each record is checked against the stored documents
// and the records stored before it. The records go in batches of up to
// --batch (addEach: db.AddEach, or a server's checked batch), one
// write each (one record each with --strict). d is the local database (nil
// with --server).
func (o *addOptions) addRecords(ctx context.Context, d *db.DB, addEach eachFunc, inputs []string, lo dedup.LoadOptions, stdin io.Reader, stdout io.Writer, rep *addReport, bar *bytesProgress, start time.Time) error {
	var enc *json.Encoder
	if o.json {
		enc = newJSONEncoder(stdout)
	}
	rep.ttyOut = bar.on() && isTerminal(stdout)
	rep.progress = nil
	opts := &db.AddOptions{Threshold: o.threshold, Reject: o.reject}
	// With --strict, a record the database refuses stops the run before
	// the next is stored: one record per write.
	most := o.batch
	if o.records.strict {
		most = 1
	}

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The reader runs ahead of the writes by up to a batch, and holds no
	// more than maxBatchBytes of texts read and not yet added.
	items := make(chan addItem, most)
	readErr := make(chan error, 1)
	held := newByteBudget(ctx, maxBatchBytes)
	go func() {
		defer close(items)
		readErr <- dedup.Each(ctx, inputs, newCtxReader(ctx, stdin), lo.RecordOptions, func(doc db.Input, pos string, bad error, p dedup.Progress) error {
			doc.ReplaceUnchanged, doc.TextOptions = o.replace, lo.Text
			if err := held.take(int64(len(doc.Text))); err != nil {
				return err
			}
			select {
			case items <- addItem{doc, pos, bad, p}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()

	warm := addWarm(d)
	defer func() {
		cancel()
		warm.wait()
	}()
	var stop error
	var carry *addItem // the record that starts the next batch
	// badFiles counts the inputs that could not be read (to their end):
	// reported as failed, and then the next input is read.
	var badFiles int64
	reportBad := func(pos string, err error) {
		if errors.Is(err, dedup.ErrBadInput) {
			badFiles++
		}
		lo.Bad(pos, err)
	}
	for stop == nil {
		batch := make([]addItem, 0, most)
		if carry != nil {
			batch, carry = append(batch, *carry), nil
		} else {
			var it addItem
			ok := false
			select { // not waiting for the reader once the run is interrupted
			case it, ok = <-items:
			case <-ctx.Done():
			}
			if !ok {
				break
			}
			batch = append(batch, it)
		}
		// Take the records already read, not past an id seen in the
		// batch (the later record replaces the earlier: it goes in the
		// next write).
		ids := map[string]bool{batch[0].doc.ID: true}
		bytes := int64(len(batch[0].doc.Text))
	fill:
		for len(batch) < most {
			select {
			case it, ok := <-items:
				if !ok {
					break fill
				}
				if it.bad == nil && ids[it.doc.ID] {
					carry = &it
					break fill
				}
				ids[it.doc.ID] = true
				batch = append(batch, it)
				bytes += int64(len(it.doc.Text))
			default:
				break fill
			}
		}
		warm.after(ctx, int64(rep.inputs+len(batch)))
		stop = o.addBatch(ctx, addEach, opts, batch, stdout, enc, rep, batchReport{
			bad:  reportBad,
			done: func(it addItem) { bar.update(it.p) },
			hide: func() func() {
				bar.hide()
				return bar.show
			},
		})
		held.give(bytes)
	}
	// The reader stops at its next record (ctx is done); a run that ends
	// early does not wait for it (an input may have no next record yet).
	cancel()
	bar.clear()
	total := int64(rep.inputs) - badFiles      // the records added, refused or bad
	badRecords := int64(rep.failed) - badFiles // of them, the failed ones
	unread := ""
	if badFiles > 0 {
		unread = fmt.Sprintf(", %s could not be read (to the end)", plural(badFiles, "input"))
	}
	fmt.Fprintln(rep.stderr, rep.summary(int(total), "record", int(badRecords), unread, time.Since(start)))
	err := stop
	if err == nil && parent.Err() == nil {
		err = <-readErr // the reader is done: items was closed
	}
	switch {
	case parent.Err() != nil:
		return failure(fmt.Errorf("add: interrupted: %d records done", total))
	case err != nil && !errors.Is(err, errStrictStop) && stop != nil:
		return failure(err) // named by addBatch
	case err != nil && !errors.Is(err, errStrictStop):
		return failure(newOpError("add", err, "add"))
	case err != nil:
		return rep.failures.failure(fmt.Errorf("add: stopped at the first record that failed (--strict): %s read", plural(total, "record")))
	case badRecords == 0 && badFiles > 0:
		return rep.failures.failure(fmt.Errorf("add: %s could not be read (to the end)", plural(badFiles, "input")))
	case rep.failed > 0:
		return rep.failures.failure(fmt.Errorf("add: %d of %d records failed%s", badRecords, total, unread))
	case rep.dups > 0:
		return &exitError{code: exitDuplicates}
	}
	return nil
}

// addWarm returns the background warm of a long add to d (none with
// --server: d is nil): as a query of records does (see backgroundWarm), it
// loads the posting lists once the documents done reach 256, or one per
// 2 000 stored; the writes wait for it. The caller cancels the context it
// gives to after, then waits.
func addWarm(d *db.DB) *backgroundWarm {
	at := int64(256)
	if d != nil {
		at = max(at, int64(d.Len()/2000))
	}
	return newBackgroundWarm(d, at, db.PlanAuto)
}

// batchReport says how addBatch reports: a bad document (its error
// found before the check), progress after each document, and how to hide
// the progress line while the results are printed.
type batchReport struct {
	bad  func(pos string, err error)
	done func(addItem)
	hide func() (show func())
}

// addBatch checks and stores the documents of batch in one call of
// addEach, then reports each in order: a bad one, one refused, the outcome
// of the others. It returns the error that ends the run: the database's
// or the server's (after the outcomes of the documents added before it,
// when addEach returns them with its error), or errStrictStop with
// --strict after a bad or refused record.
func (o *addOptions) addBatch(ctx context.Context, addEach eachFunc, opts *db.AddOptions, batch []addItem,
	stdout io.Writer, enc *json.Encoder, rep *addReport, br batchReport) error {
	docs := make([]db.Input, 0, len(batch))
	at := make([]int, len(batch)) // batch[i]'s position in docs, or -1
	for i, it := range batch {
		at[i] = -1
		if it.bad == nil {
			at[i] = len(docs)
			docs = append(docs, it.doc)
		}
	}
	var res *db.EachResult
	var err error
	if len(docs) > 0 {
		res, err = addEach(ctx, docs, opts)
	}
	// partial: res holds, with err, the outcomes of the documents added
	// one by one before the one that failed (oneByOne); else a failed
	// batch stored nothing.
	partial := err != nil && res != nil
	if res == nil {
		res = &db.EachResult{Results: make([]*db.AddResult, len(docs))}
	}
	refused := make(map[int]error, len(res.Skipped))
	for _, s := range res.Skipped {
		refused[s.Index] = s.Err
	}
	var stop error
	for i, it := range batch {
		if at[i] >= 0 && res.Results[at[i]] == nil && refused[at[i]] == nil {
			// Not added: the batch failed here; what comes before it is
			// reported, as a write of one document each would have.
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case partial || len(docs) == 1:
				return newOpError("add "+it.pos, err, fmt.Sprintf("add %q", it.doc.ID), "add")
			}
			return newOpError("add", err, "add")
		}
		rep.inputs++
		if err := o.reportItem(it, at[i], res, refused, stdout, enc, rep, br); err != nil {
			return err
		}
		if o.records.strict && stop == nil && (it.bad != nil || refused[at[i]] != nil) {
			stop = errStrictStop
		}
		br.done(it)
	}
	if err != nil { // every document has an outcome all the same
		return newOpError("add", err, "add")
	}
	return stop
}

// reportItem reports the document it of a batch: bad, refused (by its
// position at in the documents checked) or its outcome in res.
func (o *addOptions) reportItem(it addItem, at int, res *db.EachResult, refused map[int]error,
	stdout io.Writer, enc *json.Encoder, rep *addReport, br batchReport) error {
	if rep.ttyOut {
		defer br.hide()()
	}
	switch err := refused[at]; {
	case it.bad != nil:
		br.bad(it.pos, it.bad) // reported and counted as failed
	case err != nil:
		rep.fail(it.pos, it.doc.ID, err)
	default:
		return o.printAdd(it.doc.ID, res.Results[at], stdout, enc, rep)
	}
	return nil
}

// oneByOne makes an AddEach of add, which adds one document: each
// document on its own, in order; a failure for that document alone (not
// the database's, not the run's end) is a skip. A failure that ends the
// run is returned with the outcomes of the documents before it (the others
// nil).
func oneByOne(add adder) eachFunc {
	return func(ctx context.Context, docs []db.Input, o *db.AddOptions) (*db.EachResult, error) {
		res := &db.EachResult{Results: make([]*db.AddResult, len(docs))}
		for i, in := range docs {
			r, err := add(ctx, in, o)
			switch {
			case err != nil && (ctx.Err() != nil || isFatal(err)):
				return res, err
			case err != nil:
				res.Skipped = append(res.Skipped, db.BatchSkip{Index: i, ID: in.ID, Err: err})
			default:
				res.Results[i] = r
			}
		}
		return res, nil
	}
}

// byteBudget bounds the bytes held between a reader and a writer: take
// waits while what is held and n would pass the limit (one item alone may
// pass it), give returns bytes.
type byteBudget struct {
	ctx  context.Context
	mu   sync.Mutex
	cond *sync.Cond
	held int64
	max  int64
}

// newByteBudget returns a budget of max bytes whose take gives up when
// ctx ends.
func newByteBudget(ctx context.Context, max int64) *byteBudget {
	b := &byteBudget{ctx: ctx, max: max}
	b.cond = sync.NewCond(&b.mu)
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	return b
}

// take waits until n more bytes may be held, then holds them; it returns
// ctx's error if ctx ends first.
func (b *byteBudget) take(n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.held > 0 && b.held+n > b.max {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		b.cond.Wait()
	}
	b.held += n
	return nil
}

// give returns n bytes taken.
func (b *byteBudget) give(n int64) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}
