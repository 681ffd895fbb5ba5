package db

import (
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// pebbleFS returns the file system Pebble runs on. A read-only DB gives
// Pebble a file system whose Lock is a no-op: Pebble opens its LOCK file
// read-write even in read-only mode, which fails in a read-only directory
// (chmod, a read-only mount), while fpdb's own lock, taken read-only before
// Pebble opens, already excludes every writer.
func pebbleFS(o *Options) vfs.FS {
	if o.ReadOnly {
		return noLockFS{o.FS}
	}
	return o.FS
}

// noLockFS is a vfs.FS whose Lock does nothing.
type noLockFS struct{ vfs.FS }

// Lock returns a no-op closer.
func (noLockFS) Lock(string) (io.Closer, error) { return noopCloser{}, nil }

// Unwrap returns the underlying file system.
func (fs noLockFS) Unwrap() vfs.FS { return fs.FS }

type noopCloser struct{}

func (noopCloser) Close() error { return nil }
