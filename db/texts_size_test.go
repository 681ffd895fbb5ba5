package db_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/bench"
	"github.com/fpdb/fpdb/db"
)

// debianDocs returns the paths of the Debian corpus's documents
// (../shared/corpus/debian beside the repository, or $FPDB_CORPUS), or
// skips when it is absent.
func debianDocs(tb testing.TB) []string {
	tb.Helper()
	dir := os.Getenv("FPDB_CORPUS")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "corpus", "debian")
	}
	files, err := filepath.Glob(filepath.Join(dir, "docs", "*.txt"))
	if err != nil || len(files) == 0 {
		tb.Skipf("Debian corpus not found at %s (CI has it as ../shared/corpus/debian; set FPDB_CORPUS to run this benchmark)", dir)
	}
	return files
}

// BenchmarkTextBytes measures what Options.KeepTexts costs on disk: it
// adds the Debian corpus (4 006 documents; skipped when absent) and 4 000
// synthetic documents of 2 KB (bench.ZipfDocs, the documents of make
// bench) to a database that keeps texts, and reports the stored texts'
// bytes per document (zstd-compressed, as stored), their raw UTF-8 bytes
// per document and the ratio:
//
//	go test ./db -run '^$' -bench BenchmarkTextBytes -benchtime 1x
func BenchmarkTextBytes(b *testing.B) {
	b.Run("debian", func(b *testing.B) {
		files := debianDocs(b)
		docs := make([]db.Input, len(files))
		for i, f := range files {
			text, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			docs[i] = db.Input{ID: strings.TrimSuffix(filepath.Base(f), ".txt"), Text: text, Source: f}
		}
		benchTextBytes(b, docs)
	})
	b.Run("zipf-2KB", func(b *testing.B) {
		texts := bench.ZipfDocs(4000, 2048, 11)
		docs := make([]db.Input, len(texts))
		for i, t := range texts {
			docs[i] = db.Input{ID: fmt.Sprintf("zipf-%05d", i), Text: t}
		}
		benchTextBytes(b, docs)
	})
}

// benchTextBytes stores docs in a database that keeps texts and reports
// the text sizes per document.
func benchTextBytes(b *testing.B, docs []db.Input) {
	ctx := context.Background()
	for b.Loop() {
		d, err := db.Open(b.TempDir(), &db.Options{KeepTexts: true, NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		for lo := 0; lo < len(docs); lo += 1000 {
			if _, err := d.AddBatch(ctx, docs[lo:min(lo+1000, len(docs))]); err != nil {
				b.Fatal(err)
			}
		}
		st, err := d.StorageStats(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
		if st.Texts == 0 || st.Texts != st.Docs {
			b.Fatalf("%d texts for %d documents", st.Texts, st.Docs)
		}
		n := float64(st.Texts)
		b.ReportMetric(float64(st.TextBytes)/n, "stored-B/doc")
		b.ReportMetric(float64(st.TextRawBytes)/n, "raw-B/doc")
		b.ReportMetric(float64(st.TextRawBytes)/float64(st.TextBytes), "ratio")
		b.ReportMetric(n, "docs")
	}
}
