package records

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
)

// benchDocs returns n documents with texts of about 2 KB of words, and the
// JSON Lines file holding them.
func benchDocs(n int) ([]pqDoc, string) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the quick brown fox jumps over a lazy dog near some river bank while birds sing éléphant naïve café \"quoted\" tab\tseparated")
	var docs []pqDoc
	var b strings.Builder
	for i := range n {
		var t strings.Builder
		for t.Len() < 2000 {
			t.WriteString(words[rng.IntN(len(words))])
			t.WriteByte(' ')
		}
		d := pqDoc{ID: fmt.Sprintf("doc-%07d", i), Text: t.String(), Meta: pqMeta{URL: fmt.Sprintf("https://example.com/%d", i)}, Score: rng.Float64()}
		docs = append(docs, d)
		fmt.Fprintf(&b, `{"id":%q,"text":%s,"meta":{"url":%q},"score":%v}`+"\n", d.ID, mustJSON(d.Text), d.Meta.URL, d.Score)
	}
	return docs, b.String()
}

func benchRead(b *testing.B, path string, o Options, bytes int64) {
	b.SetBytes(bytes)
	b.ReportAllocs()
	for b.Loop() {
		r, err := Open(path, o)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil || rec.Err != nil {
				b.Fatal(err, rec.Err)
			}
			n++
		}
		r.Close()
		if n != 10000 {
			b.Fatalf("%d records", n)
		}
	}
}

// BenchmarkReadJSONL reads 10 000 records of 2 KB texts (MB/s of the file).
func BenchmarkReadJSONL(b *testing.B) {
	_, jsonl := benchDocs(10000)
	p := filepath.Join(b.TempDir(), "bench.jsonl")
	if err := os.WriteFile(p, []byte(jsonl), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("id+text", func(b *testing.B) { benchRead(b, p, Options{IDField: "id"}, int64(len(jsonl))) })
	b.Run("keep", func(b *testing.B) {
		benchRead(b, p, Options{IDField: "id", KeepFields: []string{"meta.url"}}, int64(len(jsonl)))
	})
	b.Run("raw", func(b *testing.B) { benchRead(b, p, Options{IDField: "id", Raw: true}, int64(len(jsonl))) })
	b.Run("names", func(b *testing.B) { benchRead(b, p, Options{IDField: "id", Names: &Names{}}, int64(len(jsonl))) })
	gz := filepath.Join(b.TempDir(), "bench.jsonl.gz")
	if err := os.WriteFile(gz, gzipBytes(b, []byte(jsonl)), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("gzip", func(b *testing.B) { benchRead(b, gz, Options{IDField: "id"}, int64(len(jsonl))) })
	b.Run("gzip-ahead", func(b *testing.B) { benchRead(b, gz, Options{IDField: "id", DecodeAhead: true}, int64(len(jsonl))) })
}

// BenchmarkReadCSV reads the same records as CSV (MB/s of the file).
func BenchmarkReadCSV(b *testing.B) {
	docs, _ := benchDocs(10000)
	var sb strings.Builder
	sb.WriteString("id,text,url\n")
	for _, d := range docs {
		fmt.Fprintf(&sb, "%s,\"%s\",%s\n", d.ID, strings.ReplaceAll(d.Text, `"`, `""`), d.Meta.URL)
	}
	p := filepath.Join(b.TempDir(), "bench.csv")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	benchRead(b, p, Options{IDField: "id"}, int64(sb.Len()))
}

// BenchmarkReadParquet reads the same records from Parquet (Snappy pages,
// row groups of 2 000 rows). MB/s is of the equivalent JSON Lines file, so
// the figures compare with BenchmarkReadJSONL's.
func BenchmarkReadParquet(b *testing.B) {
	docs, jsonl := benchDocs(10000)
	p := filepath.Join(b.TempDir(), "bench.parquet")
	if err := parquet.WriteFile(p, docs, parquet.MaxRowsPerRowGroup(2000), parquet.Compression(&parquet.Snappy)); err != nil {
		b.Fatal(err)
	}
	b.Run("id+text", func(b *testing.B) { benchRead(b, p, Options{IDField: "id"}, int64(len(jsonl))) })
	b.Run("raw", func(b *testing.B) { benchRead(b, p, Options{IDField: "id", Raw: true}, int64(len(jsonl))) })
}

// zipfJSONL returns about size bytes of JSON lines whose texts are words
// of a Zipf-distributed vocabulary of 20 000 made-up words, like the
// bench's dedup dataset.
func zipfJSONL(size int) []byte {
	rng := rand.New(rand.NewPCG(3, 4))
	vocab := make([]string, 20000)
	for i := range vocab {
		w := make([]byte, 2+rng.IntN(8))
		for j := range w {
			w[j] = byte('a' + rng.IntN(26))
		}
		vocab[i] = string(w)
	}
	z := rand.NewZipf(rng, 1.0001, 1, uint64(len(vocab)-1))
	var b []byte
	for i := 0; len(b) < size; i++ {
		b = fmt.Appendf(b, `{"id":"doc%07d","text":"`, i)
		for n := 0; n < 330; n++ {
			b = append(append(b, vocab[z.Uint64()]...), ' ')
		}
		b = append(b, "\"}\n"...)
	}
	return b
}

// BenchmarkZstdOutput compares the zstd compressor of this build's outputs
// (libzstd at level 1 with cgo) with the pure-Go encoder's fastest level,
// on 1 MiB buffers of text records (as a .zst output compresses them).
func BenchmarkZstdOutput(b *testing.B) {
	data := zipfJSONL(32 << 20)
	run := func(b *testing.B, frame func(dst, src []byte) ([]byte, error)) {
		b.SetBytes(int64(len(data)))
		var out []byte
		var err error
		for b.Loop() {
			total := 0
			for i := 0; i < len(data); i += bgBufSize {
				if out, err = frame(out, data[i:min(i+bgBufSize, len(data))]); err != nil {
					b.Fatal(err)
				}
				total += len(out)
			}
			b.ReportMetric(float64(len(data))/float64(total), "ratio")
		}
	}
	b.Run("output/"+zstdLibrary, func(b *testing.B) {
		z, err := newZstdFrames()
		if err != nil {
			b.Fatal(err)
		}
		run(b, z.frame)
	})
	b.Run("pure-go/fastest", func(b *testing.B) {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		if err != nil {
			b.Fatal(err)
		}
		run(b, func(dst, src []byte) ([]byte, error) { return enc.EncodeAll(src, dst[:0]), nil })
	})
}
