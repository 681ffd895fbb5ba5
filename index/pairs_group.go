package index

import (
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fpdb/fpdb/internal/bitvec"
)

// All pairs group by group. A probe plan finds a pair in a group g probed
// at radius r when the two documents' values of g are within r bits. So,
// instead of looking up each document's neighbour values one document at a
// time (random reads of posting lists and then of the candidates'
// fingerprints), the join takes the groups one at a time: it sorts the
// documents by their value of the group (a counting sort) with a copy of
// their fingerprints in that order, then compares the documents of each
// value with those of the same value and of every greater value within
// the radius. The fingerprints compared sit side by side, so the join is
// bound by the comparisons, not by memory latency. A pair is emitted only
// from the first group in which the two are within its radius (from one
// group, once), and only when the groups within radius reach the count
// filter: the same pairs as the per-document path.

// maxJoinWidth is the widest group the join sorts by (a count per value:
// 2^w of them).
const maxJoinWidth = 24

// joinChunk is the number of values of a group a worker takes at a time.
const joinChunk = 1024

// groupJoin is the state of a group-by-group run shared by its workers.
type groupJoin struct {
	s       *Snapshot
	layout  *Layout // the groups: the index's or the run's own
	workers int     // goroutines of a sort
	groups  []int   // the probed groups, in order
	// first[i] is the first unit of groups[i]; units are chunks of
	// joinChunk values.
	first []int
	units int
	// sorted[i] is groups[i] sorted, built by the first worker that needs
	// it and dropped once its units are done.
	once    []sync.Once
	sorted  []*sortedGroup
	pending []atomic.Int64 // units of each group not yet done
	mu      sync.Mutex
	// free holds the arrays of dropped groups for the next sorts: a run
	// allocates them for the groups sorted at once, not for every group
	// (64 MB of fingerprints per group at 1 M documents).
	free []*sortedGroup
}

// sortedGroup is the snapshot sorted by the value of one group: the
// documents of value u are slots start[u] .. start[u+1]−1, slot i holds
// position pos[i] and its fingerprint at fps[i*stride:].
type sortedGroup struct {
	start []uint32
	pos   []int32
	fps   []uint64
	next  []uint32 // scratch of the sort: offsets per part and value
	vals  []uint32 // scratch of the sort: each position's value
}

// joinable reports whether a probe plan of the snapshot on layout l runs
// group by group whatever its radii: no group is too wide (see
// newGroupJoin).
func (s *Snapshot) joinable(l *Layout) bool {
	return !slices.ContainsFunc(l.Widths, func(w int) bool { return !joinWidth(w, len(s.ids)) })
}

// joinWidth reports whether a group of w bits can be sorted by for n
// documents: at most maxJoinWidth bits, and at most 8 values per document
// (more, and the count per value would cost more than the comparisons:
// the per-document path is cheaper).
func joinWidth(w, n int) bool { return w <= maxJoinWidth && 1<<w <= 8*n }

// newGroupJoin returns the join of the groups probed at radii (−1: not
// probed), or nil when a probed group is too wide (joinWidth).
func newGroupJoin(s *Snapshot, l *Layout, radii []int, workers int) *groupJoin {
	j := &groupJoin{s: s, layout: l, workers: workers}
	for g, r := range radii {
		if r < 0 {
			continue
		}
		if !joinWidth(l.Widths[g], len(s.ids)) {
			return nil
		}
		j.groups = append(j.groups, g)
		j.first = append(j.first, j.units)
		j.units += (1<<l.Widths[g] + joinChunk - 1) / joinChunk
	}
	j.once = make([]sync.Once, len(j.groups))
	j.sorted = make([]*sortedGroup, len(j.groups))
	j.pending = make([]atomic.Int64, len(j.groups))
	for i := range j.groups {
		j.pending[i].Store(int64(j.unitsOf(i)))
	}
	return j
}

// unitsOf returns the number of units of groups[i].
func (j *groupJoin) unitsOf(i int) int {
	if i+1 < len(j.first) {
		return j.first[i+1] - j.first[i]
	}
	return j.units - j.first[i]
}

// unit returns the index in groups and the value range of unit k.
func (j *groupJoin) unit(k int) (i int, lo, hi uint32) {
	i = len(j.first) - 1
	for i > 0 && j.first[i] > k {
		i--
	}
	w := j.layout.Widths[j.groups[i]]
	lo = uint32(k-j.first[i]) * joinChunk
	hi = uint32(min(uint64(lo)+joinChunk, uint64(1)<<w))
	return i, lo, hi
}

// group returns groups[i] sorted, sorting it on first use.
func (j *groupJoin) group(i int) *sortedGroup {
	j.once[i].Do(func() {
		j.mu.Lock()
		var sg *sortedGroup
		if k := len(j.free); k > 0 {
			sg, j.free = j.free[k-1], j.free[:k-1]
		}
		j.mu.Unlock()
		sg = j.s.sortBy(j.layout, j.groups[i], sg, j.workers)
		j.mu.Lock()
		j.sorted[i] = sg
		j.mu.Unlock()
	})
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.sorted[i]
}

// done notes that a unit of groups[i] is done, and drops the sorted group
// after its last one.
func (j *groupJoin) done(i int) {
	if j.pending[i].Add(-1) == 0 {
		j.mu.Lock()
		j.free = append(j.free, j.sorted[i])
		j.sorted[i] = nil
		j.mu.Unlock()
	}
}

