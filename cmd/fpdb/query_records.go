package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/dedup"
)

// recordQuery is the query of one record of a dataset: what was read, and
// once done is closed, what the query found.
type recordQuery struct {
	id, pos string
	text    []byte
	p       dedup.Progress
	file    bool // err is the failure of a whole file (read no further)

	res  *db.QueryResult
	ex   jsonExplain
	err  error // the record's own (bad record, no words, …) or the database's
	done chan struct{}
}

// runRecords queries each record of dataset files (recordModeOf) and
// prints its matches as a query of several inputs does, the record's id
// standing for the input. Records are queried by several goroutines and
// printed in their order. A bad record, or one that cannot be queried, is
// reported with its position and the others are still queried.
func (o *queryOptions) runRecords(ctx context.Context, plan db.Plan, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	for _, f := range []struct {
		name string
		set  bool
	}{{"exclude", len(o.exclude) > 0}, {"include", len(o.include) > 0}, {"follow", o.follow}} {
		if f.set {
			return usageErrorf("query: --%s cannot be used with datasets (every dataset file of the PATHs is read)", f.name)
		}
	}
	// A path that does not exist is one more file that cannot be read,
	// reported as such while the others are queried (as add does).
	inputs, err := expandKeepMissing(o.paths)
	if err != nil {
		return failure(asInputError(fmt.Errorf("query: %w", err)))
	}
	if len(inputs) == 0 {
		return failure(fmt.Errorf("query: no dataset files in %s", strings.Join(o.paths, " ")))
	}
	query, d, qo, err := o.open(plan)
	if err != nil {
		return err
	}
	if d != nil {
		defer closeDB(d, &err)
	}
	qo.TextOptions = db.TextOptions{Format: o.text.format.f, Encoding: o.text.encoding.label}

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := runtime.GOMAXPROCS(0)
	if o.remote() {
		workers = max(workers, 4) // waiting for the server, not computing
	}
	work := make(chan *recordQuery, workers)
	order := make(chan *recordQuery, 4*workers) // bounds the records in flight
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var q *recordQuery
				select {
				case q = <-work:
				case <-ctx.Done(): // the run ends: the reader may not close work yet
					return
				}
				if q == nil {
					return
				}
				q.res, q.ex, q.err = query(ctx, bytes.NewReader(q.text), qo)
				q.text = nil
				close(q.done)
			}
		}()
	}
	var readErr error
	go func() {
		defer close(order)
		defer close(work)
		readErr = o.readRecords(ctx, inputs, newCtxReader(ctx, stdin), work, order)
	}()
	defer wg.Wait()
	defer cancel() // before wg.Wait: stops the reader and the queries on an early return

	bar := newBytesProgress(stderr, o.progress, false)
	defer bar.clear()
	enc := newJSONEncoder(stdout)
	start := time.Now()
	var failed inputFailures
	var n, matched, badFiles int64
	var stop error // the first error that ends the run
	// A long run warms the posting cache in the background (queries go on
	// meanwhile): its cost, under a microsecond per stored document, is
	// repaid by the lists later queries no longer read from storage. A run
	// that ends first cancels it.
	var warm *backgroundWarm
	if d != nil {
		warm = newBackgroundWarm(d, max(256, int64(d.Len()/2000)), qo.Plan.Kind)
		defer func() {
			cancel()
			warm.wait() // before closeDB, deferred earlier
		}()
	}
	// The loop ends with the input, or at once when the run stops or is
	// interrupted: it does not wait for the reader, which may be waiting
	// for an input's next record (a pipe, a FIFO).
