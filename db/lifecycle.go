package db

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// lifecycle tracks the calls in flight on a DB, so that Close can wait for
// them: Pebble must not be closed while a call holds one of its iterators
// or snapshots (bbolt's Close waits for its readers the same way).
type lifecycle struct {
	mu      sync.Mutex
	idle    sync.Cond // signalled when ops drops to 0 while closing
	ops     int       // calls between enter and leave
	closing bool      // Close has begun: enter fails with ErrClosed

	// done is cancelled when Close begins; long calls derive their context
	// from it (see enterLong), so Close does not wait for a long export.
	done   context.Context
	cancel context.CancelFunc

	// closed is closed when the first Close has finished (the store
	// closed, the lock released): a later Close waits for it, so that
	// whichever Close returns, the database can be opened again.
	closed chan struct{}
}

func (l *lifecycle) init() {
	l.idle.L = &l.mu
	l.done, l.cancel = context.WithCancel(context.Background())
	l.closed = make(chan struct{})
}

// enter registers a call. It fails with ctx's error when ctx is done and
// with ErrClosed once Close has begun. Every successful enter is paired
// with one leave.
func (d *DB) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l := &d.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return ErrClosed
	}
	l.ops++
	return nil
}

// live returns ErrClosed once Close has begun, and nil before. Exported
// methods call it first, so that a call after Close answers ErrClosed
// whatever its arguments (the package promises it); enter, which
// registers the call, checks again.
func (d *DB) live() error {
	l := &d.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return ErrClosed
	}
	return nil
}

// leave ends a call registered by enter.
func (d *DB) leave() {
	l := &d.life
	l.mu.Lock()
	l.ops--
	if l.ops == 0 && l.closing {
		l.idle.Broadcast()
	}
	l.mu.Unlock()
}

// enterLong is enter for a call that may run long (an export, a pairs
// run, a scan of the store): the returned context is also cancelled, with
// cause ErrClosed, when Close begins, so that Close does not wait for the
// call to finish. The caller defers leave(&err), which also turns that
// cancellation into an error wrapping ErrClosed.
func (d *DB) enterLong(ctx context.Context) (context.Context, func(*error), error) {
	if err := d.enter(ctx); err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(d.life.done, func() { cancel(ErrClosed) })
	return cctx, func(errp *error) {
		closed := context.Cause(cctx) == ErrClosed && ctx.Err() == nil
		stop()
		cancel(nil)
		if closed && *errp != nil && !errors.Is(*errp, ErrClosed) {
			*errp = fmt.Errorf("%w: %w", ErrClosed, *errp)
		}
		d.leave()
	}, nil
}

// enterWriter is enterLong for a call that writes, or must see no write
// while it runs (Check, Warm, Flush, Compact, the bulk deletes): it also
// takes writeMu (lockWriter, as kind), which the returned leave releases.
// With write set, a read-only DB refuses the call with ErrReadOnly (op
// names it).
func (d *DB) enterWriter(ctx context.Context, op string, write bool, kind writerKind) (context.Context, func(*error), error) {
	ctx, leave, err := d.enterLong(ctx)
	if err != nil {
		return nil, nil, err
	}
	if write && d.opts.ReadOnly {
		err := fmt.Errorf("fpdb: %s: %w", op, ErrReadOnly)
		leave(&err)
		return nil, nil, err
	}
	if err := d.lockWriter(kind); err != nil {
		leave(&err)
		return nil, nil, fmt.Errorf("fpdb: %s: %w", op, err)
	}
	return ctx, func(errp *error) {
		d.writeMu.Unlock()
		leave(errp)
	}, nil
}

// writerKind says what a holder of writeMu does, for lockWriter.
type writerKind int

const (
	// exclusive calls change no document, template or log entry, but
	// must see no write while they run (Check, Warm, Flush, Compact).
	exclusive writerKind = iota
	// changer calls add, delete or change documents, templates or log
	// entries.
	changer
	// importer is the running import's own writes.
	importer
)

// lockWriter takes writeMu, unless an import is filling the database and
// the caller is not that import (ErrImportRunning), or the caller is a
// changer and an import did not finish (ErrImportIncomplete: its rerun
// resumes only if nothing else was written); it then holds nothing.
func (d *DB) lockWriter(kind writerKind) error {
	d.writeMu.Lock()
	switch {
	case d.importing.Load() && kind != importer:
		d.writeMu.Unlock()
		return ErrImportRunning
	case d.unfinishedImport() && kind == changer:
		d.writeMu.Unlock()
		return fmt.Errorf("%w: %s holds part of an export; import the same export again to finish it, or remove the database", ErrImportIncomplete, d.dir)
	}
	return nil
}

// beginClose marks the DB closing, cancels the long calls in flight and
// waits until no call runs. It reports false when Close had begun already;
// the caller then waits for that Close to finish (closeWait). The first
// caller calls endClose once the lock is released.
func (d *DB) beginClose() bool {
	l := &d.life
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false
	}
	l.closing = true
	l.cancel()
	for l.ops > 0 {
		l.idle.Wait()
	}
	return true
}

// endClose tells the Close calls waiting in closeWait that the first one
// has finished.
func (d *DB) endClose() { close(d.life.closed) }

// closeWait is a Close after the first: it waits until the first has
// finished, or ctx is done, and returns ErrClosed (wrapping ctx's error
// too when the first is still running).
func (d *DB) closeWait(ctx context.Context) error {
	select {
	case <-d.life.closed:
		return ErrClosed
	case <-ctx.Done():
		select {
		case <-d.life.closed:
			return ErrClosed
		default:
		}
		return fmt.Errorf("%w (the first Close is still running: %w)", ErrClosed, ctx.Err())
	}
}

// writerOf is importer for the import's own writes (imp), else changer.
func writerOf(imp bool) writerKind {
	if imp {
		return importer
	}
	return changer
}
