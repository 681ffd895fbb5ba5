package zstdframe

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// words returns n words of a small vocabulary: text that compresses.
func words(r *rand.Rand, n int) []byte {
	vocab := strings.Fields("the grant proposal describes a method for near duplicate detection of documents in large archives with minhash fingerprints and an index")
	var b bytes.Buffer
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocab[r.IntN(len(vocab))])
	}
	return b.Bytes()
}

func TestAppendRoundTrip(t *testing.T) {
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 70_000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	inputs := [][]byte{nil, {}, []byte("x"), words(r, 5), words(r, 400), words(r, 200_000), random}
	for _, k := range []Kind{Long, Short} {
		e, err := New(k)
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range inputs {
			for _, prefix := range [][]byte{nil, []byte("\x01\x02"), make([]byte, 3, 1<<20)} {
				out, err := e.Append(prefix, in)
				if err != nil {
					t.Fatalf("kind %d input %d: %v", k, i, err)
				}
				if !bytes.Equal(out[:len(prefix)], prefix) {
					t.Fatalf("kind %d input %d: prefix changed", k, i)
				}
				got, err := dec.DecodeAll(out[len(prefix):], nil)
				if err != nil {
					t.Fatalf("kind %d input %d (%s): decode: %v", k, i, Library, err)
				}
				if !bytes.Equal(got, in) {
					t.Fatalf("kind %d input %d: round trip gave %d bytes, want %d", k, i, len(got), len(in))
				}
			}
		}
		// Every frame carries its content checksum: a flipped byte in
		// the compressed text is an error, never other text.
		in := words(r, 400)
		out, _ := e.Append(nil, in)
		for pos := 6; pos < len(out); pos += 7 {
			bad := bytes.Clone(out)
			bad[pos] ^= 0x55
			if got, err := dec.DecodeAll(bad, nil); err == nil && !bytes.Equal(got, in) {
				t.Fatalf("kind %d: byte %d of %d flipped: decoded other text without an error", k, pos, len(out))
			}
		}
		// Text compresses: a frame of 400 words is well under the text.
		if len(out) >= len(in)/2 {
			t.Errorf("kind %d: %d words of %d bytes compressed to %d bytes", k, 400, len(in), len(out))
		}
	}
}

// BenchmarkShort compresses 2 KB texts one at a time, as a database that
// keeps texts stores them: this build's encoder, then the pure-Go
// encoder's default and fastest levels.
func BenchmarkShort(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	texts := make([][]byte, 64)
	for i := range texts {
		texts[i] = words(r, 330)
	}
	run := func(b *testing.B, app func(dst, src []byte) ([]byte, error)) {
		var out []byte
		var err error
		n, in := 0, 0
		for i := 0; b.Loop(); i++ {
			t := texts[i%len(texts)]
			if out, err = app(out[:0], t); err != nil {
				b.Fatal(err)
			}
			n, in = n+len(out), in+len(t)
		}
		b.ReportMetric(float64(in)/float64(n), "ratio")
	}
	e, err := New(Short)
	if err != nil {
		b.Fatal(err)
	}
	b.Run(Library, func(b *testing.B) { run(b, e.Append) })
	for _, l := range []zstd.EncoderLevel{zstd.SpeedDefault, zstd.SpeedFastest} {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(l), zstd.WithEncoderConcurrency(1))
		if err != nil {
			b.Fatal(err)
		}
		b.Run("pure-go/"+l.String(), func(b *testing.B) {
			run(b, func(dst, src []byte) ([]byte, error) { return enc.EncodeAll(src, dst), nil })
		})
	}
}
