package bench

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/index"
)

// TestSkewedWorkload checks that the skewed workload is deterministic
// whatever the number of cores, that its posting lists are far from
// uniform, and that every exact plan answers it as the scan does.
func TestSkewedWorkload(t *testing.T) {
	const n, q, k = 4000, 20, 512
	w, err := NewSkewedWorkload(ctx, n, q, k, 1024, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Flat) != n*k/64 || len(w.Queries) != q {
		t.Fatalf("%d words, %d queries", len(w.Flat), len(w.Queries))
	}
	prev := runtime.GOMAXPROCS(1)
	w1, err := NewSkewedWorkload(ctx, n, q, k, 1024, 5)
	runtime.GOMAXPROCS(prev)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.Flat, w1.Flat) || !slices.EqualFunc(w.Queries, w1.Queries, slices.Equal) {
		t.Fatal("the workload depends on the number of cores")
	}
	if w.Largest < 10 || w.Singletons == 0 || w.Clusters >= n {
		t.Fatalf("clusters: %d, largest %d, singletons %d", w.Clusters, w.Largest, w.Singletons)
	}
	layout, err := index.NewLayout(k, DefaultWidths(k))
	if err != nil {
		t.Fatal(err)
	}
	sk := MeasureSkew(layout, w.Flat)
	t.Logf("%d clusters (largest %d); skew %+v", w.Clusters, w.Largest, sk)
	if sk.SeenLen < 3*sk.UniformSeenLen || sk.MaxLen < w.Largest/2 {
		t.Errorf("posting lists not skewed: %+v (largest cluster %d)", sk, w.Largest)
	}

	st, err := BulkStore(ctx, t.TempDir(), layout, w.Flat)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := &Suite{Cfg: SmokeConfig()}
	res, err := Compare(ctx, k, w.Queries, []float64{0.6, 0.8, 0.9}, s.standardRunners(st.Index, w.Flat), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hits := 0.0
	for _, p := range res {
		if p.Latency.N > 0 && !strings.HasPrefix(p.Plan, "approx") && (p.Mismatches != 0 || p.Recall != 1) {
			t.Errorf("%s r=%.2f: %d mismatches, recall %v", p.Plan, p.R, p.Mismatches, p.Recall)
		}
		if p.Plan == RefScanName && p.R == 0.8 {
			hits = p.Hits
		}
	}
	// Queries come from the clusters: most have near duplicates stored.
	if hits < 2 {
		t.Errorf("r=0.8: %.1f answers per query", hits)
	}
}

func TestMeasureSkew(t *testing.T) {
	layout, err := index.NewLayout(64, []int{16, 16, 16, 16})
	if err != nil {
		t.Fatal(err)
	}
	// Two equal fingerprints and one that differs in every group.
	sk := MeasureSkew(layout, []uint64{0x0001_0002_0003_0004, 0x0001_0002_0003_0004, 0x1000_2000_3000_4000})
	want := PostingSkew{Lists: 8, MeanLen: 1.5, MaxLen: 2, SeenLen: 20.0 / 12, Top1Share: 2.0 / 12, UniformSeenLen: 1 + 2.0/65536}
	if sk.Lists != want.Lists || sk.MaxLen != want.MaxLen || math.Abs(sk.MeanLen-want.MeanLen) > 1e-12 || math.Abs(sk.SeenLen-want.SeenLen) > 1e-12 ||
		math.Abs(sk.Top1Share-want.Top1Share) > 1e-12 || math.Abs(sk.UniformSeenLen-want.UniformSeenLen) > 1e-12 {
		t.Fatalf("got %+v, want %+v", sk, want)
	}
}
