package db

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/minhash"
)

// Query fingerprints text and returns the stored documents whose estimated
// resemblance is at least opts.Threshold: exactly the set a linear scan of
// all stored fingerprints returns, unless opts.Plan is approximate
// (PlanApprox, or PlanProbe with MinHits above the exact count filter),
// whose answer may miss matches (QueryStats.Recall is its expected recall).
func (d *DB) Query(ctx context.Context, text []byte, opts QueryOptions) (*QueryResult, error) {
	return d.QueryReader(ctx, bytes.NewReader(text), opts)
}

// QueryReader is Query reading the text from r. It reads r until ctx is
// done (checking it every 64 KiB), and then fails with ctx's error.
func (d *DB) QueryReader(ctx context.Context, r io.Reader, opts QueryOptions) (*QueryResult, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if err := checkQuery(ctx, opts); err != nil {
		return nil, err
	}
	d.tmplMu.RLock()
	defer d.tmplMu.RUnlock()
	res, _, err := d.build(withContext(ctx, r), nil, opts.TextOptions, "")
	if cerr := ctx.Err(); cerr != nil { // it ended during the read
		return nil, fmt.Errorf("fpdb: query: %w", cerr)
	}
	if err != nil {
		return nil, fmt.Errorf("fpdb: query: %w", err)
	}
	return d.search(ctx, d.textQuery(res), opts)
}

// QueryFingerprint is Query for a fingerprint computed elsewhere. No match
// is flagged Exact, as there is no content hash to compare.
func (d *DB) QueryFingerprint(ctx context.Context, fp []uint64, opts QueryOptions) (*QueryResult, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if err := checkQuery(ctx, opts); err != nil {
		return nil, err
	}
	if want := d.params.K / 64; len(fp) != want {
		return nil, fmt.Errorf("fpdb: query: %w: %d bits, want K = %d", ErrBadFingerprint, 64*len(fp), d.params.K)
	}
	d.tmplMu.RLock() // not in the middle of a template change
	defer d.tmplMu.RUnlock()
	return d.search(ctx, query{fp: fp, size: opts.Shingles}, opts)
}

// query is what a search needs of the query document.
type query struct {
	fp      []uint64
	hash    [16]byte
	hasHash bool // hash is the query's content hash
	size    int  // its shingle set size (0: unknown)
}

// searchPlan says how a search covers every document that can answer it:
// the index finds those within radius rh (none when rh < 0); the
// documents of size classes large and above (none when large is
// sizeClasses) are compared one by one within radius rhLarge.
type searchPlan struct {
	rh, large, rhLarge int
}

// directCost estimates, in nanoseconds, comparing the query with one
// document chosen by id (a fingerprint read from memory, a Hamming
// distance), and hitCost each document a search finds within its radius
// (its containment tested), as DB.planSearch weighs them.
const (
	directCost = 60
	hitCost    = 20
)

