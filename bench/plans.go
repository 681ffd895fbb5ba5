package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
)

// PlanResult is the measurement of one plan at one threshold.
type PlanResult struct {
	Plan    string  `json:"plan"`
	R       float64 `json:"r"`
	Radius  int     `json:"radius"`
	Latency Latency `json:"latency"`
	// Speedup is the scan's p50 divided by this plan's p50, both measured
	// in this run on the same index with the plans interleaved.
	Speedup float64 `json:"speedup_vs_scan_p50"`
	// Mean counters per query.
	Probes     float64 `json:"probes"`
	Postings   float64 `json:"postings"`
	Candidates float64 `json:"candidates"`
	Verified   float64 `json:"verified"`
	Hits       float64 `json:"hits"`
	// Chosen counts the plans the planner picked (Auto only).
	Chosen map[string]int `json:"chosen,omitempty"`
	// Mismatches counts queries whose answer differed from the scan's.
	Mismatches int `json:"mismatches"`
	// Recall is the share of the scan's answers (over all queries) that the
	// plan returned, out of Relevant; ExpectedRecall is the plan's own
	// estimate (index.Stats.Recall), averaged.
	Recall         float64 `json:"recall"`
	Relevant       int     `json:"relevant"`
	ExpectedRecall float64 `json:"expected_recall"`
	// Skipped explains why the plan did not run or stopped early.
	Skipped string `json:"skipped,omitempty"`
	// Extra holds plan-specific figures (alg.G: combinations, nodes).
	Extra map[string]float64 `json:"extra,omitempty"`
}

// PlanRunner runs one query with one plan.
type PlanRunner struct {
	Name string
	// Feasible reports whether the plan can run at radius rh, and why not.
	Feasible func(rh int) error
	Run      func(ctx context.Context, q []uint64, rh int) ([]index.Hit, QueryCounters, error)
}

// QueryCounters are the counters of one query.
type QueryCounters struct {
	// Plan names the plan a runner of fixed name ran; when it is empty,
	// IndexPlan is the plan the index chose, named after the query is
	// timed (formatting a name in cold CPU caches costs microseconds of
	// code and memory that are not the query's).
	Plan                                   string
	IndexPlan                              index.Plan
	Probes, Postings, Candidates, Verified int
	Recall                                 float64 // expected recall (1: exact)
	Extra                                  map[string]float64
}

// planName returns the name of the plan the query ran.
func (qc *QueryCounters) planName() string {
	if qc.Plan != "" {
		return qc.Plan
	}
	return qc.IndexPlan.String()
}

// IndexPlan returns a runner of index.Search with plan p.
func IndexPlan(name string, ix *index.Index, p index.Plan) PlanRunner {
	return PlanRunner{
		Name: name,
		Feasible: func(rh int) error {
			if p.Kind == index.Probe && index.MinHits(ix.Layout().M(), rh, p.Tau) < 1 {
				return fmt.Errorf("infeasible: count filter t = m − ⌊rh/(τ+1)⌋ = %d < 1", index.MinHits(ix.Layout().M(), rh, p.Tau))
			}
			return nil
		},
		Run: func(ctx context.Context, q []uint64, rh int) ([]index.Hit, QueryCounters, error) {
			hits, st, err := ix.Search(ctx, q, rh, p)
			return hits, QueryCounters{IndexPlan: st.Plan, Probes: st.Probes, Postings: st.Postings, Candidates: st.Candidates, Verified: st.Verified, Recall: st.Recall}, err
		},
	}
}

// RefScanName names the reference scan.
const RefScanName = "scan 1 goroutine"

