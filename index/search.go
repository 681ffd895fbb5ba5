package index

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// ErrInfeasible is returned when a forced probe plan cannot be exact for the
// radius (its count filter would be below 1).
var ErrInfeasible = errors.New("index: plan cannot be exact for this radius")

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
)

// Plan is a query plan.
type Plan struct {
	Kind PlanKind
	Tau  int
}

// String names the plan as shown by `fpdb query --explain`.
func (p Plan) String() string {
	switch p.Kind {
	case Probe:
		return fmt.Sprintf("probe tau=%d", p.Tau)
	case Scan:
		return "scan"
	}
	return "auto"
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
	Elapsed    time.Duration
}

// MaxTau is the largest group probe radius the planner considers.
const MaxTau = 3

// Cost model constants, in nanoseconds. They are rough figures from
// ../shared/MEASUREMENTS.md; the planner only needs their ratios right.
const (
	costProbe     = 1500.0 // one SeekGE on a posting key through a Pebble iterator
	costPosting   = 10.0   // one posting id read and counted
	costVerify    = 30.0   // one exact Hamming check of a candidate
	costScanWord  = 1.5    // one 64-bit word of the linear scan
	costClearByte = 0.05   // resetting one byte of the counter array
)

// MinHits returns the count filter t = m − ⌊rh/(τ+1)⌋: a document within
// Hamming distance rh of the query has at least t groups within distance τ
// of the query's groups.
func MinHits(m, rh, tau int) int { return m - rh/(tau+1) }

// Choose returns the plan the planner picks for radius rh, with its
// estimated cost in nanoseconds.
func (ix *Index) Choose(rh int) (Plan, float64) {
	n := float64(ix.n)
	best, bestCost := Plan{Kind: Scan}, n*float64(ix.stride)*costScanWord
	m := ix.layout.M()
	for tau := 0; tau <= MaxTau; tau++ {
		t := MinHits(m, rh, tau)
		if t < 1 {
			continue
		}
		var probes, postings, pHit float64
		for _, w := range ix.layout.Widths {
			b := float64(bitvec.BallSize(w, tau))
			probes += b
			p := b / math.Exp2(float64(w))
			postings += n * p
			pHit += p
		}
		// Candidates of random data: n·Pr[Binomial(m, p̄) ≥ t].
		cands := n * binomTail(m, pHit/float64(m), t)
		cost := probes*costProbe + postings*costPosting + cands*costVerify +
			float64(ix.Cap())*costClearByte
		if cost < bestCost {
			best, bestCost = Plan{Kind: Probe, Tau: tau}, cost
		}
	}
	return best, bestCost
}

// binomTail returns Pr[Binomial(m, p) ≥ t].
func binomTail(m int, p float64, t int) float64 {
	if t <= 0 {
		return 1
	}
	if t > m {
		return 0
	}
	s := 0.0
	for j := t; j <= m; j++ {
		lg := lgammaInt(m+1) - lgammaInt(j+1) - lgammaInt(m-j+1)
		s += math.Exp(lg + float64(j)*math.Log(p) + float64(m-j)*math.Log1p(-p))
	}
	return s
}

func lgammaInt(x int) float64 {
	v, _ := math.Lgamma(float64(x))
	return v
}

// Search returns every live document within Hamming distance rh of q,
// sorted by distance then id, using plan p (Auto: the planner's choice).
// Every plan returns exactly the set a linear scan returns.
func (ix *Index) Search(ctx context.Context, q []uint64, rh int, p Plan) ([]Hit, Stats, error) {
	start := time.Now()
	st := Stats{Radius: rh}
	if len(q) != ix.stride {
		return nil, st, fmt.Errorf("%w: %d words, want %d", bitvec.ErrBadFingerprint, len(q), ix.stride)
	}
	if rh < 0 {
		st.Plan = Plan{Kind: Scan}
		return nil, st, nil
	}
	if p.Kind == Auto {
		p, _ = ix.Choose(rh)
	}
	st.Plan = p
	var hits []Hit
	var err error
	switch p.Kind {
	case Scan:
		hits = ix.scan(q, rh, &st)
	case Probe:
		if p.Tau < 0 || MinHits(ix.layout.M(), rh, p.Tau) < 1 {
			return nil, st, fmt.Errorf("%w: tau=%d, radius %d, %d groups", ErrInfeasible, p.Tau, rh, ix.layout.M())
		}
		hits, err = ix.probe(ctx, q, rh, p.Tau, &st)
		if err != nil {
			return nil, st, err
		}
	default:
		return nil, st, fmt.Errorf("index: unknown plan kind %d", p.Kind)
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Dist != b.Dist {
			return a.Dist - b.Dist
		}
		return int(a.ID) - int(b.ID)
	})
	st.Elapsed = time.Since(start)
	return hits, st, nil
}

