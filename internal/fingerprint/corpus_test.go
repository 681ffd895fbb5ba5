package fingerprint

import (
	"bufio"
	"bytes"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/fpdb/fpdb/internal/normalize"
	"github.com/fpdb/fpdb/internal/shingle"
)

// corpusDir is the shared real corpus (see ../shared/corpus/README.md).
var corpusDir = filepath.Join("..", "..", "..", "shared", "corpus", "debian")

type corpusPair struct {
	a, b string
	j    float64
}

// loadPairs returns every n-th pair of pairs.tsv, or skips the test.
func loadPairs(t *testing.T, every int) []corpusPair {
	t.Helper()
	f, err := os.Open(filepath.Join(corpusDir, "pairs.tsv"))
	if err != nil {
		t.Skipf("corpus not available: %v", err)
	}
	defer f.Close()
	var out []corpusPair
	sc := bufio.NewScanner(f)
	for line := 0; sc.Scan(); line++ {
		if line == 0 || line%every != 0 {
			continue
		}
		fs := strings.Split(sc.Text(), "\t")
		if len(fs) != 3 {
			t.Fatalf("bad pairs line %q", sc.Text())
		}
		j, err := strconv.ParseFloat(fs[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, corpusPair{fs[0], fs[1], j})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readDoc(t *testing.T, id string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, "docs", id+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// shingleSet is the exact set of 4-shingle hashes of a document.
func shingleSet(t *testing.T, data []byte) map[uint64]struct{} {
	t.Helper()
	sh, _ := shingle.New(4, 1)
	set := map[uint64]struct{}{}
	add := func(h uint64) { set[h] = struct{}{} }
	err := (&normalize.Tokenizer{Version: 1}).Words(strings.NewReader(string(data)), func(w []byte) { sh.Add(w, add) })
	if err != nil {
		t.Fatal(err)
	}
	sh.Finish(add)
	return set
}

// hasOneLetterScript reports text in the scripts whose letters normalize
// makes one-letter words (Han, Kana, Thai, ...). The corpus ground truth
// keeps a run of them as one word instead.
func hasOneLetterScript(data []byte) bool {
	return bytes.ContainsFunc(data, func(r rune) bool {
		return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai,
			unicode.Lao, unicode.Khmer, unicode.Myanmar)
	})
}

// TestCorpusExactJaccard checks that normalize + shingle reproduce the
// corpus ground truth (made with the rules of normalization version 1, which
// take tags out of every document): the exact Jaccard of our 4-shingle sets equals the
// listed one, except for pairs with CJK or Thai-like text, where the ground
// truth keeps a run of ideographs as one word and normalize splits it into
// one-letter words (a deliberate difference; those pairs are only logged).
func TestCorpusExactJaccard(t *testing.T) {
	every := 200
	if testing.Short() {
		every = 5000
	}
	pairs := loadPairs(t, every)
	bad, skipped := 0, 0
	for _, p := range pairs {
		da, db := readDoc(t, p.a), readDoc(t, p.b)
		a, b := shingleSet(t, da), shingleSet(t, db)
		inter := 0
		for h := range a {
			if _, ok := b[h]; ok {
				inter++
			}
		}
		j := float64(inter) / float64(len(a)+len(b)-inter)
		if math.Abs(j-p.j) <= 1e-5 {
			continue
		}
		if hasOneLetterScript(da) || hasOneLetterScript(db) {
			skipped++
			t.Logf("%s %s (one-letter words): Jaccard %.6f, ground truth %.6f", p.a, p.b, j, p.j)
			continue
		}
		bad++
		t.Errorf("%s %s: Jaccard %.6f, ground truth %.6f", p.a, p.b, j, p.j)
	}
	t.Logf("%d pairs: %d differ, %d more differ because of one-letter words", len(pairs), bad, skipped)
}

// TestCorpusEstimates checks R̂ = 1 − 2H/k against the exact Jaccard of real
// pairs. Pairs share documents and many documents are near copies, so the
// errors of one seed are correlated: the bias is measured over several seeds
// and judged by its spread across seeds. The root-mean-square error must
// match the theory, sqrt(mean (1−R²)/k), within 15 %.
func TestCorpusEstimates(t *testing.T) {
	every, seeds := 100, 8
	if testing.Short() {
		every, seeds = 1000, 4
	}
	pairs := loadPairs(t, every)
	docs := map[string][]byte{}
	for _, p := range pairs {
		docs[p.a], docs[p.b] = readDoc(t, p.a), readDoc(t, p.b)
	}
	const k = 512
	var biases []float64
	var sumSq, sumTheory float64
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		b, err := NewBuilder(Params{K: k, ShingleWidth: 4, Seed: seed, NormalizeVersion: 1})
		if err != nil {
			t.Fatal(err)
		}
		fps := map[string][]uint64{}
		for id, data := range docs {
			res, err := b.FromBytes(data)
			if err != nil {
				t.Fatal(err)
			}
			fps[id] = res.FP
		}
		var sum float64
		for _, p := range pairs {
			fa, fb := fps[p.a], fps[p.b]
			h := 0
			for i := range fa {
				h += bits.OnesCount64(fa[i] ^ fb[i])
			}
			e := 1 - 2*float64(h)/k - p.j
			sum += e
			sumSq += e * e
			sumTheory += (1 - p.j*p.j) / k
		}
		biases = append(biases, sum/float64(len(pairs)))
	}
	var mean, sd float64
	for _, b := range biases {
		mean += b / float64(len(biases))
	}
	for _, b := range biases {
		sd += (b - mean) * (b - mean) / float64(len(biases)-1)
	}
	se := math.Sqrt(sd / float64(len(biases)))
	ratio := math.Sqrt(sumSq / sumTheory)
	t.Logf("%d pairs × %d seeds, k=%d: mean R̂ − R = %.4f (SE over seeds %.4f); RMS error / theory = %.3f",
		len(pairs), seeds, k, mean, se, ratio)
	if math.Abs(mean) > 4*se || math.Abs(mean) > 0.01 {
		t.Errorf("mean R̂ − R = %.4f (SE %.4f): biased", mean, se)
	}
	if ratio < 0.85 || ratio > 1.15 {
		t.Errorf("RMS error is %.3f × the theory", ratio)
	}
}
