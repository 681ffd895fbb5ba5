package db

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/fpdb/fpdb/internal/posting"
)

// TestPostingChurn adds and removes ids in a few posting keys with small
// memtables, flushes and compactions of random ranges, and compares every
// key with a model. It is the regression test of the TestCrash finding
// that a merge operator implementing pebble.DeletableValueMerger makes
// Pebble v2.1.7's compaction iterator panic in a background goroutine.
func TestPostingChurn(t *testing.T) {
	steps := 20000
	if testing.Short() {
		steps = 5000
	}
	for seed := range uint64(3) {
		p, err := pebble.Open("db", &pebble.Options{
			FS: vfs.NewMem(), Merger: posting.Merger(), FormatMajorVersion: pebbleFormat,
			MemTableSize: 64 << 10, L0CompactionThreshold: 2, Logger: slogLogger{discardLogger()},
		})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, 2))
		model := map[int]map[uint32]bool{}
		key := func(i int) []byte { return []byte(fmt.Sprintf("p%04d", i)) }
		for step := range steps {
			k, id := r.IntN(50), uint32(r.IntN(6))
			if model[k] == nil {
				model[k] = map[uint32]bool{}
			}
			op := posting.EncodeAdd(roaring.BitmapOf(id))
			if model[k][id] {
				op = posting.EncodeRemove(roaring.BitmapOf(id))
				delete(model[k], id)
			} else {
				model[k][id] = true
			}
			if err := p.Merge(key(k), op, nil); err != nil {
				t.Fatal(err)
			}
			switch r.IntN(500) {
			case 0:
				if err := p.Flush(); err != nil {
					t.Fatal(err)
				}
			case 1:
				a, b := r.IntN(50), r.IntN(50)
				if err := p.Compact(ctx, key(min(a, b)), key(max(a, b)+1), r.IntN(2) == 0); err != nil {
					t.Fatal(err)
				}
			}
			if step%1000 != 999 {
				continue
			}
			for k, set := range model {
				var want, got []uint32
				for id := range set {
					want = append(want, id)
				}
				slices.Sort(want)
				v, c, err := p.Get(key(k))
				if err == nil {
					if err := posting.ForEach(v, func(id uint32) { got = append(got, id) }); err != nil {
						t.Fatal(err)
					}
					_ = c.Close()
				}
				if !slices.Equal(want, got) {
					t.Fatalf("seed %d step %d key %d: %v, want %v", seed, step, k, got, want)
				}
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// faultCase is a storage fault injected while the DB runs.
type faultCase struct {
	name string
	// inject returns the error to inject into op, or nil; n counts the
	// operations seen since the fault was switched on.
	inject func(op errorfs.Op, n int64) error
	// cause is an error the failed call must also wrap, if any.
	cause error
	// stillBroken: the fault persists when the DB is first reopened.
	stillBroken bool
}

func isWAL(op errorfs.Op) bool { return strings.HasSuffix(op.Path, ".log") }

// diskFull fails every operation that needs space, as a full disk does.
func diskFull(op errorfs.Op, _ int64) error {
	switch op.Kind {
	case errorfs.OpCreate, errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync, errorfs.OpFileSyncData,
		errorfs.OpFileSyncTo, errorfs.OpFilePreallocate, errorfs.OpLink, errorfs.OpReuseForWrite, errorfs.OpMkdirAll:
		return &fsError{op: op, err: syscall.ENOSPC}
	}
	return nil
}

// fsError is an injected error that wraps a syscall errno, as the os
// package's errors do.
type fsError struct {
	op  errorfs.Op
	err error
}

func (e *fsError) Error() string { return fmt.Sprintf("%v %s: %v", e.op.Kind, e.op.Path, e.err) }
func (e *fsError) Unwrap() error { return e.err }

var faultCases = []faultCase{
	{name: "WAL write error", inject: func(op errorfs.Op, _ int64) error {
		if op.Kind == errorfs.OpFileWrite && isWAL(op) {
			return errorfs.ErrInjected
		}
		return nil
	}, cause: errorfs.ErrInjected},
	{name: "WAL sync error", inject: func(op errorfs.Op, _ int64) error {
		if op.Kind == errorfs.OpFileSyncData && isWAL(op) {
			return errorfs.ErrInjected
		}
		return nil
	}, cause: errorfs.ErrInjected},
	{name: "a later WAL write fails", inject: func(op errorfs.Op, n int64) error {
		if op.Kind == errorfs.OpFileWrite && isWAL(op) && n >= 2 {
			return errorfs.ErrInjected
		}
		return nil
	}, cause: errorfs.ErrInjected},
	{name: "disk full", inject: diskFull, cause: syscall.ENOSPC, stillBroken: true},
}

// TestWriteFaults injects write errors, sync errors and a full disk while
// documents are added, replaced and deleted. The failing call must return
// an error wrapping ErrFailed (and the cause), every later call but Close
// must fail the same way without touching the store, and the database must
// reopen clean: every acknowledged write present, the failed one wholly
// present or wholly absent, Check passing. A crash (losing unsynced data)
// right after the failure must keep every acknowledged write too.
func TestWriteFaults(t *testing.T) {
	for _, fc := range faultCases {
		t.Run(fc.name, func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			var on atomic.Bool
			var seen atomic.Int64
			fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if !on.Load() {
					return nil
				}
				return fc.inject(op, seen.Add(1)-1)
			}))
			d, err := Open("db", &Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			model := map[string]uint64{}
			for i := range 20 {
				id := fmt.Sprintf("doc%03d", i)
				if _, err := d.Add(ctx, id, []byte(crashText(uint64(i))), nil); err != nil {
					t.Fatal(err)
				}
				model[id] = uint64(i)
			}
			on.Store(true)
			// Add, replace and delete until a call fails.
			type op struct {
				del bool
				id  string
				ts  uint64
			}
			var failed *op
			var ferr error
			for i := 0; failed == nil && i < 12; i++ {
				o := op{del: i%3 == 2, id: fmt.Sprintf("doc%03d", (i*7)%30), ts: uint64(100 + i)}
				if o.del {
					ferr = d.Delete(ctx, o.id)
					if errors.Is(ferr, ErrNotFound) {
						ferr = nil
					}
				} else {
					_, ferr = d.Add(ctx, o.id, []byte(crashText(o.ts)), nil)
				}
				switch {
				case ferr != nil:
					failed = &o
				case o.del:
					delete(model, o.id)
				default:
					model[o.id] = o.ts
				}
			}
			if failed == nil {
				t.Fatal("no call failed: the fault was not injected")
			}
			if !errors.Is(ferr, ErrFailed) || (fc.cause != nil && !errors.Is(ferr, fc.cause)) {
				t.Fatalf("failed call: %v, want ErrFailed wrapping %v", ferr, fc.cause)
			}
			t.Logf("failed %+v: %v", *failed, ferr)
			// Later calls fail without touching the store.
			if _, err := d.Add(ctx, "later", []byte("some later words"), nil); !errors.Is(err, ErrFailed) {
				t.Errorf("Add after failure: %v", err)
			}
			if _, err := d.Query(ctx, []byte(crashText(1)), QueryOptions{Threshold: 0.5}); !errors.Is(err, ErrFailed) {
				t.Errorf("Query after failure: %v", err)
			}
			if _, err := d.Get(ctx, "doc001"); !errors.Is(err, ErrFailed) {
				t.Errorf("Get after failure: %v", err)
			}
			if err := d.Check(ctx); !errors.Is(err, ErrFailed) {
				t.Errorf("Check after failure: %v", err)
			}
			crashed := mem.CrashClone(vfs.CrashCloneCfg{}) // power loss now: synced data only
			_ = d.Close()                                  // may report the fault
			if err := d.Close(); !errors.Is(err, ErrClosed) {
				t.Errorf("second Close: %v", err)
			}
			if fc.stillBroken {
				// Still full: Open fails with an error, it does not panic.
				if d, err := Open("db", &Options{FS: fs}); err == nil {
					if _, err := d.Add(ctx, "x", []byte("more words here"), nil); err == nil {
						t.Error("Add on a full disk succeeded")
					}
					_ = d.Close()
				} else {
					t.Logf("open on a full disk: %v", err)
				}
			}
			on.Store(false)
			for _, c := range []struct {
				name string
				fs   vfs.FS
			}{{"reopen", fs}, {"after power loss", crashed}} {
				d := openTest(t, "db", &Options{FS: c.fs})
				var v verifier
				m := maps(model)
				old, had := m[failed.id]
				cands := []uint64{failed.ts}
				if failed.del {
					cands = nil
				}
				if had {
					cands = append(cands, old)
				}
				got, found, err := v.state(d, failed.id, cands...)
				if err != nil {
					t.Fatalf("%s: failed call left %s half done: %v", c.name, failed.id, err)
				}
				switch {
				case failed.del && !found:
					delete(m, failed.id)
				case !failed.del && found && got == failed.ts:
					m[failed.id] = failed.ts
				}
				ids := make([]string, 30)
				for i := range ids {
					ids[i] = fmt.Sprintf("doc%03d", i)
				}
				if err := v.verify(d, m, ids); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if err := d.Check(ctx); err != nil {
					t.Fatalf("%s: Check: %v", c.name, err)
				}
				closeChecked(t, d)
			}
		})
	}
}

