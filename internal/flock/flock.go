package flock

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// ErrHeld is returned by Lock when another holder has the lock.
var ErrHeld = errors.New("flock: held by another holder")

// Lock opens path (creating it unless readOnly) and takes an exclusive
// lock on it without waiting: ErrHeld when another holder has it, the
// open's or the lock's error otherwise. Closing the result releases it.
func Lock(path string, readOnly bool) (io.Closer, error) {
	flag := os.O_RDWR | os.O_CREATE
	if readOnly {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrHeld
		}
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return file{f}, nil
}

// file releases its lock when closed.
type file struct{ f *os.File }

func (l file) Close() error {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	return l.f.Close()
}
