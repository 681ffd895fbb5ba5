package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
)

// Pair is two stored documents whose estimated resemblance is at least the
// threshold. A was stored before B (a smaller internal id).
type Pair struct {
	// A and B are the documents' ids.
	A, B string
	// Similarity is the estimated resemblance 1 − 2·Hamming/K.
	Similarity float64
	// Hamming is the Hamming distance between the fingerprints.
	Hamming int
	// Exact reports equal content hashes (identical normalized text; never
	// set for documents stored by fingerprint without a hash).
	Exact bool
}

// PairsOptions configure Pairs and Clusters.
type PairsOptions struct {
	// Threshold is the minimum estimated resemblance, in (0, 1].
	Threshold float64
	// Progress, when not nil, is called with the number of documents done
	// and the total, at most every 100 ms and once at the end, on the
	// calling goroutine.
	Progress func(done, total int)
	// Plan forces a plan, as in QueryOptions; the zero value lets the
	// planner choose. Every exact plan gives the same pairs; an approximate
	// one (PlanApprox) a subset.
	Plan Plan
	// Detached, when not nil, is called once the run has copied what it
	// needs (the fingerprints and ids, in memory) and no longer uses the
	// database: from then on the run is not a call in flight, so the caller
	// may Close the database there (a command-line tool releases it for
	// other processes while the run goes on); ctx alone stops the run.
	Detached func()
}

// PairsStats describe an all-pairs run: the documents compared, the plan,
// the Hamming radius, the count filter, the work done and the pairs found.
type PairsStats = index.PairStats

// Pairs calls fn for every pair of stored documents with estimated
// resemblance ≥ o.Threshold, exactly once, each verified by exact Hamming
// distance: exactly the set a comparison of all pairs gives (a subset with
// an approximate plan). It runs on a snapshot taken at the call, so writes
// may proceed meanwhile and fn may call any method of d. fn is called on
// the calling goroutine as pairs are found, in no particular order; an
// error from fn stops the run and is returned. fn must not call Close,
// which waits for the run to end.
func (d *DB) Pairs(ctx context.Context, o PairsOptions, fn func(Pair) error) (_ PairsStats, err error) {
	if err := d.live(); err != nil {
		return PairsStats{}, err
	}
	if fn == nil {
		return PairsStats{}, fmt.Errorf("fpdb: pairs: %w: no function to call", ErrInvalidOptions)
	}
	ctx, snap, end, err := d.beginPairs(ctx, o, false)
	if err != nil {
		return PairsStats{}, err
	}
	defer end(&err)
	return snap.run(ctx, o, func(a, b, dist int) error { return fn(snap.pair(a, b, dist)) })
}

