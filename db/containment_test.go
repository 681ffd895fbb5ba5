package db

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/internal/evidence"
	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/minhash"
	"github.com/fpdb/fpdb/internal/normalize"
)

// containmentCorpus adds n documents of very different sizes built from a
// few shared passages, and returns their texts by id.
func containmentCorpus(t *testing.T, d *DB, rng *rand.Rand, n int) map[string]string {
	t.Helper()
	word := func() string { return fmt.Sprintf("w%d", rng.IntN(5000)) }
	passage := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = word()
		}
		return strings.Join(ws, " ")
	}
	shared := make([]string, 6)
	for i := range shared {
		shared[i] = passage(50 + rng.IntN(400))
	}
	texts := map[string]string{}
	for i := range n {
		var parts []string
		for range 1 + rng.IntN(5) {
			if rng.IntN(3) > 0 {
				parts = append(parts, shared[rng.IntN(len(shared))])
			} else {
				parts = append(parts, passage(1+rng.IntN([]int{20, 300, 3000}[rng.IntN(3)])))
			}
		}
		id := fmt.Sprintf("doc-%03d", i)
		texts[id] = strings.Join(parts, "\n")
		if _, err := d.Add(ctx, Input{ID: id, Text: []byte(texts[id])}, nil); err != nil {
			t.Fatal(err)
		}
	}
	return texts
}

