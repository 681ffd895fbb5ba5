package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/minhash"
)

// ContainmentWorkload is the containment section's data: random
// fingerprints with shingle-set sizes drawn log-uniformly from 200 to 5 000,
// one in HugeEvery of them from 100 000 to 2 000 000 (a few very long
// documents, as real collections have), and queries that are stored
// documents with neighbours planted at every distance that can matter.
type ContainmentWorkload struct {
	K       int
	FPs     [][]uint64
	Sizes   []int
	Queries [][]uint64
	QSizes  []int
}

// HugeEvery is how rare the very long documents of the containment
// workload are.
const HugeEvery = 2000

// NewContainmentWorkload returns n documents and q queries.
func NewContainmentWorkload(n, k, q int, seed uint64) *ContainmentWorkload {
	rng := rand.New(rand.NewPCG(seed, 77))
	w := &ContainmentWorkload{K: k}
	logUniform := func(lo, hi float64) int {
		return int(math.Exp(math.Log(lo) + rng.Float64()*(math.Log(hi)-math.Log(lo))))
	}
	add := func(fp []uint64) {
		size := logUniform(200, 5000)
		if rng.IntN(HugeEvery) == 0 {
			size = logUniform(100_000, 2_000_000)
		}
		w.FPs, w.Sizes = append(w.FPs, fp), append(w.Sizes, size)
	}
	random := func() []uint64 {
		fp := make([]uint64, k/64)
		for i := range fp {
			fp[i] = rng.Uint64()
		}
		return fp
	}
	for len(w.FPs) < n {
		if len(w.Queries) < q && len(w.FPs)%(n/max(q, 1)) == 0 {
			base := random()
			w.Queries = append(w.Queries, base)
			w.QSizes = append(w.QSizes, logUniform(200, 5000))
			for d := 0; d < k/4 && len(w.FPs) < n; d += 4 {
				fp := slices.Clone(base)
				for _, b := range rng.Perm(k)[:d] {
					fp[b/64] ^= 1 << (b % 64)
				}
				add(fp)
			}
			continue
		}
		add(random())
	}
	return w
}

