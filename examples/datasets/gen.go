//go:build ignore

// Gen writes the example datasets of this directory from ../corpus:
//
//	go run examples/datasets/gen.go
//
// hf/data/train-0000{0,1}-of-00002.parquet is a dataset laid out as Hugging
// Face publishes them (columns id, text, source, year); crawl.jsonl.zst and
// crawl-new.jsonl are a crawl (url, text, fetched_at) and its next batch.
// Each holds edited and exact copies of some texts and a few short ones;
// the output is the same on every run.
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
)

type row struct {
	ID     string `parquet:"id"`
	Text   string `parquet:"text"`
	Source string `parquet:"source"`
	Year   int64  `parquet:"year"`
}

type page struct {
	URL       string `json:"url"`
	Text      string `json:"text,omitempty"`
	FetchedAt string `json:"fetched_at"`
}

// edit replaces about frac of the words of text.
func edit(rng *rand.Rand, text string, frac float64) string {
	w := strings.Fields(text)
	for i := range w {
		if rng.Float64() < frac {
			w[i] = []string{"novel", "revised", "additional", "regional", "careful", "updated"}[rng.IntN(6)]
		}
	}
	return strings.Join(w, " ")
}

func main() {
	dir := "examples/datasets"
	paths, err := filepath.Glob("examples/corpus/2024-*")
	if err != nil || len(paths) == 0 {
		panic(fmt.Sprint("run from the repository's root: ", err))
	}
	slices.Sort(paths)
	var texts []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			panic(err)
		}
		texts = append(texts, strings.Join(strings.Fields(string(b)), " "))
	}
	rng := rand.New(rand.NewPCG(2026, 11))

	// The Parquet shards: each text, an edited copy of every other one, an
	// exact copy of every third, and short records.
	var rows []row
	for i, t := range texts {
		rows = append(rows, row{ID: fmt.Sprintf("grant-%03d", i), Text: t, Source: "portal", Year: 2024})
		if i%2 == 0 {
			rows = append(rows, row{ID: fmt.Sprintf("grant-%03d-resubmitted", i), Text: edit(rng, t, 0.015), Source: "portal", Year: 2025})
		}
		if i%3 == 0 {
			rows = append(rows, row{ID: fmt.Sprintf("grant-%03d-email", i), Text: strings.ToUpper(t), Source: "email", Year: 2025})
		}
	}
	for i, s := range []string{"Withdrawn.", "Withdrawn.", "See attachment", "No abstract", "Funding renewal"} {
		rows = append(rows, row{ID: fmt.Sprintf("short-%d", i), Text: s, Source: "portal", Year: 2025})
	}
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	half := len(rows) / 2
	for s, part := range [][]row{rows[:half], rows[half:]} {
		path := filepath.Join(dir, "hf", "data", fmt.Sprintf("train-%05d-of-00002.parquet", s))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			panic(err)
		}
		f, err := os.Create(path)
		if err != nil {
			panic(err)
		}
		w := parquet.NewGenericWriter[row](f)
		if _, err := w.Write(part); err != nil {
			panic(err)
		}
		if err := w.Close(); err != nil {
			panic(err)
		}
		if err := f.Close(); err != nil {
			panic(err)
		}
	}

	// The crawl: pages, mirrors with a few words changed, one record
	// without text; the next crawl revisits some.
	var pages, next []page
	for i, t := range texts {
		pages = append(pages, page{URL: fmt.Sprintf("https://grants.example.org/p/%d", i), Text: t, FetchedAt: fmt.Sprintf("2026-01-%02dT10:00:00Z", 1+i)})
		if i%2 == 1 {
			pages = append(pages, page{URL: fmt.Sprintf("https://mirror.example.net/p/%d", i), Text: edit(rng, t, 0.015), FetchedAt: fmt.Sprintf("2026-02-%02dT10:00:00Z", 1+i)})
		}
		if i%4 == 0 {
			next = append(next, page{URL: fmt.Sprintf("https://copy.example.com/%d", i), Text: edit(rng, t, 0.01), FetchedAt: "2026-03-01T10:00:00Z"})
		}
	}
	next = append(next, page{URL: "https://news.example.com/new-call", Text: "The agency opens a new call for proposals on coastal resilience, with a deadline in June and a budget of two million euros for up to ten projects.", FetchedAt: "2026-03-02T10:00:00Z"})
	var b strings.Builder
	for _, p := range pages {
		j, _ := json.Marshal(p)
		b.Write(j)
		b.WriteByte('\n')
	}
	enc, _ := zstd.NewWriter(nil)
	if err := os.WriteFile(filepath.Join(dir, "crawl.jsonl.zst"), enc.EncodeAll([]byte(b.String()), nil), 0o644); err != nil {
		panic(err)
	}
	b.Reset()
	for _, p := range next {
		j, _ := json.Marshal(p)
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "crawl-new.jsonl"), []byte(b.String()), 0o644); err != nil {
		panic(err)
	}
}