// beginPairs enters an all-pairs run as a long call and takes its snapshot.
// When o.Detached is set, it then ends the call in flight and calls
// o.Detached: the run goes on with the caller's ctx. The caller defers end
// with the run's error.
func (d *DB) beginPairs(ctx context.Context, o PairsOptions, withAdded bool) (_ context.Context, _ *pairsSnapshot, end func(*error), err error) {
	parent := ctx
	ctx, leave, err := d.enterLong(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := d.pairsSnapshot(ctx, o, withAdded)
	if err != nil {
		leave(&err)
		return nil, nil, nil, err
	}
	if o.Detached == nil {
		return ctx, s, leave, nil
	}
	var none error
	leave(&none)
	o.Detached()
	return parent, s, func(*error) {}, nil
}

// pairsSnapshot is what an all-pairs run needs of the database, copied
// under the read lock.
type pairsSnapshot struct {
	k    int
	fps  *index.Snapshot
	ext  []string   // by snapshot position
	hash [][16]byte // by snapshot position
	// added is when each document was added (Doc.Added, Unix ns) and
	// words its number of words, read only for Clusters' policies that
	// need them.
	added []int64
	words []int
	// value and hasValue are ClusterOptions.Value of each document, read
	// only for KeepMax and KeepMin.
	value    []float64
	hasValue []bool
	// prefer is ClusterOptions.Kept of each document, when set.
	prefer []bool
}

func (d *DB) pairsSnapshot(ctx context.Context, o PairsOptions, withAdded bool) (*pairsSnapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validThreshold(o.Threshold); err != nil {
		return nil, fmt.Errorf("fpdb: pairs: %w", err)
	}
	// The plan is checked on an empty database too, as a query's is.
	if err := d.ix.Layout().CheckPlan(index.Radius(d.params.K, o.Threshold), o.Plan); err != nil {
		return nil, planError("pairs", err)
	}
	d.mu.RLock()
	s := &pairsSnapshot{k: d.params.K, fps: d.ix.Snapshot()}
	n := s.fps.Len()
	s.ext = make([]string, n)
	s.hash = make([][16]byte, n)
	for p := range n {
		iid := s.fps.ID(p)
		s.ext[p], s.hash[p] = d.docs.ext(iid), d.docs.hash(iid)
	}
	if !withAdded {
		d.mu.RUnlock()
		return s, nil
	}
	snap := d.pdb.NewSnapshot()
	d.mu.RUnlock()
	defer snap.Close()
	s.added = make([]int64, n)
	s.words = make([]int, n)
	p := 0
	_, err := eachRecord(ctx, snap, func(iid uint32, doc *Doc) error {
		for p < n && s.fps.ID(p) < iid {
			p++
		}
		if p < n && s.fps.ID(p) == iid {
			s.added[p], s.words[p] = doc.Added.UnixNano(), doc.Words
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fpdb: clusters: %w", err)
	}
	return s, nil
}

// run finds the pairs of the snapshot and calls fn with their snapshot
// positions (a < b) and distance.
func (s *pairsSnapshot) run(ctx context.Context, o PairsOptions, fn func(a, b int, dist int) error) (PairsStats, error) {
	rh := index.Radius(s.k, o.Threshold)
	st, err := s.fps.Pairs(ctx, rh, index.PairOptions{Plan: o.Plan, Progress: o.Progress}, func(pr index.Pair) error {
		return fn(pr.A, pr.B, pr.Dist)
	})
	if err != nil {
		if errors.Is(err, index.ErrInfeasible) || errors.Is(err, index.ErrInvalidPlan) {
			return st, planError("pairs", err)
		}
		return st, err
	}
	return st, nil
}

// pair returns the Pair of snapshot positions a and b.
func (s *pairsSnapshot) pair(a, b, dist int) Pair {
	var zero [16]byte
	return Pair{
		A: s.ext[a], B: s.ext[b],
		Similarity: index.Similarity(s.k, dist),
		Hamming:    dist,
		Exact:      s.hash[a] != zero && s.hash[a] == s.hash[b],
	}
}

// Keep says which document of a cluster Clusters keeps.
type Keep int

// Keep policies.
const (
	// KeepNone chooses no document: Cluster.Keep and Drop stay empty.
	KeepNone Keep = iota
	// KeepOldest keeps the document added first (the earliest Doc.Added;
	// on a tie, the one stored first).
	KeepOldest
	// KeepFirst keeps the document whose id sorts first (byte order).
	KeepFirst
	// KeepNewest keeps the document added last (on a tie, the one stored
	// last).
	KeepNewest
	// KeepLongest keeps the document with the most words (on a tie, the
	// one stored first).
	KeepLongest
	// KeepShortest keeps the document with the fewest words (on a tie,
	// the one stored first).
	KeepShortest
	// KeepStored keeps the document stored first (storing order, which is
	// the order of the input for a loader writing it in order; unlike
	// KeepOldest it does not depend on the clock).
	KeepStored
	// KeepMax keeps the document with the greatest ClusterOptions.Value (on
	// a tie, the one stored first; documents without a value come after
	// those with one).
	KeepMax
	// KeepMin keeps the document with the least ClusterOptions.Value
	// (ties and documents without a value as for KeepMax).
	KeepMin
)

// ClusterMode says how Clusters groups near duplicates.
type ClusterMode int

// Cluster modes.
const (
	// ClusterComponents makes every connected component of the pair graph
	// a cluster: members may be linked only through a chain of near
	// duplicates.
	ClusterComponents ClusterMode = iota
	// ClusterCenters makes clusters that do not chain (star clustering):
	// documents are taken in the Keep policy's order (storing order under
	// KeepNone); one that is in no cluster yet becomes a center, and its
	// near duplicates that are in no cluster yet join it, nearest first,
	// up to MaxSize members. Every member is then within the threshold of
	// its center. A center none of whose near duplicates is left makes no
	// cluster (it is kept, as a document without near duplicates is).
	ClusterCenters
)

// Cluster is a group of near-duplicate documents: a connected component of
// the graph whose edges are the pairs with resemblance ≥ the threshold.
// Near duplication is not transitive: two members of a cluster may be far
// apart, linked only through a chain of near duplicates.
type Cluster struct {
	// IDs are the members, in the order they were stored.
	IDs []string
	// Pairs is the number of near-duplicate pairs inside the cluster.
	Pairs int
	// Keep is the member to keep under the policy, and Drop the others
	// (in the order stored); both empty under KeepNone, except that a
	// ClusterCenters cluster keeps its center.
	Keep string
	Drop []string
	// Center is the member the others were compared with for Cohesion: the
	// center under ClusterCenters, else Keep, else the first stored.
	Center string
	// Similarities are the estimated resemblances of the members (in IDs'
	// order) to Center (1 for Center itself), at least 0 as compare
	// reports them (an estimate of unrelated fingerprints can fall below).
	Similarities []float64
	// Cohesion is the least estimated resemblance of a member to Center
	// (1 for identical fingerprints). Below the threshold, the cluster
	// chains: some members resemble the center only through others.
	Cohesion float64
}

// ClusterOptions configure Clusters.
type ClusterOptions struct {
	PairsOptions
	// Keep chooses the member to keep in each cluster (and, under
	// ClusterCenters, the order in which documents become centers).
	Keep Keep
	// Mode is ClusterComponents (the default) or ClusterCenters.
	Mode ClusterMode
	// MaxSize caps the members of a ClusterCenters cluster, its center
	// included (0: no cap; 1 is refused).
	MaxSize int
	// Value gives each document's value for KeepMax and KeepMin (ok false:
	// the document has none); it is called once per stored document, from
	// the calling goroutine, and must be set exactly for those policies.
	Value func(id string) (v float64, ok bool)
	// Exclude, when not nil, is called once per stored document, from the
	// calling goroutine, before the pairs are searched; the documents it
	// returns true for take no part in the clusters: they are in none, and
	// their pairs link no one (the clusters are those of the database
	// without them, and PairsStats.Pairs does not count their pairs). A
	// caller uses it to leave out stored documents that
	// its own run has disowned (a record read as bad this time, whose id
	// an earlier run stored).
	Exclude func(id string) bool
	// Kept, when not nil, is called once per stored document, from the
	// calling goroutine; the documents it returns true for are kept
	// whatever the policy: they come before all others in the Keep
	// policy's order (the policy orders each part), so a cluster that
	// holds one keeps one of them and under ClusterCenters they become
	// centers first, and a pair of two of them links no one (neither is
	// dropped for the other; PairsStats.Pairs does not count it). A caller
	// uses it to keep the documents of an archive, published before, over
	// new near duplicates of them.
	Kept func(id string) bool
}

// Clusters groups the stored documents into clusters of near duplicates
// (union-find over the verified pairs of Pairs with o.Threshold; documents
// without any near duplicate are in no cluster). Clusters are sorted by
// size, largest first, then by their first member's id.
func (d *DB) Clusters(ctx context.Context, o ClusterOptions) (_ []Cluster, _ PairsStats, err error) {
	if err := d.live(); err != nil {
		return nil, PairsStats{}, err
	}
	switch {
	case o.Keep < KeepNone || o.Keep > KeepMin:
		return nil, PairsStats{}, fmt.Errorf("fpdb: clusters: %w: unknown keep policy %d", ErrInvalidOptions, o.Keep)
	case (o.Keep == KeepMax || o.Keep == KeepMin) != (o.Value != nil):
		return nil, PairsStats{}, fmt.Errorf("fpdb: clusters: %w: Value must be set for KeepMax and KeepMin, and only for them", ErrInvalidOptions)
	case o.Mode != ClusterComponents && o.Mode != ClusterCenters:
		return nil, PairsStats{}, fmt.Errorf("fpdb: clusters: %w: unknown mode %d", ErrInvalidOptions, o.Mode)
	case o.MaxSize < 0 || o.MaxSize == 1:
		return nil, PairsStats{}, fmt.Errorf("fpdb: clusters: %w: MaxSize %d (want 0 or at least 2)", ErrInvalidOptions, o.MaxSize)
	case o.MaxSize > 0 && o.Mode != ClusterCenters:
		return nil, PairsStats{}, fmt.Errorf("fpdb: clusters: %w: MaxSize needs ClusterCenters (a connected component cannot be cut)", ErrInvalidOptions)
	}
	records := o.Keep == KeepOldest || o.Keep == KeepNewest || o.Keep == KeepLongest || o.Keep == KeepShortest
	ctx, s, end, err := d.beginPairs(ctx, o.PairsOptions, records)
	if err != nil {
		return nil, PairsStats{}, err
	}
	defer end(&err)
	if o.Value != nil {
		s.value, s.hasValue = make([]float64, len(s.ext)), make([]bool, len(s.ext))
		for p, id := range s.ext {
			s.value[p], s.hasValue[p] = o.Value(id)
			if s.hasValue[p] && math.IsNaN(s.value[p]) {
				s.hasValue[p] = false
			}
		}
	}
	if o.Kept != nil {
		s.prefer = make([]bool, len(s.ext))
		for p, id := range s.ext {
			s.prefer[p] = o.Kept(id)
		}
	}
	var excluded []bool // by snapshot position
	if o.Exclude != nil {
		excluded = make([]bool, len(s.ext))
		for p, id := range s.ext {
			excluded[p] = o.Exclude(id)
		}
	}
	var edges []clusterEdge
	var dropped int64
	st, err := s.run(ctx, o.PairsOptions, func(a, b, dist int) error {
		if excluded != nil && (excluded[a] || excluded[b]) || s.prefer != nil && s.prefer[a] && s.prefer[b] {
			dropped++
			return nil
		}
		edges = append(edges, clusterEdge{int32(a), int32(b), int32(dist)})
		return nil
	})
	st.Pairs -= dropped
	if err != nil {
		return nil, st, err
	}
	var groups [][]int32 // members by snapshot position, in storing order
	var centers []int32  // under ClusterCenters
	if o.Mode == ClusterCenters {
		groups, centers = s.centerGroups(edges, o)
	} else {
		groups = componentGroups(s.fps.Len(), edges)
	}
	of := make(map[int32]int, 2*len(edges)) // cluster of each member
	for i, g := range groups {
		for _, p := range g {
			of[p] = i
		}
	}
	pairs := make([]int, len(groups))
	for _, e := range edges {
		if ca, ok := of[e.a]; ok {
			if cb, ok := of[e.b]; ok && ca == cb {
				pairs[ca]++
			}
		}
	}
	out := make([]Cluster, 0, len(groups))
	for i, ps := range groups {
		c := Cluster{Pairs: pairs[i]}
		for _, p := range ps {
			c.IDs = append(c.IDs, s.ext[p])
		}
		keep := -1 // index in ps
		switch {
		case o.Mode == ClusterCenters:
			keep = slices.Index(ps, centers[i])
		case o.Keep != KeepNone:
			keep = 0
			for j := range ps {
				if s.before(ps[j], ps[keep], o.Keep) {
					keep = j
				}
			}
		}
		center := max(keep, 0)
		c.Center = c.IDs[center]
		c.Cohesion = 1
		c.Similarities = make([]float64, len(ps))
		for j, p := range ps {
			c.Similarities[j] = max(0, index.Similarity(s.k, bitvec.Hamming(s.fps.Fingerprint(int(p)), s.fps.Fingerprint(int(ps[center])))))
			c.Cohesion = min(c.Cohesion, c.Similarities[j])
		}
		if keep >= 0 {
			c.Keep = c.IDs[keep]
			c.Drop = slices.Concat(c.IDs[:keep], c.IDs[keep+1:])
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Cluster) int {
		if c := cmp.Compare(len(b.IDs), len(a.IDs)); c != 0 {
			return c
		}
		return cmp.Compare(a.IDs[0], b.IDs[0])
	})
	return out, st, nil
}

// clusterEdge is a pair of snapshot positions (a < b) and their distance.
type clusterEdge struct{ a, b, dist int32 }

// before reports whether the document at snapshot position p comes before
// the one at q in the order of policy k (the one it keeps first), the
// documents ClusterOptions.Kept keeps first. Ties go to the one
// stored first (the lower position), except under KeepNewest.
func (s *pairsSnapshot) before(p, q int32, k Keep) bool {
	if s.prefer != nil && s.prefer[p] != s.prefer[q] {
		return s.prefer[p]
	}
	switch k {
	case KeepOldest:
		return s.added[p] < s.added[q] || s.added[p] == s.added[q] && p < q
	case KeepNewest:
		return s.added[p] > s.added[q] || s.added[p] == s.added[q] && p > q
	case KeepFirst:
		return s.ext[p] < s.ext[q] || s.ext[p] == s.ext[q] && p < q
	case KeepLongest:
		return s.words[p] > s.words[q] || s.words[p] == s.words[q] && p < q
	case KeepShortest:
		return s.words[p] < s.words[q] || s.words[p] == s.words[q] && p < q
	case KeepMax, KeepMin:
		if s.hasValue[p] != s.hasValue[q] {
			return s.hasValue[p]
		}
		if !s.hasValue[p] || s.value[p] == s.value[q] {
			return p < q
		}
		return (s.value[p] > s.value[q]) == (k == KeepMax)
	}
	return p < q
}

// componentGroups returns the connected components of the pair graph with
// at least one edge, each in storing order (union-find; the smaller root
// wins, for determinism).
func componentGroups(n int, edges []clusterEdge) [][]int32 {
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	linked := make([]bool, n)
	for _, e := range edges {
		a, b := find(e.a), find(e.b)
		if b < a {
			a, b = b, a
		}
		parent[b] = a
		linked[e.a], linked[e.b] = true, true
	}
	index := map[int32]int{}
	var groups [][]int32
	for p := range int32(n) {
		if !linked[p] {
			continue
		}
		r := find(p)
		i, ok := index[r]
		if !ok {
			i = len(groups)
			index[r] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	return groups
}

// centerGroups returns the ClusterCenters clusters (members in storing
// order) and their centers.
func (s *pairsSnapshot) centerGroups(edges []clusterEdge, o ClusterOptions) ([][]int32, []int32) {
	type nb struct{ p, dist int32 }
	adj := map[int32][]nb{}
	for _, e := range edges {
		adj[e.a] = append(adj[e.a], nb{e.b, e.dist})
		adj[e.b] = append(adj[e.b], nb{e.a, e.dist})
	}
	order := make([]int32, 0, len(adj))
	for p := range adj {
		order = append(order, p)
	}
	slices.SortFunc(order, func(p, q int32) int {
		switch {
		case p == q:
			return 0
		case s.before(p, q, o.Keep):
			return -1
		}
		return 1
	})
	taken := make(map[int32]bool, len(adj))
	var groups [][]int32
	var centers []int32
	for _, c := range order {
		if taken[c] {
			continue
		}
		var free []nb
		for _, x := range adj[c] {
			// A kept document (ClusterOptions.Kept) is a center or in no
			// cluster, never dropped for another.
			if !taken[x.p] && (s.prefer == nil || !s.prefer[x.p]) {
				free = append(free, x)
			}
		}
		if len(free) == 0 {
			continue
		}
		slices.SortFunc(free, func(x, y nb) int {
			if d := cmp.Compare(x.dist, y.dist); d != 0 {
				return d
			}
			if s.before(x.p, y.p, o.Keep) {
				return -1
			}
			return 1
		})
		if o.MaxSize > 0 && len(free) > o.MaxSize-1 {
			free = free[:o.MaxSize-1]
		}
		g := []int32{c}
		taken[c] = true
		for _, x := range free {
			g = append(g, x.p)
			taken[x.p] = true
		}
		slices.Sort(g)
		groups = append(groups, g)
		centers = append(centers, c)
	}
	return groups, centers
}
