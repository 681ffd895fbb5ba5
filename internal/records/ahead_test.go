package records

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// chunkReader returns its bytes in reads of random sizes, then err.
type chunkReader struct {
	rng  *rand.Rand
	data []byte
	err  error
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, c.err
	}
	n := min(len(p), 1+c.rng.IntN(3*aheadBufSize/2), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	if len(c.data) == 0 && c.rng.IntN(2) == 0 {
		return n, c.err // the last bytes with the error, as decompressors may
	}
	return n, nil
}

// TestAheadReaderInOrder: reads of every size get the bytes in order,
// across buffer boundaries, then the reader's own error, again and again.
func TestAheadReaderInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	errCut := errors.New("stream cut")
	for _, size := range []int{0, 1, aheadBufSize, 3*aheadBufSize*aheadBufs + 17} {
		for _, end := range []error{io.EOF, errCut} {
			data := randomBytes(rng, size)
			a := newAheadReader(&chunkReader{rng: rand.New(rand.NewPCG(uint64(size), 7)), data: data, err: end})
			var got []byte
			var err error
			for err == nil {
				p := make([]byte, rng.IntN(2*aheadBufSize))
				var n int
				n, err = a.Read(p)
				got = append(got, p[:n]...)
			}
			if !bytes.Equal(got, data) || err != end {
				t.Fatalf("%d bytes ending with %v: read %d bytes (equal %v), then %v", size, end, len(got), bytes.Equal(got, data), err)
			}
			if n, err := a.Read(make([]byte, 8)); n != 0 || err != end {
				t.Fatalf("Read after the end: %d, %v", n, err)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Read(make([]byte, 8)); !errors.Is(err, errAheadClosed) {
				t.Fatalf("Read after Close: %v", err)
			}
		}
	}
}

// endless is a reader that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

// TestAheadReaderCloseEarly: Close in the middle of a stream that does not
// end stops the goroutine.
func TestAheadReaderCloseEarly(t *testing.T) {
	a := newAheadReader(endless{})
	if _, err := a.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		a.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if _, err := a.Read(make([]byte, 8)); !errors.Is(err, errAheadClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if len(a.free)+len(a.full) > 0 || a.buf != nil {
		t.Fatal("Close kept the buffers")
	}
}
