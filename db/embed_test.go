package db

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// TestBackupUnderWrites backs a database (NoSync) up twice while a goroutine
// keeps adding and replacing documents (one of the backups in bulk-load
// mode, with postings deferred), then opens each backup, read-only and
// writable: Check passes, every document acknowledged before Backup was
// called is in it, and every document in it is whole (the fingerprint last
// written for its id, or one written while Backup ran).
func TestBackupUnderWrites(t *testing.T) {
	for _, bulk := range []bool{false, true} {
		t.Run(fmt.Sprintf("bulk=%v", bulk), func(t *testing.T) {
			d := openTest(t, "", &Options{BulkLoad: bulk, NoSync: true})
			r := rand.New(rand.NewPCG(3, 9))
			k := d.Params().K
			var mu sync.Mutex
			history := map[string][][]uint64{} // every fingerprint written per id, in order
			acked := map[string][]uint64{}     // the last acknowledged one
			var stop atomic.Bool
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				wr := rand.New(rand.NewPCG(4, 4))
				for i := 0; !stop.Load() && i < 1500; i++ {
					id := fmt.Sprintf("doc%04d", wr.IntN(3000))
					fp := randFP(wr, k)
					mu.Lock()
					history[id] = append(history[id], fp)
					mu.Unlock()
					if _, err := d.Add(ctx, Input{ID: id, Fingerprint: fp}, nil); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acked[id] = fp
					mu.Unlock()
				}
			}()
			addBatch(t, d, fpBatch(r, "base", 2000, k))
			parent := t.TempDir()
			for b := range 2 {
				mu.Lock()
				before := make(map[string][]uint64, len(acked))
				for id, fp := range acked {
					before[id] = fp
				}
				mu.Unlock()
				dir := filepath.Join(parent, fmt.Sprint("backup", b))
				if err := d.Backup(ctx, dir); err != nil {
					t.Fatal(err)
				}
				if err := d.Backup(ctx, dir); err == nil {
					t.Fatal("Backup into an existing directory succeeded")
				}
				mu.Lock()
				hist := make(map[string][][]uint64, len(history))
				for id, h := range history {
					hist[id] = slices.Clone(h)
				}
				mu.Unlock()
				for _, readOnly := range []bool{true, false} {
					bd := openTest(t, dir, &Options{ReadOnly: readOnly})
					if err := bd.Check(ctx); err != nil {
						t.Fatalf("backup %d: Check: %v", b, err)
					}
					for id, fp := range before {
						doc, err := bd.Get(ctx, id)
						if err != nil {
							t.Fatalf("backup %d: %s acknowledged before the backup: %v", b, id, err)
						}
						h := hist[id]
						at := slices.IndexFunc(h, func(f []uint64) bool { return slices.Equal(f, doc.Fingerprint) })
						if at < slices.IndexFunc(h, func(f []uint64) bool { return slices.Equal(f, fp) }) {
							t.Fatalf("backup %d: %s holds a fingerprint older than the acknowledged one", b, id)
						}
					}
					n := 0
					if err := bd.Docs(ctx, func(doc Doc) error {
						n++
						if h, ok := hist[doc.ID]; ok && !slices.ContainsFunc(h, func(f []uint64) bool { return slices.Equal(f, doc.Fingerprint) }) {
							return fmt.Errorf("%s: a fingerprint never written", doc.ID)
						}
						return nil
					}); err != nil {
						t.Fatalf("backup %d: %v", b, err)
					}
					if n != bd.Len() || n < len(before) {
						t.Fatalf("backup %d: Docs gave %d, Len %d", b, n, bd.Len())
					}
					if err := bd.Close(); err != nil {
						t.Fatal(err)
					}
				}
			}
			stop.Store(true)
			wg.Wait()
			if len(acked) < 10 {
				t.Fatalf("only %d documents written during the backups: the test proves little", len(acked))
			}
		})
	}
}

