package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/dedup"
)

// errStrictStop stops addRecords at a bad record with --strict (the record
// is reported and counted already).
var errStrictStop = errors.New("stopped at a bad record (--strict)")

// checkedBatch is the most records add checks and stores in one write
// (db.AddEach: one sync for all). A batch takes the records read while the
// one before was written, so a slow stream of records is added one by
// one, each as soon as it comes, and a fast one in batches.
const checkedBatch = 256

// addItem is a document for add (a file, a record): the document, or why
// it is bad.
type addItem struct {
	doc db.Input
	pos string // a record's position, a file's path
	bad error
	p   dedup.Progress // a record's progress
}

// eachFunc checks and adds documents in order (db.AddEach, oneByOne).
type eachFunc func(context.Context, []db.Input, *db.AddOptions) (*db.EachResult, error)

// addRecords adds each record with the near-duplicate check, in order, as
// add does each file: each record is checked against the stored documents
// and the records stored before it. To a local database the records go in
// batches of up to checkedBatch, one write each (one record each with
// --strict); to a server, one by one.
func (o *addOptions) addRecords(ctx context.Context, d *db.DB, add adder, inputs []string, lo dedup.LoadOptions, stdin io.Reader, stdout io.Writer, rep *addReport, bar *bytesProgress, start time.Time) error {
	var enc *json.Encoder
	if o.json {
		enc = newJSONEncoder(stdout)
	}
	rep.ttyOut = bar.on() && isTerminal(stdout)
	rep.progress = nil
	opts := &db.AddOptions{Threshold: o.threshold, Reject: o.reject}
	addEach, most := oneByOne(add), 1
	if d != nil {
		addEach = d.AddEach
		// With --strict, a record the database refuses stops the run
		// before the next is stored: one record per write.
		if !o.records.strict {
			most = checkedBatch
		}
	}

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items := make(chan addItem, most)
	readErr := make(chan error, 1)
	go func() {
		defer close(items)
		readErr <- dedup.Each(ctx, inputs, newCtxReader(ctx, stdin), lo.RecordOptions, func(doc db.Input, pos string, bad error, p dedup.Progress) error {
			doc.ReplaceUnchanged, doc.TextOptions = o.replace, lo.Text
			select {
			case items <- addItem{doc, pos, bad, p}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()

	// A long run warms the posting cache in the background, as a query of
	// records does (see backgroundWarm); the writes wait for it.
	var warm *backgroundWarm
	if d != nil && opts.Threshold > 0 {
		warm = newBackgroundWarm(d, max(256, int64(d.Len()/2000)), db.PlanAuto)
		defer func() {
			cancel()
			warm.wait()
		}()
	}
	var total int64
	var stop error
	var carry *addItem // the record that starts the next batch
	for stop == nil {
		batch := make([]addItem, 0, most)
		if carry != nil {
			batch, carry = append(batch, *carry), nil
		} else if it, ok := <-items; ok {
			batch = append(batch, it)
		} else {
			break
		}
		// Take the records already read, not past an id seen in the
		// batch (the later record replaces the earlier: it goes in the
		// next write).
		ids := map[string]bool{batch[0].doc.ID: true}
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
			default:
				break fill
			}
		}
		total += int64(len(batch))
		if warm != nil {
			warm.after(ctx, total)
		}
		stop = o.addBatch(ctx, addEach, opts, batch, stdout, enc, rep, batchReport{
			bad:  lo.Bad,
			done: func(it addItem) { bar.update(it.p) },
			hide: func() func() {
				bar.hide()
				return bar.show
			},
		})
	}
	cancel()
	for range items { // the reader stops: ctx is done
	}
	bar.clear()
	fmt.Fprintln(rep.stderr, strings.Replace(rep.summary(int(total), time.Since(start)), plural(total, "input"), plural(total, "record"), 1))
	err := stop
	if err == nil {
		err = <-readErr
	}
	switch {
	case parent.Err() != nil:
		return failure(fmt.Errorf("add: interrupted: %d records done", total))
	case err != nil && !errors.Is(err, errStrictStop):
		return failure(newOpError("add", err, "add"))
	case err != nil:
		return rep.failures.failure(fmt.Errorf("add: stopped at the first record that failed (--strict): %s read", plural(total, "record")))
	case rep.failed > 0:
		return rep.failures.failure(fmt.Errorf("add: %d of %d records failed", rep.failed, total))
	case rep.dups > 0:
		return &exitError{code: exitDuplicates}
	}
	return nil
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
// of the others. It returns the error that ends the run: the database's,
// or errStrictStop with --strict after a bad or refused record.
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
	res := &db.EachResult{}
	if len(docs) > 0 {
		var err error
		if res, err = addEach(ctx, docs, opts); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
	}
	refused := make(map[int]error, len(res.Skipped))
	for _, s := range res.Skipped {
		refused[s.Index] = s.Err
	}
	if rep.ttyOut {
		defer br.hide()()
	}
	var stop error
	for i, it := range batch {
		rep.inputs++
		switch err, no := refused[at[i]]; {
		case it.bad != nil:
			br.bad(it.pos, it.bad) // reported and counted as failed
		case no:
			rep.fail(it.pos, it.doc.ID, err)
		default:
			if err := o.printAdd(it.doc.ID, res.Results[at[i]], stdout, enc, rep); err != nil {
				return err
			}
			br.done(it)
			continue
		}
		if o.records.strict && stop == nil {
			stop = errStrictStop
		}
		br.done(it)
	}
	return stop
}

// oneByOne makes an AddEach of add, which adds one document: a batch of
// one document, whose failure for that document alone (not the
// database's, not the run's end) is a skip.
func oneByOne(add adder) eachFunc {
	return func(ctx context.Context, docs []db.Input, o *db.AddOptions) (*db.EachResult, error) {
		res := &db.EachResult{Results: make([]*db.AddResult, len(docs))}
		for i, in := range docs {
			r, err := add(ctx, in, o)
			switch {
			case err != nil && (ctx.Err() != nil || isFatal(err)):
				return nil, err
			case err != nil:
				res.Skipped = append(res.Skipped, db.BatchSkip{Index: i, ID: in.ID, Err: err})
			default:
				res.Results[i] = r
			}
		}
		return res, nil
	}
}
