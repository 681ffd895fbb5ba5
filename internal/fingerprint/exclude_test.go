package fingerprint

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/internal/minhash"
	"github.com/fpdb/fpdb/internal/normalize"
)

// words returns n random words from a vocabulary of 5 000.
func words(rng *rand.Rand, n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "w%d", rng.IntN(5000))
	}
	return sb.String()
}

func TestExcludeTemplate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	template := words(rng, 600)
	a := template + "\n" + words(rng, 150)
	b := words(rng, 100) + "\n" + template + "\n" + words(rng, 60)
	p := DefaultParams()
	plain := mustBuilder(t, p)
	ra, _ := plain.FromBytes([]byte(a))
	rb, _ := plain.FromBytes([]byte(b))
	before := minhash.Similarity(p.K, hamming(ra.FP, rb.FP))
	if before < 0.5 {
		t.Fatalf("without the template excluded the pair resembles at %.3f, want ≥ 0.5", before)
	}
	hs, err := p.ShinglesOf([]byte(template), normalize.FormatText)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(hs) || len(slices.Compact(slices.Clone(hs))) != len(hs) {
		t.Fatal("Shingles is not sorted and distinct")
	}
	p.Exclude = NewExclude(hs)
	if p.Exclude.Len() != len(hs) {
		t.Fatalf("Len %d, want %d", p.Exclude.Len(), len(hs))
	}
	ex := mustBuilder(t, p)
	xa, _ := ex.FromBytes([]byte(a))
	xb, _ := ex.FromBytes([]byte(b))
	after := minhash.Similarity(p.K, hamming(xa.FP, xb.FP))
	if after > 0.2 {
		t.Fatalf("with the template excluded the pair still resembles at %.3f", after)
	}
	// The template's 597 shingle positions are left out of a; what stays
	// is a's own text and the 3 shingles across the boundary.
	if xa.Excluded != 597 || xa.Shingles != ra.Shingles-597 || xa.Distinct != ra.Distinct-len(hs) {
		t.Fatalf("a: excluded %d, shingles %d (of %d), distinct %d (of %d)", xa.Excluded, xa.Shingles, ra.Shingles, xa.Distinct, ra.Distinct)
	}
	if xa.ContentHash != ra.ContentHash || xa.Words != ra.Words {
		t.Fatal("the content hash and word count must not depend on templates")
	}
	// A copy of a's own part alone is still found.
	own := mustBuilder(t, p)
	ro, _ := own.FromBytes([]byte(a[len(template)+1:]))
	if s := minhash.Similarity(p.K, hamming(xa.FP, ro.FP)); s < 0.9 {
		t.Fatalf("a's own text resembles a at %.3f, want ≥ 0.9", s)
	}
}

func TestExcludeTemplateOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	template := words(rng, 400)
	p := DefaultParams()
	hs, _ := p.ShinglesOf([]byte(template), normalize.FormatText)
	p.Exclude = NewExclude(hs)
	b := mustBuilder(t, p)
	r1, err := b.FromBytes([]byte(template))
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := b.FromBytes([]byte(strings.ToUpper(template))) // the same words
	half := template[:len(template)/2]
	half = half[:strings.LastIndexByte(half, ' ')]
	r3, _ := b.FromBytes([]byte(half))
	if r1.Shingles != 0 || r1.Distinct != 0 || r1.Excluded != 397 {
		t.Fatalf("template only: shingles %d, distinct %d, excluded %d", r1.Shingles, r1.Distinct, r1.Excluded)
	}
	if !slices.Equal(r1.FP, r2.FP) {
		t.Fatal("exact copies of a template-only document must have equal fingerprints")
	}
	if s := minhash.Similarity(p.K, hamming(r1.FP, r3.FP)); s > 0.3 {
		t.Fatalf("two different template-only documents resemble at %.3f", s)
	}
	// A nil set excludes nothing.
	var none *Exclude
	if none.Has(hs[0]) || none.Len() != 0 || NewExclude(nil) != nil {
		t.Fatal("the nil set is not empty")
	}
}
