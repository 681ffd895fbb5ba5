package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockingWriter blocks its first Write until release is closed, after
// telling started.
type blockingWriter struct {
	once    sync.Once
	started chan struct{}
	release chan struct{}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.started) })
	<-w.release
	return len(p), nil
}

// lifecycleDB returns a DB holding n random fingerprints, with near
// duplicates, so that exports and pairs runs have work to do.
func lifecycleDB(t *testing.T, n int) *DB {
	t.Helper()
	d, err := Open(t.TempDir(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	docs := make([]Input, n)
	for i := range docs {
		fp := make([]uint64, DefaultK/64)
		for j := range fp {
			fp[j] = r.Uint64()
		}
		if i%2 == 1 {
			copy(fp, docs[i-1].Fingerprint)
			fp[0] ^= 1
		}
		docs[i] = Input{ID: fmt.Sprintf("doc%05d", i), Fingerprint: fp}
	}
	if _, err := d.AddBatch(ctx, docs); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCloseDuringLongCalls closes the DB while a long call is in the
// middle of its work (it holds a Pebble snapshot or iterator then): Close
// must cancel it, wait for it to return and close the store without a
// panic; the call returns an error wrapping ErrClosed (or nil when it had
// finished), and every method afterwards returns ErrClosed.
func TestCloseDuringLongCalls(t *testing.T) {
	type call struct {
		name string
		// run starts the call; it must block in wait() once it holds
		// store state, until Close has begun.
		run func(d *DB, wait func()) error
	}
	calls := []call{
		{"Export", func(d *DB, wait func()) error {
			w := &blockingWriter{started: make(chan struct{}), release: make(chan struct{})}
			go func() { <-w.started; wait(); close(w.release) }()
			_, err := d.Export(ctx, w)
			return err
		}},
		{"Pairs", func(d *DB, wait func()) error {
			first := true
			_, err := d.Pairs(ctx, PairsOptions{Threshold: 0.9}, func(Pair) error {
				if first {
					first = false
					wait()
				}
				return nil
			})

			return err
		}},
		{"Clusters keep-oldest", func(d *DB, wait func()) error {
			var o ClusterOptions
			o.Threshold, o.Keep = 0.9, KeepOldest
			o.Progress = func(done, total int) {
				if done > 0 {
					wait()
				}
			}
			_, _, err := d.Clusters(ctx, o)
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			d := lifecycleDB(t, 4000)
			closing := make(chan struct{})
			inCall := make(chan struct{})
			var once sync.Once
			wait := func() {
				once.Do(func() {
					close(inCall)
					<-closing
					time.Sleep(50 * time.Millisecond) // Close is waiting now
				})
			}
			res := make(chan error, 1)
			go func() { res <- c.run(d, wait) }()
			<-inCall
			close(closing)
			if err := d.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			select {
			case err := <-res:
				if err != nil && !errors.Is(err, ErrClosed) {
					t.Errorf("%s during Close: %v, want nil or ErrClosed", c.name, err)
				}
			default:
				t.Fatal("Close returned before the call it had to wait for")
			}
			checkAllClosed(t, d)
		})
	}
}

// checkAllClosed calls every method of a closed DB: each returns ErrClosed.
func checkAllClosed(t *testing.T, d *DB) {
	t.Helper()
	fp := make([]uint64, DefaultK/64)
	q := QueryOptions{Threshold: 0.8}
	errs := map[string]error{}
	_, errs["Add"] = d.Add(ctx, Input{ID: "x", Text: []byte("some words here to add")}, nil)
	_, errs["AddFingerprint"] = d.Add(ctx, Input{ID: "x", Fingerprint: fp}, nil)
	_, errs["AddBatch"] = d.AddBatch(ctx, []Input{{ID: "x", Fingerprint: fp}})
	errs["Delete"] = d.Delete(ctx, "x")
	_, errs["DeleteMany"] = d.DeleteMany(ctx, []string{"x"})
	_, errs["DeletePrefix"] = d.DeletePrefix(ctx, "x")
	_, errs["DeleteOlderThan"] = d.DeleteOlderThan(ctx, time.Now())
	_, errs["Query"] = d.Query(ctx, []byte("some words here to query"), q)
	_, errs["QueryFingerprint"] = d.QueryFingerprint(ctx, fp, q)
	_, errs["Get"] = d.Get(ctx, "doc00001")
	errs["Warm"] = d.Warm(ctx)
	errs["Flush"] = d.Flush(ctx)
	errs["Check"] = d.Check(ctx)
	_, errs["Compact"] = d.Compact(ctx)
	_, errs["StorageStats"] = d.StorageStats(ctx)
	_, errs["Export"] = d.Export(ctx, io.Discard)
	_, errs["Pairs"] = d.Pairs(ctx, PairsOptions{Threshold: 0.9}, func(Pair) error { return nil })
	_, _, errs["Clusters"] = d.Clusters(ctx, ClusterOptions{PairsOptions: PairsOptions{Threshold: 0.9}})
	_, errs["QueryMany"] = d.QueryMany(ctx, [][]byte{[]byte("some words here to query")}, q)
	errs["Docs"] = d.Docs(ctx, func(Doc) error { return nil })
	_, errs["Has"] = d.Has(ctx, "doc00001")
	_, errs["Backup"] = d.Backup(ctx, filepath.Join(t.TempDir(), "backup"))
	errs["Sync"] = d.Sync(ctx)
	_, errs["Fingerprint"] = d.Fingerprint(ctx, strings.NewReader("some words here"), TextOptions{})
	_, errs["EstimateQuery"] = d.EstimateQuery(ctx, 0.8)
	errs["Close"] = d.Close()
	for name, err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	_ = d.Stats() // allowed: the counts at Close
}

// TestCloseConcurrent closes the DB while goroutines query, add and export
// in a loop: no panic, no race, each call either succeeds or returns
// ErrClosed, and the database reopens with every acknowledged add.
func TestCloseConcurrent(t *testing.T) {
	for round := range 5 {
		d := lifecycleDB(t, 500)
		dir := d.Dir()
		var wg sync.WaitGroup
		var mu sync.Mutex
		acked := map[string]bool{}
		stop := make(chan struct{})
		fail := make(chan error, 16)
		worker := func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch w % 4 {
				case 0:
					id := fmt.Sprintf("w%d-%d", w, i)
					if _, err = d.Add(ctx, Input{ID: id, Text: []byte(text(r.Uint64(), 40))}, nil); err == nil {
						mu.Lock()
						acked[id] = true
						mu.Unlock()
					}
				case 1:
					_, err = d.Query(ctx, []byte(text(r.Uint64(), 40)), QueryOptions{Threshold: 0.5})
				case 2:
					_, err = d.Export(ctx, io.Discard)
				case 3:
					_, err = d.Pairs(ctx, PairsOptions{Threshold: 0.9}, func(Pair) error { return nil })
				}
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					fail <- fmt.Errorf("worker %d: %w", w, err)
					return
				}
			}
		}
		for w := range 8 {
			wg.Add(1)
			go worker(w)
		}
		time.Sleep(time.Duration(20+round*30) * time.Millisecond)
		if err := d.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		close(stop)
		wg.Wait()
		close(fail)
		for err := range fail {
			t.Error(err)
		}
		d2 := openTest(t, dir, nil)
		for id := range acked {
			if _, err := d2.Get(ctx, id); err != nil {
				t.Fatalf("acknowledged %s after Close and reopen: %v", id, err)
			}
		}
		closeChecked(t, d2)
	}
}

