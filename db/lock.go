package db

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFileName is the file fpdb locks (flock) while a DB is open. Pebble
// keeps its own LOCK file too; ours comes first so that a second opener,
// in this process or another, gets ErrLocked with a clear message.
const lockFileName = "FPDB.LOCK"

func lockDir(dir string, readOnly bool) (*os.File, error) {
	path := filepath.Join(dir, lockFileName)
	flag := os.O_RDWR | os.O_CREATE
	if readOnly {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("fpdb: open %s: lock file: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is in use (close the other fpdb process or DB)", ErrLocked, dir)
		}
		return nil, fmt.Errorf("fpdb: open %s: lock: %w", dir, err)
	}
	return f, nil
}

func unlockDir(f *os.File) error {
	if f == nil {
		return nil
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return f.Close()
}
