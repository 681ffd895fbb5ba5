package db

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fpdb/fpdb/internal/flock"
)

// lockFileName is the file fpdb locks while a DB is open. Pebble keeps its
// own LOCK file too; ours comes first so that a second opener, in this
// process or another, gets ErrLocked with a clear message.
const lockFileName = "FPDB.LOCK"

// lockDir locks dir, retrying for up to wait while another holder has it
// (ErrLocked then, naming the wait): with flock(2) on the operating system's file system
// (so another process, or another DB in this process, is refused), with the
// file system's own Lock otherwise.
func lockDir(fs vfs.FS, dir string, readOnly bool, wait time.Duration) (io.Closer, error) {
	deadline := time.Now().Add(wait)
	delay := 5 * time.Millisecond
	for {
		l, err := lockOnce(fs, dir, readOnly)
		if err == nil || !errors.Is(err, ErrLocked) || !time.Now().Before(deadline) {
			if err != nil && wait > 0 && errors.Is(err, ErrLocked) {
				err = fmt.Errorf("%w (waited %v)", err, wait)
			}
			return l, err
		}
		time.Sleep(min(delay, time.Until(deadline)))
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// lockOnce tries to lock dir once.
func lockOnce(fs vfs.FS, dir string, readOnly bool) (io.Closer, error) {
	path := filepath.Join(dir, lockFileName)
	if fs != vfs.Default {
		l, err := fs.Lock(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrLocked, dir, err)
		}
		return l, nil
	}
	l, err := flock.Lock(path, readOnly)
	switch {
	case errors.Is(err, flock.ErrHeld):
		return nil, fmt.Errorf("%w: %s is in use (close the other fpdb process or DB)", ErrLocked, dir)
	case err != nil:
		return nil, fmt.Errorf("fpdb: open %s: lock file: %w", dir, err)
	}
	return l, nil
}
