package db

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fpdb/fpdb/internal/posting"
)

// TestPostingChurn adds and removes ids in a few posting keys with small
// memtables, flushes and compactions of random ranges, and compares every
// key with a model. It is the regression test of the TestCrash finding
// that a merge operator implementing pebble.DeletableValueMerger makes
// Pebble v2.1.7's compaction iterator panic in a background goroutine.
func TestPostingChurn(t *testing.T) {
	steps := 20000
	if testing.Short() {
		steps = 5000
	}
	for seed := range uint64(3) {
		p, err := pebble.Open("db", &pebble.Options{
			FS: vfs.NewMem(), Merger: posting.Merger(), FormatMajorVersion: pebbleFormat,
			MemTableSize: 64 << 10, L0CompactionThreshold: 2, Logger: slogLogger{discardLogger()},
		})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, 2))
		model := map[int]map[uint32]bool{}
		key := func(i int) []byte { return []byte(fmt.Sprintf("p%04d", i)) }
		for step := range steps {
			k, id := r.IntN(50), uint32(r.IntN(6))
			if model[k] == nil {
				model[k] = map[uint32]bool{}
			}
			op := posting.EncodeAdd(roaring.BitmapOf(id))
			if model[k][id] {
				op = posting.EncodeRemove(roaring.BitmapOf(id))
				delete(model[k], id)
			} else {
				model[k][id] = true
			}
			if err := p.Merge(key(k), op, nil); err != nil {
				t.Fatal(err)
			}
			switch r.IntN(500) {
			case 0:
				if err := p.Flush(); err != nil {
					t.Fatal(err)
				}
			case 1:
				a, b := r.IntN(50), r.IntN(50)
				if err := p.Compact(ctx, key(min(a, b)), key(max(a, b)+1), r.IntN(2) == 0); err != nil {
					t.Fatal(err)
				}
			}
			if step%1000 != 999 {
				continue
			}
			for k, set := range model {
				var want, got []uint32
				for id := range set {
					want = append(want, id)
				}
				slices.Sort(want)
				v, c, err := p.Get(key(k))
				if err == nil {
					if err := posting.ForEach(v, func(id uint32) { got = append(got, id) }); err != nil {
						t.Fatal(err)
					}
					_ = c.Close()
				}
				if !slices.Equal(want, got) {
					t.Fatalf("seed %d step %d key %d: %v, want %v", seed, step, k, got, want)
				}
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
