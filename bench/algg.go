package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
)

// ErrAlgGInfeasible is returned by AlgG when the layout cannot serve the
// radius (m ≤ rh: no group need match) or when there are more group
// combinations than the caller allows.
var ErrAlgGInfeasible = errors.New("alg.G infeasible")

// ErrNodeLimit is returned by AlgG when a query needed more intersections
// than the caller allows.
var ErrNodeLimit = errors.New("alg.G: node limit reached")

// AlgGStats count the work of one alg.G query.
type AlgGStats struct {
	Combinations float64 // C(m, m−rh)
	Probes       int     // posting lists read (one per group)
	Postings     int     // ids in the lists read
	Nodes        int     // intersections computed (prefixes of combinations)
	Candidates   int     // distinct ids in the union of the combinations' lists
	Verified     int
}

// Binomial returns C(n, r) as a float64 (+Inf when it overflows).
func Binomial(n, r int) float64 {
	if r < 0 || r > n {
		return 0
	}
	f, _ := new(big.Float).SetInt(new(big.Int).Binomial(int64(n), int64(r))).Float64()
	return f
}

// AlgGFeasible reports whether alg.G can run for radius rh on layout l with
// at most maxComb combinations, and why not.
func AlgGFeasible(l *index.Layout, rh int, maxComb float64) (float64, error) {
	m := l.M()
	c := m - rh
	if c < 1 {
		return 0, fmt.Errorf("%w: m = %d groups ≤ rh = %d (no group need match; alg.G needs an index built for this threshold)", ErrAlgGInfeasible, m, rh)
	}
	comb := Binomial(m, c)
	if comb > maxComb {
		return comb, fmt.Errorf("%w: %s combinations C(%d, %d)", ErrAlgGInfeasible, FormatCount(comb), m, c)
	}
	return comb, nil
}

// FormatCount formats a possibly huge count compactly.
func FormatCount(x float64) string {
	if x < 1e6 {
		return fmt.Sprintf("%.0f", x)
	}
	e := math.Floor(math.Log10(x))
	return fmt.Sprintf("%.2fe%.0f", x/math.Pow(10, e), e)
}

// AlgG answers the range query (q, rh) with the paper's alg.G (Manku, Jain,
// Das Sarma, WWW 2007; docs/algorithm.md §2.2): a document within distance rh of q
// matches q exactly in at least c = m − rh of the m groups, so the union,
// over all C(m, c) choices of c groups, of the intersection of those
// groups' exact-match lists holds every answer; each candidate is then
// verified. The exact-match list of group i is the posting list of the
// query's merged value y_i, read with index.Index.Posting. Combinations are
// enumerated depth first, sharing the intersection of common prefixes and
// abandoning a prefix whose intersection is empty; every other combination
// is intersected. maxComb bounds C(m, c) and maxNodes the intersections of
// one query (0: no bound).
func AlgG(ctx context.Context, ix *index.Index, q []uint64, rh int, maxComb float64, maxNodes int) ([]index.Hit, AlgGStats, error) {
	l := ix.Layout()
	var st AlgGStats
	comb, err := AlgGFeasible(l, rh, maxComb)
	st.Combinations = comb
	if err != nil {
		return nil, st, err
	}
	m := l.M()
	c := m - rh
	lists := make([][]uint32, m)
	for i := range m {
		ids, err := ix.Posting(ctx, l.Value(q, i))
		if err != nil {
			return nil, st, err
		}
		lists[i] = ids
		st.Probes++
		st.Postings += len(ids)
	}
	// bufs[d] holds the intersection of the first d+1 chosen lists.
	bufs := make([][]uint32, c)
	found := map[uint32]struct{}{}
	var rec func(depth, from int, cur []uint32) error
	rec = func(depth, from int, cur []uint32) error {
		for i := from; i <= m-(c-depth); i++ {
			st.Nodes++
			if maxNodes > 0 && st.Nodes > maxNodes {
				return ErrNodeLimit
			}
			var next []uint32
			if depth == 0 {
				next = lists[i]
			} else {
				bufs[depth] = intersect(bufs[depth][:0], cur, lists[i])
				next = bufs[depth]
			}
			if len(next) == 0 {
				continue
			}
			if depth == c-1 {
				for _, id := range next {
					found[id] = struct{}{}
				}
				continue
			}
			if st.Nodes%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := rec(depth+1, i+1, next); err != nil {
				return err
			}
		}
		return nil
	}
	if err := rec(0, 0, nil); err != nil {
		return nil, st, err
	}
	st.Candidates = len(found)
	var hits []index.Hit
	for id := range found {
		fp := ix.Fingerprint(id)
		if fp == nil {
			continue
		}
		st.Verified++
		if d := bitvec.Hamming(q, fp); d <= rh {
			hits = append(hits, index.Hit{ID: id, Dist: d})
		}
	}
	slices.SortFunc(hits, func(a, b index.Hit) int {
		if a.Dist != b.Dist {
			return a.Dist - b.Dist
		}
		return int(a.ID) - int(b.ID)
	})
	return hits, st, nil
}

// intersect appends the intersection of sorted a and b to dst.
func intersect(dst, a, b []uint32) []uint32 {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			dst = append(dst, a[i])
			i++
			j++
		}
	}
	return dst
}
