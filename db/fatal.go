package db

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// fatalError is the panic value of slogLogger.Fatalf: an error Pebble
// considers unrecoverable. err is the first error among Fatalf's arguments,
// kept so that callers can test the cause (for example syscall.ENOSPC).
type fatalError struct {
	msg string
	err error
}

func (e *fatalError) Error() string { return e.msg }

func (e *fatalError) Unwrap() error { return e.err }

// commit commits b with the DB's write options; mu is held exclusively.
//
// When a WAL write or sync fails, Pebble calls Logger.Fatalf (or panics
// with the error) in the committing goroutine, which is this one: its
// commit pipeline cannot continue. commit recovers that panic instead of
// letting it end the caller's process, marks the DB failed and returns an
// error wrapping ErrFailed and the cause. From then on every call but Close
// returns that error, without touching Pebble. The batch may or may not be
// in the database when it is reopened, but wholly or not at all (Pebble
// writes a batch as one checksummed WAL record).
func (d *DB) commit(b *pebble.Batch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			d.failed = fmt.Errorf("%w: %w", ErrFailed, fatalCause(r))
			err = d.failed
		}
	}()
	return b.Commit(d.wopts)
}

// fatalCause returns the error carried by r, a recovered panic of Pebble's
// write path, and panics again with r when it is anything else.
func fatalCause(r any) error {
	switch v := r.(type) {
	case *fatalError:
		return v
	case error:
		return v
	}
	panic(r)
}

// firstError returns the first error in args, or nil.
func firstError(args []any) error {
	for _, a := range args {
		if e, ok := a.(error); ok {
			return e
		}
	}
	return nil
}

// eventListener returns fpdb's Pebble event listener. Pebble's default
// DataCorruption handler calls Logger.Fatalf in whatever goroutine read the
// damaged block, often a background compaction, where nothing can recover
// the panic: one flipped byte in a table file would end the process at
// every open. fpdb logs the corruption instead; the read that found it
// fails with an error marked pebble.ErrCorruption (db.ErrCorrupt through
// fpdb's calls), and a failed compaction is retried later by Pebble.
func eventListener(l *slog.Logger) *pebble.EventListener {
	return &pebble.EventListener{
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			l.Error("fpdb: pebble: on-disk corruption", "path", info.Path, "err", info.Details)
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
