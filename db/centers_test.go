package db

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
)

// greedyCenters is an independent implementation of ClusterCenters over
// brute-force pairs: documents in policy order (less reports "before"),
// each not yet taken becomes a center of its untaken near duplicates,
// nearest first, up to maxSize members.
func greedyCenters(docs map[string]*Doc, pairs []Pair, less func(a, b *Doc) bool, maxSize int) map[string][]string {
	adj := map[string][]Pair{}
	for _, p := range pairs {
		adj[p.A] = append(adj[p.A], p)
		adj[p.B] = append(adj[p.B], Pair{A: p.B, B: p.A, Hamming: p.Hamming})
	}
	var order []*Doc
	for id := range adj {
		order = append(order, docs[id])
	}
	slices.SortFunc(order, func(a, b *Doc) int {
		if less(a, b) {
			return -1
		}
		if less(b, a) {
			return 1
		}
		return 0
	})
	taken := map[string]bool{}
	out := map[string][]string{}
	for _, c := range order {
		if taken[c.ID] {
			continue
		}
		var free []Pair
		for _, p := range adj[c.ID] {
			if !taken[p.B] {
				free = append(free, p)
			}
		}
		if len(free) == 0 {
			continue
		}
		slices.SortFunc(free, func(x, y Pair) int {
			if c := cmp.Compare(x.Hamming, y.Hamming); c != 0 {
				return c
			}
			if less(docs[x.B], docs[y.B]) {
				return -1
			}
			return 1
		})
		if maxSize > 0 && len(free) > maxSize-1 {
			free = free[:maxSize-1]
		}
		members := []string{c.ID}
		taken[c.ID] = true
		for _, p := range free {
			members = append(members, p.B)
			taken[p.B] = true
		}
		slices.SortFunc(members, func(a, b string) int { return cmp.Compare(docs[a].iid, docs[b].iid) })
		out[c.ID] = members
	}
	return out
}

func TestClusterCenters(t *testing.T) {
	d := openTest(t, "", nil)
	ids := plantedDB(t, d, 4)
	r := rand.New(rand.NewPCG(9, 9))
	k := d.Params().K
	// A chain: each link within 40 bits of the next, the ends 120 apart.
	base := randFP(r, k)
	t0 := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	var chain []Input
	fp := base
	for i := range 4 {
		chain = append(chain, Input{ID: "chain-" + string(rune('a'+i)), Fingerprint: fp, Words: 100 + 50*i, Added: t0.Add(time.Duration(3-i) * time.Hour)})
		next := fp
		for next = nearFP(r, fp, 40); bitvec.Hamming(next, fp) != 40; next = nearFP(r, fp, 40) {
		}
		fp = next
	}
	addBatch(t, d, chain)
	for _, c := range chain {
		ids = append(ids, c.ID)
	}
	docs := allDocs(t, d, ids)
	thr := index.Similarity(k, 40)
	less := map[Keep]func(a, b *Doc) bool{
		KeepNone:     func(a, b *Doc) bool { return a.iid < b.iid },
		KeepOldest:   func(a, b *Doc) bool { return a.Added.Before(b.Added) || a.Added.Equal(b.Added) && a.iid < b.iid },
		KeepNewest:   func(a, b *Doc) bool { return a.Added.After(b.Added) || a.Added.Equal(b.Added) && a.iid > b.iid },
		KeepFirst:    func(a, b *Doc) bool { return a.ID < b.ID },
		KeepLongest:  func(a, b *Doc) bool { return a.Words > b.Words || a.Words == b.Words && a.iid < b.iid },
		KeepShortest: func(a, b *Doc) bool { return a.Words < b.Words || a.Words == b.Words && a.iid < b.iid },
		KeepStored:   func(a, b *Doc) bool { return a.iid < b.iid },
		KeepMax:      byValue(true),
		KeepMin:      byValue(false),
	}
	pairs := bruteForcePairs(docs, k, thr)
	for keep, lf := range less {
		for _, maxSize := range []int{0, 2, 3} {
			want := greedyCenters(docs, pairs, lf, maxSize)
			o := ClusterOptions{PairsOptions: PairsOptions{Threshold: thr}, Keep: keep, Mode: ClusterCenters, MaxSize: maxSize}
			if keep == KeepMax || keep == KeepMin {
				o.Value = testValue
			}
			cs, _, err := d.Clusters(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != len(want) {
				t.Fatalf("keep %d max %d: %d clusters, want %d", keep, maxSize, len(cs), len(want))
			}
			seen := map[string]bool{}
			for _, c := range cs {
				if !slices.Equal(c.IDs, want[c.Center]) || c.Keep != c.Center {
					t.Fatalf("keep %d max %d: cluster %v of center %q (keep %q), want %v", keep, maxSize, c.IDs, c.Center, c.Keep, want[c.Center])
				}
				if maxSize > 0 && len(c.IDs) > maxSize {
					t.Fatalf("cluster of %d over MaxSize %d", len(c.IDs), maxSize)
				}
				if c.Cohesion < thr {
					t.Fatalf("center cluster %v has cohesion %.3f below %.3f", c.IDs, c.Cohesion, thr)
				}
				for j, id := range c.IDs {
					if want := index.Similarity(k, bitvec.Hamming(docs[id].Fingerprint, docs[c.Center].Fingerprint)); c.Similarities[j] != want {
						t.Fatalf("similarity of %q to %q: %v, want %v", id, c.Center, c.Similarities[j], want)
					}
				}
				for _, id := range c.IDs {
					if seen[id] {
						t.Fatalf("%q in two clusters", id)
					}
					seen[id] = true
				}
			}
		}
	}
	// Connected components chain; their cohesion says so.
	cs, _, err := d.Clusters(ctx, ClusterOptions{PairsOptions: PairsOptions{Threshold: thr}, Keep: KeepOldest})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if slices.Contains(c.IDs, "chain-a") {
			if len(c.IDs) != 4 || c.Keep != "chain-d" || c.Center != "chain-d" {
				t.Fatalf("chain component %+v", c)
			}
			want := index.Similarity(k, bitvec.Hamming(docs["chain-a"].Fingerprint, docs["chain-d"].Fingerprint))
			if c.Cohesion != want || c.Cohesion >= thr {
				t.Fatalf("chain cohesion %.3f, want %.3f (below %.3f)", c.Cohesion, want, thr)
			}
		}
	}
	for _, bad := range []ClusterOptions{{MaxSize: 1, Mode: ClusterCenters}, {MaxSize: 5}, {Mode: 7}, {Keep: 99}, {Keep: KeepMax}, {Keep: KeepOldest, Value: testValue}} {
		bad.Threshold = thr
		if _, _, err := d.Clusters(ctx, bad); err == nil {
			t.Fatalf("options %+v accepted", bad)
		}
	}
}

