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
// spends about a quarter of its time in write calls. With zstd
// compressors it compresses each buffer into a zstd frame before writing
// it, on one goroutine per compressor, so that several buffers are
// compressed at once (compression is most of the cost of a .zst output);
// the frames are written in the order of their buffers. Close writes what
// is buffered and waits for the goroutines; abort drops it. Not safe for
// concurrent use (the goroutines are its own).
type bgWriter struct {
	w     io.Writer
	job   *bgJob         // being filled
	sent  bool           // a buffer was handed off
	full  chan *bgJob    // buffers to write, in order
	work  chan *bgJob    // buffers to compress; nil without compressors
	free  chan *bgJob    // buffers written, for reuse
	done  chan struct{}  // closed when the writing goroutine has ended
	zwg   sync.WaitGroup // the compressing goroutines
	jobs  int            // buffers allocated
	ended bool

	mu  sync.Mutex
	err error // the first write or compression error
}

// bgJob is one buffer of a bgWriter, and its frame once compressed.
type bgJob struct {
	buf   []byte
	frame []byte        // compressed (with compressors)
	err   error         // of the compression
	ready chan struct{} // receives once the frame is made (with compressors)
}

const (
	bgBufSize = 1 << 20
	// bgBufs buffers without compression: one filled while up to two are
	// written. With compressors there is one more than them plus two: one
	// filled, one written, one compressed by each compressor.
	bgBufs = 3
	// bgCompressors is the number of compressing goroutines of a
	// compressed output.
	bgCompressors = 2
)

// errBgClosed is returned by a write after Close or abort.
var errBgClosed = errors.New("records: write after close")

// newBgWriter returns a bgWriter to w, which compresses into zstd frames
// with zs (one goroutine each) if there are any.
func newBgWriter(w io.Writer, zs []zstdFrames) *bgWriter {
	n := bgBufs
	if len(zs) > 0 {
		n = len(zs) + 2
	}
	b := &bgWriter{
		w:    w,
		job:  newBgJob(),
		full: make(chan *bgJob, n),
		free: make(chan *bgJob, n),
		done: make(chan struct{}),
		jobs: 1,
	}
	if len(zs) > 0 {
		b.work = make(chan *bgJob, n)
		for _, z := range zs {
			b.zwg.Add(1)
			go b.compress(z)
		}
	}
	go b.run()
	return b
}

func newBgJob() *bgJob {
	return &bgJob{buf: make([]byte, 0, bgBufSize), ready: make(chan struct{}, 1)}
}

// compress makes the frames of the buffers it is handed until work is
// closed.
func (b *bgWriter) compress(z zstdFrames) {
	defer b.zwg.Done()
	for j := range b.work {
		if b.error() == nil { // after an error nothing more is written
			j.frame, j.err = z.frame(j.frame[:0], j.buf)
		}
		j.ready <- struct{}{}
	}
}

// run writes the full buffers (their frames) in order until full is
// closed. After an error it writes nothing more, but still hands the
// buffers back.
func (b *bgWriter) run() {
	defer close(b.done)
	for j := range b.full {
		p := j.buf
		if b.work != nil {
			<-j.ready
			if j.err != nil {
				b.fail(fmt.Errorf("zstd: %w", j.err))
			}
			p = j.frame
		}
		if b.error() == nil {
			if _, err := b.w.Write(p); err != nil {
				b.fail(err)
			}
		}
		j.buf = j.buf[:0]
		b.free <- j
	}
}

func (b *bgWriter) fail(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
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
		buf := b.job.buf
		c := copy(buf[len(buf):cap(buf)], p)
		b.job.buf, p, n = buf[:len(buf)+c], p[c:], n+c
		if len(b.job.buf) == cap(b.job.buf) {
			b.handOff()
		}
	}
	return n, nil
}

// handOff queues the filled buffer (to be compressed, then written) and
// takes an empty one.
func (b *bgWriter) handOff() {
	b.send(b.job)
	b.sent = true
	select {
	case b.job = <-b.free:
	default:
		if b.jobs < cap(b.free) {
			b.jobs++
			b.job = newBgJob()
		} else {
			b.job = <-b.free
		}
	}
}

// send queues j for compression, if the writer compresses, and for
// writing. The queues hold every buffer: neither blocks.
func (b *bgWriter) send(j *bgJob) {
	if b.work != nil {
		b.work <- j
	}
	b.full <- j
}

// Close writes what is buffered, waits until every write is made and
// returns the first error.
func (b *bgWriter) Close() error {
	if b.ended {
		return b.error()
	}
	// A compressed output gets at least one frame, empty if need be.
	if len(b.job.buf) > 0 || (b.work != nil && !b.sent) {
		b.send(b.job)
		b.job = nil
	}
	b.end()
	return b.error()
}

// abort ends the goroutines without writing what is buffered, nor
// compressing or writing the buffers handed off and not yet written.
func (b *bgWriter) abort() {
	if !b.ended {
		b.fail(errBgClosed)
		b.end()
	}
}

func (b *bgWriter) end() {
	b.ended = true
	if b.work != nil {
		close(b.work)
	}
	close(b.full)
	<-b.done
	b.zwg.Wait()
}
