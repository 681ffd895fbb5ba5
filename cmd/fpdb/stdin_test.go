package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"time"
)

// TestCtxReader: what ctxReader returns is what its reader holds, in any
// size of reads; a read waiting on a silent reader ends with the context.
func TestCtxReader(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 5000)
	for _, wrap := range []func(io.Reader) io.Reader{
		func(r io.Reader) io.Reader { return r },
		iotest.OneByteReader,
		iotest.HalfReader,
		iotest.DataErrReader,
	} {
		r := newCtxReader(context.Background(), wrap(bytes.NewReader(data)))
		if err := iotest.TestReader(r, data); err != nil {
			t.Error(err)
		}
	}
	boom := errors.New("boom")
	r := newCtxReader(context.Background(), iotest.TimeoutReader(iotest.ErrReader(boom)))
	if _, err := io.ReadAll(r); !errors.Is(err, boom) {
		t.Errorf("an error of the reader: %v", err)
	}

	// A reader that never answers: the read ends when the context does.
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	r = newCtxReader(ctx, pr)
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	if n, err := r.Read(make([]byte, 10)); n != 0 || !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Errorf("read after cancel: %d, %v after %v", n, err, time.Since(start))
	}
	if _, err := r.Read(make([]byte, 10)); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v", err)
	}
}
