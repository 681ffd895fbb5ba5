package index

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fpdb/fpdb/internal/bitvec"
)

// Snapshot is an immutable copy of the live fingerprints of an Index, taken
// so that a long computation (all pairs) does not hold the caller's lock
// and sees one consistent state. Positions 0..Len()-1 number the live
// documents in increasing internal id order.
type Snapshot struct {
	layout *Layout
	stride int
	ids    []uint32 // internal id of each position, increasing
	fps    []uint64 // fingerprint of position p at fps[p*stride:(p+1)*stride]
}

// Snapshot copies the live fingerprints.
func (ix *Index) Snapshot() *Snapshot {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	l := ix.Layout()
	s := &Snapshot{layout: l, stride: l.K / 64}
	s.ids = make([]uint32, 0, ix.n)
	s.fps = make([]uint64, 0, ix.n*s.stride)
	for id := 0; id < ix.capacity(); id++ {
		if fp := ix.fingerprint(uint32(id)); fp != nil {
			s.ids = append(s.ids, uint32(id))
			s.fps = append(s.fps, fp...)
		}
	}
	return s
}

// Len returns the number of documents in the snapshot.
func (s *Snapshot) Len() int { return len(s.ids) }

// ID returns the internal id at position p.
func (s *Snapshot) ID(p int) uint32 { return s.ids[p] }

// Fingerprint returns the fingerprint at position p (do not modify).
func (s *Snapshot) Fingerprint(p int) []uint64 { return s.fps[p*s.stride : (p+1)*s.stride] }

// Pair is two documents of a snapshot within the radius, at Hamming
// distance Dist. A < B are their positions in the snapshot (Snapshot.ID
// gives the internal ids, which are in the same order).
type Pair struct {
	A, B int
	Dist int
}

// PairOptions configure Snapshot.Pairs.
type PairOptions struct {
	// Plan forces a plan (Probe with its Tau, or Scan); Auto lets the
	// planner choose.
	Plan Plan
	// Workers is the number of goroutines; 0 means GOMAXPROCS.
	Workers int
	// Progress, when not nil, is called on the caller's goroutine with the
	// number of documents done and the total, at most every 100 ms and once
	// at the end (for a probe plan, which works group by group, the
	// documents' share of the work done).
	Progress func(done, total int)

	perDocument bool // tests: probe plans run document by document
}

// PairStats count the work of an all-pairs run.
type PairStats struct {
	Docs    int // documents compared
	Plan    Plan
	Radius  int
	MinHits int // count filter t (0 for a scan)
	// Recall is the plan's expected recall: 1 for exact plans, else the
	// probability that a pair at distance exactly Radius is found.
	Recall float64
	// Postings counts the posting ids read by a probe plan run document by
	// document, or the documents sorted by a group-by-group run, once per
	// group; Candidates and Verified count the documents that passed the
	// count filter and were compared, or the pairs a group-by-group run
	// compared (a pair once for each group in which the two are within the
	// radius).
	Postings   int64
	Candidates int64
	Verified   int64
	Pairs      int64
	Elapsed    time.Duration
	// Groups is the number of groups of the layout the plan ran on: the
	// index's, or equal groups chosen for a group-by-group run.
	Groups int
}

// Pair cost model, in nanoseconds per operation, for the runs of Pairs in
// memory (no Pebble seek is involved).
const (
	pairCostProbe    = 150.0 // one neighbour value looked up (two cache misses)
	pairCostPosting  = 2.0   // one posting id counted
	pairCostVerify   = 40.0  // one exact Hamming check (its fingerprint read ahead)
	pairCostScanWord = 1.5   // one word of a linear scan

	// A group-by-group run (pairs_group.go) reads no posting list at
	// random: it costs its comparisons, its steps over the values of each
	// group (one per value and neighbour mask) and the sort of each group.
	joinCostCompare = 4.0  // one pair compared (fingerprints side by side)
	joinCostStep    = 3.0  // one value of a group with one mask
	joinCostSort    = 30.0 // one document sorted by one group of up to 17 bits
	// joinCostSortBit is added per bit above 17: the counts per value
	// outgrow the processor's caches (measured with BenchmarkPairs at 1 M,
	// the counts and positions placed on one goroutine: about 40 ns per
	// document for 16-bit groups, 115 for 20-bit ones).
	joinCostSortBit = 30.0
)

