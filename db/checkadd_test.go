package db

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// BenchmarkCheckAdd measures the check-then-store workload (`fpdb add
// --threshold R`, Add with AddOptions.Threshold) on a database of
// FPDB_BULK_N random fingerprints (default 100 000; FPDB_GROUP_BITS sets
// the group width), bulk-loaded, opened again with NoSync and warmed. Each
// op takes a new random fingerprint: "query" checks it
// (QueryFingerprint, nothing stored), "add" stores it without a check,
// "check+add" checks and stores it under one lock. The database grows by
// one document per op of the two last, so check+add less add is what a
// check costs while documents arrive one at a time:
//
//	FPDB_BULK_N=1000000 go test ./db -run XXX -bench BenchmarkCheckAdd
func BenchmarkCheckAdd(b *testing.B) {
	n, bits := envInt(b, "FPDB_BULK_N", 100_000), envInt(b, "FPDB_GROUP_BITS", DefaultGroupWidth)
	dir := b.TempDir()
	bulkLoadRandom(b, dir, n, bits)
	d, err := Open(dir, &Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if err := d.Warm(ctx); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2, 2))
	added := 0
	for _, th := range []float64{0.9, 0.8} {
		for _, mode := range []string{"query", "add", "check+add"} {
			b.Run(fmt.Sprintf("n=%d/r=%.1f/%s", n, th, mode), func(b *testing.B) {
				for b.Loop() {
					fp := randFP(r, DefaultK)
					var err error
					switch mode {
					case "query":
						_, err = d.QueryFingerprint(ctx, fp, QueryOptions{Threshold: th})
					case "add":
						_, err = d.Add(ctx, Input{ID: fmt.Sprintf("new-%09d", added), Fingerprint: fp}, nil)
						added++
					default:
						_, err = d.Add(ctx, Input{ID: fmt.Sprintf("new-%09d", added), Fingerprint: fp}, &AddOptions{Threshold: th})
						added++
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCheckAddSynced measures checked adds with every write synced
// (the default): Add of each document (one sync each) against AddEach in
// batches of 256 (one sync per batch), on a database of FPDB_BULK_N random
// fingerprints (default 20 000). One op is one document, checked at
// r = 0.8 and stored. Syncs cost what the disk makes them cost, so the
// ratio of the two depends on the machine:
//
//	go test ./db -run XXX -bench BenchmarkCheckAddSynced
func BenchmarkCheckAddSynced(b *testing.B) {
	n := envInt(b, "FPDB_BULK_N", 20_000)
	dir := b.TempDir()
	bulkLoadRandom(b, dir, n, DefaultGroupWidth)
	d, err := Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	r := rand.New(rand.NewPCG(3, 3))
	added := 0
	next := func() Input {
		added++
		return Input{ID: fmt.Sprintf("new-%09d", added), Fingerprint: randFP(r, DefaultK)}
	}
	o := &AddOptions{Threshold: 0.8}
	b.Run("add", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.Add(ctx, next(), o); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Writers in parallel, without a check: each commits under the writer
	// lock and waits for its WAL sync outside it, so the syncs are shared.
	for _, writers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("unchecked-%d-writers", writers), func(b *testing.B) {
			var mu sync.Mutex
			b.SetParallelism(writers) // × GOMAXPROCS goroutines
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					mu.Lock()
					in := next()
					mu.Unlock()
					if _, err := d.Add(ctx, in, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
	b.Run("each-256", func(b *testing.B) {
		batch := make([]Input, 0, 256)
		flush := func() {
			if _, err := d.AddEach(ctx, batch, o); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
		for b.Loop() {
			if batch = append(batch, next()); len(batch) == cap(batch) {
				flush()
			}
		}
		flush()
	})
}
