package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/fingerprint"
)

// SkewedWorkload is the real-data case of the plan comparison: synthetic
// Zipf texts fingerprinted exactly as fpdb fingerprints text, grouped in
// near-duplicate clusters whose sizes are heavy-tailed, half of the
// clusters opening with one of a few boilerplate passages. Unlike random
// fingerprints, its group values are far from uniform: a cluster's members
// share most of their group values, and documents with the same
// boilerplate share more of them than chance, so some posting lists are
// thousands of times longer than the mean.
type SkewedWorkload struct {
	K int
	// Flat holds the stored fingerprints (K/64 words each) in arrival
	// order: a random order of all documents but the queries.
	Flat []uint64
	// Queries are further documents drawn from the same clusters (a new
	// submission is most likely a near duplicate of a large cluster).
	Queries [][]uint64
	// Clusters is the number of clusters, Largest the largest one's size,
	// Singletons the number of clusters of one document.
	Clusters, Largest, Singletons int
}

// Skewed workload parameters.
const (
	// skewAlpha is the Pareto exponent of the cluster sizes: Pr[size ≥ s]
	// = s^−α, so about 56 % of the clusters are single documents.
	skewAlpha = 1.2
	// skewTemplates is the number of boilerplate passages; a templated
	// cluster picks passage i with probability ∝ 1/(i+1).
	skewTemplates = 64
	// skewCopyShare is the share of near-duplicates that are exact copies.
	skewCopyShare = 0.1
	// skewMinEdit and skewMaxEdit bound the share of words edited in a
	// near duplicate (log-uniform between them).
	skewMinEdit, skewMaxEdit = 0.002, 0.3
)

type skewCluster struct {
	first, size int // positions in the generation order
	template    int // −1: none
}