// choosePairs returns the plan Pairs runs for radius rh and the requested
// plan p, with the layout it runs on: p itself on the index's layout unless
// it is Auto or Approx, else the plan of least estimated cost per document
// by the shared cost model (plan.go) with the prices of a group-by-group
// run, or of posting lists in memory when the run goes document by
// document. A group-by-group run needs no posting list of the index, so
// its groups need not be the index's: the planner also tries layouts of
// equal groups of 10 to 24 bits and takes the cheapest plan of any. An
// Approx plan may raise the count filter while the expected recall stays
// ≥ p.MinRecall (group by group, a raised filter saves nothing: there an
// approximate plan is a smaller radius or other groups). It also returns
// the plan's expected recall.
func (s *Snapshot) choosePairs(rh int, p Plan) (Plan, float64, *Layout, error) {
	switch p.Kind {
	case Auto, Approx:
	case Probe, Scan:
		return p, 1, s.layout, nil
	default:
		return p, 0, nil, fmt.Errorf("%w: unknown plan kind %d", ErrInvalidPlan, p.Kind)
	}
	if err := s.layout.CheckPlan(0, p); err != nil {
		return p, 0, nil, err
	}
	n := len(s.ids)
	layouts := []*Layout{s.layout}
	seen := map[int]bool{s.layout.M(): true}
	for w := 10; w <= maxJoinWidth; w++ {
		m := (s.layout.K + w - 1) / w
		if seen[m] {
			continue
		}
		seen[m] = true
		if l, err := NewLayout(s.layout.K, SplitWidths(s.layout.K, m)); err == nil && s.joinable(l) {
			layouts = append(layouts, l)
		}
	}
	best, bestCost, bestRecall, bestLayout := Plan{}, math.Inf(1), 0.0, s.layout
	for _, l := range layouts {
		pl, c, rec := s.cheapestPairs(l, rh, p, n)
		if c < bestCost {
			best, bestCost, bestRecall, bestLayout = pl, c, rec, l
		}
	}
	if best.Kind == Scan {
		bestLayout = s.layout
	}
	return best, bestRecall, bestLayout, nil
}

// cheapestPairs returns the cheapest plan of p's kind on layout l, its
// cost per document and its expected recall.
func (s *Snapshot) cheapestPairs(l *Layout, rh int, p Plan, n int) (Plan, float64, float64) {
	half := float64(n) / 2 // documents before an average one
	cost := func(tau, lower, t int) float64 {
		return l.probesPerQuery(tau, lower)*pairCostProbe + half*l.hitsPerDoc(tau, lower)*pairCostPosting +
			half*l.candidateRate(tau, lower, t)*pairCostVerify
	}
	if s.joinable(l) {
		// Per document: the values per document times the probes per
		// value, for the steps.
		perDoc := float64(l.Space()) / float64(l.M()) / float64(n)
		meanWidth := float64(l.K) / float64(l.M())
		sort := joinCostSort + joinCostSortBit*max(0, meanWidth-17)
		cost = func(tau, lower, _ int) float64 {
			probed := l.M() // groups sorted: at τ = 0 the lowered ones are not probed
			if tau == 0 {
				probed -= min(lower, probed)
			}
			return half*l.hitsPerDoc(tau, lower)*joinCostCompare + l.probesPerQuery(tau, lower)*perDoc*joinCostStep +
				float64(probed)*sort
		}
	}
	dists := make(map[int][]float64) // WithinDist by tau, computed on demand
	recall := func(tau, t int) float64 {
		if t <= MinHits(l.M(), rh, tau) {
			return 1
		}
		d, ok := dists[tau]
		if !ok {
			d = l.WithinDist(rh, tau)
			dists[tau] = d
		}
		return atLeast(d, t)
	}
	return l.cheapest(rh, half*float64(s.stride)*pairCostScanWord, cost, p.Kind == Approx, p.MinRecall, recall)
}

// pairChunk is the number of documents a worker takes at a time.
const pairChunk = 512

// pairBatch is the most pairs a worker buffers before it hands them to the
// caller's goroutine, which bounds the memory of a run whatever the number
// of pairs of one document (a cluster of n exact duplicates has n²/2): at
// most about 3 × workers × pairBatch pairs are in memory at once.
const pairBatch = 4096

