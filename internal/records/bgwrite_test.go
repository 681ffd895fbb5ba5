package records

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pqzstd "github.com/parquet-go/parquet-go/compress/zstd"
)

// TestBgWriterWritesInOrder: writes of every size, across buffer
// boundaries, arrive whole and in order.
func TestBgWriterWritesInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var out bytes.Buffer
	b := newBgWriter(&out, nil)
	want := writeRandom(t, b, rng, 5*bgBufSize, 3*bgBufSize/2)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("wrote %d bytes, want %d (or different bytes)", out.Len(), len(want))
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, errBgClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// failingWriter fails once it has taken limit bytes.
type failingWriter struct {
	n, limit int
}

var errDiskFull = errors.New("disk full")

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n+len(p) > f.limit {
		return 0, errDiskFull
	}
	f.n += len(p)
	return len(p), nil
}

// TestBgWriterError: a failed write in the background is returned by a
// later Write or by Close, and nothing is written after it.
func TestBgWriterError(t *testing.T) {
	f := &failingWriter{limit: 2 * bgBufSize}
	b := newBgWriter(f, nil)
	p := make([]byte, 1000)
	var err error
	for i := 0; i < 20*bgBufSize/len(p) && err == nil; i++ {
		_, err = b.Write(p)
	}
	if cerr := b.Close(); !errors.Is(cerr, errDiskFull) || (err != nil && !errors.Is(err, errDiskFull)) {
		t.Fatalf("Write: %v; Close: %v; want %v", err, cerr, errDiskFull)
	}
	if f.n != 2*bgBufSize {
		t.Fatalf("%d bytes written, want %d", f.n, 2*bgBufSize)
	}

	// abort drops what is buffered.
	var out bytes.Buffer
	b = newBgWriter(&out, nil)
	b.Write([]byte("buffered"))
	b.abort()
	if out.Len() != 0 {
		t.Fatalf("abort wrote %q", out.Bytes())
	}
}

// TestZstdOutputFrames: a .zst output longer than one buffer is a
// sequence of zstd frames that decoders read as one text, the records in
// order; an empty one is a valid empty stream.
func TestZstdOutputFrames(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "o.jsonl.zst")
	w, err := Create(path, FormatAuto, nil, []string{"n"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	text := strings.Repeat("some words of text ", 100) // about 1.9 KB: 3000 records span several buffers
	for i := range n {
		rec := &Record{ID: fmt.Sprint(i), Raw: fmt.Appendf(nil, `{"id":"%d","text":"%s %d"}`, i, text, i)}
		if err := w.Write(rec, []Extra{{Name: "n", Value: int64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Size() == 0 {
		t.Fatal("empty output")
	}
	recs := readAll(t, path, Options{IDField: "id", KeepFields: []string{"n"}})
	if len(recs) != n {
		t.Fatalf("read back %d records, want %d", len(recs), n)
	}
	for i, r := range recs {
		if r.ID != fmt.Sprint(i) || r.Text != fmt.Sprintf("%s %d", text, i) || r.Meta != fmt.Sprintf(`{"n":%d}`, i) {
			t.Fatalf("record %d read back as %+v", i, r)
		}
	}

	empty := filepath.Join(dir, "empty.jsonl.zst")
	w, err = Create(empty, FormatAuto, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if recs := readAll(t, empty, Options{}); len(recs) != 0 {
		t.Fatalf("empty output read back as %d records", len(recs))
	}
}

// failingFrames is a compressor that fails.
type failingFrames struct{}

var errCompress = errors.New("compressor broke")

func (failingFrames) frame(dst, src []byte) ([]byte, error) { return dst, errCompress }

// TestBgWriterCompressError: a compressor's error is returned by Close
// (or a later Write), and nothing is written.
func TestBgWriterCompressError(t *testing.T) {
	var out bytes.Buffer
	b := newBgWriter(&out, []zstdFrames{failingFrames{}, failingFrames{}})
	var err error
	p := make([]byte, 4096)
	for i := 0; i < 2*bgBufSize/len(p) && err == nil; i++ {
		_, err = b.Write(p)
	}
	if cerr := b.Close(); !errors.Is(cerr, errCompress) || (err != nil && !errors.Is(err, errCompress)) {
		t.Fatalf("Write: %v; Close: %v; want %v", err, cerr, errCompress)
	}
	if out.Len() != 0 {
		t.Fatalf("%d bytes written after the compressor failed", out.Len())
	}
}

// TestParquetZstdCodecRoundTrip: pages compressed by the outputs' codec
// decode back, with parquet-go's zstd codec too.
func TestParquetZstdCodecRoundTrip(t *testing.T) {
	c := &pqZstdCodec{}
	for _, src := range [][]byte{nil, []byte("x"), zipfJSONL(3 << 20)} {
		enc, err := c.Encode(nil, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, dec := range []interface {
			Decode(dst, src []byte) ([]byte, error)
		}{c, &pqzstd.Codec{}} {
			got, err := dec.Decode(nil, enc)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("%d bytes: decoded %d bytes, %v", len(src), len(got), err)
			}
		}
	}
}

// copyFrames "compresses" by copying, after a random pause, so that the
// frames of several compressors are made out of order.
type copyFrames struct{ seed uint64 }

func (c *copyFrames) frame(dst, src []byte) ([]byte, error) {
	c.seed = c.seed*6364136223846793005 + 1442695040888963407
	time.Sleep(time.Duration(c.seed>>60) * 200 * time.Microsecond)
	return append(dst, src...), nil
}

// TestBgWriterCompressorsInOrder: with several compressors the frames are
// written in the order of their buffers whatever the order they are made.
func TestBgWriterCompressorsInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var out bytes.Buffer
	b := newBgWriter(&out, []zstdFrames{&copyFrames{seed: 1}, &copyFrames{seed: 2}, &copyFrames{seed: 3}})
	want := writeRandom(t, b, rng, 12*bgBufSize, bgBufSize)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("wrote %d bytes, want %d (or different bytes, out of order)", out.Len(), len(want))
	}
}

// randomBytes returns n random bytes.
func randomBytes(rng *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

// writeRandom writes at least total random bytes to b in writes of up to
// maxLen bytes, and returns them.
func writeRandom(t *testing.T, b *bgWriter, rng *rand.Rand, total, maxLen int) []byte {
	t.Helper()
	var want []byte
	for len(want) < total {
		p := randomBytes(rng, rng.IntN(maxLen))
		if n, err := b.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
		want = append(want, p...)
	}
	return want
}
