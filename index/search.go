package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/keys"
)

// ErrInfeasible is returned when a forced probe plan cannot be exact for the
// radius (its count filter would be below 1).
var ErrInfeasible = errors.New("index: plan cannot be exact for this radius")

// ErrInvalidPlan is returned for a plan no query can run: an unknown kind,
// an approximate plan without a recall in (0, 1], a probe plan that lowers
// more groups than there are or whose count filter is above their number.
var ErrInvalidPlan = errors.New("index: invalid plan")

// PlanKind is a kind of query plan.
type PlanKind int

// Plan kinds.
const (
	// Auto lets the planner choose.
	Auto PlanKind = iota
	// Probe probes every value within Tau bits of each query group value.
	Probe
	// Scan compares the query with every stored fingerprint.
	Scan
	// Approx lets the planner choose among exact plans and approximate
	// probe plans whose count filter is above the exact one, keeping only
	// plans whose expected recall (see Recall) is at least MinRecall.
	Approx
)

// Plan is a query plan.
type Plan struct {
	Kind PlanKind
	// Tau is the group probe radius of a Probe plan.
	Tau int
	// Lower is the number of groups a Probe plan probes at radius Tau − 1
	// instead of Tau (at Tau 0, leaves out): Layout.Radii says which. The
	// exact count filter is then ExactMinHits(m, rh, Tau, Lower).
	Lower int
	// MinHits, when > 0, overrides the count filter of a Probe plan. Above
	// the exact filter MinHits(m, rh, Tau) the plan may miss documents.
	MinHits int
	// MinRecall is the least expected recall an Approx plan may have.
	MinRecall float64
}

// String names the plan as shown by `fpdb query --explain`.
func (p Plan) String() string {
	switch p.Kind {
	case Probe:
		s := fmt.Sprintf("probe tau=%d", p.Tau)
		if p.Lower > 0 {
			s += fmt.Sprintf(" lower=%d", p.Lower)
		}
		if p.MinHits > 0 {
			s += fmt.Sprintf(" t=%d", p.MinHits)
		}
		return s
	case Scan:
		return "scan"
	case Approx:
		return fmt.Sprintf("approx recall>=%g", p.MinRecall)
	case Auto:
		return "auto"
	}
	return fmt.Sprintf("plan kind %d", int(p.Kind))
}

// Hit is a stored document within the query radius.
type Hit struct {
	ID   uint32
	Dist int
}

// Stats count the work a search did.
type Stats struct {
	Plan       Plan
	Radius     int
	MinHits    int // count filter t (0 for a scan)
	Probes     int
	Postings   int
	Candidates int
	Verified   int
	// Reads is the number of posting lists read from Pebble (cache misses).
	Reads int
	// Recall is the plan's expected recall: 1 for exact plans, else the
	// probability that a document at distance exactly rh is found.
	Recall  float64
	Elapsed time.Duration
}

// MaxTau is the largest group probe radius the planner considers.
const MaxTau = 4

// Cost model constants, in nanoseconds per unit, fitted to `make
// bench-scale` (1 M and 10 M random 512-bit fingerprints, warm posting
// cache, cold CPU caches): at τ = 2, 4 384 probes and 67 000 ids took
// 0.9 ms at 1 M, and 670 000 ids 6.7 ms at 10 M. Probes are bound by memory
// latency, which differs little between machines; the scan is bound by
// memory bandwidth, which differs threefold (6 to 20 GB/s per core), so its
// cost per word is measured on the index's own fingerprints (calibrate.go)
// once there are enough of them to measure memory rather than caches, and
// costScanWord (fitted on the same 18 GB/s core as the probe costs) stands
// until then: on a slower machine it makes a small index's scan look
// cheaper than it is, so the planner errs towards the scan.
const (
	costProbeHit  = 100.0  // one probe answered by the posting cache
	costProbeMiss = 4000.0 // one probe read from Pebble and decoded
	costPosting   = 9.0    // one posting id counted
	costVerify    = 120.0  // one exact Hamming check of a candidate (a memory read)
	costScanWord  = 0.45   // one 64-bit word of the linear scan, one core
	costQuery     = 5000.0 // fixed cost of a probe plan (pools, probe list)
)

// MinHits returns the count filter t = m − ⌊rh/(τ+1)⌋: a document within
// Hamming distance rh of the query has at least t groups within distance τ
// of the query's groups.
func MinHits(m, rh, tau int) int { return m - rh/(tau+1) }