// testValue gives documents a value for KeepMax and KeepMin: a few
// distinct values (so that ties occur), none for some documents.
func testValue(id string) (float64, bool) {
	h := 0
	for _, c := range []byte(id) {
		h = (h*31 + int(c)) % 1009
	}
	return float64(h % 5), h%7 != 0
}

// byValue is the oracle's order of KeepMax (max) or KeepMin.
func byValue(max bool) func(a, b *Doc) bool {
	return func(a, b *Doc) bool {
		va, oka := testValue(a.ID)
		vb, okb := testValue(b.ID)
		switch {
		case oka != okb:
			return oka
		case !oka || va == vb:
			return a.iid < b.iid
		}
		return (va > vb) == max
	}
}

// TestClustersExclude checks ClusterOptions.Exclude against brute force:
// the clusters (both modes) are those of the pairs without the excluded
// documents, and the stats count only those pairs.
func TestClustersExclude(t *testing.T) {
	d := openTest(t, "", nil)
	ids := plantedDB(t, d, 6)
	docs := allDocs(t, d, ids)
	k := d.Params().K
	thr := 0.8
	all := bruteForcePairs(docs, k, thr)
	if len(all) == 0 {
		t.Fatal("no pairs planted")
	}
	r := rand.New(rand.NewPCG(6, 6))
	excluded := map[string]bool{}
	for _, p := range all { // the first of some pairs, often a center
		if r.IntN(3) == 0 {
			excluded[p.A] = true
		}
	}
	var pairs []Pair
	for _, p := range all {
		if !excluded[p.A] && !excluded[p.B] {
			pairs = append(pairs, p)
		}
	}
	if len(pairs) == len(all) || len(pairs) == 0 {
		t.Fatalf("%d of %d pairs left: the test excludes nothing or everything", len(pairs), len(all))
	}
	calls := 0
	exclude := func(id string) bool { calls++; return excluded[id] }
	byStore := func(a, b *Doc) bool { return a.iid < b.iid }
	want := greedyCenters(docs, pairs, byStore, 0)
	cs, st, err := d.Clusters(ctx, ClusterOptions{PairsOptions: PairsOptions{Threshold: thr}, Keep: KeepStored, Mode: ClusterCenters, Exclude: exclude})
	if err != nil {
		t.Fatal(err)
	}
	if calls != len(docs) {
		t.Fatalf("Exclude called %d times for %d stored documents", calls, len(docs))
	}
	if st.Pairs != int64(len(pairs)) {
		t.Fatalf("stats count %d pairs, want %d", st.Pairs, len(pairs))
	}
	if len(cs) != len(want) {
		t.Fatalf("%d center clusters, want %d", len(cs), len(want))
	}
	for _, c := range cs {
		if !slices.Equal(c.IDs, want[c.Center]) {
			t.Fatalf("cluster %v of center %q, want %v", c.IDs, c.Center, want[c.Center])
		}
	}
	cs, _, err = d.Clusters(ctx, ClusterOptions{PairsOptions: PairsOptions{Threshold: thr}, Exclude: exclude})
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, c := range cs {
		got = append(got, c.IDs)
	}
	slices.SortFunc(got, func(a, b []string) int { return cmp.Compare(a[0], b[0]) })
	if wantC := components(docs, pairs); !slices.EqualFunc(got, wantC, slices.Equal) {
		t.Fatalf("%d components, brute force without the excluded %d", len(got), len(wantC))
	}
}

