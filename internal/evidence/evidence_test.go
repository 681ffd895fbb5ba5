package evidence

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/internal/corpus"
	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/normalize"
)

// vocab returns n distinct made-up words.
func vocab(rng *rand.Rand, n int) []string {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		b := make([]byte, 4+rng.IntN(6))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		if w := string(b); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// words returns n random words of v joined by spaces.
func words(rng *rand.Rand, v []string, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = v[rng.IntN(len(v))]
	}
	return strings.Join(ws, " ")
}

func analyze(t *testing.T, text string) *Doc {
	t.Helper()
	d, err := Analyze(fingerprint.DefaultParams(), []byte(text), normalize.FormatAuto, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func compare(t *testing.T, a, b string, o Options) *Comparison {
	t.Helper()
	c, err := Compare(analyze(t, a), analyze(t, b), o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// at returns the byte span of the only occurrence of part in text.
func at(t *testing.T, text, part string) (int64, int64) {
	t.Helper()
	i := strings.Index(text, part)
	if i < 0 || strings.Count(text, part) != 1 {
		t.Fatalf("%q occurs %d times", part, strings.Count(text, part))
	}
	return int64(i), int64(i + len(part))
}

// wantPassage fails unless c has a passage at exactly these spans.
func wantPassage(t *testing.T, c *Comparison, a, b, part string, bPart ...string) {
	t.Helper()
	as, ae := at(t, a, part)
	if len(bPart) > 0 {
		part = bPart[0]
	}
	bs, be := at(t, b, part)
	for _, p := range c.Passages {
		if p.A.Start == as && p.A.End == ae && p.B.Start == bs && p.B.End == be {
			return
		}
	}
	var got []string
	for _, p := range c.Passages {
		got = append(got, fmt.Sprintf("A[%d,%d) B[%d,%d)", p.A.Start, p.A.End, p.B.Start, p.B.End))
	}
	t.Fatalf("no passage A[%d,%d) B[%d,%d); got %v", as, ae, bs, be, got)
}

func TestPlantedPassages(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	v := vocab(rng, 20000)
	p1, p2, p3 := words(rng, v, 40), words(rng, v, 25), words(rng, v, 60)

	t.Run("pasted paragraph", func(t *testing.T) {
		a := words(rng, v, 100) + ".\n\n" + p1 + "\n\n" + words(rng, v, 80)
		b := words(rng, v, 300) + "\n" + p1 + ". " + words(rng, v, 50)
		c := compare(t, a, b, Options{})
		wantPassage(t, c, a, b, p1)
		if len(c.Passages) != 1 {
			t.Fatalf("%d passages, want 1: %+v", len(c.Passages), c.Passages)
		}
		if got := c.Passages[0].A.Words; got != 40 {
			t.Fatalf("passage of %d words, want 40", got)
		}
	})

	t.Run("moved paragraphs", func(t *testing.T) {
		a := p1 + "\n\n" + p2 + "\n\n" + p3
		b := p3 + "\n\n" + p1 + "\n\n" + p2
		c := compare(t, a, b, Options{})
		wantPassage(t, c, a, b, p1+"\n\n"+p2)
		wantPassage(t, c, a, b, p3)
		if len(c.Passages) != 2 || c.Passages[0].A.Words != 65 {
			t.Fatalf("passages %+v, want 65 then 60 words", c.Passages)
		}
		if c.Jaccard < 0.9 || c.ContainedA < 0.9 {
			t.Fatalf("Jaccard %.3f containment %.3f of reordered texts", c.Jaccard, c.ContainedA)
		}
	})

	t.Run("section in a larger text", func(t *testing.T) {
		a := p3
		b := words(rng, v, 500) + " " + p3 + " " + words(rng, v, 500)
		c := compare(t, a, b, Options{})
		wantPassage(t, c, a, b, p3)
		if c.ContainedA != 1 {
			t.Fatalf("containment of the section in the text %.3f, want 1", c.ContainedA)
		}
		if want := 57.0 / float64(c.B.Shingles); c.ContainedB != want || c.Jaccard != want {
			t.Fatalf("containment of the text in the section %.4f, Jaccard %.4f, want %.4f", c.ContainedB, c.Jaccard, want)
		}
	})

	t.Run("one word changed", func(t *testing.T) {
		ws := strings.Fields(p3)
		changed := slices.Clone(ws)
		changed[30] = "changed"
		a := "intro " + p3 + " outro"
		b := "start " + strings.Join(changed, " ") + " end"
		c := compare(t, a, b, Options{})
		first, second := strings.Join(ws[:30], " "), strings.Join(ws[31:], " ")
		wantPassage(t, c, a, b, first)
		wantPassage(t, c, a, b, second)
		c = compare(t, a, b, Options{MaxGap: 1})
		wantPassage(t, c, a, b, p3, strings.Join(changed, " "))
	})

	t.Run("identical", func(t *testing.T) {
		a := words(rng, v, 200)
		c := compare(t, a, a, Options{})
		if c.Jaccard != 1 || c.Estimated != 1 || c.Hamming != 0 || c.ContainedA != 1 || c.ContainedB != 1 {
			t.Fatalf("identical texts: %+v", c)
		}
		wantPassage(t, c, a, a, a)
	})

	t.Run("unrelated", func(t *testing.T) {
		c := compare(t, words(rng, v, 300), words(rng, v, 300), Options{})
		if len(c.Passages) != 0 || c.Shared > 2 {
			t.Fatalf("unrelated texts share %d shingles, passages %+v", c.Shared, c.Passages)
		}
	})

	t.Run("positions", func(t *testing.T) {
		a := "first line\nsecond line\n  Ünïcode wörds " + p2 + "\nlast"
		b := p2
		c := compare(t, a, b, Options{})
		p := c.Passages[0]
		if p.A.Line != 3 || p.A.Col != 17 || p.A.EndLine != 3 || p.B.Line != 1 || p.B.Col != 1 {
			t.Fatalf("passage at %d:%d–%d:%d, want 3:17–3:x", p.A.Line, p.A.Col, p.A.EndLine, p.A.EndCol)
		}
		if want := 16 + len([]rune(p2)); p.A.EndCol != want {
			t.Fatalf("passage ends at column %d, want %d", p.A.EndCol, want)
		}
		// The same lines ended by CRLF, and by CR alone (old Mac files):
		// the same positions.
		for _, eol := range []string{"\r\n", "\r"} {
			c := compare(t, strings.ReplaceAll(a, "\n", eol), b, Options{})
			q := c.Passages[0].A
			if q.Line != p.A.Line || q.Col != p.A.Col || q.EndLine != p.A.EndLine || q.EndCol != p.A.EndCol {
				t.Errorf("lines ended by %q: passage at %d:%d–%d:%d, want %d:%d–%d:%d", eol, q.Line, q.Col, q.EndLine, q.EndCol,
					p.A.Line, p.A.Col, p.A.EndLine, p.A.EndCol)
			}
		}
	})

	t.Run("markup", func(t *testing.T) {
		ws := strings.Fields(p2)
		html := "<html><body><p>" + strings.Join(ws[:10], " ") + " caf&eacute; <b>" +
			strings.Join(ws[10:], " ") + "</b></p></body></html>"
		plain := "other words here " + strings.Join(ws[:10], " ") + " café " + strings.Join(ws[10:], " ") + " and more"
		c := compare(t, html, plain, Options{})
		wantPassage(t, c, html, plain, strings.Join(ws[:10], " ")+" caf&eacute; <b>"+strings.Join(ws[10:], " "),
			strings.Join(ws[:10], " ")+" café "+strings.Join(ws[10:], " "))
	})
}

// TestPassagesCoverSharedShingles checks on random texts made of shared
// segments that every passage holds the same words in both texts and that
// every shingle of A found in B lies in a passage.
func TestPassagesCoverSharedShingles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	v := vocab(rng, 50000)
	for trial := range 40 {
		var segs []string
		for range 2 + rng.IntN(6) {
			segs = append(segs, words(rng, v, 1+rng.IntN(30)))
		}
		var a, b []string
		for _, s := range segs {
			if rng.IntN(4) > 0 {
				a = append(a, s)
			}
			if rng.IntN(4) > 0 {
				b = append(b, s)
			}
			if rng.IntN(2) == 0 {
				a = append(a, words(rng, v, 1+rng.IntN(5)))
			}
		}
		rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
		at, bt := strings.Join(a, "\n"), strings.Join(b, " ")
		if at == "" || bt == "" {
			continue
		}
		da, db := analyze(t, at), analyze(t, bt)
		c, err := Compare(da, db, Options{MinWords: -1})
		if err != nil {
			t.Fatal(err)
		}
		covered := make([]bool, da.Words())
		for _, p := range c.Passages {
			wa := strings.Fields(at[p.A.Start:p.A.End])
			wb := strings.Fields(bt[p.B.Start:p.B.End])
			if !slices.Equal(wa, wb) || len(wa) != p.A.Words {
				t.Fatalf("trial %d: passage A %q is not B %q", trial, wa, wb)
			}
			for i := p.A.Word; i < p.A.Word+p.A.Words; i++ {
				covered[i] = true
			}
		}
		w := fingerprint.DefaultParams().ShingleWidth
		checkCovered(t, trial, da, db, covered)
		// The exact figures against sets of word strings.
		sa, sb := stringShingles(at, w), stringShingles(bt, w)
		shared := 0
		for s := range sa {
			if sb[s] {
				shared++
			}
		}
		if c.Shared != shared || c.A.Shingles != len(sa) || c.B.Shingles != len(sb) {
			t.Fatalf("trial %d: shared %d of %d and %d, want %d of %d and %d", trial, c.Shared, c.A.Shingles, c.B.Shingles, shared, len(sa), len(sb))
		}
	}
}

// stringShingles is the set of w-word shingles of a text of lower-case
// words, as strings (all words when fewer than w).
// checkCovered fails unless every word of every shingle of da that db
// also holds is covered (by a passage of their comparison).
func checkCovered(t *testing.T, trial int, da, db *Doc, covered []bool) {
	t.Helper()
	w := fingerprint.DefaultParams().ShingleWidth
	for i, h := range da.hashes {
		if _, ok := db.set[h]; !ok {
			continue
		}
		for j := i; j < min(i+w, da.Words()); j++ {
			if !covered[j] {
				t.Fatalf("trial %d: shared shingle %d (word %d) in no passage", trial, i, j)
			}
		}
	}
}

func stringShingles(text string, w int) map[string]bool {
	ws := strings.Fields(text)
	out := map[string]bool{}
	if len(ws) < w {
		out[strings.Join(ws, " ")] = true
	}
	for i := 0; i+w <= len(ws); i++ {
		out[strings.Join(ws[i:i+w], " ")] = true
	}
	return out
}

func TestCompareErrors(t *testing.T) {
	p := fingerprint.DefaultParams()
	if _, err := Analyze(p, []byte(" ,;. "), normalize.FormatAuto, nil); !errors.Is(err, fingerprint.ErrNoWords) {
		t.Fatalf("no words: %v", err)
	}
	if _, err := Analyze(p, []byte("bad \xff utf8"), normalize.FormatAuto, nil); !errors.Is(err, normalize.ErrBinary) {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	if _, err := Analyze(p, []byte("some words"), normalize.FormatAuto, make([]uint64, 3)); !errors.Is(err, fingerprint.ErrInvalidParams) {
		t.Fatalf("short fingerprint: %v", err)
	}
	q := p
	q.ShingleWidth = 3
	a, _ := Analyze(p, []byte("one two three four five"), normalize.FormatAuto, nil)
	b, _ := Analyze(q, []byte("one two three four five"), normalize.FormatAuto, nil)
	if _, err := Compare(a, b, Options{}); !errors.Is(err, ErrParams) {
		t.Fatalf("different params: %v", err)
	}
	// A stored fingerprint is used as given.
	fp := make([]uint64, p.K/64)
	c, err := Analyze(p, []byte("one two three four five"), normalize.FormatAuto, fp)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := Compare(a, c, Options{})
	if got.Jaccard != 1 || got.Hamming == 0 {
		t.Fatalf("given fingerprint ignored: %+v", got)
	}
}

func TestShortTexts(t *testing.T) {
	c := compare(t, "two words", "Two, words!", Options{MinWords: -1})
	if c.Jaccard != 1 || len(c.Passages) != 1 || c.Passages[0].A.Words != 2 {
		t.Fatalf("short texts: %+v", c)
	}
}

// corpusDir is the shared real corpus (see ../shared/corpus/README.md).
var corpusDir = filepath.Join("..", "..", "..", "shared", "corpus", "debian")

// TestCorpusJaccard checks the exact Jaccard against the corpus's ground
// truth (word 4-shingles after lower-casing, removing tags and replacing
// every other character by a space: the version 1 rules on ASCII text
// without entities).
func TestCorpusJaccard(t *testing.T) {
	truth, err := corpus.ReadPairs(filepath.Join(corpusDir, "pairs.tsv"))
	if err != nil {
		t.Skipf("corpus not available (%v): ../shared/corpus/debian is beside the repository in CI", err)
	}
	keys := slices.SortedFunc(maps.Keys(truth), func(x, y corpus.Pair) int {
		return cmp.Or(strings.Compare(x[0], y[0]), strings.Compare(x[1], y[1]))
	})
	p := fingerprint.DefaultParams()
	p.NormalizeVersion = 1
	read := func(id string) ([]byte, bool) {
		b, err := os.ReadFile(filepath.Join(corpusDir, "docs", id+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range b {
			if c >= 0x80 || c == '&' {
				return nil, false
			}
		}
		return b, true
	}
	checked := 0
	for i := 0; i < len(keys) && checked < 150; i += 31 {
		k := keys[i]
		ta, okA := read(k[0])
		tb, okB := read(k[1])
		if !okA || !okB {
			continue
		}
		a, err := Analyze(p, ta, normalize.FormatText, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Analyze(p, tb, normalize.FormatText, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Compare(a, b, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(c.Jaccard-truth[k]) > 1e-6 {
			t.Fatalf("%s %s: Jaccard %.6f, ground truth %.6f", k[0], k[1], c.Jaccard, truth[k])
		}
		if c.Jaccard > 0.5 && len(c.Passages) == 0 {
			t.Fatalf("%s %s: Jaccard %.3f without a shared passage", k[0], k[1], c.Jaccard)
		}
		checked++
	}
	if checked < 50 {
		t.Fatalf("only %d pairs checked", checked)
	}
	t.Logf("%d corpus pairs: exact Jaccard equals the ground truth", checked)
}