// ExactTau returns the smallest probe radius τ ≥ 0 whose count filter
// MinHits(m, rh, τ) is at least 1: the smallest τ for which a probe plan
// over m groups is exact at Hamming radius rh. Every larger τ is exact too;
// every smaller one is infeasible (ErrInfeasible).
func ExactTau(m, rh int) int {
	if m <= 0 || rh <= 0 {
		return 0
	}
	return rh / m
}

// infeasible returns the ErrInfeasible error of probe radius tau at
// Hamming radius rh over m groups, naming the radii that are exact.
func infeasible(tau, rh, m int) error {
	return fmt.Errorf("%w: tau=%d, radius %d, %d groups (tau %d or more is exact)", ErrInfeasible, tau, rh, m, ExactTau(m, rh))
}

// scanWorkers returns how many goroutines the scan of n fingerprints uses.
func scanWorkers(n, stride int) int {
	w := runtime.GOMAXPROCS(0)
	if oneScanWorker(n, stride) {
		return 1
	}
	return max(1, min(w, 8))
}

// oneScanWorker reports whether a scan of n fingerprints of stride words
// runs on one goroutine: small scans are not worth the goroutines.
func oneScanWorker(n, stride int) bool { return n*stride < 1<<18 }

// scanCost estimates the scan in nanoseconds.
func (ix *Index) scanCost() float64 { return ix.rangeScanCost(ix.capacity()) }

// rangeScanCost estimates scanning n fingerprints (scanRange).
func (ix *Index) rangeScanCost(n int) float64 {
	ns, speedup := ix.scanSpeedFor(scanWorkers(n, ix.stride))
	return float64(n*ix.stride) * ns / speedup
}

// probeCost estimates probe plan (tau, lower, t) in nanoseconds.
func (ix *Index) probeCost(tau, lower, t int) float64 {
	n := float64(ix.n)
	hit := ix.cacheHitRate()
	l := ix.layout
	cands := n * l.candidateRate(tau, lower, t)
	probes, postings := l.probesPerQuery(tau, lower), n*l.hitsPerDoc(tau, lower)
	cost := costQuery + probes*(hit*costProbeHit+(1-hit)*costProbeMiss) +
		postings*costPosting + cands*costVerify
	if ix.scansDeferred() {
		cost += ix.rangeScanCost(ix.capacity() - int(ix.deferFrom))
	}
	return cost
}

// cacheHitRate estimates the share of probes the posting cache answers.
func (ix *Index) cacheHitRate() float64 {
	if ix.cache.complete.Load() {
		return 1
	}
	var distinct float64 // posting keys expected to exist
	for _, w := range ix.layout.Widths {
		distinct += min(math.Exp2(float64(w)), float64(ix.n))
	}
	if distinct == 0 {
		return 1
	}
	return min(1, float64(ix.cache.keys.Load())/distinct)
}

// choose returns the cheapest plan for radius rh by the cost model of
// Search (probeCost, scanCost), with its cost and expected recall.
func (ix *Index) choose(rh int, approx bool, minRecall float64) (Plan, float64, float64) {
	scan := ix.scanCost()
	if scan <= costQuery {
		return Plan{Kind: Scan}, scan, 1 // no probe plan beats so small a scan
	}
	p, cost, recall := ix.layout.cheapest(rh, scan/probeMargin, ix.probeCost, approx, minRecall, func(tau, t int) float64 { return ix.recall(rh, tau, 0, t) })
	if p.Kind == Scan {
		cost = scan
	}
	return p, cost, recall
}

// probeMargin is how much cheaper than the scan a probe plan must be
// estimated to be chosen: the scan's cost is measured on this machine, a
// probe's is modelled, and its cost per posting grows a little with the
// index (6 ns at 1 M, 8 to 10 ns at 10 M).
const probeMargin = 1.15

// planDrift bounds how far the planner's inputs may move before a
// remembered plan is chosen anew: by 1/planDrift of their value (3 %).
// Choosing (the cost model of every radius τ, lowered groups and filter)
// costs 1.8 to 2.6 µs at 1 M documents in warm caches (BenchmarkChoose),
// about an r = 0.9 query, and more in the caches an add leaves: a query
// after each added document (check, then store) paid it every time. The
// planner's estimates move in proportion to these inputs, and a probe
// plan must be estimated 15 % cheaper than the scan (probeMargin), so a
// drift of 3 % changes no choice that is not already a near tie, except
// at the scan's steps: the step from one goroutine to several is compared
// exactly (planFor); below costQuery (a few thousand documents) a scan
// may be kept for 3 % more documents, where every plan takes microseconds.
const planDrift = 32

