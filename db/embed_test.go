package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
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
				res, err := d.Backup(ctx, dir)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := d.Backup(ctx, dir); err == nil {
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
					// Counted in the copy, not in the database, which the
					// writes went on changing.
					if res.Docs != n {
						t.Fatalf("backup %d: Backup counted %d documents, the copy holds %d", b, res.Docs, n)
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

// TestBackupErrors: the destination must not exist (nor be inside the
// database), an empty name is refused, a read-only DB refuses, missing
// parents are created, and after Close Backup returns ErrClosed.
func TestBackupErrors(t *testing.T) {
	root := t.TempDir()
	d := openTest(t, filepath.Join(root, "db"), nil)
	r := rand.New(rand.NewPCG(3, 4))
	addBatch(t, d, fpBatch(r, "a", 50, DefaultK))
	exist := filepath.Join(root, "exists")
	if err := os.Mkdir(exist, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := d.Backup(ctx, exist)
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "fpdb: backup "+exist) {
		t.Errorf("Backup into an existing dir: %v, want fs.ErrExist naming the dir", err)
	}
	// A symbolic link to nothing exists too.
	dangling := filepath.Join(root, "dangling")
	if err := os.Symlink(filepath.Join(root, "nothing"), dangling); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Backup(ctx, dangling); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Backup onto a dangling symbolic link: %v, want fs.ErrExist", err)
	}
	// Inside the database, existing or not (the directory itself, its
	// lock file).
	for _, in := range []string{filepath.Join(root, "db", "inner"), d.Dir(), filepath.Join(d.Dir(), lockFileName)} {
		if _, err := d.Backup(ctx, in); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Backup inside the database directory (%s): %v, want ErrInvalidOptions", in, err)
		}
	}
	if _, err := d.Backup(ctx, ""); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Backup to \"\": %v, want ErrInvalidOptions", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.Backup(cctx, filepath.Join(root, "cancelled")); !errors.Is(err, context.Canceled) {
		t.Errorf("Backup with a cancelled context: %v", err)
	}
	closeChecked(t, d)

	// A read-only DB refuses (Pebble checkpoints a writable store only).
	ro, err := Open(filepath.Join(root, "db"), &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Backup(ctx, filepath.Join(root, "ro-backup")); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Backup of a read-only DB: %v, want ErrReadOnly", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	// A missing parent is created.
	d = openTest(t, filepath.Join(root, "db"), nil)
	if _, err := d.Backup(ctx, filepath.Join(root, "nested", "backup")); err != nil {
		t.Fatal(err)
	}
	closeChecked(t, d)
	b := openTest(t, filepath.Join(root, "nested", "backup"), &Options{ReadOnly: true})
	if b.Len() != 50 {
		t.Errorf("backup holds %d documents, want 50", b.Len())
	}
	if _, err := d.Backup(ctx, filepath.Join(root, "after-close")); !errors.Is(err, ErrClosed) {
		t.Errorf("Backup after Close: %v, want ErrClosed", err)
	}
	if _, err := os.Stat(filepath.Join(root, "after-close")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Backup after Close left its destination: %v", err)
	}
}

// TestBackupDestinationFailure: a full disk under the backup's copy of the
// WAL is an error of Backup (the destination is removed), not a storage
// failure of the database, which goes on.
func TestBackupDestinationFailure(t *testing.T) {
	mem := vfs.NewMem()
	var seen atomic.Bool // the destination, while its WAL was being copied
	fsys := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		inBackup := strings.HasPrefix(op.Path, "backup") || strings.HasPrefix(op.Path, ".incomplete-backup-backup-")
		if inBackup && strings.HasSuffix(op.Path, ".log") {
			if _, err := mem.Stat("backup"); err == nil {
				seen.Store(true)
			}
			return diskFull(op, 0)
		}
		return nil
	}))
	d := openTest(t, "db", &Options{fs: fsys, Logger: discardLogger()})
	r := rand.New(rand.NewPCG(5, 6))
	addBatch(t, d, fpBatch(r, "a", 100, DefaultK))
	_, err := d.Backup(ctx, "backup")
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Backup onto a full disk: %v, want ENOSPC", err)
	}
	if _, err := mem.Stat("backup"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("failed Backup left its destination: %v", err)
	}
	// A crash at that moment would have left a store at the destination
	// that opens without the WAL's writes: the copy is made beside it.
	if seen.Load() {
		t.Error("the destination existed while its WAL was being copied")
	}
	if names, err := mem.List(""); err != nil || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, ".incomplete-backup-") }) {
		t.Errorf("failed Backup left its work directory: %v (%v)", names, err)
	}
	addBatch(t, d, fpBatch(r, "b", 10, DefaultK))
	res, err := d.Backup(ctx, "copy")
	if err != nil {
		t.Fatalf("Backup after a failed one: %v", err)
	}
	if res.Docs != 110 {
		t.Fatalf("Backup counted %d documents, want 110", res.Docs)
	}
	b := openTest(t, "copy", &Options{fs: mem})
	if b.Len() != 110 {
		t.Errorf("backup holds %d documents, want 110", b.Len())
	}
}

