package records

import (
	"errors"
	"io"
)

// aheadReader reads an io.Reader (a decompressor) on a goroutine of its
// own into a few buffers, which Read hands out in order: the caller parses
// one buffer while the next is decompressed (Options.DecodeAhead). Close
// stops the goroutine and waits for it, so that the decompressor can be
// closed after it. Not safe for concurrent use.
type aheadReader struct {
	full chan aheadBuf // buffers read, in order
	free chan []byte   // buffers to read into
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the goroutine has ended

	cur    []byte // what is left of the buffer being read
	buf    []byte // that buffer, handed back once read
	err    error  // the error that came with the last buffer
	closed bool
}

// aheadBuf is a buffer read, with the error the read ended with.
type aheadBuf struct {
	b   []byte
	err error
}

// errAheadClosed is returned by a Read after Close.
var errAheadClosed = errors.New("records: read after close")

const (
	aheadBufSize = 256 << 10
	aheadBufs    = 4
)

func newAheadReader(r io.Reader) *aheadReader {
	a := &aheadReader{
		full: make(chan aheadBuf, aheadBufs),
		free: make(chan []byte, aheadBufs),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	for range aheadBufs {
		a.free <- make([]byte, aheadBufSize)
	}
	go a.run(r)
	return a
}

// run fills the free buffers in turn until r returns an error (io.EOF at
// its end), which goes with the last buffer, or until Close.
func (a *aheadReader) run(r io.Reader) {
	defer close(a.done)
	for {
		var b []byte
		select {
		case b = <-a.free:
		case <-a.stop:
			return
		}
		b = b[:cap(b)]
		n := 0
		var err error
		for n < len(b) && err == nil {
			var m int
			m, err = r.Read(b[n:])
			n += m
		}
		select {
		case a.full <- aheadBuf{b: b[:n], err: err}:
		case <-a.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// Read copies what the goroutine has read; the goroutine's error comes
// after the bytes read with it.
func (a *aheadReader) Read(p []byte) (int, error) {
	if a.closed {
		return 0, errAheadClosed
	}
	for len(a.cur) == 0 {
		if a.buf != nil {
			a.free <- a.buf // never blocks: there are aheadBufs buffers
			a.buf = nil
		}
		if a.err != nil {
			return 0, a.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		nb := <-a.full
		a.cur, a.buf, a.err = nb.b, nb.b, nb.err
	}
	n := copy(p, a.cur)
	a.cur = a.cur[n:]
	return n, nil
}

// Close stops the goroutine and waits for it (it may be in a read of the
// file, which returns), and drops the buffers.
func (a *aheadReader) Close() error {
	if !a.closed {
		a.closed = true
		close(a.stop)
		<-a.done
		a.cur, a.buf = nil, nil
		for len(a.free) > 0 {
			<-a.free
		}
		for len(a.full) > 0 {
			<-a.full
		}
	}
	return nil
}