// near reports whether x is within 1/planDrift of was (equal when was is
// below planDrift).
func near(x, was int64) bool {
	d := x - was
	if d < 0 {
		d = -d
	}
	return d <= was/planDrift
}

// planMemo is the plan chosen for one radius (Auto's exact plan, or an
// approximate plan for minRecall), with its filter and the state it was
// chosen in (planFor: a state that moved by more than 1/planDrift, or a
// scan measured that much faster since, makes it stale).
type planMemo struct {
	rh          int // the radius
	n, capacity int
	oneWorker   bool // the scan of capacity ids runs on one goroutine
	deferFrom   uint32
	complete    bool
	keys        int64      // cached lists, while the cache is not complete
	scan        *scanSpeed // the scan's measured speed
	plan        Plan
	cost        float64 // the plan's estimated cost, in nanoseconds
	// A probe plan's filter (Layout.probeFilter) and expected recall,
	// computed once: a query then allocates nothing for them. groups
	// (in groupBuf, the memo's own memory) is what the probe reads of
	// the layout and the radii.
	groups   []probeGroup
	exact, t int
	recall   float64
	// minRecall is the recall an approximate plan was chosen for (0 for
	// the exact plan of Auto).
	minRecall float64
	// groupBuf comes last: the fields a query reads then lie together at
	// the memo's start, and the groups it probes right after them.
	groupBuf [MaxGroups]probeGroup
}

// autoPlan returns choose's exact plan for rh, remembered per radius (see
// planFor) while the planner's inputs stay near those it was chosen with.
func (ix *Index) autoPlan(rh int) Plan {
	p, _ := ix.autoChoice(rh)
	return p
}

// autoChoice is autoPlan with the plan's estimated cost.
func (ix *Index) autoChoice(rh int) (Plan, float64) {
	m, _ := ix.planFor(rh, 0) // an infeasible choice is Search's to report
	return m.plan, m.cost
}

// planFor returns the memo of the planner's choice for rh: the exact plan
// of Auto (minRecall 0), or the plan of Approx with minRecall, chosen anew
// when the planner's inputs moved (or another recall was asked for at
// rh), with the plan's filter (an error when the chosen probe plan has
// none: the planner chooses feasible plans only). The deferred mark, the
// cache's completeness and whether the scan runs on one goroutine must
// be those the plan was chosen with; inputs that count (documents, ids,
// cached lists, the scan's measured speed) must move by more than
// 1/planDrift of their value when the plan was chosen: each
// document added would otherwise make the next query choose again, which
// costs about as much as a query at a high threshold (see planDrift). Every plan
// of Auto is exact and an approximate plan's recall does not depend on
// them, so a plan chosen a little earlier returns the same answers.
func (ix *Index) planFor(rh int, minRecall float64) (*planMemo, error) {
	complete, keys := ix.cache.complete.Load(), int64(0)
	if !complete {
		keys = ix.cache.keys.Load()
	}
	scan := ix.scanCal.measured.Load()
	memos := ix.plans
	if minRecall > 0 {
		memos = ix.approxPlans
	}
	valid := func(m *planMemo) bool {
		return m != nil && m.rh == rh && m.minRecall == minRecall && m.complete == complete && m.deferFrom == ix.deferFrom &&
			near(int64(ix.n), int64(m.n)) && near(int64(ix.capacity()), int64(m.capacity)) && oneScanWorker(ix.capacity(), ix.stride) == m.oneWorker &&
			near(keys, m.keys) && scan.near(m.scan)
	}
	// The plan of the last search is looked up first, in the Index's own
	// memory: one dependent read fewer in cold CPU caches than the memo
	// of rh.
	if m := ix.recentPlan.Load(); valid(m) {
		return m, nil
	}
	if rh < len(memos) {
		if m := memos[rh].Load(); valid(m) {
			ix.recentPlan.Store(m)
			return m, nil
		}
	}
	approx, want := minRecall > 0, minRecall
	if !approx {
		want = 1
	}
	ix.replans.Add(1)
	p, cost, _ := ix.choose(rh, approx, want)
	// scan as loaded before choose: if choose measured it, or a query
	// refined it since by more than 1/planDrift, the next query chooses
	// again.
	m := &planMemo{rh: rh, n: ix.n, capacity: ix.capacity(), oneWorker: oneScanWorker(ix.capacity(), ix.stride), deferFrom: ix.deferFrom, complete: complete, keys: keys, scan: scan, plan: p, cost: cost, recall: 1, minRecall: minRecall}
	if p.Kind == Probe {
		radii, exact, t, err := ix.layout.probeFilter(rh, p)
		if err != nil {
			return m, err
		}
		m.groups, m.exact, m.t = ix.layout.probeGroups(m.groupBuf[:0], radii), exact, t
		if m.t > m.exact {
			m.recall = ix.recall(rh, p.Tau, p.Lower, m.t)
		}
	}
	if rh < len(memos) {
		memos[rh].Store(m)
		ix.recentPlan.Store(m)
	}
	return m, nil
}