// RefScan returns the reference runner: a single-goroutine linear scan
// (bitvec.Scan, fpdb's unrolled popcount) over flat, the same fingerprints
// the index holds, in id order. It is the scan issue 3's targets are
// measured against; the index's own Plan Scan may use several goroutines.
func RefScan(flat []uint64, k int) PlanRunner {
	stride := k / 64
	return PlanRunner{
		Name:     RefScanName,
		Feasible: func(int) error { return nil },
		Run: func(_ context.Context, q []uint64, rh int) ([]index.Hit, QueryCounters, error) {
			var hits []index.Hit
			bitvec.Scan(flat, stride, q, rh, func(i, d int) { hits = append(hits, index.Hit{ID: uint32(i), Dist: d}) })
			slices.SortFunc(hits, func(a, b index.Hit) int {
				if a.Dist != b.Dist {
					return a.Dist - b.Dist
				}
				return int(a.ID) - int(b.ID)
			})
			return hits, QueryCounters{Plan: RefScanName, Verified: len(flat) / stride, Recall: 1}, nil
		},
	}
}

// AlgGPlan returns a runner of AlgG on ix.
func AlgGPlan(ix *index.Index, maxComb float64, maxNodes int) PlanRunner {
	return PlanRunner{
		Name: "alg.G",
		Feasible: func(rh int) error {
			_, err := AlgGFeasible(ix.Layout(), rh, maxComb)
			return err
		},
		Run: func(ctx context.Context, q []uint64, rh int) ([]index.Hit, QueryCounters, error) {
			hits, st, err := AlgG(ctx, ix, q, rh, maxComb, maxNodes)
			return hits, QueryCounters{Plan: "alg.G", Recall: 1, Probes: st.Probes, Postings: st.Postings, Candidates: st.Candidates, Verified: st.Verified,
				Extra: map[string]float64{"combinations": st.Combinations, "nodes": float64(st.Nodes)}}, err
		},
	}
}

// CompareOptions bound a comparison.
type CompareOptions struct {
	// MaxSlowdown stops a plan whose mean latency exceeds MaxSlowdown times
	// the scan's mean after at least 5 queries (0: never).
	MaxSlowdown float64
	// CellBudget stops a plan after this much total time at one threshold.
	CellBudget time.Duration
	// ColdCaches writes ColdCacheBytes of other memory before every
	// measured query (not timed), as other work on a server would: the
	// CPU caches then hold none of the index.
	ColdCaches bool `json:"cold_caches"`
}

// ColdCacheBytes is the memory written between queries with ColdCaches:
// larger than the last-level cache of the machines measured.
const ColdCacheBytes = 64 << 20

// evictor evicts the CPU caches by writing a buffer larger than them.
type evictor struct {
	buf []uint64
	sum uint64
}

// evict yields first (runtime.Gosched), so that the query measured after
// it starts a fresh time slice: a measuring loop never blocks, and the
// runtime preempts a goroutine that ran 10 ms without yielding, by a
// signal that may also move it to another thread and core. Without the
// yield, a share of those preemptions (a 15 µs query after each 3 ms
// eviction: 0.5 % of them) would land in a measured query, a tail that
// the query does not have.
func (e *evictor) evict() {
	runtime.Gosched()
	if e.buf == nil {
		e.buf = make([]uint64, ColdCacheBytes/8)
	}
	for i := 0; i < len(e.buf); i += 8 { // a cache line each
		e.buf[i]++
		e.sum += e.buf[i]
	}
}

