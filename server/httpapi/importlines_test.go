package httpapi

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLineLimiter: the bound of the first line that is not empty is the
// header's, the others' the line's; a line exactly at its bound passes,
// one byte more fails naming the line (counted as the import counts them:
// empty lines and lines of "\r" alone are not) and the bound, and no byte
// past the bound is given.
func TestLineLimiter(t *testing.T) {
	lim := LineLimits{Header: 8, Line: 4}
	for _, c := range []struct {
		in   string
		line int   // 0: no error
		read int64 // bytes given
	}{
		{in: "12345678\n1234\n1234", read: 18},
		{in: "\n\r\n1234567\r\n\n1234\n", read: 18},
		{in: "123456789\n", line: 1, read: 8},
		{in: "\n\n123456789", line: 1, read: 10},
		{in: "12345678\n12345", line: 2, read: 13},
		{in: "1\n\r\r\n1234\n\n12\r\n1234\r", line: 4, read: 19},
		{in: "\r\r\r\r\r\r\r\r\r\r", line: 1, read: 8},
	} {
		// One byte at a time, and all at once.
		for _, r := range []io.Reader{iotest.OneByteReader(strings.NewReader(c.in)), strings.NewReader(c.in)} {
			l := &LineLimiter{R: r, Lim: lim, Reader: "a test", Instead: "is refused"}
			got, err := io.ReadAll(l)
			var le *LineTooLongError
			switch {
			case c.line == 0 && err != nil:
				t.Errorf("%q: %v", c.in, err)
			case c.line != 0 && (!errors.As(err, &le) || le.Line != c.line):
				t.Errorf("%q: %v, want line %d too long", c.in, err, c.line)
			case c.line != 0 && !strings.Contains(err.Error(), fmt.Sprintf("line %d ", c.line)):
				t.Errorf("%q: %v", c.in, err)
			}
			if int64(len(got)) != c.read {
				t.Errorf("%q: %d bytes given, want %d", c.in, len(got), c.read)
			}
		}
	}
}
