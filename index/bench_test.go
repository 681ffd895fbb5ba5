package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/posting"
)

// benchN is the number of random fingerprints of BenchmarkSearch
// (FPDB_BENCH_N, default 100 000).
func benchN() int {
	if n, err := strconv.Atoi(os.Getenv("FPDB_BENCH_N")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// buildBench builds an on-disk index of n random k-bit fingerprints in
// batches, compacts it and warms the posting cache.
func buildBench(b testing.TB, n, k int, widths []int) (*Index, [][]uint64) {
	b.Helper()
	db, err := pebble.Open(b.TempDir(), &pebble.Options{Merger: posting.Merger(), FormatMajorVersion: pebble.FormatNewest, Logger: quietLogger{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	l, err := NewLayout(k, widths)
	if err != nil {
		b.Fatal(err)
	}
	ix := New(db, l)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	var queries [][]uint64
	var entries []Entry
	flush := func() {
		batch := db.NewBatch()
		w, err := ix.Stage(batch, entries, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Commit(func() error { return batch.Commit(pebble.NoSync) }); err != nil {
			b.Fatal(err)
		}
		entries = entries[:0]
	}
	for i := range n {
		fp := randFP(r, k/64)
		if i%max(1, n/100) == 0 {
			queries = append(queries, fp)
		}
		entries = append(entries, Entry{ID: uint32(i), FP: fp})
		if len(entries) == 10_000 {
			flush()
		}
	}
	flush()
	if err := db.Compact(context.Background(), []byte{'p'}, []byte{'q'}, true); err != nil {
		b.Fatal(err)
	}
	if err := ix.Warm(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Logf("n=%d k=%d groups=%d: %.1f bytes on disk per fingerprint (fingerprints and postings)",
		n, k, len(widths), float64(db.Metrics().DiskSpaceUsage())/float64(n))
	return ix, queries
}

// BenchmarkSearch measures each plan per threshold on random 512-bit
// fingerprints in 32 groups of 16 bits. Compare the plans' ns/op with the
// scan's at the same threshold.
func BenchmarkSearch(b *testing.B) {
	n := benchN()
	width := 16
	if w, err := strconv.Atoi(os.Getenv("FPDB_BENCH_WIDTH")); err == nil && w > 0 {
		width = w
	}
	widths := SplitWidths(512, (512+width-1)/width)
	ix, queries := buildBench(b, n, 512, widths)
	m := len(widths)
	ctx := context.Background()
	for _, r := range []float64{0.9, 0.8, 0.7, 0.6, 0.5} {
		rh := Radius(512, r)
		plans := []Plan{{Kind: Auto}, {Kind: Scan}, {Kind: Approx, MinRecall: 0.999}}
		for tau := 0; tau <= MaxTau; tau++ {
			if MinHits(m, rh, tau) >= 1 {
				plans = append(plans, Plan{Kind: Probe, Tau: tau})
			}
		}
		for _, p := range plans {
			b.Run(fmt.Sprintf("n=%d/m=%d/r=%.1f/%s", n, m, r, p), func(b *testing.B) {
				var st Stats
				for i := 0; b.Loop(); i++ {
					var err error
					_, st, err = ix.Search(ctx, queries[i%len(queries)], rh, p)
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(st.Probes), "probes")
				b.ReportMetric(float64(st.Postings), "postings")
				b.ReportMetric(float64(st.Candidates), "cands")
				if p.Kind == Auto || p.Kind == Approx {
					b.Logf("%s chose %s (recall %.4f)", p, st.Plan, st.Recall)
				}
			})
		}
	}
}

// BenchmarkSearchAfterAdd measures searches of the check-then-store
// workload: in "add+search" each op stores one new random fingerprint
// (one batch, NoSync) and then searches another with the auto plan; in
// "search" it only searches. search-ns is the search's own time per op,
// to compare between the two (the planner's choice is remembered while
// the index grows by less than 1/planDrift):
//
//	FPDB_BENCH_N=1000000 go test ./index -run XXX -bench SearchAfterAdd
func BenchmarkSearchAfterAdd(b *testing.B) {
	n := benchN()
	ix, queries := buildBench(b, n, 512, SplitWidths(512, 32))
	ctx := context.Background()
	r := rand.New(rand.NewPCG(2, uint64(n)))
	for _, th := range []float64{0.9, 0.8} {
		rh := Radius(512, th)
		for _, mode := range []string{"search", "add+search"} {
			b.Run(fmt.Sprintf("n=%d/r=%.1f/%s", n, th, mode), func(b *testing.B) {
				var searching time.Duration
				i := 0
				for b.Loop() {
					if mode != "search" {
						batch := ix.db.NewBatch()
						w, err := ix.Stage(batch, []Entry{{ID: uint32(ix.capacity()), FP: randFP(r, 8)}}, nil)
						if err != nil {
							b.Fatal(err)
						}
						if err := w.Commit(func() error { return batch.Commit(pebble.NoSync) }); err != nil {
							b.Fatal(err)
						}
						_ = batch.Close()
					}
					start := time.Now()
					if _, _, err := ix.Search(ctx, queries[i%len(queries)], rh, Plan{Kind: Auto}); err != nil {
						b.Fatal(err)
					}
					searching += time.Since(start)
					i++
				}
				b.ReportMetric(float64(searching.Nanoseconds())/float64(i), "search-ns")
			})
		}
	}
}

// BenchmarkChoose measures the planner's choice of an exact plan (what
// a query pays when its radius has no remembered plan, or the index moved
// by more than 1/planDrift since):
//
//	FPDB_BENCH_N=1000000 go test ./index -run XXX -bench Choose
func BenchmarkChoose(b *testing.B) {
	n := benchN()
	ix, _ := buildBench(b, n, 512, SplitWidths(512, 32))
	for _, th := range []float64{0.9, 0.8, 0.7} {
		rh := Radius(512, th)
		b.Run(fmt.Sprintf("n=%d/r=%.1f", n, th), func(b *testing.B) {
			ix.mu.RLock()
			defer ix.mu.RUnlock()
			for b.Loop() {
				ix.choose(rh, false, 1)
			}
		})
	}
}

// BenchmarkSearchCold measures the auto plan one query at a time with the
// CPU caches cold: 64 MiB written before each query (as make bench does),
// so that the index's lists, its small structures, the page tables and the
// query's code all come from memory. p50-ns and p99-ns are of the search
// alone. The mixed case runs an r = 0.8 query before each eviction and
// times the r = 0.9 query after it:
//
//	FPDB_BENCH_N=1000000 go test ./index -run XXX -bench SearchCold
func BenchmarkSearchCold(b *testing.B) {
	n := benchN()
	ix, queries := buildBench(b, n, 512, SplitWidths(512, 32))
	ctx := context.Background()
	evict := make([]uint64, 64<<20/8)
	var sink uint64
	for _, c := range []struct {
		name          string
		th, thBetween float64
	}{{"r=0.9", 0.9, 0}, {"r=0.8", 0.8, 0}, {"r=0.7", 0.7, 0}, {"r=0.9-after-0.8", 0.9, 0.8}} {
		rh := Radius(512, c.th)
		b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				if c.thBetween > 0 {
					if _, _, err := ix.Search(ctx, queries[(i+1)%len(queries)], Radius(512, c.thBetween), Plan{Kind: Auto}); err != nil {
						b.Fatal(err)
					}
				}
				runtime.Gosched() // a fresh time slice (see bench's evictor)
				for j := 0; j < len(evict); j += 8 {
					evict[j]++
					sink += evict[j]
				}
				start := time.Now()
				if _, _, err := ix.Search(ctx, queries[i%len(queries)], rh, Plan{Kind: Auto}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
	if sink == 1 {
		b.Log(sink)
	}
}