// bulkLoaded opens a database in dir for a bulk load and adds n
// fingerprints d0, d1, … (fingerprint i: i in its first word), whose
// postings stay deferred.
func bulkLoaded(t *testing.T, dir string, n int) *DB {
	t.Helper()
	d, err := Open(dir, &Options{BulkLoad: true, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	fp := make([]uint64, DefaultK/64)
	for i := range n {
		fp[0] = uint64(i)
		if _, err := d.Add(ctx, Input{ID: fmt.Sprint("d", i), Fingerprint: fp}, nil); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// TestCloseContext bounds the writing of deferred postings at Close: with
// a done context Close still closes the store, and the next Open writes
// them.
func TestCloseContext(t *testing.T) {
	dir := t.TempDir()
	d := bulkLoaded(t, dir, 50)
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.CloseContext(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("CloseContext(done): %v, want context.Canceled", err)
	}
	if err := d.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close after CloseContext: %v", err)
	}
	d = openTest(t, dir, nil)
	if st := d.Stats(); st.Docs != 50 || st.Deferred != 0 {
		t.Fatalf("after reopen: %d docs, %d deferred; want 50, 0", st.Docs, st.Deferred)
	}
}

// TestCloseUnflushed: CloseUnflushed leaves a bulk load's postings
// deferred, without an error, and loses nothing: the next Open writes them
// and finds every document.
func TestCloseUnflushed(t *testing.T) {
	dir := t.TempDir()
	d := bulkLoaded(t, dir, 50)
	if err := d.CloseUnflushed(); err != nil {
		t.Fatalf("CloseUnflushed: %v", err)
	}
	if err := d.CloseUnflushed(); !errors.Is(err, ErrClosed) {
		t.Fatalf("CloseUnflushed twice: %v", err)
	}
	ro := openTest(t, dir, &Options{ReadOnly: true})
	if st := ro.Stats(); st.Docs != 50 || st.Deferred != 50 {
		t.Fatalf("after CloseUnflushed: %d docs, %d deferred; want 50, 50", st.Docs, st.Deferred)
	}
	closeChecked(t, ro)
	d = openTest(t, dir, nil)
	if st := d.Stats(); st.Docs != 50 || st.Deferred != 0 {
		t.Fatalf("after reopen: %d docs, %d deferred; want 50, 0", st.Docs, st.Deferred)
	}
	fp := make([]uint64, DefaultK/64)
	fp[0] = 7
	res, err := d.QueryFingerprint(ctx, fp, QueryOptions{Threshold: 1})
	if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != "d7" {
		t.Fatalf("query after reopen: %+v, %v", res, err)
	}
}

// TestLongCallsDoNotStallQueries holds StorageStats and Warm in the middle
// of their work while a writer queues behind them: queries must go on.
// (With a shared lock held for the whole call, the queued writer's
// exclusive lock blocked every later query; Warm held it exclusively.)
func TestLongCallsDoNotStallQueries(t *testing.T) {
	for _, point := range []string{"storage stats", "warm"} {
		t.Run(point, func(t *testing.T) {
			d := lifecycleDB(t, 200)
			defer closeChecked(t, d)
			held, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			d.hook = func(p string) {
				if p == point {
					once.Do(func() { close(held); <-release })
				}
			}
			done := make(chan error, 1)
			go func() {
				var err error
				if point == "warm" {
					err = d.Warm(ctx)
				} else {
					_, err = d.StorageStats(ctx)
				}
				done <- err
			}()
			<-held
			added := make(chan error, 1)
			go func() {
				_, err := d.Add(ctx, Input{ID: "queued", Fingerprint: make([]uint64, DefaultK/64)}, nil)
				added <- err
			}()
			time.Sleep(20 * time.Millisecond) // the writer is queued
			queried := make(chan error, 1)
			go func() {
				_, err := d.QueryFingerprint(ctx, make([]uint64, DefaultK/64), QueryOptions{Threshold: 0.9})
				queried <- err
			}()
			select {
			case err := <-queried:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				close(release)
				t.Fatalf("a query waited 10 s behind %s and a queued writer", point)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := <-added; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// inFlight waits until a call has entered d (d.life.ops > 0).
func inFlight(t *testing.T, d *DB) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		d.life.mu.Lock()
		ops := d.life.ops
		d.life.mu.Unlock()
		if ops > 0 {
			return
		}
	}
	t.Fatal("the call did not start")
}

// TestCloseCancelsQueryManyAndSuggestTemplate: Close cancels a QueryMany
// or a SuggestTemplate in flight, as it does the other long calls: Close
// returns promptly and the call returns an error wrapping ErrClosed, not
// its full answer after Close began.
func TestCloseCancelsQueryManyAndSuggestTemplate(t *testing.T) {
	type call struct {
		name string
		open func(t *testing.T) *DB
		run  func(d *DB) error
	}
	// The texts are made before the call starts: on a busy machine their
	// making alone took longer than inFlight waits.
	texts := make([][]byte, 4000)
	for i := range texts {
		texts[i] = []byte(text(uint64(i), 3000))
	}
	calls := []call{
		{"QueryMany", func(t *testing.T) *DB { return lifecycleDB(t, 2000) }, func(d *DB) error {
			_, err := d.QueryMany(ctx, texts, QueryOptions{Threshold: 0.8})
			return err
		}},
		{"SuggestTemplate", func(t *testing.T) *DB {
			d, err := Open(t.TempDir(), &Options{KeepTexts: true, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			docs := make([]Input, 3000)
			for i := range docs {
				docs[i] = Input{ID: fmt.Sprint("d", i), Text: []byte(text(uint64(i), 1000))}
			}
			if _, err := d.AddBatch(ctx, docs); err != nil {
				t.Fatal(err)
			}
			return d
		}, func(d *DB) error {
			_, err := d.SuggestTemplate(ctx, &BoilerplateOptions{Sample: 1 << 20, MinWords: 1, MinShare: 0.001})
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			d := c.open(t)
			res := make(chan error, 1)
			go func() { res <- c.run(d) }()
			inFlight(t, d)
			time.Sleep(20 * time.Millisecond)
			start := time.Now()
			if err := d.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			took := time.Since(start)
			// Cancelled, the call says so (uncancelled, it returned its
			// whole answer and a nil error); Close does not wait for its
			// end (the bound is loose: a busy machine's).
			if err := <-res; !errors.Is(err, ErrClosed) {
				t.Errorf("%s during Close: %v, want ErrClosed", c.name, err)
			}
			if took > 5*time.Second {
				t.Errorf("Close waited %v for %s", took, c.name)
			}
			checkAllClosed(t, d)
		})
	}
}

// TestSecondCloseWaits: a Close called while the first is still writing a
// bulk load's deferred postings waits for it to finish, so that an Open
// right after it finds the lock released; a CloseContext whose ctx ends
// first stops waiting, with ErrClosed and ctx's error.
func TestSecondCloseWaits(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{BulkLoad: true, NoSync: true, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	const n = 60000
	for start := 0; start < n; start += 10000 {
		docs := make([]Input, 10000)
		for i := range docs {
			fp := make([]uint64, DefaultK/64)
			for j := range fp {
				fp[j] = r.Uint64()
			}
			docs[i] = Input{ID: fmt.Sprint("d", start+i), Fingerprint: fp}
		}
		if _, err := d.AddBatch(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	if st := d.Stats(); st.Deferred != n {
		t.Fatalf("%d deferred, want %d", st.Deferred, n)
	}
	first := make(chan error, 1)
	go func() { first <- d.Close() }()
	for { // the first Close has begun
		d.life.mu.Lock()
		closing := d.life.closing
		d.life.mu.Unlock()
		if closing {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.CloseContext(done); !errors.Is(err, ErrClosed) {
		t.Fatalf("a CloseContext with a done ctx during the first Close: %v, want ErrClosed", err)
	}
	if err := d.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("the second Close: %v, want ErrClosed", err)
	}
	// The first Close has released the lock: an Open succeeds at once
	// (the first Close's own return may still be on its way).
	d2, err := Open(dir, &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatalf("Open right after the second Close: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("the first Close: %v", err)
	}
	if st := d2.Stats(); st.Docs != n || st.Deferred != 0 {
		t.Errorf("after reopen: %d docs, %d deferred; want %d, 0", st.Docs, st.Deferred, n)
	}
	closeChecked(t, d2)
}
