package db

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestMarks(t *testing.T) {
	d := openTest(t, "", nil)
	if _, err := d.Mark(ctx, "input/a"); !errors.Is(err, ErrNoMark) {
		t.Fatalf("missing mark: %v", err)
	}
	res, err := d.AddBatchMarked(ctx, []Input{{ID: "x", Text: []byte("one two three four five")}, {ID: "bad", Text: []byte("   ")}}, Mark{Name: "input/a", Value: []byte("2")})
	if err != nil || res.Stored != 1 || len(res.Skipped) != 1 {
		t.Fatalf("AddBatchMarked: %+v, %v", res, err)
	}
	// A batch that stores nothing still writes its mark.
	if _, err := d.AddBatchMarked(ctx, []Input{{ID: "bad2", Text: []byte("")}}, Mark{Name: "input/b", Value: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if err := d.SetMark(ctx, Mark{Name: "other", Value: []byte{}}); err != nil {
		t.Fatal(err)
	}
	ms, err := d.Marks(ctx, "input/")
	if err != nil || len(ms) != 2 || ms[0].Name != "input/a" || string(ms[0].Value) != "2" || ms[1].Name != "input/b" {
		t.Fatalf("Marks: %+v, %v", ms, err)
	}
	if v, err := d.Mark(ctx, "other"); err != nil || v == nil || len(v) != 0 {
		t.Fatalf("empty mark: %q, %v", v, err)
	}
	if err := d.SetMark(ctx, Mark{Name: "input/a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mark(ctx, "input/a"); !errors.Is(err, ErrNoMark) {
		t.Fatalf("deleted mark: %v", err)
	}
	for _, bad := range []Mark{{Name: ""}, {Name: "\xff"}, {Name: "v", Value: make([]byte, MaxMarkValue+1)}} {
		if err := d.SetMark(ctx, bad); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("mark %q accepted: %v", bad.Name, err)
		}
	}
	if d.Len() != 1 {
		t.Fatalf("%d documents", d.Len())
	}
}

// TestMarksPowerLoss checks that a mark and the documents of its batch
// survive a power loss together: after any crash, the mark counts exactly
// the documents present.
func TestMarksPowerLoss(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	mem := vfs.NewCrashableMem()
	d, err := Open("db", &Options{fs: mem, KeepTexts: true})
	if err != nil {
		t.Fatal(err)
	}
	const batches, per = 60, 7
	var wg sync.WaitGroup
	wg.Add(1)
	errc := make(chan error, 1)
	go func() {
		defer wg.Done()
		for b := range batches {
			docs := make([]Input, per)
			for i := range docs {
				n := b*per + i
				docs[i] = Input{ID: fmt.Sprintf("doc%04d", n), Text: []byte(crashText(uint64(n)))}
			}
			if _, err := d.AddBatchMarked(ctx, docs, Mark{Name: "input", Value: []byte(strconv.Itoa((b + 1) * per))}); err != nil {
				errc <- err
				return
			}
		}
	}()
	var clones []*vfs.MemFS
	for range 12 {
		time.Sleep(time.Duration(rng.IntN(4000)) * time.Microsecond)
		clones = append(clones, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng}))
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	closeChecked(t, d)
	for i, fs := range clones {
		d, err := Open("db", &Options{fs: fs})
		if err != nil {
			t.Fatalf("clone %d: %v", i, err)
		}
		want := 0
		if v, err := d.Mark(ctx, "input"); err == nil {
			want, _ = strconv.Atoi(string(v))
		} else if !errors.Is(err, ErrNoMark) {
			t.Fatal(err)
		}
		if d.Len() != want {
			t.Errorf("clone %d (seed %d): mark says %d documents, %d present", i, seed, want, d.Len())
		}
		for n := range want {
			if ok, err := d.Has(ctx, fmt.Sprintf("doc%04d", n)); err != nil || !ok {
				t.Errorf("clone %d: doc%04d missing under the mark (%v)", i, n, err)
			}
		}
		closeChecked(t, d)
	}
}

// TestAddBatchMarkedBy checks that the marks made from a batch's skipped
// documents are written with it, that a nil Value deletes one, and that
// a mark that is not valid fails the whole batch.
func TestAddBatchMarkedBy(t *testing.T) {
	d := openTest(t, "", nil)
	docs := []Input{{ID: "a", Text: []byte("one two three four five")}, {ID: "b", Text: []byte("  ")}, {ID: "c", Text: []byte("six seven eight nine ten")}}
	var got []BatchSkip
	res, err := d.AddBatchMarkedBy(ctx, docs, func(skipped []BatchSkip) []Mark {
		got = skipped
		v := ""
		for _, s := range skipped {
			v += strconv.Itoa(s.Index) + ","
		}
		return []Mark{{Name: "file", Value: []byte("3")}, {Name: "refused/1", Value: []byte(v)}, {Name: "gone"}}
	})
	if err != nil || res.Stored != 2 || len(res.Skipped) != 1 || len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("AddBatchMarkedBy: %+v, skipped %+v, %v", res, got, err)
	}
	ms, err := d.Marks(ctx, "")
	if err != nil || len(ms) != 2 || ms[0].Name != "file" || ms[1].Name != "refused/1" || string(ms[1].Value) != "1," {
		t.Fatalf("Marks: %+v, %v", ms, err)
	}
	// A batch that stores nothing writes its marks; a nil Value deletes.
	if _, err := d.AddBatchMarkedBy(ctx, []Input{{ID: "d", Text: nil}}, func([]BatchSkip) []Mark {
		return []Mark{{Name: "refused/1"}, {Name: "refused/2", Value: []byte("0,")}}
	}); err != nil {
		t.Fatal(err)
	}
	if ms, err := d.Marks(ctx, "refused/"); err != nil || len(ms) != 1 || ms[0].Name != "refused/2" {
		t.Fatalf("Marks after the second batch: %+v, %v", ms, err)
	}
	// A mark that is not valid: nothing of the batch is written.
	_, err = d.AddBatchMarkedBy(ctx, []Input{{ID: "e", Text: []byte("eleven twelve thirteen fourteen")}}, func([]BatchSkip) []Mark {
		return []Mark{{Name: "ok", Value: []byte("1")}, {Name: "\xff"}}
	})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("invalid mark: %v", err)
	}
	if _, err := d.Mark(ctx, "ok"); !errors.Is(err, ErrNoMark) || d.Len() != 2 {
		t.Fatalf("a failed batch wrote: mark %v, %d documents", err, d.Len())
	}
}

// TestSetMarkErrors: SetMark's errors name it, not the batch it writes.
func TestSetMarkErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	d := openTest(t, dir, nil)
	if err := d.SetMark(ctx, Mark{Name: ""}); !errors.Is(err, ErrInvalidOptions) || !strings.HasPrefix(err.Error(), "fpdb: set mark: ") {
		t.Errorf("empty name: %v", err)
	}
	d.Close()
	ro := openTest(t, dir, &Options{ReadOnly: true})
	if err := ro.SetMark(ctx, Mark{Name: "m", Value: []byte("v")}); !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "set mark") || strings.Contains(err.Error(), "add batch") {
		t.Errorf("read-only: %v", err)
	}
}