// scan compares q with every stored fingerprint.
func (ix *Index) scan(q []uint64, rh int, st *Stats) []Hit {
	var hits []Hit
	bitvec.Scan(ix.fps, ix.stride, q, rh, func(i, d int) {
		if ix.Live(uint32(i)) {
			hits = append(hits, Hit{ID: uint32(i), Dist: d})
		}
	})
	st.Verified = ix.n
	return hits
}

// probe runs the count filter over the posting lists of every value within
// tau bits of each query group value, then verifies the candidates.
func (ix *Index) probe(ctx context.Context, q []uint64, rh, tau int, st *Stats) ([]Hit, error) {
	m := ix.layout.M()
	t := MinHits(m, rh, tau)
	st.MinHits = t

	// Probe keys of all groups, in key order: offsets grow with the group
	// index, so sorting within each group sorts them all.
	ys := make([]uint32, 0, m*bitvec.BallSize(ix.layout.Widths[0], tau))
	for i, w := range ix.layout.Widths {
		from := len(ys)
		base := bitvec.Bits(q, ix.layout.Starts[i], w)
		bitvec.Neighbors(base, w, tau, func(u uint32, _ int) {
			ys = append(ys, ix.layout.Offset[i]+u)
		})
		slices.Sort(ys[from:])
	}
	st.Probes = len(ys)

	lo, hi := keys.Range(keys.PrefixPosting)
	it, err := ix.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("index: probe: %w", err)
	}
	defer it.Close()

	c := ix.counters.get(ix.Cap())
	defer ix.counters.put(c)
	limit := uint32(len(c.counts))
	var cands []uint32
	var badID error
	key := make([]byte, 0, 5)
	for j, y := range ys {
		if j%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		key = keys.AppendPosting(key[:0], y)
		if !it.SeekGE(key) || string(it.Key()) != string(key) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("index: probe %d: %w", y, err)
		}
		err = posting.ForEach(v, func(id uint32) {
			st.Postings++
			if id >= limit {
				badID = fmt.Errorf("%w: posting %d names unknown id %d", ErrCorrupt, y, id)
				return
			}
			n := c.counts[id]
			if n == 0 {
				c.touched = append(c.touched, id)
			}
			n++
			c.counts[id] = n
			if int(n) == t {
				cands = append(cands, id)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("%w: posting %d: %w", ErrCorrupt, y, err)
		}
		if badID != nil {
			return nil, badID
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("index: probe: %w", err)
	}
	st.Candidates = len(cands)

	var hits []Hit
	for _, id := range cands {
		fp := ix.Fingerprint(id)
		if fp == nil {
			continue
		}
		st.Verified++
		if d := bitvec.Hamming(q, fp); d <= rh {
			hits = append(hits, Hit{ID: id, Dist: d})
		}
	}
	return hits, nil
}

// counters is a dense hit counter per internal id, reset after each use.
type counters struct {
	counts  []uint8
	touched []uint32
}

type counterPool struct{ p sync.Pool }

func (cp *counterPool) get(n int) *counters {
	c, _ := cp.p.Get().(*counters)
	if c == nil {
		c = &counters{}
	}
	if len(c.counts) < n {
		c.counts = make([]uint8, n)
	}
	return c
}

func (cp *counterPool) put(c *counters) {
	if len(c.touched) > len(c.counts)/16 {
		clear(c.counts)
	} else {
		for _, id := range c.touched {
			c.counts[id] = 0
		}
	}
	c.touched = c.touched[:0]
	cp.p.Put(c)
}
