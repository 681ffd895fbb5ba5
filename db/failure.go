package db

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// exitStorageFailure is the exit status of a process that fpdb ends
// because its storage failed (EX_IOERR of sysexits.h).
const exitStorageFailure = 74

// storageFailure ends the process after a storage failure that Pebble
// cannot recover from: a failed WAL write or sync, a failed MANIFEST
// write, a WAL that cannot be rotated. Pebble's commit pipeline and file
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

// eventListener returns fpdb's Pebble event listener. Pebble's default
// DataCorruption handler calls Logger.Fatalf in whatever goroutine read the
// damaged block, often a background compaction, where nothing can recover
// the panic: one flipped byte in a table file would end the process at
// every open. fpdb logs the corruption instead; the read that found it
// fails with an error marked pebble.ErrCorruption (db.ErrCorrupt through
// fpdb's calls), and a failed compaction is retried later by Pebble.
//
// A background error (a failed flush or compaction, which Pebble retries)
// is logged and sent on failed when nothing waits there already: Close
// watches it while it writes the memtable, so that a table write that
// keeps failing does not keep it waiting (a nil failed is never sent on).
func eventListener(l *slog.Logger, failed chan<- error) *pebble.EventListener {
	return &pebble.EventListener{
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			l.Error("fpdb: pebble: on-disk corruption", "path", info.Path, "err", info.Details)
		},
		BackgroundError: func(err error) {
			l.Warn("fpdb: pebble: background error (retried)", "err", err)
			select {
			case failed <- err:
			default:
			}
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
