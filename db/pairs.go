package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fpdb/fpdb/index"
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
	// added is when each document was added (Doc.Added, Unix ns), read
	// only for Clusters' KeepOldest.
	added []int64
}

func (d *DB) pairsSnapshot(ctx context.Context, o PairsOptions, withAdded bool) (*pairsSnapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validThreshold(o.Threshold); err != nil {
		return nil, fmt.Errorf("fpdb: pairs: %w", err)
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
	p := 0
	_, err := eachRecord(ctx, snap, func(iid uint32, doc *Doc) error {
		for p < n && s.fps.ID(p) < iid {
			p++
		}
		if p < n && s.fps.ID(p) == iid {
			s.added[p] = doc.Added.UnixNano()
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
		if errors.Is(err, index.ErrInfeasible) {
			return st, fmt.Errorf("fpdb: pairs: %w", err)
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
	// (in the order stored); both empty under KeepNone.
	Keep string
	Drop []string
}

// ClusterOptions configure Clusters.
type ClusterOptions struct {
	PairsOptions
	// Keep chooses the member to keep in each cluster.
	Keep Keep
}

// Clusters groups the stored documents into clusters of near duplicates
// (union-find over the verified pairs of Pairs with o.Threshold; documents
// without any near duplicate are in no cluster). Clusters are sorted by
// size, largest first, then by their first member's id.
func (d *DB) Clusters(ctx context.Context, o ClusterOptions) (_ []Cluster, _ PairsStats, err error) {
	if o.Keep < KeepNone || o.Keep > KeepFirst {
		return nil, PairsStats{}, fmt.Errorf("fpdb: clusters: unknown keep policy %d", o.Keep)
	}
	ctx, s, end, err := d.beginPairs(ctx, o.PairsOptions, o.Keep == KeepOldest)
	if err != nil {
		return nil, PairsStats{}, err
	}
	defer end(&err)
	n := s.fps.Len()
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
	var ends []int32 // one end of each pair
	st, err := s.run(ctx, o.PairsOptions, func(pa, pb, _ int) error {
		a, b := find(int32(pa)), find(int32(pb))
		if a != b {
			// Union by position: the smaller root wins, for determinism.
			if b < a {
				a, b = b, a
			}
			parent[b] = a
		}
		ends = append(ends, int32(pa))
		return nil
	})
	if err != nil {
		return nil, st, err
	}
	edges := make(map[int32]int) // pairs per root
	for _, e := range ends {
		edges[find(e)]++
	}
	members := map[int32][]int32{}
	for p := range int32(n) {
		r := find(p)
		if r != p || edges[r] > 0 {
			members[r] = append(members[r], p)
		}
	}
	out := make([]Cluster, 0, len(members))
	for r, ps := range members {
		c := Cluster{Pairs: edges[r]}
		for _, p := range ps {
			c.IDs = append(c.IDs, s.ext[p])
		}
		keep := -1
		switch o.Keep {
		case KeepFirst:
			keep = 0
			for i, id := range c.IDs {
				if id < c.IDs[keep] {
					keep = i
				}
			}
		case KeepOldest:
			keep = 0 // members are in storing order: the first wins a tie
			for i, p := range ps {
				if s.added[p] < s.added[ps[keep]] {
					keep = i
				}
			}
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
