package textenc

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// benchInputs are 2 KB documents.
func benchInputs() map[string][]byte {
	fit := func(s string) []byte { return []byte(strings.Repeat(s, 2048/len(s)+1)[:2048]) }
	ascii := fit("The quick brown fox jumps over the lazy dog. ")
	utf := fit("Größe café naïve Ελληνικά русский 日本語 ")
	for !bytes.HasSuffix(utf, []byte(" ")) { // end on a whole rune
		utf = utf[:len(utf)-1]
	}
	return map[string][]byte{
		"ascii":  ascii,
		"utf-8":  utf,
		"latin1": latin1(string(fit("Größe café naïve déjà vu © "))),
	}
}

// BenchmarkNewReader decodes a 2 KB document per iteration, NewReader
// included, with detection and no markup.
func BenchmarkNewReader(b *testing.B) {
	for _, name := range []string{"ascii", "utf-8", "latin1"} {
		in := benchInputs()[name]
		for _, markup := range []bool{false, true} {
			sub := name
			if markup {
				sub += "/markup"
			}
			b.Run(sub, func(b *testing.B) {
				out := make([]byte, 8192)
				r := bytes.NewReader(in)
				b.SetBytes(int64(len(in)))
				b.ReportAllocs()
				for b.Loop() {
					r.Reset(in)
					d, _, err := NewReader(r, Options{Markup: markup})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(d, out); err != io.ErrUnexpectedEOF {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStream decodes a long stream: the steady-state cost per byte.
func BenchmarkStream(b *testing.B) {
	for _, name := range []string{"ascii", "utf-8", "latin1"} {
		in := bytes.Repeat(benchInputs()[name], 512) // 1 MB
		b.Run(name, func(b *testing.B) {
			r := bytes.NewReader(in)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(in)
				d, _, err := NewReader(r, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
