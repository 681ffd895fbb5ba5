package records

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"unicode/utf8"
)

// wideHead is how many first bytes of a text are looked at for the NUL
// bytes of UTF-16 or UTF-32 without a byte-order mark. They are read only
// when the first four bytes hold a NUL, which no UTF-8 text of records
// does: a pipe's first record is not held back for them.
const wideHead = 64

// errReader returns err from every Read: the end (or the read error) met
// when the first bytes of a text were looked at, given after them.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// checkUTF8 reads the first bytes of in, a (decompressed) text of records,
// and returns a reader of the whole text, or an error wrapping ErrNotUTF8
// when those bytes tell a UTF-16 or UTF-32 text (see wideText). A read
// error is not returned here: the returned reader gives it after the bytes
// read, where the format's decoder would have met it.
func checkUTF8(in io.Reader) (io.Reader, error) {
	head := make([]byte, wideHead)
	n, err := readHead(in, head[:4])
	if err == nil && bytes.IndexByte(head[:4], 0) >= 0 {
		var m int
		m, err = readHead(in, head[4:])
		n += m
	}
	head = head[:n]
	if err := wideText(head); err != nil {
		return nil, err
	}
	var rest io.Reader = in
	if err != nil { // io.EOF, a read error
		rest = errReader{err}
	}
	return &prefixReader{head: head, r: rest}, nil
}

// readHead fills b from r as io.ReadFull does, but returns io.EOF for a
// text that ends before b is full and r's own errors unchanged:
// io.ReadFull's io.ErrUnexpectedEOF for a short text cannot be told from
// a decompressor's for a stream cut before its first bytes of text, which
// must stay an error.
func readHead(r io.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
		if m == 0 {
			continue // io.Reader allows it; the decoders do not loop on it
		}
	}
	return n, nil
}

// wideText returns an error wrapping ErrNotUTF8 naming the encoding that
// head, the first bytes of a text, tell: a UTF-16 or UTF-32 byte-order
// mark (a UTF-8 one, EF BB BF, is accepted: the formats' decoders skip
// it), or without one, NUL bytes at the places of the high bytes of UTF-16
// or UTF-32 characters (see wideNoBOM); nil otherwise.
func wideText(head []byte) error {
	var enc, how string
	switch {
	case bytes.HasPrefix(head, []byte{0xff, 0xfe, 0, 0}):
		enc, how = "UTF-32", "byte-order mark FF FE 00 00"
	case bytes.HasPrefix(head, []byte{0, 0, 0xfe, 0xff}):
		enc, how = "UTF-32", "byte-order mark 00 00 FE FF"
	case bytes.HasPrefix(head, []byte{0xff, 0xfe}):
		enc, how = "UTF-16", "byte-order mark FF FE"
	case bytes.HasPrefix(head, []byte{0xfe, 0xff}):
		enc, how = "UTF-16", "byte-order mark FE FF"
	default:
		if enc = wideNoBOM(head); enc == "" {
			return nil
		}
		how = "no byte-order mark; NUL bytes between its characters"
	}
	return fmt.Errorf("the text is %s (%s): %w; convert it first (iconv -f %s -t UTF-8)", enc, how, ErrNotUTF8, enc)
}

// wideNoBOM tells the encoding of head, the first bytes of a text without
// a byte-order mark: "UTF-32LE" or "UTF-32BE" when its first two or more
// 4-byte units are all code points of Unicode (not NUL, not surrogates),
// "UTF-16LE" or "UTF-16BE" when at least a quarter of its 2-byte units
// (and two) have a NUL high byte and at most a quarter as many a NUL low
// byte (the NULs of ASCII characters, at every other place); "" for
// anything else, UTF-8 among it (which has no NUL).
func wideNoBOM(head []byte) string {
	if q := len(head) / 4; q >= 2 {
		le, be := true, true
		for i := 0; i < q*4; i += 4 {
			le = le && scalar(binary.LittleEndian.Uint32(head[i:]))
			be = be && scalar(binary.BigEndian.Uint32(head[i:]))
		}
		switch {
		case le:
			return "UTF-32LE"
		case be:
			return "UTF-32BE"
		}
	}
	pairs := len(head) / 2
	if pairs < 2 {
		return ""
	}
	var even, odd int // NUL bytes at even and odd offsets
	for i := 0; i < pairs*2; i += 2 {
		if head[i] == 0 {
			even++
		}
		if head[i+1] == 0 {
			odd++
		}
	}
	switch {
	case odd >= 2 && 4*odd >= pairs && 4*even <= odd:
		return "UTF-16LE"
	case even >= 2 && 4*even >= pairs && 4*odd <= even:
		return "UTF-16BE"
	}
	return ""
}

// scalar tells whether c is a Unicode scalar value other than NUL.
func scalar(c uint32) bool {
	return c > 0 && c <= utf8.MaxRune && (c < 0xd800 || c > 0xdfff)
}