// Search returns every live document within Hamming distance rh of q,
// sorted by distance then id, using plan p (Auto: the planner's choice).
// Every exact plan returns exactly the set a linear scan returns; an
// approximate plan (Approx, or Probe with MinHits above the exact filter)
// returns a subset, with Stats.Recall its expected recall.
func (ix *Index) Search(ctx context.Context, q []uint64, rh int, p Plan) ([]Hit, Stats, error) {
	return ix.SearchAccept(ctx, q, rh, p, nil)
}

// SearchAccept is Search that returns only the hits accept (when not nil)
// accepts: a caller's further condition on each document within rh (the
// db package's containment, whose radius depends on each document's
// size), tested as hits are found so that the others are never collected.
// accept is called concurrently from several goroutines.
func (ix *Index) SearchAccept(ctx context.Context, q []uint64, rh int, p Plan, accept func(id uint32, dist int) bool) ([]Hit, Stats, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	start := time.Now()
	st := Stats{Radius: rh, Recall: 1}
	if len(q) != ix.stride {
		return nil, st, fmt.Errorf("%w: %d words, want %d", bitvec.ErrBadFingerprint, len(q), ix.stride)
	}
	if rh < 0 {
		st.Plan = Plan{Kind: Scan}
		return nil, st, nil
	}
	var memo *planMemo
	switch p.Kind {
	case Auto:
		var err error
		if memo, err = ix.planFor(rh, 0); err != nil {
			return nil, st, err
		}
		p = memo.plan
	case Approx:
		if !(p.MinRecall > 0 && p.MinRecall <= 1) {
			return nil, st, fmt.Errorf("%w: an approximate plan needs a recall in (0, 1], got %v", ErrInvalidPlan, p.MinRecall)
		}
		var err error
		if memo, err = ix.planFor(rh, p.MinRecall); err != nil {
			return nil, st, err
		}
		p = memo.plan
	}
	st.Plan = p
	var hits []Hit
	var err error
	switch p.Kind {
	case Scan:
		hits, err = ix.scan(ctx, q, rh, accept, &st)
		if err != nil {
			return nil, st, err
		}
	case Probe:
		var groups []probeGroup
		var t int
		if memo != nil {
			groups, t, st.Recall = memo.groups, memo.t, memo.recall
		} else {
			radii, exact, ft, err := ix.layout.probeFilter(rh, p)
			if err != nil {
				return nil, st, err
			}
			if t = ft; t > exact {
				st.Recall = ix.recall(rh, p.Tau, p.Lower, t)
			}
			groups = ix.layout.probeGroups(nil, radii)
		}
		hits, err = ix.probe(ctx, q, rh, groups, t, &st)
		if err != nil {
			return nil, st, err
		}
		if ix.scansDeferred() {
			// Documents whose postings are deferred (deferred.go).
			st.Verified += ix.deferredLen()
			more, err := ix.scanRange(ctx, q, rh, int(ix.deferFrom), ix.capacity(), nil)
			if err != nil {
				return nil, st, err
			}
			hits = append(hits, more...)
		}
		if accept != nil {
			hits = slices.DeleteFunc(hits, func(h Hit) bool { return !accept(h.ID, h.Dist) })
		}
	default:
		return nil, st, fmt.Errorf("%w: unknown plan kind %d", ErrInvalidPlan, p.Kind)
	}
	sortHits(hits)
	st.Elapsed = time.Since(start)
	return hits, st, nil
}