// benchQueries stores 5 000 texts of 300 words and returns 64 edited
// copies to query with.
func benchQueries(b *testing.B) (*DB, [][]byte) {
	d, err := Open(b.TempDir(), &Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close() })
	var in []Input
	var texts [][]byte
	for i := range 5000 {
		s := text(uint64(i), 300)
		in = append(in, Input{ID: fmt.Sprint("b", i), Text: []byte(s)})
		if i%78 == 0 {
			texts = append(texts, []byte(edit(s, 9)))
		}
	}
	if _, err := d.AddBatch(ctx, in); err != nil {
		b.Fatal(err)
	}
	return d, texts
}

// BenchmarkQueryLoop answers 64 texts with one Query each; compare with
// BenchmarkQueryMany (ns/op is per 64 texts).
func BenchmarkQueryLoop(b *testing.B) {
	d, texts := benchQueries(b)
	b.ResetTimer()
	for range b.N {
		for _, t := range texts {
			if _, err := d.Query(ctx, t, QueryOptions{Threshold: 0.7}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkQueryMany answers the same 64 texts with one QueryMany.
func BenchmarkQueryMany(b *testing.B) {
	d, texts := benchQueries(b)
	b.ResetTimer()
	for range b.N {
		if _, err := d.QueryMany(ctx, texts, QueryOptions{Threshold: 0.7}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSyncNoSync: with NoSync, a simulated power loss (a crash clone of
// the file system keeping only synced data) loses unsynced adds; after
// Sync, every add acknowledged before it survives, and the recovered
// database passes Check.
func TestSyncNoSync(t *testing.T) {
	mem := vfs.NewCrashableMem()
	d := openTest(t, "db", &Options{fs: mem, NoSync: true})
	r := rand.New(rand.NewPCG(31, 32))
	add := func(prefix string, n int) []Input {
		docs := fpBatch(r, prefix, n, DefaultK)
		for _, in := range docs {
			if _, err := d.Add(ctx, in, nil); err != nil {
				t.Fatal(err)
			}
		}
		return docs
	}
	// count opens a crash clone of the file system and counts the docs of
	// want it holds.
	count := func(want []Input) int {
		t.Helper()
		clone := mem.CrashClone(vfs.CrashCloneCfg{})
		c, err := Open("db", &Options{fs: clone})
		if err != nil {
			t.Fatalf("Open after power loss: %v", err)
		}
		defer c.Close()
		if err := c.Check(ctx); err != nil {
			t.Fatalf("Check after power loss: %v", err)
		}
		n := 0
		for _, in := range want {
			if has, err := c.Has(ctx, in.ID); err != nil {
				t.Fatal(err)
			} else if has {
				n++
			}
		}
		return n
	}

	first := add("a", 40)
	if n := count(first); n == len(first) {
		t.Fatalf("all %d unsynced NoSync adds survived a power loss: the test cannot tell Sync works", n)
	} else {
		t.Logf("before Sync: %d of %d adds survive a power loss", n, len(first))
	}
	if err := d.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	second := add("b", 40) // unsynced again
	if n := count(first); n != len(first) {
		t.Fatalf("after Sync: %d of %d acknowledged adds survive a power loss", n, len(first))
	}
	if err := d.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(append(first, second...)); n != len(first)+len(second) {
		t.Fatalf("after the second Sync: %d of %d adds survive", n, len(first)+len(second))
	}
}

// TestBackupDestinationNames: a destination named with a trailing slash,
// and one whose name is long (the hidden directory the copy is made in
// beside it must still be a valid name), are backed up to, and leave no
// work directory behind.
func TestBackupDestinationNames(t *testing.T) {
	d := openTest(t, t.TempDir(), &Options{Logger: discardLogger()})
	addBatch(t, d, fpBatch(rand.New(rand.NewPCG(7, 8)), "a", 20, DefaultK))
	root := t.TempDir()
	for _, dest := range []string{filepath.Join(root, "copy") + "/", filepath.Join(root, strings.Repeat("b", 240))} {
		res, err := d.Backup(ctx, dest)
		if err != nil || res.Docs != 20 {
			t.Fatalf("Backup %s: %+v, %v", dest, res, err)
		}
		b := openTest(t, dest, &Options{ReadOnly: true})
		if b.Len() != 20 {
			t.Errorf("backup %s holds %d documents, want 20", dest, b.Len())
		}
		closeChecked(t, b)
	}
	names, err := os.ReadDir(root)
	if err != nil || len(names) != 2 {
		t.Fatalf("%s holds %v (%v), want the two backups", root, names, err)
	}
}

// TestBackupThroughLinkAndDotDot: a destination reached through a link
// and ".." is where the operating system takes the path (the parent of
// the link's target), as the checks before the copy saw it: not a place
// inside the database directory that the text "link/.." cleaned away
// would name.
func TestBackupThroughLinkAndDotDot(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "db")
	d := openTest(t, dir, &Options{Logger: discardLogger()})
	addBatch(t, d, fpBatch(rand.New(rand.NewPCG(9, 9)), "a", 5, DefaultK))
	target := filepath.Join(root, "elsewhere", "deep")
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "ln")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Backup(ctx, filepath.Join(dir, "ln")+"/../copy"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "copy")); err == nil {
		t.Fatal("the backup was written inside the database directory")
	}
	b := openTest(t, filepath.Join(root, "elsewhere", "copy"), &Options{ReadOnly: true})
	if b.Len() != 5 {
		t.Errorf("the backup holds %d documents, want 5", b.Len())
	}
	closeChecked(t, b)
}