// NewSkewedWorkload generates n stored documents and queries query
// documents of about docBytes bytes each, fingerprints them at k bits on
// all cores, and returns their fingerprints. The result depends only on
// the arguments, not on the number of cores.
func NewSkewedWorkload(ctx context.Context, n, queries, k, docBytes int, seed uint64) (*SkewedWorkload, error) {
	if n < 1 || queries < 0 || k < 64 || k%64 != 0 || docBytes < 64 {
		return nil, fmt.Errorf("bench: skewed workload: invalid n=%d queries=%d k=%d doc bytes=%d", n, queries, k, docBytes)
	}
	total := n + queries
	rng := rand.New(rand.NewPCG(seed, 0x736b65776564))
	vocab := NewZipf(50_000, 1.0, seed)
	templates := make([][]string, skewTemplates)
	tz := vocab.Fork(seed ^ 0x74656d706c)
	for i := range templates {
		// From a quarter of a document to a whole one.
		templates[i] = tz.Doc(docBytes/4 + tz.rng.IntN(docBytes*3/4+1))
	}
	tcdf := make([]float64, skewTemplates)
	acc := 0.0
	for i := range tcdf {
		acc += 1 / float64(i+1)
		tcdf[i] = acc
	}
	w := &SkewedWorkload{K: k}
	var clusters []skewCluster
	maxSize := max(1, total/25)
	for at := 0; at < total; {
		size := int(math.Pow(1-rng.Float64(), -1/skewAlpha))
		size = max(1, min(size, maxSize, total-at))
		c := skewCluster{first: at, size: size, template: -1}
		if rng.IntN(2) == 0 {
			i, _ := slices.BinarySearch(tcdf, rng.Float64()*acc)
			c.template = min(i, skewTemplates-1)
		}
		clusters = append(clusters, c)
		w.Largest = max(w.Largest, size)
		if size == 1 {
			w.Singletons++
		}
		at += size
	}
	w.Clusters = len(clusters)

	stride := k / 64
	all := make([]uint64, total*stride)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, runtime.GOMAXPROCS(0))
	for wi := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := fingerprint.NewBuilder(fingerprint.Params{K: k, ShingleWidth: 4, Seed: fingerprint.DefaultSeed})
			if err != nil {
				errs[wi] = err
				return
			}
			for {
				ci := int(next.Add(1) - 1)
				if ci >= len(clusters) || ctx.Err() != nil {
					errs[wi] = ctx.Err()
					return
				}
				if err := skewFill(b, vocab.Fork(seed+uint64(ci)*0x9e3779b97f4a7c15), clusters[ci], templates, docBytes, all); err != nil {
					errs[wi] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	perm := rng.Perm(total)
	for _, p := range perm[:queries] {
		w.Queries = append(w.Queries, slices.Clone(all[p*stride:(p+1)*stride]))
	}
	w.Flat = make([]uint64, 0, n*stride)
	for _, p := range perm[queries:] {
		w.Flat = append(w.Flat, all[p*stride:(p+1)*stride]...)
	}
	return w, nil
}

// skewFill writes the fingerprints of cluster c's documents into all: a
// base text (after its boilerplate, if any) and near duplicates of it,
// each an exact copy or the base with a log-uniform share of its words
// edited by one kind of edit.
func skewFill(b *fingerprint.Builder, z *Zipf, c skewCluster, templates [][]string, docBytes int, all []uint64) error {
	var base []string
	if c.template >= 0 {
		base = append(base, templates[c.template]...)
	}
	base = append(base, z.Doc(docBytes)...)
	stride := b.Params().K / 64
	for m := range c.size {
		words := base
		if m > 0 && z.rng.Float64() >= skewCopyShare {
			share := skewMinEdit * math.Exp(z.rng.Float64()*math.Log(skewMaxEdit/skewMinEdit))
			words = z.Edit(base, EditKind(z.rng.IntN(4)), max(1, int(math.Round(share*float64(len(base))))))
		}
		res, err := b.FromBytes(Render(words))
		if err != nil {
			return fmt.Errorf("bench: skewed document %d: %w", c.first+m, err)
		}
		copy(all[(c.first+m)*stride:], res.FP)
	}
	return nil
}

// PostingSkew describes how uneven the posting lists of a set of
// fingerprints are under a layout, over all groups.
type PostingSkew struct {
	// Lists is the number of non-empty posting lists, MeanLen their mean
	// length and MaxLen the longest.
	Lists   int     `json:"lists"`
	MeanLen float64 `json:"mean_len"`
	MaxLen  int     `json:"max_len"`
	// SeenLen is the mean length of the list a stored document's own group
	// value falls in (Σ len² / Σ len): what an exact-match probe by a
	// stored document reads per group. UniformSeenLen is its expectation
	// for uniformly random fingerprints, 1 + (n − 1)/2^w.
	SeenLen        float64 `json:"seen_len"`
	UniformSeenLen float64 `json:"uniform_seen_len"`
	// Top1Share is the share of all postings in the longest 1 % of the
	// non-empty lists.
	Top1Share float64 `json:"top1_share"`
}

// MeasureSkew counts the posting lists of the fingerprints in flat under
// layout.
func MeasureSkew(layout *index.Layout, flat []uint64) PostingSkew {
	stride := layout.K / 64
	n := len(flat) / stride
	var sk PostingSkew
	var lens []int
	var sumSq, uniform float64
	for g := range layout.M() {
		counts := map[uint32]int{}
		for i := range n {
			counts[layout.Value(flat[i*stride:(i+1)*stride], g)]++
		}
		for _, c := range counts {
			lens = append(lens, c)
			sumSq += float64(c) * float64(c)
			sk.MaxLen = max(sk.MaxLen, c)
		}
		uniform += 1 + float64(n-1)/math.Ldexp(1, layout.Widths[g])
	}
	if n == 0 || len(lens) == 0 {
		return sk
	}
	postings := float64(n) * float64(layout.M())
	sk.Lists = len(lens)
	sk.MeanLen = postings / float64(len(lens))
	sk.SeenLen = sumSq / postings
	sk.UniformSeenLen = uniform / float64(layout.M())
	slices.SortFunc(lens, func(a, b int) int { return b - a })
	top := 0
	for _, c := range lens[:max(1, len(lens)/100)] {
		top += c
	}
	sk.Top1Share = float64(top) / postings
	return sk
}

func (s *Suite) runSkewed(ctx context.Context) error {
	n, q, k := s.Cfg.SkewedDocs, s.Cfg.SkewedQueries, 512
	if n == 0 {
		return nil
	}
	s.logf("skewed n=%d: generating and fingerprinting %d documents of %d bytes", n, n+q, s.Cfg.DocBytes)
	w, err := NewSkewedWorkload(ctx, n, q, k, s.Cfg.DocBytes, s.Cfg.Seed+77)
	if err != nil {
		return err
	}
	layout, err := index.NewLayout(k, DefaultWidths(k))
	if err != nil {
		return err
	}
	skew := MeasureSkew(layout, w.Flat)
	s.logf("skewed n=%d: %d clusters (largest %d, %d single documents); lists: mean %.1f, longest %d, seen by a document %.1f (uniform %.1f), top 1 %% hold %.1f %% of postings",
		n, w.Clusters, w.Largest, w.Singletons, skew.MeanLen, skew.MaxLen, skew.SeenLen, skew.UniformSeenLen, 100*skew.Top1Share)
	st, err := BulkStore(ctx, filepath.Join(s.Cfg.TmpDir, "skewed"), layout, w.Flat)
	if err != nil {
		return err
	}
	res, err := Compare(ctx, k, w.Queries, s.Cfg.SkewedThresholds, s.standardRunners(st.Index, w.Flat), s.Cfg.Compare)
	st.Close()
	if err != nil {
		return err
	}
	s.rep.Plans = append(s.rep.Plans, PlanRun{Workload: SkewedName, N: n, K: k, Widths: layout.Widths, Queries: len(w.Queries), Build: st.Build, Results: res,
		Skew: &skew, Clusters: w.Clusters, LargestCluster: w.Largest})
	s.logResults(res)
	return nil
}

// SkewedName is the workload name of the skewed section's plan run.
const SkewedName = "zipf-clusters"
