package db

import (
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

// sstFaultFS wraps fs so that creating or writing an sstable fails while
// on is set.
func sstFaultFS(fs vfs.FS, on *atomic.Bool) vfs.FS {
	return errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if on.Load() && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpCreate) && strings.HasSuffix(op.Path, ".sst") {
			return errorfs.ErrInjected
		}
		return nil
	}))
}

// verifyDocs checks that d holds the documents doc000 … doc(n-1) as model
// says (verifier.verify).
func verifyDocs(t *testing.T, d *DB, model map[string]uint64, n int) {
	t.Helper()
	var v verifier
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("doc%03d", i)
	}
	if err := v.verify(d, model, ids); err != nil {
		t.Fatal(err)
	}
}

// TestFlushFaults makes every sstable write fail while a memtable flush
// runs: Pebble retries the flush in the background, writes keep succeeding
// (they go to the WAL), and once the fault clears the flush completes and
// nothing is lost.
func TestFlushFaults(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var on atomic.Bool
	fs := sstFaultFS(mem, &on)
	d := openTest(t, "db", &Options{fs: fs})
	model := map[string]uint64{}
	done := make(chan error, 1)
	for i := range 40 {
		id := fmt.Sprintf("doc%03d", i%30)
		if _, err := d.Add(ctx, Input{ID: id, Text: []byte(crashText(uint64(i)))}, nil); err != nil {
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
	d = openTest(t, "db", &Options{fs: mem})
	verifyDocs(t, d, model, 30)
}

// TestCloseWhileTablesFail: Close writes the memtable to a table; when
// every table write fails (Pebble retries them without end), Close stops
// waiting, returns, and the next Open replays the WAL: nothing is lost.
func TestCloseWhileTablesFail(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var on atomic.Bool
	fs := sstFaultFS(mem, &on)
	d, err := Open("db", &Options{fs: fs, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]uint64{}
	for i := range 20 {
		id := fmt.Sprintf("doc%03d", i)
		if _, err := d.Add(ctx, Input{ID: id, Text: []byte(crashText(uint64(i)))}, nil); err != nil {
			t.Fatal(err)
		}
		model[id] = uint64(i)
	}
	on.Store(true)
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		on.Store(false) // let it end
		t.Fatal("Close still waits 30 s after its flush began failing")
	}
	on.Store(false)
	d = openTest(t, "db", &Options{fs: mem})
	verifyDocs(t, d, model, 20)
}
