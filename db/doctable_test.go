package db

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestDocTableModel checks docTable against a map through random sets and
// removals, with arena rebuilds, and that every id handed out keeps its
// value after the table changes.
func TestDocTableModel(t *testing.T) {
	var tab docTable
	tab.reserve(10)
	model := map[uint32]string{}
	sizes := map[uint32]int{}
	type held struct{ s, want string }
	var kept []held
	rng := rand.New(rand.NewPCG(1, 2))
	rebuilds := 0
	for step := range 200_000 {
		iid := uint32(rng.IntN(3000))
		switch rng.IntN(3) {
		case 0, 1:
			ext := fmt.Sprintf("doc-%d-%s", step, strings.Repeat("x", rng.IntN(MaxIDLen-20)))
			var h [16]byte
			h[0], h[1] = byte(step), byte(iid)
			tab.set(iid, ext, h, step)
			model[iid] = ext
			sizes[iid] = step
		default:
			before := len(tab.arena)
			tab.remove(iid)
			if len(tab.arena) < before {
				rebuilds++
			}
			delete(model, iid)
			delete(sizes, iid)
		}
		if step%997 == 0 {
			if s := tab.ext(iid); s != "" {
				kept = append(kept, held{s, strings.Clone(s)})
			}
		}
	}
	if rebuilds == 0 {
		t.Fatal("the arena was never rebuilt")
	}
	for iid := range uint32(tab.len() + 5) {
		if got, want := tab.ext(iid), model[iid]; got != want {
			t.Fatalf("ext(%d) = %.20q, want %.20q", iid, got, want)
		}
		if tab.size(iid) != sizes[iid] || tab.maxSize < uint32(sizes[iid]) {
			t.Fatalf("size(%d) = %d, want %d (max %d)", iid, tab.size(iid), sizes[iid], tab.maxSize)
		}
		if _, ok := model[iid]; !ok && tab.hash(iid) != [16]byte{} {
			t.Fatalf("hash(%d) of a removed document is not zero", iid)
		}
	}
	for _, k := range kept {
		if k.s != k.want {
			t.Fatalf("an id handed out changed: %.20q, was %.20q", k.s, k.want)
		}
	}
	live := 0
	for _, s := range model {
		live += len(s)
	}
	if got := len(tab.arena) - tab.dead; got != live {
		t.Fatalf("arena holds %d live bytes, the ids are %d", got, live)
	}
	t.Logf("%d rebuilds; arena %d bytes, %d dead", rebuilds, len(tab.arena), tab.dead)
}