// sortHits sorts hits by distance, then id. The few hits of a typical
// query are sorted by insertion, in code that is small and inlined: a
// general sort's code is one more thing a query in cold CPU caches reads
// from memory.
func sortHits(hits []Hit) {
	byDistID := func(a, b Hit) int {
		if a.Dist != b.Dist {
			return a.Dist - b.Dist
		}
		return int(a.ID) - int(b.ID)
	}
	if len(hits) > 16 {
		slices.SortFunc(hits, byDistID)
		return
	}
	for i := 1; i < len(hits); i++ {
		for j := i; j > 0 && byDistID(hits[j], hits[j-1]) < 0; j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
}

// scan compares q with every stored fingerprint, on several cores when
// the array is large.
func (ix *Index) scan(ctx context.Context, q []uint64, rh int, accept func(uint32, int) bool, st *Stats) ([]Hit, error) {
	st.Verified = ix.n
	n, start := ix.capacity(), time.Now()
	hits, err := ix.scanRange(ctx, q, rh, 0, n, accept)
	if err == nil {
		ix.observeScan(n, scanWorkers(n, ix.stride), time.Since(start))
	}
	return hits, err
}

// scanRange compares q with the fingerprints of ids [from, to), keeping
// those accept accepts (all when nil). It stops with ctx's error once ctx
// is done.
func (ix *Index) scanRange(ctx context.Context, q []uint64, rh int, from, to int, accept func(uint32, int) bool) ([]Hit, error) {
	n := to - from
	workers := scanWorkers(n, ix.stride)
	parts := make([][]Hit, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := from+n*w/workers, from+n*(w+1)/workers
		run := func() {
			var hits []Hit
			for b, e := lo, 0; b < hi && ctx.Err() == nil; b = e {
				e = min((b>>fpChunkBits+1)<<fpChunkBits, hi) // within one chunk
				bitvec.Scan(ix.fps.span(b, e), ix.stride, q, rh, func(i, d int) {
					if id := uint32(b + i); ix.isLive(id) && (accept == nil || accept(id, d)) {
						hits = append(hits, Hit{ID: id, Dist: d})
					}
				})
			}
			parts[w] = hits
		}
		if w == workers-1 {
			run()
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return slices.Concat(parts...), nil
}

// postingReader reads posting lists from Pebble for one query, through the
// cache, with one iterator seeking forward.
type postingReader struct {
	ix    *Index
	ctx   context.Context
	it    *pebble.Iterator
	key   []byte
	reads int
}

// newReader returns a reader of ix's posting lists; it allocates nothing
// until it reads (a query whose lists are all cached allocates nothing for
// it).
func (ix *Index) newReader(ctx context.Context) postingReader {
	return postingReader{ix: ix, ctx: ctx}
}

// read reads the list of y from Pebble and caches it.
func (r *postingReader) read(y uint32) ([]uint32, error) {
	if r.it == nil {
		lo, hi := keys.Range(keys.PrefixPosting)
		it, err := r.ix.db.NewIterWithContext(r.ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return nil, fmt.Errorf("index: posting %d: %w", y, err)
		}
		r.it = it
	}
	r.reads++
	r.key = keys.AppendPosting(r.key[:0], y)
	var ids []uint32
	if r.it.SeekGE(r.key) && string(r.it.Key()) == string(r.key) {
		var err error
		if ids, err = decodeIDs(r.it); err != nil {
			return nil, fmt.Errorf("%w: posting %d: %w", ErrCorrupt, y, err)
		}
	} else if err := r.it.Error(); err != nil {
		return nil, fmt.Errorf("index: posting %d: %w", y, err)
	}
	// Between FlushDeferred's ingest and applyFlush, Pebble's lists hold
	// deferred ids already; the scan of the deferred documents finds those, and the cache mirrors
	// the postings below the deferred mark, so they are cut off here.
	if t := r.ix.deferFrom; t != NoDeferred {
		i, _ := slices.BinarySearch(ids, t)
		ids = ids[:i]
	}
	r.ix.cache.put(y, ids)
	return ids, nil
}

func (r *postingReader) close() {
	if r.it != nil {
		_ = r.it.Close()
	}
}

// verifyChunk is the number of candidates whose fingerprints a probe reads
// ahead before comparing them: enough for the reads to overlap, few enough
// (32 KiB of 512-bit fingerprints) that the first are still cached when
// they are compared.
const verifyChunk = 512

// probe runs the count filter t over the posting lists of every value
// within each probed group's radius of the query's value of that group,
// then verifies the candidates.
func (ix *Index) probe(ctx context.Context, q []uint64, rh int, groups []probeGroup, t int, st *Stats) ([]Hit, error) {
	st.MinHits = t

	sc := ix.scratch.get()
	defer ix.scratch.put(sc)
	// Probe values of all groups. Lists read from Pebble are read in key
	// order, by one iterator seeking forward: offsets grow with the group
	// index, so sorting within each group sorts them all. A complete cache
	// reads nothing from Pebble, and the order does not matter.
	n := 0
	for _, g := range groups {
		n += bitvec.BallSize(int(g.width), int(g.radius))
	}
	ys := sc.startProbes(n)
	sorted := !ix.cache.complete.Load()
	for _, g := range groups {
		base := bitvec.Bits(q, int(g.start), int(g.width))
		if g.radius == 0 { // alg.H's probe: the value itself, without Neighbors' code
			ys = append(ys, g.offset+base)
			continue
		}
		from := len(ys)
		bitvec.Neighbors(base, int(g.width), int(g.radius), func(u uint32, _ int) {
			ys = append(ys, g.offset+u)
		})
		if sorted {
			slices.Sort(ys[from:])
		}
	}
	sc.ys = ys
	st.Probes = len(ys)

	r := ix.newReader(ctx)
	defer r.close()
	if err := sc.gather(ctx, ix, &r, ys); err != nil {
		return nil, err
	}
	st.Reads = r.reads
	st.Postings = sc.total
	cands, err := sc.count(t, uint32(ix.capacity()), ix.counting)
	if err != nil {
		return nil, err
	}
	st.Candidates = len(cands)

	// One allocation for the few hits of a typical query, where appending
	// to nil would grow the slice (and call the allocator) at 1, 2 and 3.
	hits := make([]Hit, 0, min(len(cands), 8))
	for len(cands) > 0 {
		chunk := cands[:min(len(cands), verifyChunk)]
		cands = cands[len(chunk):]
		// Read each candidate's first word before comparing any: the
		// reads are independent, so their cache misses overlap, where the
		// comparisons would wait for them one or two at a time.
		// Its live bit is read in the same loop, not before: the two
		// reads overlap too. Every id is below the capacity (count checked
		// them).
		var touch uint64
		for _, id := range chunk {
			touch += ix.fps.at(int(id))[0]
			if w := int(id / 64); w < len(ix.liveBits) {
				touch += ix.liveBits[w]
			}
		}
		sc.touch += uint32(touch)
		for _, id := range chunk {
			fp := ix.fingerprint(id)
			if fp == nil {
				continue
			}
			st.Verified++
			if d := bitvec.Hamming(q, fp); d <= rh {
				hits = append(hits, Hit{ID: id, Dist: d})
			}
		}
	}
	if len(hits) == 0 {
		return nil, nil // as the scan plans return no hits
	}
	return hits, nil
}

// SearchIDs returns the live documents among ids (ascending or not;
// repeats are the caller's) within Hamming distance rh of q and beyond
// distance skip that accept (when not nil) accepts, sorted by distance then id: the part of a search that a
// caller restricts to documents it chose (the db package scans its largest
// documents this way for containment). Each costs a read of its
// fingerprint and a Hamming distance.
func (ix *Index) SearchIDs(ctx context.Context, q []uint64, rh, skip int, ids iter.Seq[uint32], accept func(id uint32, dist int) bool) ([]Hit, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if len(q) != ix.stride {
		return nil, fmt.Errorf("%w: %d words, want %d", bitvec.ErrBadFingerprint, len(q), ix.stride)
	}
	var hits []Hit
	n := 0
	for id := range ids {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		fp := ix.fingerprint(id)
		if fp == nil || !ix.isLive(id) {
			continue
		}
		if d := bitvec.Hamming(q, fp); d <= rh && d > skip && (accept == nil || accept(id, d)) {
			hits = append(hits, Hit{ID: id, Dist: d})
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int { return cmp.Or(cmp.Compare(a.Dist, b.Dist), cmp.Compare(a.ID, b.ID)) })
	return hits, ctx.Err()
}

// Estimate returns the plan Search would pick for radius rh (PlanAuto) and
// its cost by the planner's model, in nanoseconds. The model errs towards
// the scan and is fitted on one machine: read the cost as a rough figure.
func (ix *Index) Estimate(rh int) (Plan, float64) {
	if rh < 0 {
		return Plan{Kind: Scan}, 0
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.autoChoice(rh)
}
