package records

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestBgWriterWritesInOrder: writes of every size, across buffer
// boundaries, arrive whole and in order.
func TestBgWriterWritesInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var out bytes.Buffer
	b := newBgWriter(&out)
	var want []byte
	for len(want) < 5*bgBufSize {
		p := make([]byte, rng.IntN(3*bgBufSize/2))
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		if n, err := b.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
		want = append(want, p...)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("wrote %d bytes, want %d (or different bytes)", out.Len(), len(want))
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, errBgClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// failingWriter fails once it has taken limit bytes.
type failingWriter struct {
	n, limit int
}

var errDiskFull = errors.New("disk full")

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n+len(p) > f.limit {
		return 0, errDiskFull
	}
	f.n += len(p)
	return len(p), nil
}

// TestBgWriterError: a failed write in the background is returned by a
// later Write or by Close, and nothing is written after it.
func TestBgWriterError(t *testing.T) {
	f := &failingWriter{limit: 2 * bgBufSize}
	b := newBgWriter(f)
	p := make([]byte, 1000)
	var err error
	for i := 0; i < 20*bgBufSize/len(p) && err == nil; i++ {
		_, err = b.Write(p)
	}
	if cerr := b.Close(); !errors.Is(cerr, errDiskFull) || (err != nil && !errors.Is(err, errDiskFull)) {
		t.Fatalf("Write: %v; Close: %v; want %v", err, cerr, errDiskFull)
	}
	if f.n != 2*bgBufSize {
		t.Fatalf("%d bytes written, want %d", f.n, 2*bgBufSize)
	}

	// abort drops what is buffered.
	var out bytes.Buffer
	b = newBgWriter(&out)
	b.Write([]byte("buffered"))
	b.abort()
	if out.Len() != 0 {
		t.Fatalf("abort wrote %q", out.Bytes())
	}
}