// planSearch returns the plan of a search for o; none reports that no
// document can match.
//
// Without Containment it is the index at o.Threshold. With it, the
// resemblance a document must have to contain Containment of the query
// falls with the document's size (minhash.ContainmentFloor): the largest
// document sets the radius that finds them all. So the documents are split
// by size class: the index searches at the radius of the largest size
// below the split — a small radius when a few large documents would
// otherwise set a large one — and the classes at and above the split are
// compared one by one at the radius of the largest of them. Every document
// is covered at a radius at least its own, so the answer is exact (then
// filtered on the containment estimate); the split minimizes the planner's
// estimated cost. With PlanScan the index scans at the largest radius.
func (d *DB) planSearch(q query, o QueryOptions) (p searchPlan, none bool) {
	k := d.params.K
	p.large = sizeClasses
	if o.Containment <= 0 {
		p.rh = index.Radius(k, o.Threshold)
		return p, false
	}
	top := -1
	for c := sizeClasses - 1; c >= 0; c-- {
		if d.docs.classCount(c) > 0 {
			top = c
			break
		}
	}
	if top < 0 {
		return p, true
	}
	// radius returns the radius that finds every document of size at most
	// bound containing Containment of the query, -1 when none can.
	radius := func(bound uint64) int {
		floor := minhash.ContainmentFloor(o.Containment, q.size, int(min(bound, uint64(d.docs.maxSize))))
		if floor > 1+1e-9 {
			return -1
		}
		// Below the estimate's noise no containment is estimated.
		floor = max(floor, minhash.ContainmentNoise(k))
		return index.Radius(k, max(o.Threshold, min(floor-1e-9, 1)))
	}
	upper := func(c int) uint64 { return 1<<(c+1) - 1 } // the largest size of class c
	p.rh = radius(upper(top))
	if p.rh < 0 {
		return p, true
	}
	if o.Plan.Kind != PlanAuto {
		return p, false
	}
	// split returns the plan that compares classes s and above apart.
	all := p.rh // the radius that finds every document
	split := func(s int) searchPlan {
		sp := searchPlan{rh: -1, large: s, rhLarge: all}
		if s > 0 {
			sp.rh = radius(upper(s - 1))
		}
		return sp
	}
	if d.testSplit != nil {
		if s := d.testSplit(top); s <= top {
			return split(s), false
		}
		return p, false
	}
	// A search's cost: the planner's estimate and the hits it returns,
	// as many as random fingerprints would give (the index's documents
	// are mostly far from any query).
	n := float64(d.ix.Len())
	search := func(rh int) float64 {
		_, c := d.ix.Estimate(rh)
		return c + hitCost*n*d.randomCDF[rh]
	}
	best := search(p.rh)
	direct, large := 0.0, 0
	for s := top; s >= 0; s-- {
		large += d.docs.classCount(s)
		direct = float64(large) * (directCost + hitCost*d.randomCDF[all])
		if direct >= best {
			break
		}
		sp, cost := split(s), direct
		if sp.rh >= 0 {
			cost += search(sp.rh)
		}
		if cost < best {
			best, p = cost, sp
		}
	}
	return p, false
}

// textQuery returns the query of a fingerprinted text.
func (d *DB) textQuery(res fingerprint.Result) query {
	size := SetSize(res.Distinct, res.Words, d.params.ShingleWidth)
	if res.Distinct == 0 && res.Excluded > 0 {
		size = -1 // only template text: it contains nothing, and nothing contains it
	}
	return query{fp: res.FP, hash: res.ContentHash, hasHash: true, size: size}
}

func checkQuery(ctx context.Context, o QueryOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case o.Containment != 0:
		if math.IsNaN(o.Containment) || o.Containment < 0 || o.Containment > 1 {
			return fmt.Errorf("fpdb: query: %w: Containment %v is not in (0, 1]", ErrInvalidOptions, o.Containment)
		}
		if o.Threshold != 0 {
			if err := validThreshold(o.Threshold); err != nil {
				return fmt.Errorf("fpdb: query: %w", err)
			}
		}
	default:
		if err := validThreshold(o.Threshold); err != nil {
			return fmt.Errorf("fpdb: query: %w", err)
		}
	}
	if o.Containment != 0 && (o.Plan.Kind == PlanApprox || o.Plan.Kind == PlanProbe) {
		return fmt.Errorf("fpdb: query: %w: Containment works with PlanAuto and PlanScan (its resemblance floor depends on each document's size)", ErrInvalidOptions)
	}
	if o.Shingles < 0 {
		return fmt.Errorf("fpdb: query: %w: negative Shingles %d", ErrInvalidOptions, o.Shingles)
	}
	if o.Limit < 0 {
		return fmt.Errorf("fpdb: query: %w: negative Limit %d", ErrInvalidOptions, o.Limit)
	}
	if o.Plan.Kind == PlanApprox && !(o.Plan.MinRecall > 0 && o.Plan.MinRecall <= 1) {
		return fmt.Errorf("fpdb: query: %w: an approximate plan needs a recall in (0, 1], got %v", ErrInvalidOptions, o.Plan.MinRecall)
	}
	return nil
}

func (d *DB) search(ctx context.Context, q query, o QueryOptions) (*QueryResult, error) {
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	defer d.leave()
	d.mu.RLock()
	defer d.mu.RUnlock()
	res, err := d.searchLocked(ctx, q, o, "")
	if err == nil {
		d.metrics.query(&res.Stats)
	}
	return res, err
}