// TestDocsLenHas checks Docs against what was stored (order, metadata,
// fingerprints), that it reads a snapshot, stops at fn's error, and that
// Len and Has agree.
func TestDocsLenHas(t *testing.T) {
	d := openTest(t, "", nil)
	r := rand.New(rand.NewPCG(6, 1))
	in := fpBatch(r, "d", 300, d.Params().K)
	for i := range in {
		in[i].Source = fmt.Sprint("src", i)
	}
	addBatch(t, d, in)
	if err := d.Delete(ctx, "d-00007"); err != nil {
		t.Fatal(err)
	}
	if d.Len() != 299 {
		t.Fatalf("Len = %d", d.Len())
	}
	for _, c := range []struct {
		id   string
		want bool
	}{{"d-00000", true}, {"d-00007", false}, {"nope", false}} {
		if got, err := d.Has(ctx, c.id); err != nil || got != c.want {
			t.Errorf("Has(%q) = %v, %v", c.id, got, err)
		}
	}
	if _, err := d.Has(ctx, ""); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Has(\"\"): %v", err)
	}
	var got []Doc
	err := d.Docs(ctx, func(doc Doc) error {
		if len(got) == 0 {
			// Writes during the iteration are not seen.
			if _, err := d.Add(ctx, Input{ID: "late", Fingerprint: randFP(r, d.Params().K)}, nil); err != nil {
				return err
			}
		}
		got = append(got, doc)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 299 {
		t.Fatalf("Docs gave %d documents, want 299", len(got))
	}
	j := 0
	for i, want := range in {
		if i == 7 {
			continue
		}
		g := got[j]
		j++
		if g.ID != want.ID || g.Source != want.Source || !slices.Equal(g.Fingerprint, want.Fingerprint) || g.Added.IsZero() {
			t.Fatalf("Docs #%d = %+v, want %s", j, g, want.ID)
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := d.Docs(ctx, func(Doc) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("Docs with a failing fn: %v after %d calls", err, calls)
	}
}

// TestQueryMany: QueryMany answers each text as Query does.
func TestQueryMany(t *testing.T) {
	d := openTest(t, "", nil)
	var texts [][]byte
	for i := range 60 {
		s := text(uint64(i), 200)
		if _, err := d.Add(ctx, Input{ID: fmt.Sprint("t", i), Text: []byte(s)}, nil); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, []byte(edit(s, 7+i%20)))
	}
	texts = append(texts, []byte("nothing like the others at all"))
	opts := QueryOptions{Threshold: 0.6}
	many, err := d.QueryMany(ctx, texts, opts)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for i, txt := range texts {
		one, err := d.Query(ctx, txt, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(one.Matches, many[i].Matches) {
			t.Fatalf("text %d: QueryMany %v, Query %v", i, many[i].Matches, one.Matches)
		}
		found += len(one.Matches)
	}
	if found < 30 {
		t.Fatalf("only %d matches: the test proves little", found)
	}
	if _, err := d.QueryMany(ctx, texts, QueryOptions{}); !errors.Is(err, ErrInvalidThreshold) {
		t.Fatalf("QueryMany without a threshold: %v", err)
	}
}

// TestSyncAndMetrics: Sync works in NoSync mode and after Close returns
// ErrClosed; the metrics count what was done.
func TestSyncAndMetrics(t *testing.T) {
	d, err := Open(t.TempDir(), &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2, 2))
	k := d.Params().K
	addBatch(t, d, fpBatch(r, "m", 100, k))
	if _, err := d.Add(ctx, Input{ID: "m-00001", Fingerprint: randFP(r, k)}, nil); err != nil { // a replace
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "m-00002"); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	q := randFP(r, k)
	for range 5 {
		if _, err := d.QueryFingerprint(ctx, q, QueryOptions{Threshold: 0.9}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := d.QueryFingerprint(ctx, q, QueryOptions{Threshold: 0.9, Plan: Plan{Kind: PlanScan}}); err != nil {
			t.Fatal(err)
		}
	}
	m := d.Metrics()
	if m.Added != 101 || m.Deleted != 2 || m.Writes != 3 || m.Store.DiskBytes == 0 || m.Store.WALBytes == 0 {
		t.Fatalf("metrics %+v", m)
	}
	counts := map[string]int64{}
	for _, pm := range m.Queries {
		counts[pm.Plan] = pm.Count
		if pm.Count > 0 && (pm.Total <= 0 || pm.Buckets[len(pm.Buckets)-1] > pm.Count) {
			t.Fatalf("plan %s: %+v", pm.Plan, pm)
		}
		for i := 1; i < len(pm.Buckets); i++ {
			if pm.Buckets[i] < pm.Buckets[i-1] {
				t.Fatalf("plan %s: buckets not cumulative: %v", pm.Plan, pm.Buckets)
			}
		}
	}
	if counts["scan"] != 8 || len(LatencyBuckets()) != len(m.Queries[0].Buckets) {
		t.Fatalf("query counts %v (the planner scans 100 documents), buckets %v", counts, LatencyBuckets())
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}
	if m := d.Metrics(); m.Added != 101 || m.Store.DiskBytes != 0 {
		t.Fatalf("Metrics after Close: %+v", m)
	}
}

// TestBackupReadOnly: a read-only DB refuses Backup with ErrReadOnly.
func TestBackupReadOnly(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, nil)
	closeChecked(t, d)
	ro := openTest(t, dir, &Options{ReadOnly: true})
	if err := ro.Backup(ctx, filepath.Join(t.TempDir(), "b")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Backup of a read-only DB: %v", err)
	}
}
