package flock

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestLock: a second lock of a held file is ErrHeld, and the lock is
// free again once closed; a read-only lock does not create the file.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	if _, err := Lock(path, true); err == nil {
		t.Fatal("a read-only lock created the file")
	}
	l, err := Lock(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(path, false); !errors.Is(err, ErrHeld) {
		t.Fatalf("second lock: %v, want ErrHeld", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := Lock(path, true)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Close()
}
