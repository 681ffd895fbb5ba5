package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/index"
)

const noDeferred = index.NoDeferred

// bulkFlushDocs is the number of documents whose postings a bulk load
// defers before it writes them (Options.BulkLoad); DB.flushAt, which
// tests lower.
const bulkFlushDocs = 1 << 20

// Flush writes the postings of the documents a bulk load has deferred
// (Options.BulkLoad), so that the database is fully indexed on disk. Close
// does it too; without deferred documents Flush does nothing. Queries run
// meanwhile. It first writes Pebble's memtable to a table, and waits for
// that only as long as ctx lasts (a table write that fails is retried by
// Pebble; a full disk ends the process, see the package documentation;
// while writes are stalled behind a failing flush, the wait is inside
// Pebble and ends only with the process, at the failure limit);
// when it returns an error, the postings are still deferred, and written
// by a later Flush, Close or writable Open.
func (d *DB) Flush(ctx context.Context) (err error) {
	if err := d.live(); err != nil {
		return err
	}
	ctx, leave, err := d.enterWriter(ctx, "flush", true, exclusive)
	if err != nil {
		return err
	}
	defer leave(&err)
	return d.flushDeferred(ctx)
}

// flushDeferred writes the deferred postings. writeMu is held, mu is not:
// readers go on while the postings are written (they see the deferred
// documents by scanning them until the index records the flush). It first
// writes Pebble's memtable to a table (waitFlush): the deferred mark, and
// often the deferred documents, are there, and an ingestion that overlaps
// the memtable waits inside Pebble for its flush, deaf to ctx; flushed
// here, the wait ends when ctx does, and a flush that cannot be written
// (a full disk) ends the process (see flushWatch) or, once Close has
// begun, this call. The flush rotates the WAL, and the ingestion writes
// the MANIFEST, so a storage failure there ends the process like one in
// a commit (see storageFailure).
func (d *DB) flushDeferred(ctx context.Context) error {
	if d.ix.DeferredFrom() == noDeferred {
		return nil
	}
	defer exitOnStoragePanic(d.opts.Logger)
	if d.opts.NoSync {
		// The ingested postings are durable at once; the documents they
		// name must be too, or a crash could keep postings of documents
		// whose records it loses with the unsynced end of the WAL.
		if err := d.pdb.LogData(nil, pebble.Sync); err != nil {
			return fmt.Errorf("fpdb: write deferred postings: sync: %w", storageError(err))
		}
	}
	if err := d.waitFlush(ctx); err != nil {
		return fmt.Errorf("fpdb: write deferred postings: %w", err)
	}
	if err := d.ix.FlushDeferred(ctx, d.opts.fs, d.dir); err != nil {
		return fmt.Errorf("fpdb: write deferred postings: %w", storageError(err))
	}
	d.metrics.flushes.Add(1)
	return nil
}

// errFlushFailed is wrapped by the error of waitFlush when a memtable
// flush failed after Close began.
var errFlushFailed = errors.New("a memtable flush failed")

// waitFlush writes Pebble's memtable to a table and waits until it is
// written, or until ctx is done (ctx's error). Until Close begins, a
// failed flush is retried by Pebble and waited for, while a lasting one
// ends the process (flushWatch). Once Close has begun, the first failed
// flush ends the wait with an error wrapping errFlushFailed, and when
// flushes are failing already waitFlush returns that error without
// flushing (a flush asked for while the memtables are full would wait
// inside Pebble). A flush asked for while a flush under way stalls the
// writes waits inside Pebble, where neither ctx nor a failure is seen:
// flushWatch then ends the process at its limits (closeFailureLimit once
// Close has begun). The flush rotates the WAL: a failure there ends the
// process.
func (d *DB) waitFlush(ctx context.Context) error {
	var failed <-chan error
	if d.watch.isClosing() {
		d.watch.drain()
		if err := d.watch.failing(); err != nil {
			return fmt.Errorf("%w: %w", errFlushFailed, err)
		}
		failed = d.watch.failed
	}
	flushed, err := func() (<-chan struct{}, error) {
		defer exitOnStoragePanic(d.opts.Logger)
		return d.pdb.AsyncFlush()
	}()
	if err != nil {
		return fmt.Errorf("flush: %w", storageError(err))
	}
	select {
	case <-flushed:
		return nil
	case err := <-failed:
		return fmt.Errorf("%w: %w", errFlushFailed, err)
	case <-ctx.Done():
		return fmt.Errorf("flush: %w", ctx.Err())
	}
}

// flushThreshold returns how many deferred documents trigger a flush when
// indexed documents have their postings written: flushAt, or as many as
// are indexed already, up to 4·flushAt. Each flush adds to every posting
// list, so Pebble's compactions rewrite all of the postings after it; a
// tail that grows with the database keeps that rewriting proportional to
// the data loaded (flushes at 1, 2, 4, 8, 12, … M documents) instead of
// quadratic in it (every 1 M), while the tail that queries scan, and the
// flush's sort in memory, stay bounded.
func flushThreshold(flushAt, indexed int) int {
	return max(flushAt, min(indexed, 4*flushAt))
}

// maybeFlushDeferred writes the deferred postings once flushThreshold
// documents are deferred. writeMu is held, mu is not; the caller's call is in flight,
// so the DB is open. The flush is not cut short by the caller's context,
// whose call is done. A failure is logged, not returned: the documents are
// stored, and their postings are written by the next flush (at the latest
// by Close or the next writable Open).
func (d *DB) maybeFlushDeferred(ctx context.Context) {
	from := int(d.ix.DeferredFrom())
	if !d.ix.Deferring() || d.ix.Cap()-from < flushThreshold(d.flushAt, from) {
		return
	}
	if err := d.flushDeferred(context.WithoutCancel(ctx)); err != nil {
		d.opts.Logger.Error("fpdb: deferred postings not written yet", "err", err)
	}
}
