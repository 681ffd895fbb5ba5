package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// plantedData returns n random 512-bit fingerprints with planted near
// duplicates: every tenth document is a copy of an earlier one with 2 to
// 80 bits flipped (resemblance 0.69 to 0.99).
func plantedData(seed uint64, n int) []db.Input {
	rng := rand.New(rand.NewPCG(seed, 7))
	docs := make([]db.Input, n)
	for i := range docs {
		fp := randomFP(rng, 512)
		if i >= 10 && i%10 == 0 {
			fp = nearFP(rng, docs[rng.IntN(i)].Fingerprint, 2+rng.IntN(79))
		}
		docs[i] = db.Input{ID: fmt.Sprintf("doc%05d", i), Fingerprint: fp, Added: time.Unix(1700000000+int64(i), 0)}
	}
	return docs
}

// TestEquivalence checks that a three-node cluster (4 shards × 2
// replicas) answers exactly as one database on the same data: queries at
// three thresholds, all pairs, and their clusters.
func TestEquivalence(t *testing.T) {
	n, queries := 20000, 500
	if testing.Short() {
		n, queries = 4000, 100
	}
	ctx := context.Background()
	tc := startCluster(t, 3, 4, 2, nil)
	docs := plantedData(1, n)

	one, err := db.Open(t.TempDir(), &db.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if _, err := one.AddBatch(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var seq uint64
	for i := 0; i < n; i += 1000 {
		// Writes go through different nodes.
		res, err := tc.nodes[(i/1000)%3].Router().Add(ctx, docs[i:min(i+1000, n)], AddOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seq = max(seq, res[0].Seq)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		got, err := tc.nodes[1].Router().Len(ctx, seq)
		if err == nil && got == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster holds %d documents (%v), want %d", got, err, n)
		}
	}

	rng := rand.New(rand.NewPCG(2, 3))
	thresholds := []float64{0.7, 0.8, 0.9}
	total := 0
	for q := 0; q < queries; q++ {
		var fp []uint64
		if q%2 == 0 { // near a stored document
			fp = nearFP(rng, docs[rng.IntN(n)].Fingerprint, rng.IntN(60))
		} else {
			fp = randomFP(rng, 512)
		}
		r := thresholds[q%3]
		want, err := one.QueryFingerprint(ctx, fp, db.QueryOptions{Threshold: r})
		if err != nil {
			t.Fatal(err)
		}
		got, err := tc.nodes[q%3].Router().QueryDoc(ctx, &db.Doc{Fingerprint: fp}, QueryOptions{Threshold: r, MinSeq: seq})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want.Matches, func(a, b db.Match) bool { return a.ID == b.ID && a.Hamming == b.Hamming }) {
			t.Fatalf("query %d at r = %v: cluster %v, one database %v", q, r, ids(got), ids(want.Matches))
		}
		total += len(got)
	}
	t.Logf("%d queries, %d matches, all equal", queries, total)

	for _, r := range thresholds {
		var want []Edge
		if _, err := one.Pairs(ctx, db.PairsOptions{Threshold: r}, func(p db.Pair) error {
			want = append(want, orient(p))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(want, cmpEdge)
		got, err := tc.nodes[2].Router().Pairs(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got.Pairs, want, func(a, b Edge) bool { return a.A == b.A && a.B == b.B && a.Hamming == b.Hamming }) {
			t.Fatalf("pairs at r = %v: cluster %d pairs, one database %d", r, len(got.Pairs), len(want))
		}
		cl, _, err := one.Clusters(ctx, db.ClusterOptions{PairsOptions: db.PairsOptions{Threshold: r}})
		if err != nil {
			t.Fatal(err)
		}
		var wantC [][]string
		for _, c := range cl {
			wantC = append(wantC, slices.Sorted(slices.Values(c.IDs)))
		}
		gotC := Components(got.Pairs)
		slices.SortFunc(wantC, func(a, b []string) int { return cmpGroups(a, b) })
		if !slices.EqualFunc(gotC, wantC, slices.Equal[[]string]) {
			t.Fatalf("clusters at r = %v: cluster %d, one database %d", r, len(gotC), len(wantC))
		}
		t.Logf("r = %v: %d pairs, %d clusters, equal (pin %d)", r, len(got.Pairs), len(gotC), got.Pin)
	}
}

func cmpEdge(a, b Edge) int {
	if a.A != b.A {
		if a.A < b.A {
			return -1
		}
		return 1
	}
	if a.B < b.B {
		return -1
	}
	if a.B > b.B {
		return 1
	}
	return 0
}

func cmpGroups(a, b []string) int {
	if len(a) != len(b) {
		return len(b) - len(a)
	}
	if a[0] < b[0] {
		return -1
	}
	if a[0] > b[0] {
		return 1
	}
	return 0
}

func ids(ms []db.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%s/%d", m.ID, m.Hamming)
	}
	return out
}