// searchLocked runs a query; mu is held shared. Matches named skip are left
// out (an add's own previous version).
func (d *DB) searchLocked(ctx context.Context, q query, o QueryOptions, skip string) (*QueryResult, error) {
	k := d.params.K
	if o.Containment > 0 && q.size == 0 {
		return nil, fmt.Errorf("fpdb: query: %w: Containment needs the query's shingle count (QueryOptions.Shingles with a fingerprint)", ErrInvalidOptions)
	}
	p, none := d.planSearch(q, o)
	if none || o.Containment > 0 && q.size < 0 {
		return &QueryResult{Matches: []Match{}}, nil
	}
	// With Containment, each document's own floor is tested as the index
	// finds it (the same test as the filter below, less its rounding
	// margin), so that the many documents within a wide radius that do
	// not contain the query are never collected.
	var accept func(uint32, int) bool
	if o.Containment > 0 {
		accept = func(id uint32, dist int) bool {
			size := d.docs.size(id)
			return size > 0 && minhash.EstimateContainment(k, index.Similarity(k, dist), q.size, size) >= o.Containment-1e-9
		}
	}
	var hits []index.Hit
	st := index.Stats{Radius: p.rh, Recall: 1}
	if p.rh >= 0 {
		var err error
		if hits, st, err = d.ix.SearchAccept(ctx, q.fp, p.rh, o.Plan, accept); err != nil {
			return nil, planError("query", err)
		}
	}
	if p.large < sizeClasses {
		start := time.Now()
		more, err := d.ix.SearchIDs(ctx, q.fp, p.rhLarge, p.rh, d.docs.classIDs(p.large), accept)
		if err != nil {
			return nil, fmt.Errorf("fpdb: query: %w", err)
		}
		hits = append(hits, more...)
		// Verified counts each document once: a first pass that scanned
		// compared every document, the large ones too (their hits beyond
		// its radius are what this pass adds).
		if p.rh < 0 || st.Plan.Kind != index.Scan {
			st.Verified += d.docs.countFrom(p.large)
		}
		st.Elapsed += time.Since(start)
	}
	res := &QueryResult{Stats: st}
	res.Matches = make([]Match, 0, len(hits))
	for _, h := range hits {
		ext := d.docs.ext(h.ID)
		if ext == "" || ext == skip {
			continue
		}
		if m, ok := d.match(q, o, ext, h.Dist, d.docs.hash(h.ID), d.docs.size(h.ID)); ok {
			res.Matches = append(res.Matches, m)
		}
	}
	sortMatches(res.Matches, o)
	if o.Limit > 0 && len(res.Matches) > o.Limit {
		res.Matches = res.Matches[:o.Limit]
	}
	return res, nil
}

// match returns the match of q with the document ext at Hamming distance
// dist, whose content hash is hash and set size size, and whether it is
// one under o (its similarity at least o.Threshold, and with
// o.Containment its containment of q at least that).
func (d *DB) match(q query, o QueryOptions, ext string, dist int, hash [16]byte, size int) (Match, bool) {
	m := Match{
		ID:         ext,
		Similarity: index.Similarity(d.params.K, dist),
		Hamming:    dist,
		Exact:      q.hasHash && hash == q.hash,
	}
	m.SetContainment(d.params.K, q.size, size)
	return m, m.Similarity >= o.Threshold && (o.Containment <= 0 || m.QueryInDoc >= o.Containment)
}

