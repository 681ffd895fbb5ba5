package tune

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/internal/binom"
	"github.com/fpdb/fpdb/internal/minhash"
)

// simulate fingerprints n random pairs of sets of exact resemblance R
// (|A∪B| = union elements, R·union shared) with fresh hash seeds and
// returns the share reported at radius h.
func simulate(t *testing.T, k, union int, R float64, h, n int, rng *rand.Rand) float64 {
	t.Helper()
	inter := int(math.Round(R * float64(union)))
	reported := 0
	for range n {
		if pairDistance(t, k, union, inter, rng) <= h {
			reported++
		}
	}
	return float64(reported) / float64(n)
}

// pairDistance fingerprints one random pair of sets of union elements,
// inter of them shared (the rest split evenly), with a fresh hash seed,
// and returns their Hamming distance.
func pairDistance(t *testing.T, k, union, inter int, rng *rand.Rand) int {
	t.Helper()
	seed := rng.Uint64()
	sa, err := minhash.New(k, seed)
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := minhash.New(k, seed)
	for i := range union {
		e := rng.Uint64()
		switch {
		case i < inter:
			sa.Add(e)
			sb.Add(e)
		case (i-inter)%2 == 0:
			sa.Add(e)
		default:
			sb.Add(e)
		}
	}
	fa, fb := make([]uint64, k/64), make([]uint64, k/64)
	sa.Fingerprint(fa)
	sb.Fingerprint(fb)
	d := 0
	for w := range fa {
		d += bits.OnesCount64(fa[w] ^ fb[w])
	}
	return d
}

// TestCurveMatchesSimulation: the detection curve agrees with real
// fingerprints of random set pairs within sampling error, at k = 64, 256
// and 512, below, at and above the threshold.
func TestCurveMatchesSimulation(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, union = 1000, 4000
	worst := 0.0
	for _, c := range []struct {
		k int
		r float64
	}{{64, 0.7}, {256, 0.7}, {512, 0.7}, {512, 0.9}} {
		curve, err := NewCurve(c.k, c.r)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []float64{-0.2, -0.1, -0.05, 0, 0.05, 0.1} {
			R := math.Round((c.r+d)*1000) / 1000
			if R <= 0 || R > 1 {
				continue
			}
			want := curve.Probability(R)
			got := simulate(t, c.k, union, R, curve.Radius, n, rng)
			se := math.Sqrt(want*(1-want)/n) + 0.5/n
			z := math.Abs(got-want) / se
			worst = max(worst, z)
			t.Logf("k=%d r=%.2f R=%.3f: curve %.4f, simulated %.4f (%.1f SE)", c.k, c.r, R, want, got, z)
			if z > 4 {
				t.Errorf("k=%d r=%.2f R=%.3f: curve %.4f, simulated %.4f: %.1f standard errors apart", c.k, c.r, R, want, got, z)
			}
		}
	}
	t.Logf("largest deviation: %.1f standard errors", worst)
}

func TestCurveShape(t *testing.T) {
	c, err := NewCurve(512, 0.7)
	if err != nil {
		t.Fatal(err)
	}
	if c.Radius != 76 {
		t.Errorf("radius %d, want ⌊512·0.3/2⌋ = 76", c.Radius)
	}
	prev := -1.0
	xs, ys := c.Points(100)
	for i := range xs {
		if ys[i] < prev-1e-12 {
			t.Fatalf("curve decreases at R=%v", xs[i])
		}
		prev = ys[i]
	}
	if ys[0] > 1e-30 || ys[100] != 1 {
		t.Errorf("ends %g and %g, want ≈0 and 1", ys[0], ys[100])
	}
	// The resemblance caught with probability 1/2 is near the threshold,
	// and caught(p) inverts Probability.
	if m := c.Caught(0.5); math.Abs(m-0.7) > 0.01 {
		t.Errorf("caught at 50%%: %v, want ≈ 0.7", m)
	}
	for _, p := range []float64{0.5, 0.9, 0.99, 0.999} {
		R := c.Caught(p)
		if got := c.Probability(R); got < p || c.Probability(R-1e-9) >= p {
			t.Errorf("Caught(%v) = %v: probability there %v", p, R, got)
		}
	}
	// A low threshold with few bits reports even unrelated pairs.
	low, _ := NewCurve(64, 0.05)
	if low.Caught(0.01) != 0 {
		t.Errorf("k=64 r=0.05: caught(1%%) = %v, want 0", low.Caught(0.01))
	}
	for _, bad := range []struct {
		k int
		r float64
	}{{0, 0.5}, {512, 0}, {512, 1.5}, {512, math.NaN()}, {-1, 0.5}} {
		if _, err := NewCurve(bad.k, bad.r); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewCurve(%d, %v): %v", bad.k, bad.r, err)
		}
	}
}

