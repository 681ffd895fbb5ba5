package textenc

import (
	"bufio"
	"encoding/binary"
	"unicode/utf8"

	"golang.org/x/text/transform"
)

// cp1252C1 maps the bytes 0x80–0x9F of Windows-1252, as WHATWG does: the five
// bytes Windows-1252 leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) map to
// the C1 controls of the same value. Every other byte b maps to rune(b)
// (ASCII, and Latin-1 from 0xA0). It is never written.
var cp1252C1 = [32]rune{
	0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
	0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
	0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
	0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
}

// cp1252Rune returns the rune Windows-1252 byte b stands for.
func cp1252Rune(b byte) rune {
	if 0x80 <= b && b < 0xA0 {
		return cp1252C1[b-0x80]
	}
	return rune(b)
}

// asciiMask has the high bit of each byte of a uint64.
const asciiMask = 0x8080808080808080

// validPrefix returns the length of the longest prefix of s made of complete
// valid UTF-8 sequences. The common case, valid UTF-8 up to a sequence that
// the end of s may cut short, costs one utf8.Valid call.
func validPrefix(s []byte) int {
	end := len(s)
	for i := len(s) - 1; i >= 0 && i >= len(s)-(utf8.UTFMax-1); i-- {
		if s[i] < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(s[i]) {
			end = i
			break
		}
	}
	if !utf8.Valid(s[:end]) {
		return validPrefixSlow(s)
	}
	if end < len(s) {
		if r, size := utf8.DecodeRune(s[end:]); r != utf8.RuneError || size > 1 {
			end += size
		}
	}
	return end
}

// validPrefixSlow is validPrefix for s that has an invalid byte.
func validPrefixSlow(s []byte) int {
	i := 0
	for i < len(s) {
		for i+8 <= len(s) && binary.LittleEndian.Uint64(s[i:])&asciiMask == 0 {
			i += 8
		}
		if i == len(s) {
			break
		}
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	return i
}

// fallback is the decoder of detection rule 3: valid UTF-8 passes through
// unchanged, and every byte that is not part of a valid UTF-8 sequence is
// decoded as Windows-1252. Runs of valid UTF-8 are copied in bulk.
type fallback struct{ transform.NopResetter }

// Transform implements transform.Transformer.
func (fallback) Transform(dst, src []byte, atEOF bool) (nDst, nSrc int, err error) {
	dirty := false // src has had an invalid byte: skip validPrefix's utf8.Valid try
	for nSrc < len(src) {
		room := len(dst) - nDst
		if room == 0 {
			return nDst, nSrc, transform.ErrShortDst
		}
		s := src[nSrc:]
		if len(s) > room {
			s = s[:room]
		}
		var n int
		if dirty {
			n = validPrefixSlow(s)
		} else {
			n = validPrefix(s)
		}
		if n > 0 {
			copy(dst[nDst:], s[:n])
			nDst += n
			nSrc += n
			continue
		}
		// No complete valid sequence starts the rest within the room.
		s = src[nSrc:]
		r, size := utf8.DecodeRune(s)
		if r == utf8.RuneError && size == 1 {
			if !atEOF && !utf8.FullRune(s) {
				// Perhaps the start of a sequence that the next src completes.
				return nDst, nSrc, transform.ErrShortSrc
			}
			r = cp1252Rune(s[0])
			size = 1
			dirty = true
		}
		// Either a Windows-1252 byte or a valid sequence too long for room.
		if utf8.RuneLen(r) > room {
			return nDst, nSrc, transform.ErrShortDst
		}
		if size == 1 {
			nDst += utf8.EncodeRune(dst[nDst:], r)
		} else {
			nDst += copy(dst[nDst:], s[:size])
		}
		nSrc += size
	}
	return nDst, nSrc, nil
}

// windows1252 decodes Windows-1252 (WHATWG's, which is also what the labels
// "latin1" and "iso-8859-1" name), mapping the undefined bytes to the C1
// controls like fallback does. Runs of ASCII are copied in bulk.
type windows1252 struct{ transform.NopResetter }

// Transform implements transform.Transformer.
func (windows1252) Transform(dst, src []byte, atEOF bool) (nDst, nSrc int, err error) {
	for nSrc < len(src) {
		room := len(dst) - nDst
		if room == 0 {
			return nDst, nSrc, transform.ErrShortDst
		}
		s := src[nSrc:]
		if len(s) > room {
			s = s[:room]
		}
		n := 0
		for n+8 <= len(s) && binary.LittleEndian.Uint64(s[n:])&asciiMask == 0 {
			n += 8
		}
		for n < len(s) && s[n] < utf8.RuneSelf {
			n++
		}
		if n > 0 {
			copy(dst[nDst:], s[:n])
			nDst += n
			nSrc += n
			continue
		}
		r := cp1252Rune(src[nSrc])
		if utf8.RuneLen(r) > room {
			return nDst, nSrc, transform.ErrShortDst
		}
		nDst += utf8.EncodeRune(dst[nDst:], r)
		nSrc++
	}
	return nDst, nSrc, nil
}

// directReader decodes the text of br with a stateless transformer (fallback
// or windows1252) straight into the caller's buffer: one buffer and two
// copies per byte, where transform.NewReader would add two buffers and a
// copy.
type directReader struct {
	br *bufio.Reader
	t  transform.Transformer
	// out holds decoded bytes for a caller's buffer too small for a rune;
	// out[o0:o1] are still to be delivered.
	out    [utf8.UTFMax]byte
	o0, o1 int
	err    error // the error that ended the input, once all is decoded
}

// Read implements io.Reader.
func (d *directReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if d.o0 < d.o1 {
		n := copy(p, d.out[d.o0:d.o1])
		d.o0 += n
		return n, nil
	}
	if d.err != nil {
		return 0, d.err
	}
	need := 1
	for {
		var readErr error
		if d.br.Buffered() < need {
			_, readErr = d.br.Peek(need)
		}
		src, _ := d.br.Peek(d.br.Buffered())
		atEOF := readErr != nil
		dst := p
		if len(p) < utf8.UTFMax {
			dst = d.out[:]
		}
		nDst, nSrc, err := d.t.Transform(dst, src, atEOF)
		if _, derr := d.br.Discard(nSrc); derr != nil {
			return 0, derr // cannot happen: nSrc <= len(src)
		}
		if atEOF && nSrc == len(src) {
			d.err = readErr
		}
		if nDst > 0 {
			if len(p) < utf8.UTFMax {
				d.o1 = nDst
				d.o0 = copy(p, d.out[:nDst])
				return d.o0, nil
			}
			return nDst, nil
		}
		switch {
		case d.err != nil:
			return 0, d.err
		case err == transform.ErrShortSrc && !atEOF:
			need = len(src) + 1
		case err != nil && err != transform.ErrShortSrc && err != transform.ErrShortDst:
			return 0, err
		}
	}
}