// runContainment measures `query --containment` (db.QueryOptions.Containment)
// against the resemblance query that finds the same documents (at the
// resemblance the largest stored document needs, then filtered: what a
// containment search without size classes does) and against fpdb's own
// scan, on one database.
func (s *Suite) runContainment(ctx context.Context) error {
	c := s.Cfg.Containment
	if c.N == 0 {
		return nil
	}
	s.logf("containment n=%d k=%d: generating and loading", c.N, c.K)
	w := NewContainmentWorkload(c.N, c.K, c.Queries, s.Cfg.Seed+500)
	dir := filepath.Join(s.Cfg.TmpDir, "containment")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	d, err := db.Open(dir, &db.Options{K: c.K, BulkLoad: true, NoSync: true})
	if err != nil {
		return err
	}
	defer d.Close()
	const batch = 10_000
	for lo := 0; lo < len(w.FPs); lo += batch {
		in := make([]db.Input, 0, batch)
		for i := lo; i < min(lo+batch, len(w.FPs)); i++ {
			in = append(in, db.Input{ID: strconv.Itoa(i), Fingerprint: w.FPs[i], Shingles: w.Sizes[i]})
		}
		if _, err := d.AddBatch(ctx, in); err != nil {
			return err
		}
	}
	if err := d.Flush(ctx); err != nil {
		return err
	}
	ingest := time.Since(start)
	start = time.Now()
	if err := d.Warm(ctx); err != nil {
		return err
	}
	warm := time.Since(start)
	maxSize := slices.Max(w.Sizes)
	qsize := map[*uint64]int{}
	for i, q := range w.Queries {
		qsize[&q[0]] = w.QSizes[i]
	}
	// The sweep's "thresholds" are the containments; each runner maps the
	// radius Compare gives back to its containment.
	cs := c.Containments
	cOf := map[int]float64{}
	for _, x := range cs {
		cOf[index.Radius(c.K, x)] = x
	}
	toHits := func(ms []db.Match) []index.Hit {
		hits := make([]index.Hit, len(ms))
		for i, m := range ms {
			id, _ := strconv.Atoi(m.ID)
			hits[i] = index.Hit{ID: uint32(id), Dist: m.Hamming}
		}
		slices.SortFunc(hits, func(a, b index.Hit) int {
			if a.Dist != b.Dist {
				return a.Dist - b.Dist
			}
			return int(a.ID) - int(b.ID)
		})
		return hits
	}
	counters := func(qr *db.QueryResult) QueryCounters {
		st := qr.Stats
		return QueryCounters{IndexPlan: st.Plan, Probes: st.Probes, Postings: st.Postings, Candidates: st.Candidates, Verified: st.Verified, Recall: 1}
	}
	containment := func(name string, plan db.Plan) PlanRunner {
		return PlanRunner{Name: name, Feasible: func(int) error { return nil },
			Run: func(ctx context.Context, q []uint64, rh int) ([]index.Hit, QueryCounters, error) {
				qr, err := d.QueryFingerprint(ctx, q, db.QueryOptions{Containment: cOf[rh], Shingles: qsize[&q[0]], Plan: plan})
				if err != nil {
					return nil, QueryCounters{}, err
				}
				return toHits(qr.Matches), counters(qr), nil
			}}
	}
	sameRecall := PlanRunner{Name: "resemblance at the same recall", Feasible: func(int) error { return nil },
		Run: func(ctx context.Context, q []uint64, rh int) ([]index.Hit, QueryCounters, error) {
			cc, qs := cOf[rh], qsize[&q[0]]
			floor := max(minhash.ContainmentFloor(cc, qs, maxSize), minhash.ContainmentNoise(c.K))
			if floor > 1 {
				return nil, QueryCounters{Recall: 1}, nil
			}
			qr, err := d.QueryFingerprint(ctx, q, db.QueryOptions{Threshold: max(floor-1e-9, 1e-9)})
			if err != nil {
				return nil, QueryCounters{}, err
			}
			var keep []db.Match
			for _, m := range qr.Matches {
				id, _ := strconv.Atoi(m.ID)
				if minhash.EstimateContainment(c.K, m.Similarity, qs, w.Sizes[id]) >= cc {
					keep = append(keep, m)
				}
			}
			return toHits(keep), counters(qr), nil
		}}
	runners := []PlanRunner{containment("containment (auto)", db.Plan{}), sameRecall, containment("containment scan", db.Plan{Kind: db.PlanScan})}
	res, err := Compare(ctx, c.K, w.Queries, cs, runners, s.Cfg.Compare)
	if err != nil {
		return err
	}
	// The one-goroutine scan's speed on the same fingerprints: the memory
	// bandwidth the ratios against the scan depend on.
	flat := make([]uint64, 0, len(w.FPs)*c.K/64)
	for _, fp := range w.FPs {
		flat = append(flat, fp...)
	}
	var ev evictor
	var scans []time.Duration
	for _, q := range w.Queries[:min(len(w.Queries), 20)] {
		ev.evict()
		start := time.Now()
		bitvec.Scan(flat, c.K/64, q, c.K/4, func(int, int) {})
		scans = append(scans, time.Since(start))
	}
	gbs := float64(len(flat)*8) / Summarize(scans).P50.Seconds() / 1e9
	huge := 0
	for _, sz := range w.Sizes {
		if sz >= 100_000 {
			huge++
		}
	}
	s.rep.Plans = append(s.rep.Plans, PlanRun{Workload: "containment", N: c.N, K: c.K, Widths: d.Params().GroupWidths, Queries: len(w.Queries),
		Build: BuildStats{Ingest: ingest, Warm: warm}, Results: res})
	s.note("containment: the one-goroutine scan of the same fingerprints runs at %.1f GB/s (p50 %s)", gbs, fmtDur(Summarize(scans).P50))
	s.note("containment: r is the containment C; %d of the %s documents have 100 000 to 2 000 000 shingles, the others 200 to 5 000 (log-uniform), queries 200 to 5 000; \"resemblance at the same recall\" queries at the resemblance the largest document needs (minhash.ContainmentFloor) and filters, as a search without size classes does",
		huge, fmtN(c.N))
	s.logResults(res)
	return nil
}

// ContainmentCase configures the containment section.
type ContainmentCase struct {
	N, K, Queries int
	Containments  []float64
}

func (c ContainmentCase) String() string {
	return fmt.Sprintf("n=%d k=%d queries=%d C=%v", c.N, c.K, c.Queries, c.Containments)
}