// Pairs calls fn for every pair of documents of the snapshot within Hamming
// distance rh, exactly once, with A < B. A probe plan takes the groups of
// its layout (the index's, or equal groups the planner chose for the run)
// one at a time and compares the documents whose values
// of the group are within the group's radius (pairs_group.go), each pair
// from the first group in which the two are; with a group of more values
// than 8 per document (small snapshots: joinWidth) or too wide to sort
// by, it compares each document with the documents before it that its
// probes find in posting lists built in memory. A scan compares each
// document with every document before it. The work is split across
// Workers goroutines; fn is called on the caller's goroutine, as pairs are
// found, in no particular order. An error from fn or a cancelled ctx stops
// the run and is returned.
func (s *Snapshot) Pairs(ctx context.Context, rh int, o PairOptions, fn func(Pair) error) (PairStats, error) {
	start := time.Now()
	n := len(s.ids)
	st := PairStats{Docs: n, Radius: rh, Recall: 1}
	if rh < 0 || n < 2 {
		st.Plan = Plan{Kind: Scan}
		if o.Progress != nil {
			o.Progress(n, n)
		}
		return st, nil
	}
	p, recall, l, err := s.choosePairs(rh, o.Plan)
	if err != nil {
		return st, err
	}
	st.Plan, st.Recall = p, recall
	if p.Kind == Probe {
		st.Groups = l.M()
	}
	var pl *postingLists
	var radii []int
	if p.Kind == Probe {
		var exact int
		radii, exact, st.MinHits, err = l.probeFilter(rh, p)
		switch {
		case err != nil:
			return st, err
		case len(s.ids) > math.MaxInt32:
			return st, fmt.Errorf("index: pairs: %d documents exceed the positions of a run (%d); use a scan", len(s.ids), math.MaxInt32)
		}
		if st.MinHits > exact && o.Plan.Kind != Approx {
			st.Recall = atLeast(l.withinRadii(rh, radii), st.MinHits)
		}
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// A probe plan runs group by group (pairs_group.go) unless a probed
	// group is too wide to sort by; then document by document, in posting
	// lists built in memory.
	var join *groupJoin
	if p.Kind == Probe && (!o.perDocument || l != s.layout) {
		join = newGroupJoin(s, l, radii, workers)
	}
	if p.Kind == Probe && join == nil && l != s.layout {
		// The planner offers other groups only where they can be joined.
		return st, fmt.Errorf("index: pairs: %d groups chosen for a run cannot be sorted by", l.M())
	}
	if p.Kind == Probe && join == nil {
		if uint64(n)*uint64(s.layout.M()) > math.MaxUint32 {
			return st, fmt.Errorf("index: pairs: %d documents × %d groups exceed the in-memory posting lists; use a scan", n, s.layout.M())
		}
		// A worker of the build counts into an array as large as the key
		// space: more workers than postings per key would cost more than
		// they save.
		l := s.layout
		pl = s.buildPostings(max(1, min(workers, n/pairChunk, n*l.M()/int(l.Space()))))
	}
	units, chunk := n, pairChunk // documents, or units of a join
	if join != nil {
		units, chunk = join.units, 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		pairs                     []Pair
		docs                      int
		postings, cands, verified int64
	}
	results := make(chan result, 2*workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &pairWorker{s: s, pl: pl, rh: rh, t: st.MinHits, radii: radii, ctx: ctx}
			if pl != nil {
				w.counts = make([]uint8, n)
				w.seen = make([]uint64, (n+63)/64)
			}
			// send hands the pairs found so far, the documents finished
			// and the work counters to the caller's goroutine; false once
			// the run is stopped.
			send := func(docs int) bool {
				r := result{pairs: w.buf, docs: docs, postings: w.postings, cands: w.ncands, verified: w.verified}
				w.buf, w.postings, w.ncands, w.verified = nil, 0, 0, 0
				select {
				case results <- r:
					return true
				case <-ctx.Done():
					return false
				}
			}
			stopped := false
			w.emit = func(pr Pair) {
				if stopped {
					return
				}
				if w.buf == nil {
					w.buf = make([]Pair, 0, pairBatch)
				}
				w.buf = append(w.buf, pr)
				if len(w.buf) == pairBatch && !send(0) {
					stopped = true
				}
			}
			for ctx.Err() == nil && !stopped {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= units {
					return
				}
				hi := min(lo+chunk, units)
				for u := lo; u < hi && !stopped; u++ {
					if join != nil {
						w.join(join, u)
					} else {
						w.doc(u)
					}
				}
				// Progress counts documents: a unit of a join counts its
				// share of them.
				docs := hi - lo
				if join != nil {
					docs = int(int64(hi)*int64(n)/int64(units) - int64(lo)*int64(n)/int64(units))
				}
				if !stopped && !send(docs) {
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	var ferr error
	done := 0
	lastProgress := time.Now()
	for r := range results {
		if ferr != nil {
			continue // drain
		}
		done += r.docs
		st.Postings += r.postings
		st.Candidates += r.cands
		st.Verified += r.verified
		for _, pr := range r.pairs {
			// Cancelled (or the DB closing): no further call of fn, of
			// this batch's pairs or of those queued behind it.
			if err := ctx.Err(); err != nil {
				ferr = err
				break
			}
			st.Pairs++
			if err := fn(pr); err != nil {
				ferr = err
				cancel()
				break
			}
		}
		if o.Progress != nil && time.Since(lastProgress) >= 100*time.Millisecond {
			lastProgress = time.Now()
			o.Progress(done, n)
		}
	}
	st.Elapsed = time.Since(start)
	if ferr != nil {
		return st, ferr
	}
	if done < n {
		if err := ctx.Err(); err != nil {
			return st, err
		}
	}
	if o.Progress != nil {
		o.Progress(done, n)
	}
	return st, nil
}

// pairWorker is the query state of one Pairs goroutine.
type pairWorker struct {
	ctx    context.Context // list checks it while it compares
	s      *Snapshot
	pl     *postingLists
	rh, t  int
	radii  []int    // probe radius by group
	counts []uint8  // repeats per document, zero between documents
	seen   []uint64 // a bit per document, zero between documents
	// postingBuf holds the postings of a document, dups its repeats.
	postingBuf, dups []int32
	cands            []int32
	ys               []uint32   // the merged values probed
	masks            []uint32   // a join's neighbour values, as masks
	spans            [][]int32  // their lists, fetched before they are counted
	emit             func(Pair) // receives every pair found
	buf              []Pair     // pairs not yet sent

	postings, ncands, verified int64
	touch                      int32 // keeps the touching reads
}

// doc emits the pairs of position a with the positions before it.
func (w *pairWorker) doc(a int) {
	s := w.s
	q := s.Fingerprint(a)
	if w.pl == nil {
		bitvec.Scan(s.fps[:a*s.stride], s.stride, q, w.rh, func(i, d int) {
			w.emit(Pair{A: i, B: a, Dist: d})
		})
		w.verified += int64(a)
		return
	}
	l := s.layout
	lim := int32(a)
	t := uint8(w.t)
	w.cands = w.cands[:0]
	// Memory latency, not arithmetic, bounds this loop once the lists
	// outgrow the caches (about 550 lists per document at 16-bit groups and
	// τ = 1). So the work is split in passes of independent reads, which
	// the processor overlaps: every probed value first, then every list's
	// bounds, then the first and last id of every list (most lists fit in
	// two cache lines), and only then the counting, which finds the lists
	// in cache. Interleaving them made each list wait for the one before
	// (46 s → 21 s for 1 M random fingerprints at R = 0.8 on 2 cores:
	// BenchmarkPairs with FPDB_PAIRS_N=1000000).
	w.ys = w.ys[:0]
	for i, wd := range l.Widths {
		base := bitvec.Bits(q, l.Starts[i], wd)
		off := l.Offset[i]
		bitvec.Neighbors(base, wd, w.radii[i], func(u uint32, _ int) {
			w.ys = append(w.ys, off+u)
		})
	}
	w.spans = w.spans[:0]
	for _, y := range w.ys {
		w.spans = append(w.spans, w.pl.list(y))
	}
	var touch int32
	for _, list := range w.spans {
		if len(list) > 0 {
			touch += list[0] + list[len(list)-1]
		}
	}
	w.touch += touch
	// The postings before a are gathered in one buffer, then counted in
	// two steps: a bit per document (n/8 bytes, which stays in the
	// processor's caches where a counter per document would not) marks the
	// documents seen, and only the repeats (few; every candidate's are among them)
	// are counted in the counter array. 20.4 s → 17.9 s for 1 M
	// random fingerprints at R = 0.8 on 2 cores, 5.1 s → 3.6 s at R = 0.9
	// (BenchmarkPairs with FPDB_PAIRS_N=1000000).
	buf := w.postingBuf[:0]
	for _, list := range w.spans {
		for _, p := range list {
			if p >= lim {
				break
			}
			buf = append(buf, p)
		}
	}
	w.postingBuf = buf
	w.postings += int64(len(buf))
	seen := w.seen
	if t <= 1 {
		// Every document seen is a candidate, once.
		for _, p := range buf {
			word, bit := p>>6, uint64(1)<<(p&63)
			if seen[word]&bit == 0 {
				seen[word] |= bit
				w.cands = append(w.cands, p)
			}
		}
	} else {
		dups := w.dups[:0]
		for _, p := range buf {
			word, bit := p>>6, uint64(1)<<(p&63)
			if seen[word]&bit != 0 {
				dups = append(dups, p)
			}
			seen[word] |= bit
		}
		w.dups = dups
		// A document repeated t−1 times was seen t times.
		for _, p := range dups {
			c := w.counts[p] + 1
			w.counts[p] = c
			if c == t-1 {
				w.cands = append(w.cands, p)
			}
		}
		for _, p := range dups {
			w.counts[p] = 0
		}
	}
	for _, p := range buf {
		seen[p>>6] = 0
	}
	w.ncands += int64(len(w.cands))
	w.verified += int64(len(w.cands))
	// The candidates' fingerprints are read at random; one pass of
	// independent reads brings them into cache before they are compared.
	touch = 0
	for _, p := range w.cands {
		touch += int32(s.fps[int(p)*s.stride])
	}
	w.touch += touch
	for _, p := range w.cands {
		if d := bitvec.Hamming(q, s.Fingerprint(int(p))); d <= w.rh {
			w.emit(Pair{A: int(p), B: a, Dist: d})
		}
	}
}

// postingLists are the posting lists of a snapshot in memory: for each
// merged value y the positions with that value, increasing.
type postingLists struct {
	ids []int32
	// Dense: start[y] .. start[y+1] is the list of y.
	start []uint32
	// Sparse (key space too large for a dense table): ys sorted, list j is
	// ids[starts[j]:starts[j+1]].
	ys, starts []uint32
}

// maxDense is the largest merged key space indexed by a dense table.
const maxDense = 1 << 24

// list returns the positions whose group value maps to y.
func (pl *postingLists) list(y uint32) []int32 {
	if pl.start != nil {
		if int(y)+1 >= len(pl.start) {
			return nil
		}
		return pl.ids[pl.start[y]:pl.start[y+1]]
	}
	j := sort.Search(len(pl.ys), func(j int) bool { return pl.ys[j] >= y })
	if j == len(pl.ys) || pl.ys[j] != y {
		return nil
	}
	return pl.ids[pl.starts[j]:pl.starts[j+1]]
}

// parallel runs fn(0) … fn(workers−1) on goroutines of their own and
// waits for them.
func parallel(workers int, fn func(w int)) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w)
		}()
	}
	wg.Wait()
}

