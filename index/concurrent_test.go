package index

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestConcurrentUse uses one Index from several goroutines with no lock of
// the caller's: a writer adds and deletes documents (in batches, deferred
// for a while, then flushed), while readers search, snapshot, warm the cache
// and read counts. Run under -race it checks the index's own
// synchronization; each search must find every base document (stored
// before, never deleted) within its radius, exactly as the oracle says, and
// the final state must pass Check and equal the oracle.
func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, 128, []int{16, 16, 16, 16, 16, 16, 16, 16})
	r := rand.New(rand.NewPCG(12, 12))
	base := map[uint32][]uint64{}
	var adds []Entry
	for id := range uint32(300) {
		fp := randFP(r, 2)
		base[id] = fp
		adds = append(adds, Entry{ID: id, FP: fp})
	}
	s.addBatch(adds)
	queries := make([][]uint64, 0, 30)
	for id := uint32(0); id < 300; id += 10 {
		queries = append(queries, flipN(r, base[id], 3))
	}
	rh := Radius(128, 0.85)
	want := make([][]Hit, len(queries))
	for i, q := range queries {
		for id, fp := range base {
			if d := hamming(q, fp); d <= rh {
				want[i] = append(want[i], Hit{ID: id, Dist: d})
			}
		}
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		defer stop.Store(true)
		wr := rand.New(rand.NewPCG(1, 2))
		next := uint32(300)
		var extra []uint32
		for round := range 60 {
			if round == 20 {
				s.ix.Defer()
			}
			var batch []Entry
			for range 1 + wr.IntN(80) {
				batch = append(batch, Entry{ID: next, FP: randFP(wr, 2)})
				extra = append(extra, next)
				next++
			}
			var dels []uint32
			if len(extra) > 10 && wr.IntN(2) == 0 {
				dels, extra = extra[:5], extra[5:]
			}
			b := s.db.NewBatch()
			w, err := s.ix.Stage(b, batch, dels)
			if err != nil {
				errs <- err
				return
			}
			if err := w.Commit(func() error { return b.Commit(pebble.NoSync) }); err != nil {
				w.Abort()
				errs <- err
				return
			}
			if round == 40 {
				if err := s.ix.FlushDeferred(ctx, s.fs, ""); err != nil {
					errs <- err
					return
				}
			}
		}
	}()
	for g := range 3 {
		wg.Add(1)
		go func() { // readers
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				qi := (i + g) % len(queries)
				hits, _, err := s.ix.Search(ctx, queries[qi], rh, Plan{Kind: Probe, Tau: 1 + i%3})
				if err != nil {
					errs <- err
					return
				}
				got := map[Hit]bool{}
				for _, h := range hits {
					got[h] = true
				}
				for _, h := range want[qi] {
					if !got[h] {
						t.Errorf("query %d: base document %v not found among %v", qi, h, hits)
						return
					}
				}
				switch i % 50 {
				case 7:
					_ = s.ix.Snapshot().Len()
				case 13:
					if err := s.ix.Warm(ctx); err != nil {
						errs <- err
						return
					}
				case 29:
					_ = s.ix.DeferredLen() + s.ix.Len() + s.ix.Cap()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The model: replay what the index holds against Pebble's view.
	if err := s.ix.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func hamming(a, b []uint64) int {
	d := 0
	for i := range a {
		x := a[i] ^ b[i]
		for ; x != 0; x &= x - 1 {
			d++
		}
	}
	return d
}
