package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// PairsResult is the answer of Pairs.
type PairsResult struct {
	// Pin is the log sequence the pairs were computed at.
	Pin uint64
	// Pairs are the near-duplicate pairs, A < B, sorted by A then B.
	Pairs []Edge
}

// Pairs returns every pair of stored documents of resemblance ≥ threshold
// at one log sequence: it appends a pin (every replica keeps a checkpoint
// of its shard at the pin), then runs the V·(V+1)/2 pair tasks (i ≤ j):
// a replica of shard i pairs its documents with shard j's at the pin. A
// failed task is sent again, to the shard's other replicas in turn (each
// tried twice at most, or for up to 15 s while replicas answer that the
// shard is unavailable for now: collectShard). A task that sends nothing
// for 30 s has failed.
func (r *Router) Pairs(ctx context.Context, threshold float64) (*PairsResult, error) {
	if threshold <= 0 || threshold > 1 {
		return nil, fmt.Errorf("%w: threshold %v", ErrInvalidOptions, threshold)
	}
	pin, err := r.Pin(ctx)
	if err != nil {
		return nil, err
	}
	v := r.smap.Shards
	type task struct{ i, j int }
	tasks := make(chan task)
	var mu sync.Mutex
	var edges []Edge
	var errs []error
	var wg sync.WaitGroup
	for w := 0; w < min(4, v*(v+1)/2); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tasks {
				got, err := collectShard[Edge](ctx, r, t.i, "pairs", pinRequest{Pin: pin, Other: t.j, Threshold: threshold})
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("pair task (%d, %d): %w", t.i, t.j, err))
				}
				edges = append(edges, got...)
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < v; i++ {
		for j := i; j < v; j++ {
			tasks <- task{i, j}
		}
	}
	close(tasks)
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("fpdb cluster: pairs at %d: %w", pin, errs[0])
	}
	slices.SortFunc(edges, func(a, b Edge) int {
		if c := strings.Compare(a.A, b.A); c != 0 {
			return c
		}
		return strings.Compare(a.B, b.B)
	})
	return &PairsResult{Pin: pin, Pairs: edges}, nil
}

// Components returns the connected components of the pairs' graph (the
// db's ClusterComponents clusters), each sorted by id, largest first, then
// by first id.
func Components(pairs []Edge) [][]string {
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		p, ok := parent[x]
		if !ok {
			parent[x] = x
			return x
		}
		if p == x {
			return x
		}
		root := find(p)
		parent[x] = root
		return root
	}
	for _, p := range pairs {
		a, b := find(p.A), find(p.B)
		if a != b {
			if b < a {
				a, b = b, a
			}
			parent[b] = a
		}
	}
	groups := map[string][]string{}
	for x := range parent {
		root := find(x)
		groups[root] = append(groups[root], x)
	}
	out := make([][]string, 0, len(groups))
	for _, g := range groups {
		slices.Sort(g)
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b []string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a[0], b[0])
	})
	return out
}
