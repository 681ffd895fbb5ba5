package db

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
)

// Backup writes a consistent copy of the open database to dir, which must
// not exist, while reads and writes go on: every write acknowledged before
// Backup was called is in the copy, each write is in it whole or not at
// all, and the copy opens with Open like the original (documents whose
// postings a bulk load deferred get them at its first writable Open).
// Table files are hard-linked when dir is on the same file system, so a
// backup costs little space at first and grows as the original compacts.
// The database must be open for writing (ErrReadOnly otherwise).
func (d *DB) Backup(ctx context.Context, dir string) (err error) {
	_, leave, err := d.enterLong(ctx)
	if err != nil {
		return err
	}
	defer leave(&err)
	if d.opts.ReadOnly {
		return fmt.Errorf("fpdb: backup %s: %w (a read-only open cannot checkpoint the store)", d.dir, ErrReadOnly)
	}
	// WithFlushedWAL syncs the writes made with NoSync first.
	if err := d.pdb.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("fpdb: backup %s to %s: %w", d.dir, dir, err)
	}
	// The lock file, so that a read-only Open of the copy finds it.
	f, err := d.opts.fs.Create(filepath.Join(dir, lockFileName), "")
	if err != nil {
		return fmt.Errorf("fpdb: backup %s to %s: %w", d.dir, dir, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("fpdb: backup %s to %s: %w", d.dir, dir, err)
	}
	return nil
}

// Sync makes every acknowledged write durable: with Options.NoSync, writes
// return before they reach the disk, and a crash may lose the latest ones;
// after Sync returns, none before it is lost. Without NoSync it costs one
// WAL sync and changes nothing.
func (d *DB) Sync(ctx context.Context) error {
	if err := d.enter(ctx); err != nil {
		return err
	}
	defer d.leave()
	if d.opts.ReadOnly {
		return nil
	}
	defer exitOnStoragePanic(d.opts.Logger)
	if err := d.pdb.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("fpdb: sync %s: %w", d.dir, err)
	}
	return nil
}
