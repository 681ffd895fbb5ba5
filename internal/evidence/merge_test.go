package evidence

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/normalize"
)

// TestRepeatedPassage checks that a paragraph found twice in A and once in
// B gives two passages, each copy of A against the one of B, and not one
// passage whose A holds both copies while B holds one (the second copy's
// run goes back in B, it does not go on from the first).
func TestRepeatedPassage(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	v := vocab(rng, 20000)
	p := words(rng, v, 20)
	a, b := p+"\n"+p+"\n", p+"\n"
	for _, gap := range []int{0, 1, 25} {
		c := compare(t, a, b, Options{MaxGap: gap})
		if len(c.Passages) != 2 {
			t.Fatalf("gap %d: %d passages, want 2: %+v", gap, len(c.Passages), c.Passages)
		}
		for i, ps := range c.Passages {
			wantA := int64(i * (len(p) + 1))
			if ps.A.Words != 20 || ps.B.Words != 20 || ps.A.Start != wantA || ps.A.End != wantA+int64(len(p)) ||
				ps.B.Start != 0 || ps.B.End != int64(len(p)) {
				t.Fatalf("gap %d: passage %d A[%d,%d) %d words, B[%d,%d) %d words; want A[%d,%d) B[0,%d) of 20 words",
					gap, i, ps.A.Start, ps.A.End, ps.A.Words, ps.B.Start, ps.B.End, ps.B.Words, wantA, wantA+int64(len(p)), len(p))
			}
		}
	}

	// The second copy's run begins after the first's in B but ends with
	// it: it goes back in B all the same.
	a, b = "intro "+p+" "+p, "intro "+p+" outro"
	c := compare(t, a, b, Options{MaxGap: 30})
	wantPassage(t, c, a, b, "intro "+p)
	second := int64(len("intro " + p + " "))
	if len(c.Passages) != 2 || c.Passages[0].A.Words != 21 || c.Passages[1].A.Words != 20 ||
		c.Passages[1].A.Start != second || c.Passages[1].B.Start != int64(len("intro ")) || c.Passages[1].B.Words != 20 {
		t.Fatalf("passages %+v, want 21 words then the second copy", c.Passages)
	}
}

// normWords returns the normalized words of text, as the package reads them.
func normWords(t *testing.T, text string) []string {
	t.Helper()
	tok := &normalize.Tokenizer{Version: fingerprint.DefaultParams().NormalizeVersion, Format: normalize.FormatAuto}
	var out []string
	if err := tok.WordsBytes([]byte(text), func(w []byte) { out = append(out, string(w)) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPassagesSameWords checks on random repetitive texts (paragraphs
// repeated in either text, words of a small vocabulary repeated within
// them) that, with MaxGap 0, the normalized words of every passage are
// the same in A and in B, and that every shingle of A found in B still
// lies in a passage.
func TestPassagesSameWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		v := vocab(rng, 3+rng.IntN(200))
		var segs []string
		for range 1 + rng.IntN(5) {
			segs = append(segs, words(rng, v, 1+rng.IntN(25)))
		}
		pick := func() string {
			var out []string
			for range 1 + rng.IntN(6) {
				out = append(out, segs[rng.IntN(len(segs))])
				if rng.IntN(3) == 0 {
					out = append(out, words(rng, v, 1+rng.IntN(3)))
				}
			}
			return strings.Join(out, "\n")
		}
		at, bt := pick(), pick()
		da, db := analyze(t, at), analyze(t, bt)
		c, err := Compare(da, db, Options{MinWords: -1})
		if err != nil {
			t.Fatal(err)
		}
		covered := make([]bool, da.Words())
		for _, p := range c.Passages {
			wa, wb := normWords(t, at[p.A.Start:p.A.End]), normWords(t, bt[p.B.Start:p.B.End])
			if !slices.Equal(wa, wb) || len(wa) != p.A.Words || len(wb) != p.B.Words {
				t.Fatalf("trial %d: passage A[%d,%d) %q is not B[%d,%d) %q\nA: %q\nB: %q",
					trial, p.A.Start, p.A.End, wa, p.B.Start, p.B.End, wb, at, bt)
			}
			for i := p.A.Word; i < p.A.Word+p.A.Words; i++ {
				covered[i] = true
			}
		}
		checkCovered(t, trial, da, db, covered)
	}
}
