package db

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// pebbleFS returns the file system Pebble runs on. A read-only DB gives
// Pebble a file system whose Lock is a no-op: Pebble opens its LOCK file
// read-write even in read-only mode, which fails in a read-only directory
// (chmod, a read-only mount), while fpdb's own lock, taken read-only before
// Pebble opens, already excludes every writer.
//
// A writable DB's file system guards its WAL files (walGuardFS), armed by
// armed.
func pebbleFS(o *Options, armed *atomic.Bool) vfs.FS {
	if o.ReadOnly {
		return noLockFS{o.fs}
	}
	return walGuardFS{FS: o.fs, log: o.Logger, armed: armed}
}

// noLockFS is a vfs.FS whose Lock does nothing.
type noLockFS struct{ vfs.FS }

// Lock returns a no-op closer.
func (noLockFS) Lock(string) (io.Closer, error) { return noopCloser{}, nil }

// Unwrap returns the underlying file system.
func (fs noLockFS) Unwrap() vfs.FS { return fs.FS }

type noopCloser struct{}

func (noopCloser) Close() error { return nil }

// walGuardFS ends the process at the first failed write, sync or creation
// of a WAL file once armed (see storageFailure). Pebble cannot go on after
// such a failure and reports it by panicking, in some paths (a memtable
// rotation, a large batch) with its mutex released, which the Go runtime
// turns into a fatal error that ends the process with a confusing message
// and no chance to log the cause. Failing here, before Pebble sees the
// error, makes every WAL failure end the same way: the cause logged,
// status 74. It is armed only once the store is open, so that Open returns
// errors (a full disk, a read-only file) instead.
type walGuardFS struct {
	vfs.FS
	log   *slog.Logger
	armed *atomic.Bool
}

func isWALFile(name string) bool { return strings.HasSuffix(name, ".log") }

// guard ends the process when err is a WAL failure while armed.
func (fs walGuardFS) guard(name, op string, err error) {
	if err != nil && fs.armed.Load() {
		storageFailure(fs.log, fmt.Errorf("WAL %s %s: %w", op, name, err))
	}
}

func (fs walGuardFS) wrap(name string, f vfs.File, err error, op string) (vfs.File, error) {
	if !isWALFile(name) {
		return f, err
	}
	fs.guard(name, op, err)
	if err != nil {
		return nil, err
	}
	return walGuardFile{File: f, fs: fs, name: name}, nil
}

// Create creates a file; a WAL file is guarded. A file created without a
// write category is not the database's WAL even when its name ends in
// ".log": Pebble's WAL manager names its category, while a checkpoint
// (DB.Backup) copies the WAL into the backup without one, and a failure
// there must be returned, not end the process.
func (fs walGuardFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if c == vfs.WriteCategoryUnspecified {
		return f, err
	}
	return fs.wrap(name, f, err, "create")
}

// ReuseForWrite renames a recycled file for writing; a WAL file is guarded.
func (fs walGuardFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	return fs.wrap(newname, f, err, "reuse")
}

// OpenReadWrite opens a file for writing; a WAL file is guarded.
func (fs walGuardFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	return fs.wrap(name, f, err, "open")
}

// Unwrap returns the underlying file system.
func (fs walGuardFS) Unwrap() vfs.FS { return fs.FS }

// walGuardFile is a WAL file whose write and sync failures end the process.
type walGuardFile struct {
	vfs.File
	fs   walGuardFS
	name string
}

func (f walGuardFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.fs.guard(f.name, "write", err)
	return n, err
}

func (f walGuardFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.fs.guard(f.name, "write", err)
	return n, err
}

// Preallocate reserves space ahead of the writes, a hint: Pebble ignores
// its failure (a disk nearly full refuses the reservation of about 1.1
// memtables), and so does the guard. A write that then finds no space
// fails, and ends the process.
func (f walGuardFile) Preallocate(off, n int64) error {
	return f.File.Preallocate(off, n)
}

func (f walGuardFile) Sync() error {
	err := f.File.Sync()
	f.fs.guard(f.name, "sync", err)
	return err
}

func (f walGuardFile) SyncData() error {
	err := f.File.SyncData()
	f.fs.guard(f.name, "sync", err)
	return err
}

func (f walGuardFile) SyncTo(n int64) (bool, error) {
	full, err := f.File.SyncTo(n)
	f.fs.guard(f.name, "sync", err)
	return full, err
}
