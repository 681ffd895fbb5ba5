package db

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
)

// allDocs returns every stored document of d by id, read through Get.
func allDocs(t *testing.T, d *DB, ids []string) map[string]*Doc {
	t.Helper()
	out := map[string]*Doc{}
	for _, id := range ids {
		doc, err := d.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[id] = doc
	}
	return out
}

// bruteForcePairs compares every two stored documents.
func bruteForcePairs(docs map[string]*Doc, k int, r float64) []Pair {
	var out []Pair
	for _, a := range docs {
		for _, b := range docs {
			if a.iid >= b.iid {
				continue
			}
			h := bitvec.Hamming(a.Fingerprint, b.Fingerprint)
			if sim := index.Similarity(k, h); sim >= r {
				out = append(out, Pair{A: a.ID, B: b.ID, Similarity: sim, Hamming: h,
					Exact: a.ContentHash != [16]byte{} && a.ContentHash == b.ContentHash})
			}
		}
	}
	sortDBPairs(out)
	return out
}

func sortDBPairs(ps []Pair) {
	slices.SortFunc(ps, func(x, y Pair) int {
		if c := strings.Compare(x.A, y.A); c != 0 {
			return c
		}
		return strings.Compare(x.B, y.B)
	})
}

// plantedDB fills a database with near-duplicate fingerprints, texts with
// exact and near copies, replacements and deletes; it returns every id
// ever used.
func plantedDB(t *testing.T, d *DB, seed uint64) []string {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	k := d.Params().K
	var ids []string
	docs := fpBatch(r, "fp", 400, k)
	for i := range 6 {
		txt := text(uint64(i), 300)
		docs = append(docs,
			Input{ID: fmt.Sprintf("t%d", i), Text: []byte(txt)},
			Input{ID: fmt.Sprintf("t%d-copy", i), Text: []byte(strings.ToUpper(txt))},
			Input{ID: fmt.Sprintf("t%d-near", i), Text: []byte(edit(txt, 30))})
	}
	addBatch(t, d, docs)
	for _, bd := range docs {
		ids = append(ids, bd.ID)
	}
	// Replace some (new internal ids), delete others.
	for i := 0; i < 400; i += 13 {
		if _, err := d.Add(ctx, Input{ID: docs[i].ID, Fingerprint: nearFP(r, docs[i+1].Fingerprint, 5)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var del []string
	for i := 5; i < 400; i += 11 {
		del = append(del, docs[i].ID)
	}
	if _, err := d.DeleteMany(ctx, del); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestPairsMatchesBruteForce(t *testing.T) {
	d := openTest(t, "", nil)
	ids := plantedDB(t, d, 1)
	docs := allDocs(t, d, ids)
	k := d.Params().K
	for _, r := range []float64{0.95, 0.9, 0.8, 0.6} {
		want := bruteForcePairs(docs, k, r)
		for _, plan := range []Plan{{}, {Kind: PlanScan}} {
			var got []Pair
			progressed := false
			st, err := d.Pairs(ctx, PairsOptions{Threshold: r, Plan: plan, Progress: func(done, total int) {
				progressed = done == total && total == len(docs)
			}}, func(p Pair) error {
				got = append(got, p)
				return nil
			})

			if err != nil {
				t.Fatal(err)
			}
			sortDBPairs(got)
			if !slices.Equal(got, want) {
				t.Fatalf("r=%v plan %s: %d pairs, brute force %d", r, st.Plan, len(got), len(want))
			}
			if !progressed || st.Docs != len(docs) || st.Pairs != int64(len(want)) {
				t.Fatalf("r=%v: progress %v, stats %+v", r, progressed, st)
			}
		}
		if r == 0.8 && !slices.ContainsFunc(want, func(p Pair) bool { return p.Exact }) {
			t.Fatal("no exact pair planted")
		}
		if r == 0.9 && len(want) < 20 {
			t.Fatalf("only %d pairs at 0.9: the test proves little", len(want))
		}
	}
	if _, err := d.Pairs(ctx, PairsOptions{Threshold: 0}, func(Pair) error { return nil }); !errors.Is(err, ErrInvalidThreshold) {
		t.Errorf("threshold 0: %v", err)
	}
}

// TestPairsCallbackMayWrite: the run works on a snapshot, so fn may write
// to the database (here: delete B of every pair) without deadlock, and the
// pairs are those of the state at the call.
func TestPairsCallbackMayWrite(t *testing.T) {
	d := openTest(t, "", nil)
	ids := plantedDB(t, d, 2)
	want := bruteForcePairs(allDocs(t, d, ids), d.Params().K, 0.8)
	var got []Pair
	_, err := d.Pairs(ctx, PairsOptions{Threshold: 0.8}, func(p Pair) error {
		got = append(got, p)
		if err := d.Delete(ctx, p.B); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		return nil
	})

	if err != nil {
		t.Fatal(err)
	}
	sortDBPairs(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%d pairs, want %d", len(got), len(want))
	}
	// Every document that had an earlier near duplicate is gone now.
	var left []Pair
	if _, err := d.Pairs(ctx, PairsOptions{Threshold: 0.8}, func(p Pair) error { left = append(left, p); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("%d pairs left after deleting every B", len(left))
	}
}

// components returns the connected components (of size ≥ 2) of the
// pairs, each sorted by iid, by brute force (repeated relaxation).
func components(docs map[string]*Doc, pairs []Pair) [][]string {
	label := map[string]string{}
	for id := range docs {
		label[id] = id
	}
	for changed := true; changed; {
		changed = false
		for _, p := range pairs {
			a, b := label[p.A], label[p.B]
			if a != b {
				m := min(a, b)
				label[p.A], label[p.B] = m, m
				changed = true
			}
		}
	}
	groups := map[string][]string{}
	for id, l := range label {
		groups[l] = append(groups[l], id)
	}
	var out [][]string
	for _, g := range groups {
		if len(g) > 1 {
			slices.SortFunc(g, func(a, b string) int { return int(docs[a].iid) - int(docs[b].iid) })
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return out
}

func TestClustersMatchBruteForce(t *testing.T) {
	d := openTest(t, "", nil)
	ids := plantedDB(t, d, 3)
	// Documents with chosen Added times, to test --keep oldest.
	r := rand.New(rand.NewPCG(3, 3))
	base := randFP(r, d.Params().K)
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	chain := []Input{
		{ID: "z-new", Fingerprint: base, Added: t0.Add(3 * time.Hour)},
		{ID: "y-old", Fingerprint: nearFP(r, base, 10), Added: t0},
		{ID: "x-mid", Fingerprint: nearFP(r, base, 10), Added: t0.Add(time.Hour)},
	}
	addBatch(t, d, chain)
	for _, c := range chain {
		ids = append(ids, c.ID)
	}
	docs := allDocs(t, d, ids)
	for _, thr := range []float64{0.9, 0.75} {
		want := components(docs, bruteForcePairs(docs, d.Params().K, thr))
		if !slices.ContainsFunc(want, func(c []string) bool { return len(c) >= 3 }) {
			t.Fatalf("threshold %v: no cluster of 3 or more planted", thr)
		}
		for _, keep := range []Keep{KeepNone, KeepOldest, KeepFirst} {
			cs, _, err := d.Clusters(ctx, ClusterOptions{PairsOptions: PairsOptions{Threshold: thr}, Keep: keep})
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			pairs := 0
			for i, c := range cs {
				if i > 0 && len(c.IDs) > len(cs[i-1].IDs) {
					t.Fatal("clusters not sorted by size")
				}
				got = append(got, c.IDs)
				pairs += c.Pairs
				switch keep {
				case KeepNone:
					if c.Keep != "" || c.Drop != nil {
						t.Fatalf("KeepNone chose %q", c.Keep)
					}
				case KeepFirst:
					if c.Keep != slices.Min(c.IDs) {
						t.Fatalf("KeepFirst kept %q of %v", c.Keep, c.IDs)
					}
				case KeepOldest:
					for _, id := range c.IDs {
						if docs[id].Added.Before(docs[c.Keep].Added) {
							t.Fatalf("KeepOldest kept %q, but %q is older", c.Keep, id)
						}
					}
				}
				if keep != KeepNone {
					all := append([]string{c.Keep}, c.Drop...)
					slices.Sort(all)
					if !slices.Equal(all, slices.Sorted(slices.Values(c.IDs))) {
						t.Fatalf("keep %q + drop %v is not the cluster %v", c.Keep, c.Drop, c.IDs)
					}
				}
				if slices.Contains(c.IDs, "y-old") && keep == KeepOldest && c.Keep != "y-old" {
					t.Fatalf("kept %q, want y-old", c.Keep)
				}
			}
			slices.SortFunc(got, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("threshold %v: %d clusters, brute force %d", thr, len(got), len(want))
			}
			if n := len(bruteForcePairs(docs, d.Params().K, thr)); pairs != n {
				t.Fatalf("clusters count %d pairs, want %d", pairs, n)
			}
		}
	}
}

// TestPairsDetached: with PairsOptions.Detached the run leaves the database
// once it holds its snapshot: Close called there returns at once (it waits
// for no call in flight), the run goes on to give every pair, and a
// Clusters run detached gives the clusters an attached one gives.
func TestPairsDetached(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, nil)
	plantedDB(t, d, 5)
	opts := PairsOptions{Threshold: 0.8}
	var want []Pair
	if _, err := d.Pairs(ctx, opts, func(p Pair) error { want = append(want, p); return nil }); err != nil {
		t.Fatal(err)
	}
	wantC, _, err := d.Clusters(ctx, ClusterOptions{PairsOptions: opts, Keep: KeepOldest})
	if err != nil {
		t.Fatal(err)
	}
	closeChecked(t, d)

	for _, clusters := range []bool{false, true} {
		d, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		closed := false
		o := opts
		o.Detached = func() {
			if err := d.Close(); err != nil {
				t.Error(err)
			}
			closed = true
		}
		if clusters {
			got, _, err := d.Clusters(ctx, ClusterOptions{PairsOptions: o, Keep: KeepOldest})
			if err != nil || !closed || !reflect.DeepEqual(got, wantC) {
				t.Fatalf("detached Clusters: %v (closed %v), %d clusters, want %d", err, closed, len(got), len(wantC))
			}
			continue
		}
		var got []Pair
		if _, err := d.Pairs(ctx, o, func(p Pair) error { got = append(got, p); return nil }); err != nil || !closed {
			t.Fatalf("detached Pairs: %v (closed %v)", err, closed)
		}
		less := func(a, b Pair) int { return strings.Compare(a.A+"\x00"+a.B, b.A+"\x00"+b.B) }
		slices.SortFunc(got, less)
		slices.SortFunc(want, less)
		if !slices.Equal(got, want) || len(want) == 0 {
			t.Fatalf("detached Pairs gave %d pairs, want %d", len(got), len(want))
		}
	}
}

// TestInvalidPlans: a plan no query can run is ErrInvalidOptions from
// Query, Pairs, Clusters and CheckPlan alike, on an empty database too,
// and named by the call.
func TestInvalidPlans(t *testing.T) {
	for _, docs := range []int{0, 2} {
		d := openTest(t, "", nil)
		r := rand.New(rand.NewPCG(1, 1))
		for i := range docs {
			addBatch(t, d, []Input{{ID: fmt.Sprintf("d%d", i), Fingerprint: randFP(r, d.Params().K)}})
		}
		q := randFP(r, d.Params().K)
		for _, p := range []Plan{{Kind: PlanApprox}, {Kind: PlanProbe, Tau: 2, Lower: -3}, {Kind: 99}, {Kind: -1}} {
			_, qerr := d.QueryFingerprint(ctx, q, QueryOptions{Threshold: 0.8, Plan: p})
			_, perr := d.Pairs(ctx, PairsOptions{Threshold: 0.8, Plan: p}, func(Pair) error { return nil })
			_, _, cerr := d.Clusters(ctx, ClusterOptions{PairsOptions: PairsOptions{Threshold: 0.8, Plan: p}})
			kerr := d.CheckPlan(0.8, p)
			for op, err := range map[string]error{"query": qerr, "pairs": perr, "clusters": cerr, "plan": kerr} {
				if !errors.Is(err, ErrInvalidOptions) || !strings.HasPrefix(err.Error(), "fpdb: ") {
					t.Errorf("%d documents, %s with plan %+v: %v, want ErrInvalidOptions", docs, op, p, err)
				}
			}
		}
	}
	if s := (Plan{Kind: 99}).String(); s != "plan kind 99" {
		t.Errorf("Plan{Kind: 99}.String() = %q", s)
	}
}