func TestRecommend(t *testing.T) {
	for _, c := range []struct {
		k           int
		catch, with float64
	}{{512, 0.8, 0.99}, {512, 0.9, 0.999}, {256, 0.7, 0.95}, {64, 0.8, 0.9}, {512, 0.5, 0.5}} {
		rec, err := Recommend(c.k, c.catch, c.with)
		if err != nil {
			t.Fatalf("Recommend(%d, %v, %v): %v", c.k, c.catch, c.with, err)
		}
		// Meets the goal, and the next higher threshold (radius − 1) does not.
		if rec.Probability < c.with || rec.Curve.Probability(c.catch) < c.with {
			t.Errorf("%+v: probability %v < %v", c, rec.Probability, c.with)
		}
		if rec.Radius > 0 {
			tighter := Curve{K: c.k, Radius: rec.Radius - 1}
			if tighter.Probability(c.catch) >= c.with {
				t.Errorf("%+v: radius %d also meets the goal", c, rec.Radius-1)
			}
		}
		if minhash.Radius(c.k, rec.Threshold) != rec.Radius || rec.Threshold > c.catch {
			t.Errorf("%+v: threshold %v has radius %d, want %d", c, rec.Threshold, minhash.Radius(c.k, rec.Threshold), rec.Radius)
		}
		t.Logf("k=%d catch %.2f with %.3f: threshold %v (radius %d), probability %.4f", c.k, c.catch, c.with, rec.Threshold, rec.Radius, rec.Probability)
	}
	if _, err := Recommend(64, 0.05, 0.999); !errors.Is(err, ErrInvalid) {
		t.Errorf("unreachable goal: %v", err)
	}
	for _, bad := range [][2]float64{{0, 0.9}, {1.1, 0.9}, {0.8, 0}, {0.8, 1}, {math.NaN(), 0.5}} {
		if _, err := Recommend(512, bad[0], bad[1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("Recommend(512, %v, %v): %v", bad[0], bad[1], err)
		}
	}
}

func TestRoundThreshold(t *testing.T) {
	for _, k := range []int{64, 256, 512, 1024} {
		for h := 0; minhash.Similarity(k, h) > 0; h++ {
			r := roundThreshold(k, h)
			if minhash.Radius(k, r) != h || r > minhash.Similarity(k, h) {
				t.Fatalf("k=%d h=%d: %v", k, h, r)
			}
		}
	}
	if r := roundThreshold(512, 58); r != 0.77 {
		t.Errorf("k=512 h=58: %v, want 0.77", r)
	}
}

func TestEvaluateAndBest(t *testing.T) {
	const k = 64
	// Duplicates at distances 0..9, non-duplicates at 6..29.
	var pairs []Labelled
	for h := range 10 {
		pairs = append(pairs, Labelled{Hamming: h, Dup: true})
	}
	for h := 6; h < 30; h++ {
		pairs = append(pairs, Labelled{Hamming: h})
	}
	scores, err := Evaluate(k, pairs)
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != 32 { // radii 0..31: 1 − 2h/64 > 0
		t.Fatalf("%d scores, want 32", len(scores))
	}
	// Brute force every score.
	for _, s := range scores {
		var tp, fp, fn, tn int
		for _, p := range pairs {
			rep := p.Hamming <= s.Radius
			switch {
			case rep && p.Dup:
				tp++
			case rep:
				fp++
			case p.Dup:
				fn++
			default:
				tn++
			}
		}
		if s.TP != tp || s.FP != fp || s.FN != fn || s.TN != tn {
			t.Fatalf("radius %d: %+v, want tp %d fp %d fn %d tn %d", s.Radius, s, tp, fp, fn, tn)
		}
		if s.PrecisionCI.Lo > s.Precision || s.PrecisionCI.Hi < s.Precision || s.RecallCI.Lo > s.Recall || s.RecallCI.Hi < s.Recall {
			t.Fatalf("radius %d: intervals do not hold the estimates: %+v", s.Radius, s)
		}
	}
	best, err := Best(scores, Goal{})
	if err != nil {
		t.Fatal(err)
	}
	// F1 at radius h ≥ 6: tp = min(h+1, 10), fp = h−5.
	if best.Radius != 5 && best.Radius != 9 {
		t.Logf("best F1 at radius %d (%.3f)", best.Radius, best.F1)
	}
	for _, s := range scores {
		if s.F1 > best.F1 {
			t.Errorf("radius %d has F1 %.3f > best %.3f", s.Radius, s.F1, best.F1)
		}
	}
	p, err := Best(scores, Goal{MinPrecision: 1})
	if err != nil || p.Radius != 5 {
		t.Errorf("precision 1: radius %d (%v), want 5", p.Radius, err)
	}
	// Duplicates close, a non-duplicate far: every threshold from the
	// duplicates' down to the non-duplicate's has the same counts. The
	// answer is two standard deviations of the distance at radius 5 below
	// the highest: ⌈2·√(64·5/64·59/64)⌉ = 5 bits, radius 10.
	close := []Labelled{{Hamming: 3, Dup: true}, {Hamming: 5, Dup: true}, {Hamming: 20}}
	cs, err := Evaluate(k, close)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []Goal{{MinPrecision: 0.95}, {}} {
		p, err := Best(cs, g)
		if err != nil || p.Radius != 10 {
			t.Errorf("duplicates at 3 and 5 bits, goal %+v: radius %d (%v), want 10", g, p.Radius, err)
		}
		if top, last := SameCounts(cs, slices.Index(cs, p)); cs[top].Radius != 5 || cs[last].Radius != 19 {
			t.Errorf("goal %+v: the run of radius %d is radii %d to %d, want 5 to 19", g, p.Radius, cs[top].Radius, cs[last].Radius)
		}
	}
	// A non-duplicate at 8 bits ends the run: radius 7, the last of it.
	near, err := Evaluate(k, []Labelled{{Hamming: 3, Dup: true}, {Hamming: 5, Dup: true}, {Hamming: 8}})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []Goal{{MinPrecision: 0.95}, {}} {
		if p, err := Best(near, g); err != nil || p.Radius != 7 || p.F1 != 1 {
			t.Errorf("a non-duplicate at 8 bits, goal %+v: radius %d F1 %v (%v), want 7 and 1", g, p.Radius, p.F1, err)
		}
	}
	// Exact copies only: the margin is taken at one bit, ⌈2·√(64·1/64·63/64)⌉ = 2.
	if p, err := Best(near[:0:0], Goal{}); err == nil {
		t.Errorf("no scores: radius %d", p.Radius)
	}
	exact, err := Evaluate(k, []Labelled{{Hamming: 0, Dup: true}, {Hamming: 30}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := Best(exact, Goal{}); err != nil || p.Radius != 2 {
		t.Errorf("exact copies: radius %d (%v), want 2", p.Radius, err)
	}
	r, err := Best(scores, Goal{MinRecall: 1})
	if err != nil || r.Radius != 9 {
		t.Errorf("recall 1: radius %d (%v), want 9", r.Radius, err)
	}
	if _, err := Best(scores, Goal{MinPrecision: 0.9, MinRecall: 0.9}); !errors.Is(err, ErrInvalid) {
		t.Errorf("both goals: %v", err)
	}
	if _, err := Evaluate(k, []Labelled{{Hamming: -1}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative distance: %v", err)
	}
	// Wilson: 0 of 0 is [0, 1]; 10 of 10 has Hi 1 and Lo ≈ 0.722.
	if w := wilson(10, 10); w.Hi != 1 || math.Abs(w.Lo-0.7225) > 0.001 {
		t.Errorf("wilson(10, 10) = %+v", w)
	}
}

// TestBestOneSidedLabels: with no pair labelled a duplicate every goal is
// refused (recall would be 1 at every threshold, and the best F1, 0,
// would pick threshold 1); with no pair labelled not, a least precision is
// refused (precision is 1 everywhere) while F1 and a least recall still
// answer.
func TestBestOneSidedLabels(t *testing.T) {
	const k = 64
	goals := []Goal{{}, {MinRecall: 0.9}, {MinRecall: 1}, {MinPrecision: 0.9}}
	nots, err := Evaluate(k, []Labelled{{Hamming: 12}, {Hamming: 20}})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range goals {
		s, err := Best(nots, g)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "no pair is labelled a duplicate (all 2 are labelled not)") {
			t.Errorf("no duplicates, goal %+v: threshold %v, error %v; want a refusal", g, s.Threshold, err)
		}
	}
	dups, err := Evaluate(k, []Labelled{{Hamming: 3, Dup: true}, {Hamming: 5, Dup: true}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Best(dups, Goal{MinPrecision: 0.9})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "no pair is labelled not a duplicate (all 2 are labelled dup)") {
		t.Errorf("no non-duplicates, least precision: threshold %v, error %v; want a refusal", s.Threshold, err)
	}
	// The best F1 with the margin of Goal; a least recall, the highest.
	for g, want := range map[Goal]int{{}: 10, {MinRecall: 1}: 5} {
		if s, err := Best(dups, g); err != nil || s.Radius != want {
			t.Errorf("no non-duplicates, goal %+v: radius %d (%v), want %d", g, s.Radius, err, want)
		}
	}
}

// recommendDirect is Recommend's search with binom.CDF summed from 0 for
// every radius, as it was before the sum was accumulated.
func recommendDirect(k int, catch, with float64) (h int, pr float64, ok bool) {
	p := (1 - catch) / 2
	for h := 0; h <= k && minhash.Similarity(k, h) > 0; h++ {
		if pr := binom.CDF(k, p, h); pr >= with {
			return h, pr, true
		}
	}
	return 0, 0, false
}

// TestRecommendAccumulated: Recommend's accumulated sum gives the very
// radius and probability (to the bit) that binom.CDF gives, at every goal
// tried, at k up to 65536 (BenchmarkRecommend times that one: 21 s when
// each radius summed CDF from 0).
func TestRecommendAccumulated(t *testing.T) {
	for _, k := range []int{64, 256, 512, 1024, 2048} {
		for _, catch := range []float64{0.01, 0.3, 0.5, 0.7, 0.734, 0.8, 0.9, 0.95, 0.99, 1} {
			for _, with := range []float64{0.01, 0.5, 0.9, 0.99, 0.999, 0.999999} {
				h, pr, ok := recommendDirect(k, catch, with)
				rec, err := Recommend(k, catch, with)
				if ok != (err == nil) || ok && (rec.Radius != h || rec.Probability != pr) {
					t.Fatalf("Recommend(%d, %v, %v) = radius %d, probability %v (%v); binom.CDF gives radius %d, probability %v (found %v)",
						k, catch, with, rec.Radius, rec.Probability, err, h, pr, ok)
				}
			}
		}
	}
	rec, err := Recommend(65536, 0.01, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	if want := binom.CDF(65536, 0.495, rec.Radius); rec.Probability != want || binom.CDF(65536, 0.495, rec.Radius-1) >= 0.99 {
		t.Errorf("Recommend(65536, 0.01, 0.99): radius %d, probability %v; binom.CDF there %v", rec.Radius, rec.Probability, want)
	}
}

// spread fingerprints n random pairs of sets of union elements, inter of
// them shared (pairDistance), and returns the standard deviation of
// R̂ = 1 − 2H/k.
func spread(t *testing.T, k, union, inter, n int, rng *rand.Rand) float64 {
	t.Helper()
	var sum, sumSq float64
	for range n {
		est := 1 - 2*float64(pairDistance(t, k, union, inter, rng))/float64(k)
		sum += est
		sumSq += est * est
	}
	mean := sum / float64(n)
	return math.Sqrt((sumSq - float64(n)*mean*mean) / float64(n-1))
}

// TestShortDocumentsSpreadWider: the curve's model spread √((1 − R²)/k) is
// too narrow for documents of much fewer than k shingles (densified empty
// bins copy other bins' minima, so bits repeat), which the Caveats say,
// and not too narrow from 2k shingles on. At k = 512, R = 0.6, 100
// shingles measured 1.06 times the model (50 000 pairs), 1 024 shingles
// 0.96 times.
func TestShortDocumentsSpreadWider(t *testing.T) {
	const k, R = 512, 0.6
	model := math.Sqrt((1 - R*R) / k)
	rng := rand.New(rand.NewPCG(3, 4))
	// |A| = |B| = 100: |A∪B| = 125, |A∩B| = 75. The ratio's standard
	// error is about 1/√(2n) = 0.005.
	short := spread(t, k, 125, 75, 20000, rng) / model
	// |A| = |B| = 1024 = 2k: |A∪B| = 1280, |A∩B| = 768; standard error
	// about 0.01.
	long := spread(t, k, 1280, 768, 5000, rng) / model
	t.Logf("k=%d R=%v: spread / model %.3f at 100 shingles, %.3f at 1024", k, R, short, long)
	if short < 1.03 {
		t.Errorf("100 shingles: spread %.3f times the model's, want > 1.03 (the Caveats say short documents spread wider)", short)
	}
	if long < 0.9 || long > 1.03 {
		t.Errorf("1024 shingles: spread %.3f times the model's, want within [0.9, 1.03]", long)
	}
}

// BenchmarkRecommend times Recommend at k = 65536 with catch 0.01, whose
// radius is near k/2: linear in k (quadratic when each radius summed
// binom.CDF from 0, 21 s).
func BenchmarkRecommend(b *testing.B) {
	for b.Loop() {
		if _, err := Recommend(65536, 0.01, 0.99); err != nil {
			b.Fatal(err)
		}
	}
}