// sortMatches sorts ms as a query's answer: the nearest first (with
// o.Containment, the most containing first), then by id.
func sortMatches(ms []Match, o QueryOptions) {
	slices.SortFunc(ms, func(a, b Match) int {
		if o.Containment > 0 && a.QueryInDoc != b.QueryInDoc {
			return cmp.Compare(b.QueryInDoc, a.QueryInDoc) // the most containing first
		}
		if a.Hamming != b.Hamming {
			return a.Hamming - b.Hamming
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// ExactTau returns the smallest Plan.Tau for which a PlanProbe query at
// threshold is exact (returns every match a scan returns); a smaller Tau
// is refused with ErrInfeasiblePlan, a larger one is exact too but probes
// more values.
func (d *DB) ExactTau(threshold float64) (int, error) {
	if err := validThreshold(threshold); err != nil {
		return 0, fmt.Errorf("fpdb: exact tau: %w", err)
	}
	return index.ExactTau(d.ix.Layout().M(), index.Radius(d.params.K, threshold)), nil
}

// CheckPlan returns the error a query or an all-pairs run at threshold
// would return for plan p before doing any work (ErrInfeasiblePlan for a
// probe radius below ExactTau; ErrInvalidOptions for an unknown kind, an
// approximate plan without a recall in (0, 1], a probe plan that lowers
// more groups than there are or whose count filter is above their number),
// or nil: a long job checks its plan before it begins.
func (d *DB) CheckPlan(threshold float64, p Plan) error {
	if err := validThreshold(threshold); err != nil {
		return fmt.Errorf("fpdb: plan: %w", err)
	}
	if err := d.ix.Layout().CheckPlan(index.Radius(d.params.K, threshold), p); err != nil {
		return planError("plan", err)
	}
	return nil
}

// planError is the error err of op, named, when the plan is at fault: one
// no query can run wraps ErrInvalidOptions, one that cannot be exact is
// ErrInfeasiblePlan.
func planError(op string, err error) error {
	switch {
	case errors.Is(err, index.ErrInvalidPlan):
		return fmt.Errorf("fpdb: %s: %w: %w", op, ErrInvalidOptions, err)
	case errors.Is(err, index.ErrInfeasible):
		return fmt.Errorf("fpdb: %s: %w", op, err)
	}
	return fmt.Errorf("fpdb: %s: %w", op, err)
}

// Get returns the document stored under id, or ErrNotFound.
func (d *DB) Get(ctx context.Context, id string) (*Doc, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validID(id); err != nil {
		return nil, fmt.Errorf("fpdb: get: %w", err)
	}
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	defer d.leave()
	d.mu.RLock()
	defer d.mu.RUnlock()
	iid, found, err := d.lookup(id)
	if err != nil {
		return nil, fmt.Errorf("fpdb: get %q: %w", id, err)
	}
	if !found {
		return nil, fmt.Errorf("fpdb: get %q: %w", id, ErrNotFound)
	}
	doc, err := d.readDocRecord(iid)
	if err != nil {
		return nil, fmt.Errorf("fpdb: get %q: %w", id, err)
	}
	return &doc, nil
}

// readDocRecord reads the record and fingerprint (a copy) of internal id
// iid, which the id map names. d.mu is held.
func (d *DB) readDocRecord(iid uint32) (Doc, error) {
	v, closer, err := d.pdb.Get(keys.Doc(iid))
	if errors.Is(err, pebble.ErrNotFound) {
		return Doc{}, fmt.Errorf("%w: id map names internal id %d without a record", ErrCorrupt, iid)
	}
	if err != nil {
		return Doc{}, storageError(err)
	}
	doc, err := decodeDocRecord(v)
	_ = closer.Close()
	if err != nil {
		return Doc{}, err
	}
	fp := d.ix.Fingerprint(iid)
	if fp == nil {
		return Doc{}, fmt.Errorf("%w: internal id %d has no fingerprint", ErrCorrupt, iid)
	}
	doc.iid = iid
	doc.Fingerprint = fp // a copy
	return doc, nil
}

// Stats returns a summary of the database. On a closed DB the counts are
// those at Close.
func (d *DB) Stats() Stats {
	d.mu.RLock()
	defer d.mu.RUnlock()
	s := Stats{Params: d.Params(), Docs: d.ix.Len(), Slots: int(d.nextIID), Deferred: d.ix.DeferredLen(), ImportIncomplete: d.unfinishedImport()}
	if !d.closed {
		s.DiskBytes = int64(d.pdb.Metrics().DiskSpaceUsage())
	}
	return s
}

// Warm loads every posting list into memory, so that no query reads posting
// lists from disk afterwards (queries fill this cache lazily otherwise). With
// groups of up to 18 bits it builds them from the fingerprints already in
// memory, on every core, into one array of 4 bytes per document and group
// (128 B per document at K = 512) plus 4 bytes per group value; otherwise it
// reads them from the store. Writes keep the cache in sync. Servers that answer many queries call it once after Open. Queries
// go on while it runs (they fill the same cache); writers wait.
func (d *DB) Warm(ctx context.Context) (err error) {
	if err := d.live(); err != nil {
		return err
	}
	// Writers change cached lists; readers only add lists read from the
	// store, which writeMu keeps as Warm reads them.
	ctx, leave, err := d.enterWriter(ctx, "warm", false, exclusive)
	if err != nil {
		return err
	}
	defer leave(&err)
	d.at("warm")
	if err := d.ix.Warm(ctx); err != nil {
		return fmt.Errorf("fpdb: warm: %w", err)
	}
	return nil
}

// WarmsInMemory reports whether Warm builds the posting lists from the
// fingerprints already in memory, on every core (groups of up to 18 bits:
// about 0.6 s per million documents on 2 cores), rather than reading them
// from storage, which takes far longer. Programs that warm a database on their
// own initiative (fpdb serve, a long fpdb query run) do it only then.
func (d *DB) WarmsInMemory() bool { return d.ix.WarmsInMemory() }

// Match is a stored document similar to a query.
type Match struct {
	// ID is the matching document's id.
	ID string
	// Similarity is the estimated resemblance 1 − 2·Hamming/K.
	Similarity float64
	// Hamming is the Hamming distance between the fingerprints.
	Hamming int
	// Exact reports that the content hashes are equal (the normalized texts
	// are identical).
	Exact bool
	// QueryInDoc is the estimated share of the query found in the
	// document (its containment in the document), from Similarity and the
	// two shingle set sizes: R(|Q| + |D|) / ((1 + R)|Q|), at most 1.
	// DocInQuery is the share of the document found in the query. Both are
	// 0 when a size is unknown (a document or query given as a fingerprint
	// without its shingle count).
	QueryInDoc, DocInQuery float64
}

// SetContainment sets m's QueryInDoc and DocInQuery, estimated from
// m.Similarity of k-bit fingerprints and the shingle set sizes (see
// SetSize) of the query and of the document; both are left as they are
// when a size is unknown (0), and are 0 when the resemblance is within the
// estimate's noise (below 4/√k: 0.177 at k = 512), where the sizes' ratio
// would make noise a containment.
func (m *Match) SetContainment(k, querySize, docSize int) {
	if querySize > 0 && docSize > 0 {
		m.QueryInDoc = minhash.EstimateContainment(k, m.Similarity, querySize, docSize)
		m.DocInQuery = minhash.EstimateContainment(k, m.Similarity, docSize, querySize)
	}
}

// Plan selects how a query finds its candidates: the planner's choice
// (PlanAuto, the zero value), a forced probe radius with the exact count
// filter or the scan — all of which return exactly the set a linear scan
// returns — or an approximate plan (PlanApprox, or PlanProbe with MinHits
// above the exact filter), which may miss matches. It is the index's plan
// type.
type Plan = index.Plan

// PlanKind is a kind of query plan.
type PlanKind = index.PlanKind

// Plan kinds.
const (
	// PlanAuto lets the planner pick the cheapest exact plan.
	PlanAuto = index.Auto
	// PlanProbe probes, in every group, all values within Plan.Tau bits of
	// the query's group value (Plan.Lower groups within Plan.Tau − 1 bits)
	// and keeps documents hit in enough groups (Plan.MinHits above the
	// exact count filter trades recall for speed).
	PlanProbe = index.Probe
	// PlanScan compares the query with every stored fingerprint.
	PlanScan = index.Scan
	// PlanApprox lets the planner also use approximate probe plans whose
	// expected recall (for a document at the threshold's Hamming radius,
	// under the binomial model of independent fingerprint bits) is at least
	// Plan.MinRecall. It is never the default: its answers may miss matches.
	PlanApprox = index.Approx
)

// QueryOptions configure a query.
type QueryOptions struct {
	// Threshold is the minimum estimated resemblance, in (0, 1] (or 0
	// with Containment).
	Threshold float64
	// Limit caps the number of matches returned (the first in the order
	// of QueryResult.Matches); 0 means no limit.
	Limit int
	// Containment, when not 0, asks for the documents that contain at
	// least this share of the query, in (0, 1]: those whose estimated
	// Match.QueryInDoc is at least Containment (exactly those, with
	// respect to the estimate), and whose Similarity is at least Threshold
	// if Threshold is not 0. Documents of unknown size never match.
	Containment float64
	// Shingles is the query's number of distinct shingles, for
	// QueryFingerprint (Query computes it): it gives matches their
	// containment, and Containment needs it.
	Shingles int
	// Plan forces a plan; the zero value lets the planner choose. Forcing a
	// probe plan that cannot be exact for the threshold is an error.
	Plan Plan
	// TextOptions say how the query text is read (Query, QueryReader,
	// QueryMany).
	TextOptions
}

// QueryStats describes how a query was executed (the plan, the count
// filter, the work done); it is the index's search statistics type. A
// containment query that compares its large documents one by one after
// the index's search (see QueryOptions.Containment) counts them in
// Verified too: once when the search scanned (it compared them already),
// else in addition to the search's candidates (a large document that was
// also a candidate is then counted, and compared, twice).
type QueryStats = index.Stats

// QueryResult is the answer to a query.
type QueryResult struct {
	// Matches are sorted by Hamming distance, then by id (with
	// QueryOptions.Containment: by QueryInDoc, largest first, then so).
	Matches []Match
	// Stats describe the execution.
	Stats QueryStats
}

// Stats summarize a database.
type Stats struct {
	// Params are the creation parameters.
	Params Params
	// Docs is the number of live documents.
	Docs int
	// Slots is the number of internal ids used so far: one per document
	// ever stored (a replace, or a fingerprint a template change alters,
	// takes a new one), none given back. Slots − Docs are dead slots
	// left by deletes and replaces; the fingerprints in memory and every
	// scan cover all Slots. Only an export imported into a new database
	// reclaims them; writes fail with ErrIDSpaceExhausted once Slots
	// nears 2^32.
	Slots int
	// DiskBytes is the size of the database files.
	DiskBytes int64
	// Deferred is the number of documents whose postings a bulk load has
	// not written yet (Options.BulkLoad; Flush writes them).
	Deferred int
	// ImportIncomplete is set when an import into the database did not
	// finish: it holds the first Docs documents of an export and refuses
	// other writes (ErrImportIncomplete) until an import of the same
	// export finishes.
	ImportIncomplete bool
}

// QueryMany answers Query for each of texts, in order: result i is the
// answer for texts[i]. It fingerprints and searches on all cores
// (GOMAXPROCS goroutines), each query seeing the database as of its own
// search, as with one Query per text. It stops at the first error, which
// names the text's index. Close cancels it: it then returns an error
// wrapping ErrClosed.
func (d *DB) QueryMany(ctx context.Context, texts [][]byte, opts QueryOptions) (_ []*QueryResult, err error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if err := checkQuery(ctx, opts); err != nil {
		return nil, err
	}
	d.tmplMu.RLock()
	defer d.tmplMu.RUnlock()
	ctx, leave, err := d.enterLong(ctx)
	if err != nil {
		return nil, err
	}
	defer leave(&err)
	out := make([]*QueryResult, len(texts))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(texts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(texts) {
					return
				}
				res, _, err := d.build(nil, texts[i], opts.TextOptions, "")
				if err != nil {
					cancel(fmt.Errorf("fpdb: query of text %d: %w", i, err))
					return
				}
				d.mu.RLock()
				out[i], err = d.searchLocked(ctx, d.textQuery(res), opts, "")
				d.mu.RUnlock()
				if err != nil {
					cancel(fmt.Errorf("%w (text %d)", err, i))
					return
				}
				d.metrics.query(&out[i].Stats)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err // leave wraps ErrClosed when Close cancelled it
	}
	return out, nil
}
