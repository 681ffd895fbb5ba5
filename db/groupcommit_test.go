package db

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestGroupCommit has concurrent writers add, check-then-add and delete
// on a synced database whose WAL syncs each take 5 ms. Writers
// wait for their sync after releasing the writer lock, so one sync covers
// the writes committed meanwhile: far fewer syncs than writes. Nothing
// acknowledged may be lost for that: crash clones taken while the writers
// run (keeping none of the unsynced data) hold every write acknowledged
// before the clone, and open clean; and the check of a concurrent add sees
// the writes committed before it, synced or not, so of one text sent by
// every writer with Reject exactly one is stored.
func TestGroupCommit(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var syncs atomic.Int64
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			if isWAL(op) {
				syncs.Add(1)
				time.Sleep(5 * time.Millisecond)
			}
		}
		return nil
	}))
	d := openTest(t, "db", &Options{fs: fs, AuditLog: true})
	const writers, perWriter = 8, 30
	var (
		mu      sync.Mutex
		acked   = map[string]bool{} // true: stored, false: deleted
		deletes = map[string]bool{} // deletes in flight
		writes  atomic.Int64
		wg      sync.WaitGroup
		errs    = make(chan error, writers)
		dupText = []byte(crashText(999_999))
	)
	ack := func(id string, present bool) {
		mu.Lock()
		acked[id] = present
		delete(deletes, id)
		mu.Unlock()
	}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := d.Add(ctx, Input{ID: fmt.Sprintf("dup-%d", w), Text: dupText}, &AddOptions{Threshold: 0.8, Reject: true})
			if err != nil {
				errs <- err
				return
			}
			if res.Stored {
				writes.Add(1)
				ack(res.Doc.ID, true)
			}
			for i := range perWriter {
				id := fmt.Sprintf("w%d-%03d", w, i)
				if _, err := d.Add(ctx, Input{ID: id, Text: []byte(crashText(uint64(w*1000 + i)))}, &AddOptions{Threshold: 0.8}); err != nil {
					errs <- err
					return
				}
				writes.Add(1)
				ack(id, true)
				if i%5 == 4 { // delete an earlier one
					old := fmt.Sprintf("w%d-%03d", w, i-2)
					mu.Lock()
					deletes[old] = true
					mu.Unlock()
					if err := d.Delete(ctx, old); err != nil {
						errs <- err
						return
					}
					writes.Add(1)
					ack(old, false)
				}
			}
		}()
	}
	type clone struct {
		fs    *vfs.MemFS
		acked map[string]bool
	}
	var clones []clone
	rng := rand.New(rand.NewPCG(1, 2))
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(time.Duration(5+rng.IntN(20)) * time.Millisecond):
			// Under mu no write is acknowledged or started: the state
			// known is every acknowledged write, less the documents
			// whose delete is in flight (either way is right).
			mu.Lock()
			before := make(map[string]bool, len(acked))
			for k, v := range acked {
				if !deletes[k] {
					before[k] = v
				}
			}
			clones = append(clones, clone{mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}), before})
			mu.Unlock()
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n, s := writes.Load(), syncs.Load()
	t.Logf("%d acknowledged writes of %d writers, %d WAL syncs; %d crash clones", n, writers, s, len(clones))
	// Without sharing, every write syncs (and a WAL rotation adds more).
	// With it, 8 writers gave 79 syncs for 289 writes alone, 176 under
	// -race beside the whole test suite, where fingerprinting is slow.
	if s*10 >= n*9 {
		t.Errorf("%d WAL syncs for %d writes: concurrent writers did not share syncs", s, n)
	}
	has := func(d *DB, id string) bool {
		ok, err := d.Has(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	dups := func(d *DB) int {
		c := 0
		for w := range writers {
			if has(d, fmt.Sprintf("dup-%d", w)) {
				c++
			}
		}
		return c
	}
	if c := dups(d); c != 1 {
		t.Errorf("%d copies of one text stored by concurrent adds with Reject, want 1", c)
	}
	if len(clones) == 0 {
		t.Fatal("no crash clone taken while the writers ran")
	}
	for i, c := range clones {
		cd, err := Open("db", &Options{fs: c.fs})
		if err != nil {
			t.Fatalf("clone %d: open: %v", i, err)
		}
		var lost []string
		for id, present := range c.acked {
			if has(cd, id) != present {
				lost = append(lost, id)
			}
		}
		slices.Sort(lost)
		if len(lost) > 0 {
			t.Errorf("clone %d: %d acknowledged writes not in it: %v", i, len(lost), lost)
		}
		if c := dups(cd); c > 1 {
			t.Errorf("clone %d: %d copies of the rejected text", i, c)
		}
		closeChecked(t, cd)
	}
}

// TestAnswersWaitForTheWritesTheyRead: a call that writes nothing but
// answers from writes committed and not yet synced (an add found
// unchanged or rejected against a concurrent add, a delete of a document
// a concurrent delete removed) returns only once those writes are synced,
// so that a crash cannot undo what it reported. The WAL syncs are held
// while the calls run.
func TestAnswersWaitForTheWritesTheyRead(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var hold atomic.Bool
	release := make(chan struct{})
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			if isWAL(op) && hold.Load() {
				<-release
			}
		}
		return nil
	}))
	d := openTest(t, "db", &Options{fs: fs}) // no audit log: a rejection writes nothing
	var once sync.Once
	unhold := func() { once.Do(func() { hold.Store(false); close(release) }) }
	defer unhold() // before the Close of openTest's cleanup
	xText := []byte(crashText(1))
	if _, err := d.Add(ctx, Input{ID: "z", Text: []byte(crashText(2))}, nil); err != nil {
		t.Fatal(err)
	}
	has := func(id string) bool {
		ok, err := d.Has(ctx, id)
		if err != nil {
			t.Error(err)
		}
		return ok
	}
	hold.Store(true)
	writes := make(chan error, 2)
	go func() { _, err := d.Add(ctx, Input{ID: "x", Text: xText}, nil); writes <- err }()
	go func() { writes <- d.Delete(ctx, "z") }()
	for deadline := time.Now().Add(10 * time.Second); !has("x") || has("z"); {
		if time.Now().After(deadline) {
			t.Fatal("the add and the delete were not committed")
		}
		time.Sleep(time.Millisecond)
	}
	type answer struct {
		what string
		err  error
		res  *AddResult
	}
	answers := make(chan answer, 3)
	go func() {
		res, err := d.Add(ctx, Input{ID: "x", Text: xText}, &AddOptions{Threshold: 0.8})
		answers <- answer{"unchanged add", err, res}
	}()
	go func() {
		res, err := d.Add(ctx, Input{ID: "y", Text: xText}, &AddOptions{Threshold: 0.8, Reject: true})
		answers <- answer{"rejected add", err, res}
	}()
	go func() { answers <- answer{"delete of a deleted document", d.Delete(ctx, "z"), nil} }()
	select {
	case a := <-answers:
		t.Fatalf("%s answered (%v) before the writes it read were synced", a.what, a.err)
	case <-time.After(300 * time.Millisecond):
	}
	unhold()
	for range 2 {
		if err := <-writes; err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		a := <-answers
		switch a.what {
		case "unchanged add":
			if a.err != nil || !a.res.Unchanged {
				t.Errorf("%s: %+v %v", a.what, a.res, a.err)
			}
		case "rejected add":
			if a.err != nil || a.res.Stored || len(a.res.Matches) != 1 || a.res.Matches[0].ID != "x" {
				t.Errorf("%s: %+v %v", a.what, a.res, a.err)
			}
		default:
			if !errors.Is(a.err, ErrNotFound) {
				t.Errorf("%s: %v, want ErrNotFound", a.what, a.err)
			}
		}
	}
}
