package evidence

import (
	"math/rand/v2"
	"testing"

	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/normalize"
)

// TestTemplateNotShared: with a template's shingles excluded, the template
// text two documents share makes no passage and no figure; their own
// shared paragraph still does, at its exact offsets.
func TestTemplateNotShared(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	v := vocab(rng, 4000)
	template := words(rng, v, 300)
	shared := words(rng, v, 40)
	a := template + "\n\nalpha " + words(rng, v, 80) + "\n\n" + shared + "\n\n" + words(rng, v, 50)
	b := words(rng, v, 30) + "\n\n" + template + "\n\nomega " + words(rng, v, 60) + "\n\n" + shared
	p := fingerprint.DefaultParams()
	hs, err := p.ShinglesOf([]byte(template), normalize.FormatText)
	if err != nil {
		t.Fatal(err)
	}
	p.Exclude = fingerprint.NewExclude(hs)
	an := func(text string) *Doc {
		d, err := Analyze(p, []byte(text), normalize.FormatText, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	c, err := Compare(an(a), an(b), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Passages) != 1 {
		t.Fatalf("%d passages, want only the shared paragraph", len(c.Passages))
	}
	wantPassage(t, c, a, b, shared)
	// 37 shared shingles; the template's are in neither set.
	if c.Shared != 37 || c.A.Shingles >= 300 || c.ContainedA > 0.4 || c.Estimated > 0.4 {
		t.Fatalf("shared %d, |A| %d, contained %.3f, estimated %.3f", c.Shared, c.A.Shingles, c.ContainedA, c.Estimated)
	}
	// Without the template excluded, it is the longest passage.
	plain := compare(t, a, b, Options{})
	wantPassage(t, plain, a, b, template)
	if plain.Passages[0].A.Words != 300 {
		t.Fatalf("longest passage without exclusion: %d words", plain.Passages[0].A.Words)
	}
	// A text made only of the template shares nothing with another one.
	only, err := Compare(an(template), an(a), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if only.Shared != 0 || only.Jaccard != 0 || only.ContainedA != 0 || len(only.Passages) != 0 || only.A.Shingles != 0 {
		t.Fatalf("template only: %+v", only)
	}
}

// TestCommonPassages: a passage most texts hold is found once, at its
// exact offsets in the first text that has it; text fewer hold is not.
func TestCommonPassages(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	v := vocab(rng, 5000)
	boiler := words(rng, v, 50)
	rare := words(rng, v, 50)
	p := fingerprint.DefaultParams()
	fr := NewFrequency(p)
	var texts []string
	for i := range 20 {
		s := words(rng, v, 100)
		if i%5 != 0 { // 16 of 20 texts
			s += "\n" + boiler
		}
		if i%5 == 0 { // 4 of 20
			s += "\n" + rare
		}
		s += "\n" + words(rng, v, 30)
		texts = append(texts, s)
		if err := fr.Add([]byte(s), normalize.FormatText); err != nil {
			t.Fatal(err)
		}
	}
	if fr.Texts() != 20 {
		t.Fatalf("%d texts", fr.Texts())
	}
	common := fr.Common(10)
	if len(common) != 47 {
		t.Fatalf("%d common shingles, want the boilerplate's 47", len(common))
	}
	covered := map[uint64]bool{}
	var found []string
	for _, s := range texts {
		spans, err := CommonPassages(p, []byte(s), normalize.FormatText, common, covered, 8)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range spans {
			found = append(found, s[sp.Start:sp.End])
		}
	}
	if len(found) != 1 || found[0] != boiler {
		t.Fatalf("found %q, want the boilerplate once", found)
	}
}
