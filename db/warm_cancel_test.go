package db

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

// TestWarmCancelled: Warm returns the context's error when it is
// cancelled, on both of its paths (built in memory, read from storage),
// and a later Warm loads the lists.
func TestWarmCancelled(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		widths   []int
		inMemory bool
	}{
		{"16-bit groups", nil, true},
		{"24-bit groups", append(slices.Repeat([]int{24}, 21), 8), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(filepath.Join(t.TempDir(), "db"), &Options{K: 512, GroupWidths: tc.widths})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			docs := make([]Input, 300)
			for i := range docs {
				fp := make([]uint64, 8)
				for j := range fp {
					fp[j] = rng.Uint64()
				}
				docs[i] = Input{ID: fmt.Sprint(i), Fingerprint: fp}
			}
			if _, err := d.AddBatch(ctx, docs); err != nil {
				t.Fatal(err)
			}
			if got := d.WarmsInMemory(); got != tc.inMemory {
				t.Fatalf("WarmsInMemory %v, want %v", got, tc.inMemory)
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if err := d.Warm(cctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("Warm with a cancelled context: %v", err)
			}
			if err := d.Warm(ctx); err != nil {
				t.Fatal(err)
			}
			if err := d.Check(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