records:
	for stop == nil {
		var q *recordQuery
		select {
		case q = <-order:
		case <-ctx.Done():
		}
		if q == nil {
			break // the input's end, or ctx's
		}
		select {
		case <-q.done:
		case <-ctx.Done():
			break records
		}
		switch {
		case q.err != nil && parent.Err() != nil:
			stop = parent.Err()
			continue
		case q.file:
			failed.note("", q.err) // a file that could not be read on
			badFiles++
			bar.hide()
			// Named as add names it: "query FILE: ERROR" (a missing
			// file's error without its path, said once).
			fmt.Fprintf(stderr, "fpdb: %s\n", errorText(newOpError("query "+q.pos, pathError(q.err, q.pos), "query")))
			bar.show()
			continue
		}
		n++
		if warm != nil {
			warm.after(ctx, n)
		}
		switch {
		case q.err != nil && isInputError(q.err, ""):
			failed.note("", q.err)
			bar.hide()
			fmt.Fprintf(stderr, "fpdb: %s\n", errorText(newOpError("query "+q.pos, q.err, "query")))
			if hint := o.records.idHint(q.err); hint != "" {
				fmt.Fprintln(stderr, hint)
			}
			bar.show()
		case q.err != nil:
			stop = failure(newOpError("query "+q.pos, q.err, "query"))
		default:
			if len(q.res.Matches) > 0 {
				matched++
			}
			bar.hide()
			if err := o.print(q.id, q.res.Matches, q.ex, true, enc, stdout, stderr); err != nil {
				stop = failure(err)
			}
			bar.show()
		}
		if stop != nil {
			cancel()
		}
		bar.update(q.p)
	}
	bar.clear()
	if parent.Err() == nil && stop == nil && readErr != nil { // the reader is done
		stop = failure(newOpError("query", readErr, "query"))
	}
	if parent.Err() != nil {
		return failure(fmt.Errorf("query: interrupted: %s done", plural(n, "record")))
	}
	unread := ""
	if badFiles > 0 {
		unread = fmt.Sprintf(", %s could not be read (to the end)", plural(badFiles, "file"))
	}
	badRecords := int64(failed.count()) - badFiles
	fmt.Fprintf(stderr, "query: %s: %d with matches, %d failed%s, in %v\n", plural(n, "record"), matched, badRecords, unread,
		time.Since(start).Round(time.Millisecond))
	switch {
	case stop != nil:
		return stop
	case badRecords == 0 && badFiles > 0:
		return failed.failure(fmt.Errorf("query: %s could not be read (to the end)", plural(badFiles, "file")))
	case failed.count() > 0:
		return failed.failure(fmt.Errorf("query: %d of %d records failed%s", badRecords, n, unread))
	case matched == 0:
		return &exitError{code: exitNoMatch}
	}
	return nil
}

// readRecords reads the records of the inputs in order, each sent to work
// (unless bad) and then to order, until ctx ends. A file that cannot be
// opened or read further is sent to order as a failure of its own, and
// the next is read.
func (o *queryOptions) readRecords(ctx context.Context, inputs []string, stdin io.Reader, work, order chan<- *recordQuery) error {
	ro := dedup.RecordOptions{Format: o.text.format.records, IDField: o.records.idField, TextField: o.records.textField}
	send := func(q *recordQuery) error {
		if q.err == nil {
			select {
			case work <- q:
			case <-ctx.Done():
				return ctx.Err()
			}
		} else {
			close(q.done)
		}
		select {
		case order <- q:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	start := time.Now()
	var base dedup.Progress // of the files before
	for _, path := range inputs {
		last := base
		err := dedup.Each(ctx, []string{path}, stdin, ro, func(doc db.Input, pos string, bad error, p dedup.Progress) error {
			if errors.Is(bad, dedup.ErrBadInput) {
				return bad // the file's failure: sent below
			}
			p.Phase, p.Records, p.Bytes, p.Elapsed = "query", base.Records+p.Records, base.Bytes+p.Bytes, time.Since(start)
			last = p
			return send(&recordQuery{id: doc.ID, pos: pos, text: doc.Text, p: p, err: bad, done: make(chan struct{})})
		})
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			if err := send(&recordQuery{pos: path, p: last, err: err, file: true, done: make(chan struct{})}); err != nil {
				return err
			}
		}
		base = last
	}
	return nil
}