// TestClusterCohesionNotNegative: in a component that chains far, the
// estimated resemblance of its ends falls below 0 (1 − 2h/k with h > k/2);
// Similarities and Cohesion report it as 0, as compare does.
func TestClusterCohesionNotNegative(t *testing.T) {
	d := openTest(t, "", nil)
	k := d.Params().K
	r := rand.New(rand.NewPCG(4, 4))
	fp := randFP(r, k)
	const links, step = 10, 40 // each link flips 40 bits the others do not: the ends are 400 apart
	var chain []Input
	for i := range links {
		chain = append(chain, Input{ID: fmt.Sprintf("link-%02d", i), Fingerprint: slices.Clone(fp)})
		for j := i * step; j < (i+1)*step; j++ {
			fp[j/64] ^= 1 << (j % 64)
		}
	}
	addBatch(t, d, chain)
	cs, _, err := d.Clusters(ctx, ClusterOptions{PairsOptions: PairsOptions{Threshold: index.Similarity(k, step)}, Keep: KeepFirst})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || len(cs[0].IDs) != links {
		t.Fatalf("clusters %+v, want one chain of %d", cs, links)
	}
	if cs[0].Cohesion != 0 {
		t.Errorf("cohesion %v, want 0 (the ends' estimate is %v)", cs[0].Cohesion, index.Similarity(k, step*(links-1)))
	}
	for i, s := range cs[0].Similarities {
		if s < 0 || s > 1 {
			t.Errorf("similarity of %s to the center: %v", cs[0].IDs[i], s)
		}
	}
}

// TestClustersKept: the documents Kept keeps come before all others in the
// keep order (the policy ordering each part), and their pairs with each
// other link no one, checked against the brute-force greedy centers of
// that order over the other pairs; a component keeps a kept member
// whenever it has one.
func TestClustersKept(t *testing.T) {
	d := openTest(t, "", nil)
	ids := plantedDB(t, d, 7)
	docs := allDocs(t, d, ids)
	thr := 0.8
	all := bruteForcePairs(docs, d.Params().K, thr)
	r := rand.New(rand.NewPCG(7, 7))
	kept := map[string]bool{}
	for _, p := range all {
		if r.IntN(3) == 0 {
			kept[p.B] = true // the later of a pair: never first by storing order
		}
		if r.IntN(8) == 0 {
			kept[p.A], kept[p.B] = true, true // both: their pair links no one
		}
	}
	var pairs []Pair
	for _, p := range all {
		if !kept[p.A] || !kept[p.B] {
			pairs = append(pairs, p)
		}
	}
	if len(kept) == 0 || len(pairs) == len(all) {
		t.Fatal("the test keeps nothing, or no pair of two kept documents")
	}
	calls := 0
	keep := func(id string) bool { calls++; return kept[id] }
	order := func(a, b *Doc) bool {
		if kept[a.ID] != kept[b.ID] {
			return kept[a.ID]
		}
		return a.iid < b.iid
	}
	want := greedyCenters(docs, pairs, order, 0)
	cs, st, err := d.Clusters(ctx, ClusterOptions{PairsOptions: PairsOptions{Threshold: thr}, Keep: KeepStored, Mode: ClusterCenters, Kept: keep})
	if err != nil {
		t.Fatal(err)
	}
	if calls != len(docs) {
		t.Fatalf("Kept called %d times for %d stored documents", calls, len(docs))
	}
	if st.Pairs != int64(len(pairs)) {
		t.Fatalf("stats count %d pairs, want %d (those of two kept documents left out)", st.Pairs, len(pairs))
	}
	if len(cs) != len(want) {
		t.Fatalf("%d center clusters, want %d", len(cs), len(want))
	}
	for _, c := range cs {
		if !slices.Equal(c.IDs, want[c.Center]) {
			t.Fatalf("cluster %v of center %q, want %v", c.IDs, c.Center, want[c.Center])
		}
		if n := len(slices.DeleteFunc(slices.Clone(c.IDs), func(id string) bool { return !kept[id] })); n > 1 {
			t.Fatalf("cluster %v holds %d kept documents: one was dropped for another", c.IDs, n)
		}
	}
	cs, _, err = d.Clusters(ctx, ClusterOptions{PairsOptions: PairsOptions{Threshold: thr}, Keep: KeepLongest, Kept: keep})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if slices.ContainsFunc(c.IDs, func(id string) bool { return kept[id] }) && !kept[c.Keep] {
			t.Fatalf("component %v keeps %q, not a kept member", c.IDs, c.Keep)
		}
	}
}
