package fingerprint

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestDistinctSet(t *testing.T) {
	var s distinctSet
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 3 {
		s.reset()
		want := map[uint64]bool{}
		n := []int{10, 5000, 300000}[round]
		for range n {
			h := rng.Uint64N(uint64(n)) // repeats, and the hash 0
			s.add(h)
			want[h] = true
		}
		if s.count() != len(want) {
			t.Fatalf("round %d: %d distinct, want %d", round, s.count(), len(want))
		}
	}
	// Past MaxDistinct, new hashes are counted with repeats, old ones not.
	s.reset()
	for i := range MaxDistinct {
		s.add(uint64(i) + 1)
	}
	s.add(1)
	s.add(MaxDistinct + 5)
	s.add(MaxDistinct + 5)
	if s.count() != MaxDistinct+2 {
		t.Fatalf("past the cap: %d, want %d", s.count(), MaxDistinct+2)
	}
	s.reset()
	if s.count() != 0 || s.slots != nil {
		t.Fatal("a huge table is kept after reset")
	}
}

func TestResultDistinct(t *testing.T) {
	b, err := NewBuilder(DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 20 {
		words := make([]string, 1+rng.IntN(400))
		for i := range words {
			words[i] = []string{"alpha", "beta", "gamma", "delta", "eps"}[rng.IntN(2+trial%4)]
		}
		res, err := b.FromBytes([]byte(strings.Join(words, " ")))
		if err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		w := 4
		if len(words) < w {
			set[strings.Join(words, " ")] = true
		}
		for i := 0; i+w <= len(words); i++ {
			set[strings.Join(words[i:i+w], " ")] = true
		}
		if res.Distinct != len(set) {
			t.Fatalf("trial %d: Distinct %d, want %d (Shingles %d)", trial, res.Distinct, len(set), res.Shingles)
		}
	}
}
