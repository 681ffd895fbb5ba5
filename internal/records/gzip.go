package records

import (
	"bufio"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// gzipReader reads the members of a gzip stream in turn as one text, as
// gzip -d does, and like it accepts zero bytes after the last member (the
// padding of tape and block devices). Any other data after a member is an
// error naming its offset in the compressed stream, and an error within a
// member (a cut-off or damaged one) names the member's offset. Not safe for
// concurrent use.
type gzipReader struct {
	cr  *countingReader // the compressed stream, for offsets
	br  *bufio.Reader   // over cr: the gzip reader stops just after a member
	zr  *gzip.Reader    // the member being read
	at  int64           // the offset of its first byte
	err error           // sticky: io.EOF or the error that stopped the stream
}

// newGzipReader reads the header of the first member of cr.
func newGzipReader(cr *countingReader, src io.Reader) (*gzipReader, error) {
	g := &gzipReader{cr: cr, br: bufio.NewReader(src)}
	zr, err := gzip.NewReader(g.br)
	if err != nil {
		return nil, err
	}
	zr.Multistream(false)
	g.zr = zr
	return g, nil
}

// offset returns the offset in the compressed stream of the next byte of br.
func (g *gzipReader) offset() int64 {
	return g.cr.n.Load() - int64(g.br.Buffered())
}

// Read reads the text of the members in turn.
func (g *gzipReader) Read(p []byte) (int, error) {
	for g.err == nil {
		n, err := g.zr.Read(p)
		switch {
		case err == io.EOF:
			// The member ended whole (its checksum and size matched).
			g.err = g.nextMember()
		case err == io.ErrUnexpectedEOF:
			g.err = fmt.Errorf("the gzip member at offset %d is cut off (the file ends at offset %d, within it): %w", g.at, g.offset(), err)
		case err != nil:
			g.err = fmt.Errorf("the gzip member at offset %d: %w", g.at, err)
		}
		if n > 0 || len(p) == 0 {
			return n, nil
		}
	}
	return 0, g.err
}

// nextMember starts the member after the one ended, or returns io.EOF at
// the end of the stream, after zero bytes only if any.
func (g *gzipReader) nextMember() error {
	off := g.offset()
	b, err := g.br.Peek(1)
	if err != nil {
		return err // io.EOF at the end of the stream
	}
	if b[0] == 0 {
		return g.zeroPadding()
	}
	if err := g.zr.Reset(g.br); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("the data after the gzip member ending at offset %d is not a gzip member (trailing garbage?): %w", off, err)
	}
	g.zr.Multistream(false)
	g.at = off
	return nil
}

// zeroPadding reads the zero bytes after the last member to the end of
// the stream, and returns io.EOF there.
func (g *gzipReader) zeroPadding() error {
	start := g.offset()
	for {
		b, err := g.br.Peek(max(g.br.Buffered(), 1))
		if len(b) == 0 {
			return err // io.EOF at the end of the stream
		}
		for i, c := range b {
			if c != 0 {
				return fmt.Errorf("trailing garbage at offset %d: byte %#02x after the zero bytes from offset %d that follow the last gzip member (only zero bytes may follow it)",
					g.offset()+int64(i), c, start)
			}
		}
		if _, err := g.br.Discard(len(b)); err != nil {
			return err
		}
	}
}

// Close closes the member's decompressor.
func (g *gzipReader) Close() error { return g.zr.Close() }
