package main

import (
	"context"
	"io"
)

// ctxReader reads r until ctx ends: a Read waiting on r (a terminal
// waiting for input, a pipe whose writer is idle) then returns ctx's
// error, so that Ctrl-C stops a command reading standard input. The
// read it abandoned goes on in a goroutine of its own, into a buffer of
// ctxReader's, until r answers or the process exits.
type ctxReader struct {
	ctx context.Context
	r   io.Reader

	res     chan readResult // the result of the read under way
	pending bool            // a read is under way
	buf     []byte          // read and not yet returned
	spare   []byte          // a buffer for the next read
	err     error           // r's error, returned once buf is empty
}

type readResult struct {
	b   []byte
	err error
}

func newCtxReader(ctx context.Context, r io.Reader) *ctxReader {
	return &ctxReader{ctx: ctx, r: r, res: make(chan readResult, 1)}
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if len(c.buf) > 0 {
		n := copy(p, c.buf)
		c.buf = c.buf[n:]
		return n, nil
	}
	if c.err != nil {
		return 0, c.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if !c.pending {
		b := c.spare
		if cap(b) < len(p) {
			b = make([]byte, len(p))
		}
		b = b[:len(p)]
		c.pending = true
		go func() {
			n, err := c.r.Read(b)
			c.res <- readResult{b[:n], err}
		}()
	}
	select {
	case <-c.ctx.Done():
		return 0, c.ctx.Err()
	case rr := <-c.res:
		c.pending = false
		n := copy(p, rr.b)
		c.buf, c.spare, c.err = rr.b[n:], rr.b[:0], rr.err
		if n == 0 && len(c.buf) == 0 && c.err != nil {
			return 0, c.err
		}
		return n, nil
	}
}