// TestContainmentQueryOracle checks that a containment query returns
// exactly the documents a scan of the same estimate returns, for every
// plan, with and without a threshold.
func TestContainmentQueryOracle(t *testing.T) {
	d := openTest(t, t.TempDir(), nil)
	rng := rand.New(rand.NewPCG(5, 6))
	texts := containmentCorpus(t, d, rng, 150)
	b, err := fingerprint.NewBuilder(d.fpParams())
	if err != nil {
		t.Fatal(err)
	}
	type stored struct {
		fp   []uint64
		size int
	}
	all := map[string]stored{}
	for id := range texts {
		doc, err := d.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if doc.Shingles <= 0 {
			t.Fatalf("%s: no shingle count stored", id)
		}
		all[id] = stored{doc.Fingerprint, doc.Shingles}
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range texts {
			if !yield(id) {
				return
			}
		}
	})
	checked := 0
	for qi := range 25 {
		qtext := texts[ids[rng.IntN(len(ids))]]
		if qi%3 == 0 { // a part of a document
			ws := strings.Fields(qtext)
			lo := rng.IntN(len(ws))
			qtext = strings.Join(ws[lo:lo+1+rng.IntN(len(ws)-lo)], " ")
		}
		res, err := b.FromBytes([]byte(qtext))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []float64{0.3, 0.6, 0.9, 1} {
			for _, thr := range []float64{0, 0.5} {
				var want []string
				for _, id := range ids {
					s := all[id]
					h := 0
					for i := range s.fp {
						h += bits.OnesCount64(s.fp[i] ^ res.FP[i])
					}
					r := minhash.Similarity(d.params.K, h)
					if minhash.EstimateContainment(d.params.K, r, res.Distinct, s.size) >= c && r >= thr {
						want = append(want, id)
					}
				}
				for _, plan := range []Plan{{Kind: PlanAuto}, {Kind: PlanScan}} {
					qr, err := d.Query(ctx, []byte(qtext), QueryOptions{Containment: c, Threshold: thr, Plan: plan})
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					for i, m := range qr.Matches {
						if i > 0 && m.QueryInDoc > qr.Matches[i-1].QueryInDoc {
							t.Fatalf("matches not by containment: %v after %v", m, qr.Matches[i-1])
						}
						got = append(got, m.ID)
						if m.QueryInDoc < c || m.Similarity < thr {
							t.Fatalf("match %+v below the bounds %v %v", m, c, thr)
						}
					}
					slices.Sort(got)
					if !slices.Equal(got, want) {
						t.Fatalf("query %d containment %v threshold %v plan %v: got %v, want %v", qi, c, thr, plan.Kind, got, want)
					}
					checked += len(got)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d matches checked", checked)
	}
	t.Logf("%d containment matches equal the oracle's", checked)
}

// TestContainmentEstimate checks the estimated containment of matches
// against the exact containment of the shingle sets: within 3 standard
// errors (from the variance (1 − R²)/K of the resemblance estimate) for
// planted sections of larger texts and for the Debian corpus's pairs.
func TestContainmentEstimate(t *testing.T) {
	d := openTest(t, t.TempDir(), nil)
	rng := rand.New(rand.NewPCG(7, 8))
	type pair struct{ query, doc string }
	var pairs []pair
	texts := map[string]string{}
	// Planted: a section of every size in a larger text.
	for i := range 60 {
		ws := make([]string, 200+rng.IntN(3000))
		for j := range ws {
			ws[j] = fmt.Sprintf("v%d", rng.IntN(20000))
		}
		id := fmt.Sprintf("big-%02d", i)
		texts[id] = strings.Join(ws, " ")
		lo := rng.IntN(len(ws) / 2)
		pairs = append(pairs, pair{strings.Join(ws[lo:lo+len(ws)/(2+rng.IntN(8))], " "), id})
	}
	// The Debian corpus: each document against its stored near duplicates.
	corpusDocs := filepath.Join(debianCorpusDir(), "docs")
	if names, err := os.ReadDir(corpusDocs); err == nil {
		for _, e := range names[:min(len(names), 400)] {
			b, err := os.ReadFile(filepath.Join(corpusDocs, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			texts["debian/"+e.Name()] = string(b)
		}
	} else {
		t.Logf("corpus not available (%v): planted pairs only", err)
	}
	for id, text := range texts {
		if _, err := d.Add(ctx, Input{ID: id, Text: []byte(text)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for id, text := range texts {
		if strings.HasPrefix(id, "debian/") {
			pairs = append(pairs, pair{text, ""}) // "": every match
		}
	}
	p := d.fpParams()
	outside, n := 0, 0
	for _, pr := range pairs {
		qo := QueryOptions{Threshold: 0.3}
		if pr.doc != "" {
			qo = QueryOptions{Containment: 0.5} // a section: low resemblance, contained
		}
		qr, err := d.Query(ctx, []byte(pr.query), qo)
		if err != nil {
			t.Fatal(err)
		}
		qa, err := evidence.Analyze(p, []byte(pr.query), normalize.FormatText, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range qr.Matches {
			if pr.doc != "" && m.ID != pr.doc || m.Similarity >= 1 {
				continue
			}
			db, err := evidence.Analyze(p, []byte(texts[m.ID]), normalize.FormatText, nil)
			if err != nil {
				t.Fatal(err)
			}
			c, err := evidence.Compare(qa, db, evidence.Options{MinWords: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			// The standard error of the estimate at the exact resemblance.
			a, b := float64(c.A.Shingles), float64(c.B.Shingles)
			r := c.Jaccard
			se := (a + b) / (a * (1 + r) * (1 + r)) * math.Sqrt((1-r*r)/float64(p.K))
			if math.Abs(m.QueryInDoc-c.ContainedA) > 3*se+1e-9 {
				outside++
				t.Logf("%s: estimated containment %.3f, exact %.3f, 3 SE %.3f", m.ID, m.QueryInDoc, c.ContainedA, 3*se)
			}
			n++
		}
	}
	if n < 50 {
		t.Fatalf("only %d matches", n)
	}
	// 3 standard errors hold 99.7 % of a normal estimate.
	if float64(outside) > 0.01*float64(n)+1 {
		t.Fatalf("%d of %d containment estimates are beyond 3 standard errors", outside, n)
	}
	t.Logf("%d of %d containment estimates beyond 3 standard errors", outside, n)
}

// TestFormat2Sizes: a format-2 database writes version-1 document records
// (no shingle count, which older builds cannot read) and estimates
// containment from the number of words.
func TestFormat2Sizes(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := d.params
	p.FormatVersion = formatV2
	pset(t, d, keys.Meta(), encodeMeta(p))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openTest(t, dir, nil)
	if d.Params().FormatVersion != formatV2 {
		t.Fatalf("format %d", d.Params().FormatVersion)
	}
	text := strings.Repeat("one two three four five six seven ", 3) + "eight nine ten"
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte(text)}, nil); err != nil {
		t.Fatal(err)
	}
	doc, err := d.Get(ctx, "a")
	if err != nil || doc.Shingles != 0 || doc.Words != 24 {
		t.Fatalf("doc %+v, %v", doc, err)
	}
	res, err := d.Query(ctx, []byte(text), QueryOptions{Threshold: 1})
	if err != nil || len(res.Matches) != 1 {
		t.Fatalf("query: %+v, %v", res, err)
	}
	// The query's own count is exact (10 distinct shingles), the stored
	// one counts repeats (24 − 4 + 1 = 21): R = 1 gives (10 + 21) / 20.
	if m := res.Matches[0]; m.QueryInDoc != 1 || m.DocInQuery != 31.0/42 {
		t.Fatalf("containments %v %v", m.QueryInDoc, m.DocInQuery)
	}
}

// debianCorpusDir is $FPDB_CORPUS, else ../shared/corpus/debian beside the
// repository (it may be absent).
func debianCorpusDir() string {
	if dir := os.Getenv("FPDB_CORPUS"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "shared", "corpus", "debian")
}

// TestContainmentSplitOracle: with a few very large documents among many
// small ones, the containment search compares the large ones apart and
// searches the index at the small ones' radius — and still returns exactly
// what a scan of the same estimate returns, whether the documents near the
// query are small or large, after deletes and replacements too.
func TestContainmentSplitOracle(t *testing.T) {
	const k = 256
	d := openTest(t, "", &Options{K: k, GroupWidths: EqualWidths(k, 16), NoSync: true})
	rng := rand.New(rand.NewPCG(11, 12))
	randFP := func() []uint64 {
		fp := make([]uint64, k/64)
		for i := range fp {
			fp[i] = rng.Uint64()
		}
		return fp
	}
	flip := func(fp []uint64, n int) []uint64 {
		out := slices.Clone(fp)
		for _, b := range rng.Perm(k)[:n] {
			out[b/64] ^= 1 << (b % 64)
		}
		return out
	}
	type doc struct {
		fp   []uint64
		size int
	}
	model := map[string]doc{}
	var batch []Input
	put := func(id string, fp []uint64, size int) {
		batch = append(batch, Input{ID: id, Fingerprint: fp, Shingles: size})
		model[id] = doc{fp, size}
	}
	var queries [][]uint64
	logUniform := func(lo, hi float64) int {
		return int(math.Exp(math.Log(lo) + rng.Float64()*(math.Log(hi)-math.Log(lo))))
	}
	for i := range 3000 {
		fp := randFP()
		put(fmt.Sprint("s", i), fp, logUniform(100, 10_000))
		if i%300 == 0 {
			queries = append(queries, fp)
		}
	}
	// Near the queries: small documents and huge ones at every distance
	// that can matter.
	for qi, q := range queries {
		for j := range 30 {
			put(fmt.Sprintf("near%d-%d", qi, j), flip(q, rng.IntN(k/2)), logUniform(100, 10_000))
			put(fmt.Sprintf("huge%d-%d", qi, j), flip(q, rng.IntN(k/2)), 50_000+rng.IntN(200_000))
		}
	}
	if _, err := d.AddBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3000; i += 13 {
		id := fmt.Sprint("s", i)
		if err := d.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		delete(model, id)
	}
	for qi := range queries {
		id := fmt.Sprintf("huge%d-0", qi) // replaced by a small document
		fp := flip(queries[qi], 20)
		if _, err := d.Add(ctx, Input{ID: id, Fingerprint: fp, Shingles: 300}, nil); err != nil {
			t.Fatal(err)
		}
		model[id] = doc{fp, 300}
	}
	// Every split the search can make, and the cost model's choice.
	splits := []int{-1, 0, 5, 8, 15, 16, 17, 40}
	split := 0
	for qi, q := range queries {
		for _, qsize := range []int{200, 2000, 8000} {
			for _, c := range []float64{0.5, 0.8, 0.95} {
				force := splits[(qi*9+qsize/1000+int(c*10))%len(splits)]
				d.testSplit = nil
				if force >= 0 {
					d.testSplit = func(int) int { return force }
				}
				var want []string
				for id, s := range model {
					r := minhash.Similarity(k, bitvec.Hamming(q, s.fp))
					if minhash.EstimateContainment(k, r, qsize, s.size) >= c {
						want = append(want, id)
					}
				}
				slices.Sort(want)
				o := QueryOptions{Containment: c, Shingles: qsize}
				d.mu.RLock()
				p, _ := d.planSearch(query{fp: q, size: qsize}, o)
				d.mu.RUnlock()
				if p.large < sizeClasses {
					split++
				}
				for _, plan := range []Plan{{Kind: PlanAuto}, {Kind: PlanScan}} {
					o.Plan = plan
					qr, err := d.QueryFingerprint(ctx, q, o)
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, m := range qr.Matches {
						got = append(got, m.ID)
					}
					slices.Sort(got)
					if !slices.Equal(got, want) {
						t.Fatalf("query %d size %d containment %v plan %v (split %+v): got %d, want %d", qi, qsize, c, plan.Kind, p, len(got), len(want))
					}
				}
			}
		}
	}
	if split < 10 {
		t.Fatalf("only %d queries compared the large documents apart: the test does not test the split", split)
	}
	t.Logf("%d of %d queries split by size", split, len(queries)*9)
}

// TestContainmentSplitVerifiedOnce: a containment query that compares the
// large documents apart, after a first pass that scans every document,
// counts each document verified once: the scan compared the large ones
// too.
func TestContainmentSplitVerifiedOnce(t *testing.T) {
	d := openTest(t, t.TempDir(), nil)
	k := d.Params().K
	rng := rand.New(rand.NewPCG(12, 3))
	var batch []Input
	for i := range 300 {
		batch = append(batch, Input{ID: fmt.Sprint("small", i), Fingerprint: randFP(rng, k), Shingles: 300})
	}
	for i := range 20 {
		batch = append(batch, Input{ID: fmt.Sprint("large", i), Fingerprint: randFP(rng, k), Shingles: 100_000})
	}
	q := randFP(rng, k)
	batch = append(batch, Input{ID: "copy", Fingerprint: q, Shingles: 2000})
	if _, err := d.AddBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	const split = 12 // sizes from 4096 up compared apart: the 20 large documents
	d.testSplit = func(int) int { return split }
	o := QueryOptions{Containment: 0.5, Shingles: 2000}
	d.mu.RLock()
	p, none := d.planSearch(query{fp: q, size: 2000}, o)
	d.mu.RUnlock()
	if none || p.large != split || p.rh < 0 {
		t.Fatalf("plan %+v (none %v): want a first pass and the classes from %d compared apart", p, none, split)
	}
	res, err := d.QueryFingerprint(ctx, q, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 || res.Matches[0].ID != "copy" {
		t.Fatalf("matches %+v, want the copy alone", res.Matches)
	}
	if res.Stats.Plan.Kind != PlanScan {
		t.Fatalf("first pass %v, want a scan (a small index)", res.Stats.Plan)
	}
	if res.Stats.Verified != d.Len() {
		t.Fatalf("verified %d, want %d: every document once", res.Stats.Verified, d.Len())
	}
}

// TestContainmentNoise: a resemblance estimate within the noise of two
// unrelated sets (below 4/√k) is no containment, however much larger the
// document is than the query; above it, containment is estimated.
func TestContainmentNoise(t *testing.T) {
	d := openTest(t, t.TempDir(), nil)
	k := d.Params().K
	rng := rand.New(rand.NewPCG(8, 8))
	q := randFP(rng, k)
	flip := func(h int) []uint64 { // q with its first h bits flipped
		fp := slices.Clone(q)
		for j := range h {
			fp[j/64] ^= 1 << (j % 64)
		}
		return fp
	}
	hNoise := int(float64(k) * (1 - 0.5*minhash.ContainmentNoise(k)) / 2) // r̂ about half the noise floor
	hClear := int(float64(k) * (1 - 1.5*minhash.ContainmentNoise(k)) / 2)
	addBatch(t, d, []Input{
		{ID: "huge-unrelated", Fingerprint: flip(hNoise), Shingles: 100000},
		{ID: "larger-related", Fingerprint: flip(hClear), Shingles: 1000},
	})
	res, err := d.QueryFingerprint(ctx, q, QueryOptions{Containment: 0.8, Shingles: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 || res.Matches[0].ID != "larger-related" || res.Matches[0].QueryInDoc < 0.8 {
		t.Fatalf("containment 0.8 of a 100-shingle query: %+v, want larger-related only", res.Matches)
	}
	var m Match
	m.Similarity = minhash.Similarity(k, hNoise)
	m.SetContainment(k, 100, 100000)
	if m.QueryInDoc != 0 || m.DocInQuery != 0 {
		t.Fatalf("containments %v, %v at resemblance %v (noise below %v), want 0", m.QueryInDoc, m.DocInQuery, m.Similarity, minhash.ContainmentNoise(k))
	}
}