// sortBy sorts the snapshot by the value of group g (a counting sort, so
// the positions of one value stay increasing) and copies the fingerprints
// in that order, into the arrays of sg when it is not nil. Up to workers
// goroutines sort parts of the positions (the other workers of a run wait
// for the sort), each with a count per value.
func (s *Snapshot) sortBy(l *Layout, g int, sg *sortedGroup, workers int) *sortedGroup {
	n, w, st := len(s.ids), l.Widths[g], l.Starts[g]
	// Parts count and place positions in parallel, each with a count per
	// value: as many as the workers (at most 8) while the counts are not
	// much larger than the documents.
	parts := max(1, min(workers, 8, 4*n>>w))
	if sg == nil {
		sg = new(sortedGroup)
	}
	sg.start = resize(sg.start, 1<<w+1)
	sg.next = resize(sg.next, parts<<w)
	sg.pos = resize(sg.pos, n)
	sg.vals = resize(sg.vals, n)
	sg.fps = resize(sg.fps, n*s.stride)
	clear(sg.next)
	counts := make([][]uint32, parts)
	for q := range parts {
		counts[q] = sg.next[q<<w : (q+1)<<w]
	}
	vals := sg.vals
	// Part q sorts positions [q·n/parts, (q+1)·n/parts): counts first,
	// then, after the offsets, the positions.
	parallel(parts, func(q int) {
		cnt := counts[q]
		for p := q * n / parts; p < (q+1)*n/parts; p++ {
			v := bitvec.Bits(s.fps[p*s.stride:(p+1)*s.stride], st, w)
			vals[p] = v
			cnt[v]++
		}
	})
	placeOffsets(counts, sg.start)
	parallel(parts, func(q int) {
		off := counts[q]
		for p := q * n / parts; p < (q+1)*n/parts; p++ {
			v := vals[p]
			sg.pos[off[v]] = int32(p)
			off[v]++
		}
	})
	// The fingerprints are gathered in slot order: written in order, read
	// at random by independent loads, on every worker.
	gather := max(1, min(workers, n/4096))
	parallel(gather, func(q int) {
		lo, hi := q*n/gather, (q+1)*n/gather
		for i := lo; i < hi; i++ {
			p := int(sg.pos[i])
			copy(sg.fps[i*s.stride:(i+1)*s.stride], s.fps[p*s.stride:(p+1)*s.stride])
		}
	})
	return sg
}

// resize returns a slice of length n, b's array when it is large enough.
func resize[T any](b []T, n int) []T {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]T, n)
}

// join runs unit k: the pairs of the documents of each value of the unit's
// range with the documents of the same value and of greater values within
// the group's radius.
func (w *pairWorker) join(j *groupJoin, k int) {
	s, l := w.s, j.layout
	i, lo, hi := j.unit(k)
	defer j.done(i)
	g := j.groups[i]
	sg := j.group(i)
	wd, r := l.Widths[g], w.radii[g]
	stride := s.stride
	// Two words outside the group reject most unrelated pairs (128 bits
	// differ in about 64) before the whole fingerprints are compared;
	// words holding the group's bits would differ less for pairs found
	// in it.
	f1, f2 := -1, -1
	if last := (l.Starts[g] + wd - 1) / 64; stride >= 4 {
		f1, f2 = (last+1)%stride, (last+2)%stride
	}
	// The values within the radius, as masks: the documents of value u
	// are compared with those of u xor mask, mask by mask, so that each
	// pass reads the chunk's fingerprints and one other region in order.
	w.masks = w.masks[:0]
	bitvec.Neighbors(0, wd, r, func(m uint32, _ int) { w.masks = append(w.masks, m) })
	var compared int64
masks:
	for _, m := range w.masks {
		for u := lo; u < hi; u++ {
			v := u ^ m
			if v < u {
				continue
			}
			a0, a1 := int(sg.start[u]), int(sg.start[u+1])
			b0, b1 := int(sg.start[v]), int(sg.start[v+1])
			for x := a0; x < a1; x++ {
				fa := sg.fps[x*stride : (x+1)*stride]
				y0 := b0
				if v == u {
					y0 = x + 1
				}
				compared += int64(b1 - y0)
				for y := y0; y < b1; y++ {
					fb := sg.fps[y*stride : (y+1)*stride]
					if f1 >= 0 && bits.OnesCount64(fa[f1]^fb[f1])+bits.OnesCount64(fa[f2]^fb[f2]) > w.rh {
						continue
					}
					d := bitvec.Hamming(fa, fb)
					if d > w.rh || !w.joinFirst(l, fa, fb, g) {
						continue
					}
					pa, pb := int(sg.pos[x]), int(sg.pos[y])
					w.emit(Pair{A: min(pa, pb), B: max(pa, pb), Dist: d})
				}
				if x%256 == 255 && w.ctx.Err() != nil {
					break masks // a long list (a common value) stops with the run
				}
			}
			if u%64 == 63 && w.ctx.Err() != nil {
				break masks
			}
		}
	}
	w.postings += int64(sg.start[hi] - sg.start[lo])
	w.ncands += compared
	w.verified += compared
}

// joinFirst reports whether g is the first group in which fa and fb are
// within its probe radius and the groups within radius reach the count
// filter: the pair is emitted from g, once.
func (w *pairWorker) joinFirst(l *Layout, fa, fb []uint64, g int) bool {
	within := func(h int) bool {
		r := w.radii[h]
		if r < 0 {
			return false
		}
		x := bitvec.Bits(fa, l.Starts[h], l.Widths[h]) ^ bitvec.Bits(fb, l.Starts[h], l.Widths[h])
		return bits.OnesCount32(x) <= r
	}
	for h := range g {
		if within(h) {
			return false
		}
	}
	hits := 1
	for h := g + 1; h < len(l.Widths) && hits < w.t; h++ {
		if within(h) {
			hits++
		}
	}
	return hits >= w.t
}
