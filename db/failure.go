package db

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// exitStorageFailure is the exit status of a process that fpdb ends
// because its storage failed (EX_IOERR of sysexits.h).
const exitStorageFailure = 74

// storageFailure ends the process after a storage failure that Pebble
// cannot recover from: a failed WAL write or sync, a failed MANIFEST
// write, a WAL that cannot be rotated; and a memtable that cannot be
// written to a table (see flushWatch). Pebble's commit pipeline and file
// accounting are left in an unknown state then (it panics with its own
// mutexes released, which can end the process with a runtime fatal error
// that no recover catches), so fpdb follows Pebble's own stance and its
// default logger: log the cause, print it on standard error and exit. No
// acknowledged write is lost: every write acknowledged before the failure
// is in the WAL, and the next Open replays it (TestStorageFailureExits).
func storageFailure(l *slog.Logger, cause any) {
	l.Error("fpdb: fatal storage error: the process exits", "err", cause, "status", exitStorageFailure)
	fmt.Fprintf(os.Stderr, "fpdb: fatal storage error: %v\n"+
		"fpdb: exiting with status %d; reopening the database keeps every acknowledged write\n",
		cause, exitStorageFailure)
	os.Exit(exitStorageFailure)
}

// exitOnStoragePanic is deferred around every call into Pebble's write
// path (commits, flushes, ingestions, compactions): Pebble reports a
// failed WAL write by panicking in the caller's goroutine, and a program
// that recovers panics (net/http does, per request) must not go on with
// Pebble in that state. A panic that is a Go runtime error is a bug, not a
// storage failure: it is re-raised unchanged.
func exitOnStoragePanic(l *slog.Logger) {
	r := recover()
	if r == nil {
		return
	}
	if _, bug := r.(runtime.Error); bug {
		panic(r)
	}
	storageFailure(l, r)
}

// flushFailureLimit is how long Pebble's memtable flushes may keep
// failing (Pebble retries a failed flush at once, without end) before fpdb
// takes the storage for failed and ends the process (see flushWatch). A
// variable: tests lower it.
var flushFailureLimit = time.Minute

// flushWarnEvery is how often a run of failing flushes is logged while
// Pebble retries them.
const flushWarnEvery = 10 * time.Second

// flushWatch follows Pebble's memtable flushes through its event listener
// (listener). Pebble retries a flush whose table write failed at once and
// without end, at full CPU, while everything that waits for the flush —
// an ingestion of deferred postings that overlaps the memtable, a write
// stalled because the memtables are full, DB.Flush, Compact — waits
// without end, deaf to its context. A failure that will not go away is
// therefore a storage failure, which ends the process like a failed WAL
// write (storageFailure, status 74): a flush that fails because the disk
// is full (ENOSPC, EDQUOT) ends it at once, and one that keeps failing
// otherwise ends it after flushFailureLimit. This holds while the store
// opens too: Pebble's Open writes the memtables it replayed from the WAL
// and waits for that flush without end. Shorter runs of failures are
// logged, and Pebble's retries go on, so that a transient fault costs
// nothing (compactions that fail are only logged: nothing waits for
// them). Once Close has begun, failures
// end nothing: they are sent on failed, which Close's waits watch (see
// waitFlush), and Close then leaves the memtable and the deferred
// postings to the next Open.
type flushWatch struct {
	log      *slog.Logger
	closedAt atomic.Int64 // when Close began, in Unix nanoseconds; 0 before
	failed   chan error   // capacity 1; sent on only once Close has begun

	mu sync.Mutex
	// pending is the error of the last FlushEnd until BackgroundError
	// reports it: a failed flush is reported by both, while Pebble's
	// "empty table" (a flush that had nothing to write) comes to FlushEnd
	// alone, and compaction errors to BackgroundError alone.
	pending error
	since   time.Time // when the current run of failed flushes began; zero after a success
	fails   int       // the flushes failed in the run
	warned  time.Time // when the run was last logged
}

func newFlushWatch(l *slog.Logger) *flushWatch {
	return &flushWatch{log: l, failed: make(chan error, 1)}
}

// closing makes flush failures go to Close's waits instead of ending the
// process.
func (w *flushWatch) closing() {
	w.closedAt.CompareAndSwap(0, time.Now().UnixNano())
}

// closeFailureLimit is how long flushes may keep failing once Close has
// begun before they end the process: a Close that waits inside Pebble (a
// flush it asked for while a flush under way holds the writes stalled)
// cannot see the failures it would otherwise stop waiting at, and
// Pebble's retries would hold it forever. A variable for tests.
var closeFailureLimit = 10 * time.Second

