package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
)

var ctx = context.Background()

func bruteForce(flat []uint64, stride int, q []uint64, rh int) []index.Hit {
	var hits []index.Hit
	for i := 0; i < len(flat)/stride; i++ {
		if d := bitvec.Hamming(q, flat[i*stride:(i+1)*stride]); d <= rh {
			hits = append(hits, index.Hit{ID: uint32(i), Dist: d})
		}
	}
	slices.SortFunc(hits, func(a, b index.Hit) int {
		if a.Dist != b.Dist {
			return a.Dist - b.Dist
		}
		return int(a.ID) - int(b.ID)
	})
	return hits
}

// TestAlgGMatchesBruteForce checks alg.G against a brute-force scan on a
// small index with the paper's layout, for every feasible radius, and that
// BulkStore and BuildStore (Stage) build stores that answer alike.
func TestAlgGMatchesBruteForce(t *testing.T) {
	const n, k = 3000, 64
	w := NewRandomWorkload(n, k, 20, DefaultPlantSims, 3)
	dir := t.TempDir()
	for _, rh := range []int{0, 3, 6, 9} {
		l, err := index.NewLayout(k, PaperWidths(k, rh))
		if err != nil {
			t.Fatal(err)
		}
		for bi, build := range []func() (*Store, error){
			func() (*Store, error) { return BulkStore(ctx, filepath.Join(dir, "bulk"), l, w.Flat) },
			func() (*Store, error) { return BuildStore(ctx, filepath.Join(dir, "stage"), l, w.Flat, 1000) },
		} {
			st, err := build()
			if err != nil {
				t.Fatal(err)
			}
			for qi, q := range w.Queries {
				want := bruteForce(w.Flat, 1, q, rh)
				got, gs, err := AlgG(ctx, st.Index, q, rh, 1e9, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("build %d rh=%d query %d: alg.G %v, brute force %v", bi, rh, qi, got, want)
				}
				if gs.Combinations != Binomial(l.M(), l.M()-rh) || gs.Probes != l.M() {
					t.Fatalf("stats %+v", gs)
				}
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestAlgGInfeasible(t *testing.T) {
	l, err := index.NewLayout(512, DefaultWidths(512))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AlgGFeasible(l, 40, 1e6); err == nil || !strings.Contains(err.Error(), "≤ rh") {
		t.Fatalf("rh ≥ m: %v", err)
	}
	comb, err := AlgGFeasible(l, 25, 1e6)
	if err == nil || comb != Binomial(32, 7) || !strings.Contains(err.Error(), "3.37e6 combinations") {
		t.Fatalf("C(32,7): %v %v", comb, err)
	}
	if got := Binomial(63, 3); got != 39711 {
		t.Fatalf("C(63,3) = %v, want 39711 (docs/algorithm.md §2.2)", got)
	}
}

func TestCompareExactPlansAgree(t *testing.T) {
	const n, k = 5000, 256
	w := NewRandomWorkload(n, k, 15, DefaultPlantSims, 4)
	l, err := index.NewLayout(k, DefaultWidths(k))
	if err != nil {
		t.Fatal(err)
	}
	st, err := BulkStore(ctx, filepath.Join(t.TempDir(), "s"), l, w.Flat)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := &Suite{Cfg: SmokeConfig()}
	res, err := Compare(ctx, k, w.Queries, []float64{0.8, 0.9, 0.95}, s.standardRunners(st.Index, w.Flat), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res {
		if p.Latency.N == 0 {
			continue
		}
		if !strings.HasPrefix(p.Plan, "approx") && (p.Mismatches != 0 || p.Recall != 1) {
			t.Errorf("%s r=%.2f: %d mismatches, recall %v", p.Plan, p.R, p.Mismatches, p.Recall)
		}
		if p.Plan == RefScanName && p.Speedup != 1 {
			t.Errorf("scan speed-up %v", p.Speedup)
		}
	}
	// Each query has its planted neighbours within the radius.
	for _, p := range res {
		if p.Plan == "scan" && p.R == 0.9 && p.Hits < 2 {
			t.Errorf("r=0.9: %.1f hits per query, want ≥ 2 planted", p.Hits)
		}
	}
}

func TestRandomWorkloadPlantedDistances(t *testing.T) {
	w := NewRandomWorkload(2000, 512, 5, DefaultPlantSims, 9)
	for qi, q := range w.Queries {
		for j, id := range w.Planted[qi] {
			want := int(float64(512)*(1-w.Sims[j])/2 + 0.5)
			if d := bitvec.Hamming(q, w.Flat[int(id)*8:int(id+1)*8]); d != want {
				t.Fatalf("query %d neighbour %d: distance %d, want %d", qi, j, d, want)
			}
		}
	}
}

func TestJaccard(t *testing.T) {
	for _, c := range []struct {
		a, b []uint64
		want float64
	}{
		{nil, nil, 1},
		{[]uint64{1, 2, 3}, nil, 0},
		{[]uint64{1, 2, 3}, []uint64{1, 2, 3}, 1},
		{[]uint64{1, 2, 3, 4}, []uint64{3, 4, 5, 6}, 2.0 / 6},
	} {
		if got := Jaccard(c.a, c.b); got != c.want {
			t.Errorf("Jaccard(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	// Shingles: "a b c d e" has 2 four-word shingles; "a b c d x" shares 1.
	s1, err := ShingleSet([]byte("A b, c D e"), 4)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := ShingleSet([]byte("a B c d x"), 4)
	if len(s1) != 2 || Jaccard(s1, s2) != 1.0/3 {
		t.Fatalf("sets %v %v, Jaccard %v", s1, s2, Jaccard(s1, s2))
	}
}

func TestSimilarPairsMatchesAllPairs(t *testing.T) {
	z := NewZipf(300, 1.0, 5)
	var sets [][]uint64
	for range 6 {
		base := z.Doc(400)
		for _, kind := range []EditKind{Substitute, Insert, Delete, Move} {
			s, err := ShingleSet(Render(z.Edit(base, kind, 3)), 4)
			if err != nil {
				t.Fatal(err)
			}
			sets = append(sets, s)
		}
	}
	got := SimilarPairs(sets, 0.3)
	n := 0
	for i := range sets {
		for j := i + 1; j < len(sets); j++ {
			jac := Jaccard(sets[i], sets[j])
			if jac >= 0.3 {
				n++
				if g, ok := got[[2]int{i, j}]; !ok || g != jac {
					t.Fatalf("pair %d,%d: got %v (%v), want %v", i, j, g, ok, jac)
				}
			}
		}
	}
	if n != len(got) || n == 0 {
		t.Fatalf("%d pairs, all-pairs %d", len(got), n)
	}
}

func TestZipfDeterministic(t *testing.T) {
	a, b := NewZipf(1000, 1.1, 42), NewZipf(1000, 1.1, 42)
	da, db := a.Doc(2048), b.Doc(2048)
	if !slices.Equal(da, db) {
		t.Fatal("same seed, different documents")
	}
	if !slices.Equal(a.Edit(da, Move, 5), b.Edit(db, Move, 5)) {
		t.Fatal("same seed, different edits")
	}
	if c := NewZipf(1000, 1.1, 43).Doc(2048); slices.Equal(c, da) {
		t.Fatal("different seeds, same document")
	}
	// Rank 0 is the most frequent word.
	counts := map[string]int{}
	for range 20000 {
		counts[a.Word()]++
	}
	if counts[a.words[0]] < counts[a.words[10]] || counts[a.words[10]] < counts[a.words[500]] {
		t.Fatalf("not Zipf-like: %d %d %d", counts[a.words[0]], counts[a.words[10]], counts[a.words[500]])
	}
	if len(Render(da)) < 2048 {
		t.Fatalf("document of %d bytes", len(Render(da)))
	}
}

func TestEditKinds(t *testing.T) {
	z := NewZipf(100, 1.0, 1)
	base := z.Doc(1000)
	if got := z.Edit(base, Insert, 7); len(got) != len(base)+7 {
		t.Fatalf("insert: %d words, want %d", len(got), len(base)+7)
	}
	if got := z.Edit(base, Delete, 7); len(got) != len(base)-7 {
		t.Fatalf("delete: %d words", len(got))
	}
	mv := z.Edit(base, Move, 3)
	a, b := slices.Clone(base), slices.Clone(mv)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Fatal("move changed the multiset of words")
	}
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i))
	}
	l := Summarize(ds)
	if l.P50 != 50 || l.P95 != 95 || l.P99 != 99 || l.Max != 100 || l.N != 100 {
		t.Fatalf("%+v", l)
	}
}

func TestChartSVG(t *testing.T) {
	c := Chart{Title: "t <&>", LogY: true, Series: []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{0.1, 100}}}}
	svg := c.SVG()
	if !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "t &lt;&amp;&gt;") || !strings.Contains(svg, "<polyline") {
		t.Fatalf("svg: %s", svg)
	}
}

// TestSmokeSuite runs the whole suite on tiny inputs and writes its report.
// It takes about 20 s (more under the race detector), so it runs only when
// FPDB_BENCH_SMOKE is set.
func TestSmokeSuite(t *testing.T) {
	if testing.Short() || os.Getenv("FPDB_BENCH_SMOKE") == "" {
		t.Skip("runs every section of the suite: set FPDB_BENCH_SMOKE=1")
	}
	cfg := SmokeConfig()
	cfg.TmpDir = t.TempDir()
	cfg.CorpusDir = filepath.Join(t.TempDir(), "absent")
	cfg.FingerprintTime = 50 * time.Millisecond
	s := &Suite{Cfg: cfg}
	rep, err := s.Run(ctx, CollectEnv("go test"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := Write(out, rep); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"smoke.md", "smoke.json", "latest.json", "smoke-latency-vs-threshold.svg", "smoke-latency-vs-threshold-" + SkewedName + ".svg", "smoke-latency-vs-n.svg", "smoke-accuracy-zipf-text.svg"} {
		if DirSize(filepath.Join(out, f)) == 0 {
			t.Errorf("%s not written", f)
		}
	}
	if len(rep.Notes) == 0 || !strings.Contains(rep.Notes[len(rep.Notes)-1], "skipped") {
		t.Errorf("absent corpus not noted: %v", rep.Notes)
	}
}
