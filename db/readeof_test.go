package db

import (
	"io"
	"testing"
)

// eofReader returns data, then io.EOF, and counts the reads asked of it
// after that: a terminal would block on each, waiting for another end of
// input (a second Ctrl-D).
type eofReader struct {
	data  []byte
	eof   bool
	after int
}

func (r *eofReader) Read(p []byte) (int, error) {
	if r.eof {
		r.after++
		return 0, io.EOF
	}
	if len(r.data) == 0 {
		r.eof = true
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestReaderNotReadAfterEOF: an Input's Reader is not read again once it
// has returned io.EOF, whatever the text's format and encoding options.
func TestReaderNotReadAfterEOF(t *testing.T) {
	for _, keep := range []bool{false, true} {
		d := openTest(t, "", &Options{KeepTexts: keep})
		for i, to := range []TextOptions{{}, {Format: FormatHTML}, {Encoding: "latin1"}} {
			r := &eofReader{data: []byte("one two three four five six seven\n")}
			if _, err := d.Add(ctx, Input{ID: "x", Reader: r, TextOptions: to}, &AddOptions{Threshold: 0.7}); err != nil {
				t.Fatal(err)
			}
			if r.after > 0 {
				t.Errorf("keep texts %v, options %d: %d reads after io.EOF", keep, i, r.after)
			}
		}
	}
}
