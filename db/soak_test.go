package db

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
)

var soakDuration = flag.Duration("soak.duration", 0, "run time of TestSoak (default 2s; 500ms with -short)")

// soakDoc is the model of one id: its fingerprint, or nil when absent, and
// a version that is odd while a write of the id is in flight.
type soakDoc struct {
	version atomic.Uint64
	fp      atomic.Pointer[[]uint64]
}

// TestSoak runs goroutines doing random adds, replaces, deletes and queries
// against the DB and an in-memory model (id → fingerprint). Each goroutine
// owns its ids, so the model of an id is exact for its owner; a query is
// compared with a brute-force scan of the model over the ids no goroutine
// wrote while the query ran. At the end the DB is reopened and compared
// with the model whole.
func TestSoak(t *testing.T) {
	t.Run("normal", func(t *testing.T) { testSoak(t, false) })
	// Bulk load: postings deferred and written every 50 documents, while
	// the other goroutines query (FlushDeferred runs beside readers).
	t.Run("bulk load", func(t *testing.T) { testSoak(t, true) })
}

func testSoak(t *testing.T, bulk bool) {
	dur := *soakDuration
	if dur == 0 {
		dur = 2 * time.Second
		if testing.Short() {
			dur = 500 * time.Millisecond
		}
	}
	const workers, idsPerWorker = 8, 40
	dir := t.TempDir()
	d := openTest(t, dir, &Options{NoSync: true, BulkLoad: bulk})
	d.flushAt = 50
	k := d.Params().K
	seed := testSeed(t)
	bases := make([]string, 12)
	for i := range bases {
		bases[i] = text(seed+uint64(i), 120)
	}
	model := make([]soakDoc, workers*idsPerWorker)
	idOf := func(i int) string { return fmt.Sprintf("w%d-%02d", i/idsPerWorker, i%idsPerWorker) }
	var ops, queries, compared atomic.Int64
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			fail := func(err error) { errc <- fmt.Errorf("worker %d: %w", w, err) }
			for time.Now().Before(deadline) {
				i := w*idsPerWorker + r.IntN(idsPerWorker)
				id, m := idOf(i), &model[i]
				switch op := r.IntN(10); {
				case op < 4: // add or replace a near duplicate of a base text
					s := edit(bases[r.IntN(len(bases))], 2+r.IntN(30))
					m.version.Add(1)
					res, err := d.Add(ctx, Input{ID: id, Text: []byte(s)}, &AddOptions{Threshold: 0.9, Limit: 3})
					if err != nil {
						fail(err)
						return
					}
					fp := slices.Clone(res.Doc.Fingerprint)
					m.fp.Store(&fp)
					m.version.Add(1)
				case op < 6:
					m.version.Add(1)
					err := d.Delete(ctx, id)
					had := m.fp.Load() != nil
					if errors.Is(err, ErrNotFound) == had || (err != nil && !errors.Is(err, ErrNotFound)) {
						fail(fmt.Errorf("delete %s (in model: %v): %v", id, had, err))
						return
					}
					m.fp.Store(nil)
					m.version.Add(1)
				case op < 7: // own id: exact
					doc, err := d.Get(ctx, id)
					want := m.fp.Load()
					if (want == nil) != errors.Is(err, ErrNotFound) || (want != nil && (err != nil || !slices.Equal(*want, doc.Fingerprint))) {
						fail(fmt.Errorf("get %s: %v, model %v", id, err, want != nil))
						return
					}
				default: // query against the brute-force oracle
					queries.Add(1)
					before := make([]uint64, len(model))
					for j := range model {
						before[j] = model[j].version.Load()
					}
					q := []byte(edit(bases[r.IntN(len(bases))], 2+r.IntN(30)))
					thr := []float64{0.5, 0.7, 0.8, 0.9, 1}[r.IntN(5)]
					res, err := d.Query(ctx, q, QueryOptions{Threshold: thr})
					if err != nil {
						fail(err)
						return
					}
					qfp, _, err := d.build(bytes.NewReader(q), nil, TextOptions{}, "")
					if err != nil {
						fail(err)
						return
					}
					got := map[string]int{}
					for _, mt := range res.Matches {
						if _, dup := got[mt.ID]; dup {
							fail(fmt.Errorf("query at %v: %s returned twice", thr, mt.ID))
							return
						}
						got[mt.ID] = mt.Hamming
					}
					rh := index.Radius(k, thr)
					for j := range model {
						v := model[j].version.Load()
						if v != before[j] || v%2 == 1 {
							continue // written during the query: either answer is right
						}
						compared.Add(1)
						want := -1
						if fp := model[j].fp.Load(); fp != nil {
							if h := bitvec.Hamming(*fp, qfp.FP); h <= rh {
								want = h
							}
						}
						h, ok := got[idOf(j)]
						if !ok {
							h = -1
						}
						if h != want {
							fail(fmt.Errorf("query at %v: %s hamming %d, oracle %d", thr, idOf(j), h, want))
							return
						}
					}
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	closeChecked(t, d)
	d = openTest(t, dir, nil)
	for i := range model {
		doc, err := d.Get(ctx, idOf(i))
		want := model[i].fp.Load()
		if (want == nil) != errors.Is(err, ErrNotFound) || (want != nil && (err != nil || !slices.Equal(*want, doc.Fingerprint))) {
			t.Fatalf("after reopen, %s: %v (in model: %v)", idOf(i), err, want != nil)
		}
	}
	mode := "normal"
	if bulk {
		mode = "bulk load"
	}
	msg := fmt.Sprintf("soak (%s): %d workers, %v, %d operations, %d queries, %d query answers checked against the oracle, 0 mismatches",
		mode, workers, dur, ops.Load(), queries.Load(), compared.Load())
	t.Log(msg)
	if testing.Verbose() {
		fmt.Println(msg)
	}
}