// placeOffsets turns counts[q][y], the number of positions of value y in
// part q of a counting sort split into ranges of positions, into the slot
// where part q places its first position of value y — the parts in order,
// so that the positions of each value stay increasing — and fills start
// (one more than the values) with the first slot of each value.
func placeOffsets(counts [][]uint32, start []uint32) {
	at := uint32(0)
	for y := range len(start) - 1 {
		start[y] = at
		for _, c := range counts {
			c[y], at = at, at+c[y]
		}
	}
	start[len(start)-1] = at
}

// buildPostings builds the posting lists of the snapshot with its layout,
// on up to workers goroutines.
func (s *Snapshot) buildPostings(workers int) *postingLists {
	l := s.layout
	m, n, space := l.M(), len(s.ids), l.Space()
	pl := &postingLists{ids: make([]int32, n*m)}
	if space <= maxDense {
		// A counting sort, split across workers by ranges of positions:
		// worker w counts its range's values, then writes its range's
		// positions after those of the workers before it, so that every
		// list stays in increasing order.
		bounds := func(w int) (int, int) { return w * n / workers, (w + 1) * n / workers }
		counts := make([][]uint32, workers)
		parallel(workers, func(w int) {
			c := make([]uint32, space)
			lo, hi := bounds(w)
			for p := lo; p < hi; p++ {
				fp := s.Fingerprint(p)
				for i := range m {
					c[l.Value(fp, i)]++
				}
			}
			counts[w] = c
		})
		start := make([]uint32, space+1)
		placeOffsets(counts, start)
		parallel(workers, func(w int) {
			next := counts[w]
			lo, hi := bounds(w)
			for p := lo; p < hi; p++ {
				fp := s.Fingerprint(p)
				for i := range m {
					y := l.Value(fp, i)
					pl.ids[next[y]] = int32(p)
					next[y]++
				}
			}
		})
		pl.start = start
		return pl
	}
	ks := make([]uint64, 0, n*m)
	for p := range n {
		fp := s.Fingerprint(p)
		for i := range m {
			ks = append(ks, uint64(l.Value(fp, i))<<32|uint64(p))
		}
	}
	sortKeys(ks)
	for j, k := range ks {
		y := uint32(k >> 32)
		if len(pl.ys) == 0 || pl.ys[len(pl.ys)-1] != y {
			pl.ys = append(pl.ys, y)
			pl.starts = append(pl.starts, uint32(j))
		}
		pl.ids[j] = int32(uint32(k))
	}
	pl.starts = append(pl.starts, uint32(len(ks)))
	return pl
}