func maps(m map[string]uint64) map[string]uint64 {
	c := make(map[string]uint64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// TestFlushFaults makes every sstable write fail while a memtable flush
// runs: Pebble retries the flush in the background, writes keep succeeding
// (they go to the WAL), and once the fault clears the flush completes and
// nothing is lost.
func TestFlushFaults(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var on atomic.Bool
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if on.Load() && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpCreate) && strings.HasSuffix(op.Path, ".sst") {
			return errorfs.ErrInjected
		}
		return nil
	}))
	d := openTest(t, "db", &Options{FS: fs})
	model := map[string]uint64{}
	done := make(chan error, 1)
	for i := range 40 {
		id := fmt.Sprintf("doc%03d", i%30)
		if _, err := d.Add(ctx, id, []byte(crashText(uint64(i))), nil); err != nil {
			t.Fatal(err)
		}
		model[id] = uint64(i)
		if i == 20 {
			on.Store(true)
			go func() { done <- d.pdb.Flush() }()
		}
	}
	time.Sleep(50 * time.Millisecond)
	on.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("flush: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("flush did not complete 30 s after the fault cleared")
	}
	closeChecked(t, d)
	d = openTest(t, "db", &Options{FS: mem})
	var v verifier
	ids := make([]string, 30)
	for i := range ids {
		ids[i] = fmt.Sprintf("doc%03d", i)
	}
	if err := v.verify(d, model, ids); err != nil {
		t.Fatal(err)
	}
}
