package records

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// bgWriter buffers the writes to a file and makes them on a goroutine of
// its own, so that the kernel's work for one buffer (its copy into the
// page cache) overlaps the encoding of the next: a dedup's write phase
// spends about a quarter of its time in write calls. With a zstd
// compressor it compresses each buffer into a zstd frame there too. Close
// writes what is buffered and waits for the goroutine; abort drops it.
// Not safe for concurrent use (the goroutine is its own).
type bgWriter struct {
	w     io.Writer
	z     zstdFrames    // compresses each buffer, if not nil
	zbuf  []byte        // the goroutine's: a compressed frame
	sent  bool          // a buffer was handed off
	buf   []byte        // being filled
	full  chan []byte   // buffers to write, in order
	free  chan []byte   // buffers written, for reuse
	done  chan struct{} // closed when the goroutine has ended
	bufs  int           // buffers allocated
	ended bool

	mu  sync.Mutex
	err error // the first write error
}

const (
	bgBufSize = 1 << 20
	bgBufs    = 3 // one filled while up to two are written
)

// errBgClosed is returned by a write after Close or abort.
var errBgClosed = errors.New("records: write after close")

// newBgWriter returns a bgWriter to w, which compresses into zstd frames
// with z if not nil.
func newBgWriter(w io.Writer, z zstdFrames) *bgWriter {
	b := &bgWriter{
		w:    w,
		z:    z,
		buf:  make([]byte, 0, bgBufSize),
		full: make(chan []byte, bgBufs),
		free: make(chan []byte, bgBufs),
		done: make(chan struct{}),
		bufs: 1,
	}
	go b.run()
	return b
}

// run writes the full buffers in order until full is closed. After an
// error it writes nothing more, but still hands the buffers back.
func (b *bgWriter) run() {
	defer close(b.done)
	for p := range b.full {
		if b.error() == nil {
			if err := b.write(p); err != nil {
				b.mu.Lock()
				b.err = err
				b.mu.Unlock()
			}
		}
		b.free <- p[:0]
	}
}

// write writes p, compressed if the writer compresses.
func (b *bgWriter) write(p []byte) error {
	if b.z != nil {
		var err error
		if b.zbuf, err = b.z.frame(b.zbuf, p); err != nil {
			return fmt.Errorf("zstd: %w", err)
		}
		p = b.zbuf
	}
	_, err := b.w.Write(p)
	return err
}

func (b *bgWriter) error() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Write copies p into the buffers; an error of an earlier write is
// returned here.
func (b *bgWriter) Write(p []byte) (int, error) {
	if b.ended {
		return 0, errBgClosed
	}
	n := 0
	for len(p) > 0 {
		if err := b.error(); err != nil {
			return n, err
		}
		c := copy(b.buf[len(b.buf):cap(b.buf)], p)
		b.buf, p, n = b.buf[:len(b.buf)+c], p[c:], n+c
		if len(b.buf) == cap(b.buf) {
			b.handOff()
		}
	}
	return n, nil
}

// handOff queues the filled buffer and takes an empty one.
func (b *bgWriter) handOff() {
	b.full <- b.buf
	b.sent = true
	select {
	case b.buf = <-b.free:
	default:
		if b.bufs < bgBufs {
			b.bufs++
			b.buf = make([]byte, 0, bgBufSize)
		} else {
			b.buf = <-b.free
		}
	}
}

// Close writes what is buffered, waits until every write is made and
// returns the first error.
func (b *bgWriter) Close() error {
	if b.ended {
		return b.error()
	}
	// A compressed output gets at least one frame, empty if need be.
	if len(b.buf) > 0 || (b.z != nil && !b.sent) {
		b.full <- b.buf
		b.buf = nil
	}
	b.end()
	return b.error()
}

// abort ends the goroutine without writing what is buffered.
func (b *bgWriter) abort() {
	if !b.ended {
		b.end()
	}
}

func (b *bgWriter) end() {
	b.ended = true
	close(b.full)
	<-b.done
}