// Compare measures every runner at each threshold on the same queries. The
// last runner must be the reference scan (RefScan): it is the reference for
// answers and for the speed-up. For each query the runners run one after another, in an
// order rotated query by query, so that the noise of a shared machine hits
// them alike.
func Compare(ctx context.Context, k int, queries [][]uint64, thresholds []float64, runners []PlanRunner, o CompareOptions) ([]PlanResult, error) {
	var out []PlanResult
	var ev evictor
	scanIdx := len(runners) - 1
	for _, r := range thresholds {
		rh := index.Radius(k, r)
		res := make([]PlanResult, len(runners))
		lat := make([][]time.Duration, len(runners))
		active := make([]bool, len(runners))
		total := make([]time.Duration, len(runners))
		found := make([]int, len(runners))
		relevant := make([]int, len(runners))
		for i, pr := range runners {
			res[i] = PlanResult{Plan: pr.Name, R: r, Radius: rh}
			if err := pr.Feasible(rh); err != nil {
				res[i].Skipped = err.Error()
				continue
			}
			active[i] = true
		}
		// Warm up: one unmeasured query per plan.
		for i, pr := range runners {
			if active[i] && len(queries) > 0 {
				if _, _, err := pr.Run(ctx, queries[0], rh); err != nil {
					active[i] = false
					res[i].Skipped = err.Error()
				}
			}
		}
		for qi, q := range queries {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			// The scan first: its answer is the reference.
			var ref []index.Hit
			order := make([]int, 0, len(runners))
			order = append(order, scanIdx)
			for j := range len(runners) - 1 {
				order = append(order, (j+qi)%(len(runners)-1))
			}
			for _, i := range order {
				if !active[i] {
					continue
				}
				if o.ColdCaches {
					ev.evict()
				}
				start := time.Now()
				hits, qc, err := runners[i].Run(ctx, q, rh)
				d := time.Since(start)
				if err != nil {
					if errors.Is(err, ErrNodeLimit) || errors.Is(err, index.ErrInfeasible) || errors.Is(err, ErrAlgGInfeasible) {
						active[i] = false
						res[i].Skipped = fmt.Sprintf("stopped after %d queries: %v", len(lat[i]), err)
						continue
					}
					return nil, fmt.Errorf("bench: %s at r=%.2f: %w", runners[i].Name, r, err)
				}
				lat[i] = append(lat[i], d)
				total[i] += d
				p := &res[i]
				p.Probes += float64(qc.Probes)
				p.Postings += float64(qc.Postings)
				p.Candidates += float64(qc.Candidates)
				p.Verified += float64(qc.Verified)
				p.Hits += float64(len(hits))
				p.ExpectedRecall += qc.Recall
				if runners[i].Name == "auto" || strings.HasPrefix(runners[i].Name, "approx") {
					if p.Chosen == nil {
						p.Chosen = map[string]int{}
					}
					p.Chosen[qc.planName()]++
				}
				for key, v := range qc.Extra {
					if p.Extra == nil {
						p.Extra = map[string]float64{}
					}
					p.Extra[key] += v
				}
				if i == scanIdx {
					ref = hits
				} else {
					if !sameHits(hits, ref) {
						p.Mismatches++
					}
					found[i] += countFound(hits, ref)
					relevant[i] += len(ref)
				}
				n := len(lat[i])
				switch {
				case i == scanIdx:
				case o.CellBudget > 0 && total[i] > o.CellBudget:
					active[i] = false
					p.Skipped = fmt.Sprintf("time-boxed: stopped after %d queries (%.1f s)", n, total[i].Seconds())
				case o.MaxSlowdown > 0 && n >= 5 && total[i].Seconds()/float64(n) > o.MaxSlowdown*total[scanIdx].Seconds()/float64(len(lat[scanIdx])):
					active[i] = false
					p.Skipped = fmt.Sprintf("time-boxed: stopped after %d queries, more than %.0fx slower than the scan", n, o.MaxSlowdown)
				}
			}
		}
		scanP50 := Summarize(lat[scanIdx]).P50
		for i := range res {
			p := &res[i]
			p.Latency = Summarize(lat[i])
			if n := float64(len(lat[i])); n > 0 {
				p.Probes /= n
				p.Postings /= n
				p.Candidates /= n
				p.Verified /= n
				p.Hits /= n
				p.ExpectedRecall /= n
				p.Relevant = relevant[i]
				p.Recall = 1
				if relevant[i] > 0 {
					p.Recall = float64(found[i]) / float64(relevant[i])
				}
				for key := range p.Extra {
					p.Extra[key] /= n
				}
				if p.Latency.P50 > 0 {
					p.Speedup = float64(scanP50) / float64(p.Latency.P50)
				}
			}
		}
		out = append(out, res...)
	}
	return out, nil
}

func sameHits(a, b []index.Hit) bool {
	return slices.Equal(a, b)
}

// countFound returns how many hits of ref are in hits.
func countFound(hits, ref []index.Hit) int {
	in := make(map[uint32]bool, len(hits))
	for _, h := range hits {
		in[h.ID] = true
	}
	n := 0
	for _, h := range ref {
		if in[h.ID] {
			n++
		}
	}
	return n
}