// isClosing reports whether closing was called.
func (w *flushWatch) isClosing() bool { return w.closedAt.Load() != 0 }

// failing returns the error of the current run of failed flushes, or nil
// when the last flush succeeded.
func (w *flushWatch) failing() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.since.IsZero() {
		return nil
	}
	return fmt.Errorf("memtable flushes have failed %d times since %s", w.fails, w.since.Format(time.RFC3339))
}

// drain empties failed of a failure sent before a new wait begins.
func (w *flushWatch) drain() {
	select {
	case <-w.failed:
	default:
	}
}

// succeeded ends a run of failures; w.mu is held.
func (w *flushWatch) succeeded() {
	if !w.since.IsZero() {
		w.log.Info("fpdb: pebble: memtable flushes succeed again", "failures", w.fails, "for", time.Since(w.since).Round(time.Millisecond))
	}
	w.pending, w.since, w.fails = nil, time.Time{}, 0
}

// flushFailed handles a failed flush (see flushWatch). It runs in Pebble's
// flush goroutine, with Pebble's mutex held: it must not call Pebble.
func (w *flushWatch) flushFailed(err error) {
	now := time.Now()
	w.mu.Lock()
	if w.since.IsZero() {
		w.since = now
	}
	w.fails++
	fails, failing := w.fails, now.Sub(w.since)
	warn := fails == 1 || now.Sub(w.warned) >= flushWarnEvery
	if warn {
		w.warned = now
	}
	w.mu.Unlock()
	if at := w.closedAt.Load(); at != 0 {
		select {
		case w.failed <- err:
		default:
		}
		if now.Sub(time.Unix(0, at)) >= closeFailureLimit {
			storageFailure(w.log, fmt.Errorf("memtable flushes have failed for %s since Close began (%d attempts; the last: %w); the next Open replays the WAL",
				now.Sub(time.Unix(0, at)).Round(time.Second), fails, err))
		}
	} else {
		if noSpace(err) {
			storageFailure(w.log, fmt.Errorf("the disk is full: a memtable flush cannot write its table: %w", err))
		}
		if failing >= flushFailureLimit {
			storageFailure(w.log, fmt.Errorf("memtable flushes have failed for %s (%d attempts; the last: %w)",
				failing.Round(time.Second), fails, err))
		}
	}
	if warn {
		w.log.Warn("fpdb: pebble: a memtable flush failed; Pebble retries it", "err", err, "failures", fails, "for", failing.Round(time.Millisecond))
	}
}

// noSpace reports whether err says that the disk (or the user's quota) is
// full.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// listener returns fpdb's Pebble event listener. Pebble's default
// DataCorruption handler calls Logger.Fatalf in whatever goroutine read the
// damaged block, often a background compaction, where nothing can recover
// the panic: one flipped byte in a table file would end the process at
// every open. fpdb logs the corruption instead; the read that found it
// fails with an error marked pebble.ErrCorruption (db.ErrCorrupt through
// fpdb's calls), and a failed compaction is retried later by Pebble.
// Failed flushes go to flushFailed; other background errors (a failed
// compaction, which Pebble retries) are logged.
func (w *flushWatch) listener() *pebble.EventListener {
	return &pebble.EventListener{
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			w.log.Error("fpdb: pebble: on-disk corruption", "path", info.Path, "err", info.Details)
		},
		FlushBegin: func(pebble.FlushInfo) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.pending != nil {
				// The last flush ended with an error BackgroundError did
				// not report: it had nothing to write, a success.
				w.succeeded()
			}
		},
		FlushEnd: func(info pebble.FlushInfo) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if info.Err == nil {
				w.succeeded()
				return
			}
			w.pending = info.Err
		},
		BackgroundError: func(err error) {
			w.mu.Lock()
			flush := w.pending != nil && errors.Is(err, w.pending)
			if flush {
				w.pending = nil
			}
			w.mu.Unlock()
			if flush {
				w.flushFailed(err)
				return
			}
			w.log.Warn("fpdb: pebble: background error (retried)", "err", err)
		},
	}
}

// interruptedCreate reports whether the names in a directory without a
// Pebble store are what a crash while fpdb created the database leaves:
// fpdb's lock file and nothing but files Pebble names.
func interruptedCreate(names []string) bool {
	if !slices.Contains(names, lockFileName) {
		return false
	}
	for _, n := range names {
		switch {
		case n == lockFileName, n == "LOCK", strings.HasPrefix(n, "OPTIONS-"), strings.HasPrefix(n, "MANIFEST-"),
			strings.HasPrefix(n, "marker."), strings.HasSuffix(n, ".log"), strings.HasSuffix(n, ".dbtmp"):
		default:
			return false
		}
	}
	return true
}
