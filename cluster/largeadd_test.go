package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
)

// holdBatcher makes r's batcher wait, in the conditional append of a
// checked add of its own (beforeAppend, on its first call), until the
// returned release is called; it returns once the batcher waits there.
func holdBatcher(t *testing.T, r *Router, rng *rand.Rand) (release func()) {
	t.Helper()
	held, free := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.beforeAppend = func() {
		once.Do(func() {
			close(held)
			select {
			case <-free:
			case <-time.After(2 * time.Minute):
			}
		})
	}
	done := make(chan error, 1)
	fp := randomFP(rng, 512)
	go func() {
		_, err := r.Add(context.Background(), []db.Input{{ID: "hold", Fingerprint: fp}}, AddOptions{Threshold: 0.9})
		done <- err
	}()
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("the batcher did not reach the append")
	}
	var rel sync.Once
	release = func() {
		rel.Do(func() {
			close(free)
			if err := <-done; err != nil {
				t.Errorf("the add that held the batcher: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// waitQueued waits until r's batcher has n adds queued, or until stop is
// closed; it reports whether they were queued.
func waitQueued(t *testing.T, r *Router, n int, stop <-chan struct{}) bool {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); len(r.reqs) < n; time.Sleep(5 * time.Millisecond) {
		select {
		case <-stop:
			return false
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d adds queued, want %d", len(r.reqs), n)
		}
	}
	return true
}

// sourcedDocs returns documents of random fingerprints whose sources are
// of the sizes given (their log entries a little more).
func sourcedDocs(rng *rand.Rand, prefix string, sizes ...int) []db.Input {
	docs := make([]db.Input, len(sizes))
	for i, n := range sizes {
		docs[i] = db.Input{ID: fmt.Sprintf("%s-%02d", prefix, i), Fingerprint: randomFP(rng, 512), Source: strings.Repeat("s", n)}
	}
	return docs
}

// overLimitDocs returns 15 documents whose log entries, appended in parts
// of at most 9 MiB, make a first part of 7 MiB, then one of 8.5 MiB, which
// the servers refuse (their messages hold 8 MiB), then a third.
func overLimitDocs(rng *rand.Rand, prefix string) []db.Input {
	sizes := []int{}
	for range 7 {
		sizes = append(sizes, 1<<20)
	}
	sizes = append(sizes, 5<<19)
	for range 7 {
		sizes = append(sizes, 1<<20)
	}
	return sourcedDocs(rng, prefix, sizes...)
}

// storedIDs checks through r, at its last write, that exactly the
// documents of docs that want says are stored.
func storedIDs(t *testing.T, r *Router, docs []db.Input, want func(i int) bool) {
	t.Helper()
	ctx := context.Background()
	for i, d := range docs {
		_, err := r.Get(ctx, d.ID, r.Written())
		switch {
		case err != nil && !errors.Is(err, db.ErrNotFound):
			t.Fatalf("get %s: %v", d.ID, err)
		case (err == nil) != want(i):
			t.Fatalf("%s stored: %v, want %v", d.ID, err == nil, want(i))
		}
	}
}

// TestLargeAddFailureIsItsOwn: small adds gathered by the batcher while a
// large add fails midway (its second log message refused by the servers)
// are stored and succeed: the large add is appended on its own, not in
// the batcher's round, and its failure is reported to it alone, with the
// documents of its first message, which are stored, marked Stored.
func TestLargeAddFailureIsItsOwn(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(21, 1))
	r.maxMessage = 9 << 20
	release := holdBatcher(t, r, rng)

	type outcome struct {
		res []AddResult
		err error
	}
	var smalls [][]db.Input
	smallOut := make(chan outcome, 3)
	for i := range 3 {
		docs := []db.Input{{ID: fmt.Sprintf("small-%d-a", i), Fingerprint: randomFP(rng, 512)}, {ID: fmt.Sprintf("small-%d-b", i), Fingerprint: randomFP(rng, 512)}}
		smalls = append(smalls, docs)
		go func() {
			res, err := r.Add(ctx, docs, AddOptions{})
			smallOut <- outcome{res, err}
		}()
		waitQueued(t, r, i+1, nil)
	}
	big := overLimitDocs(rng, "big")
	bigOut := make(chan outcome, 1)
	bigDone := make(chan struct{})
	go func() {
		res, err := r.Add(ctx, big, AddOptions{})
		bigOut <- outcome{res, err}
		close(bigDone)
	}()
	// Queued behind the small adds (the old way), or done on its own.
	waitQueued(t, r, 4, bigDone)
	release()
	for range 3 {
		o := <-smallOut
		if o.err != nil {
			t.Fatalf("a small add gathered with the large one: %v", o.err)
		}
		for _, a := range o.res {
			if !a.Stored {
				t.Fatalf("%s not stored", a.Doc.ID)
			}
		}
	}
	o := <-bigOut
	if o.err == nil || !strings.Contains(o.err.Error(), "after 7 of them stored") {
		t.Fatalf("the large add: %v, want its second message refused after 7 documents stored", o.err)
	}
	if len(o.res) != len(big) {
		t.Fatalf("the large add's error came with %d results, want %d", len(o.res), len(big))
	}
	for i, a := range o.res {
		if a.Stored != (i < 7) || a.Stored && a.Seq != o.res[0].Seq {
			t.Fatalf("document %d: stored %v at %d, want the first 7 stored in one message", i, a.Stored, a.Seq)
		}
	}
	storedIDs(t, r, big, func(i int) bool { return i < 7 })
	for _, docs := range smalls {
		storedIDs(t, r, docs, func(int) bool { return true })
	}
}

// TestLargeAddDoesNotHoldOthers: while a large checked add waits in the
// conditional append of its first log message, a small add of the same
// router is appended and answered.
func TestLargeAddDoesNotHoldOthers(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(22, 1))
	big := sourcedDocs(rng, "big", make([]int, 12)...)
	r.maxMessage = 5 * entrySize(&db.Doc{ID: big[0].ID, Fingerprint: big[0].Fingerprint})
	inPart, smallDone := make(chan struct{}), make(chan struct{})
	var once sync.Once
	waited := false // the first part waited for the small add
	r.beforeAppend = func() {
		once.Do(func() {
			close(inPart)
			select {
			case <-smallDone:
				waited = true
			case <-time.After(10 * time.Second):
			}
		})
	}
	type outcome struct {
		res []AddResult
		err error
	}
	bigOut := make(chan outcome, 1)
	go func() {
		res, err := r.Add(ctx, big, AddOptions{Threshold: 0.9, Reject: true})
		bigOut <- outcome{res, err}
	}()
	<-inPart
	start := time.Now()
	res, err := r.Add(ctx, []db.Input{{ID: "small", Fingerprint: randomFP(rng, 512)}}, AddOptions{})
	close(smallDone)
	if err != nil || !res[0].Stored {
		t.Fatalf("small add: %+v, %v", res, err)
	}
	took := time.Since(start)
	o := <-bigOut
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !waited {
		t.Fatalf("the small add took %v: it waited for the large one", took)
	}
	seqs := map[uint64]bool{}
	for _, a := range o.res {
		if !a.Stored || a.Seq == res[0].Seq {
			t.Fatalf("%s: stored %v at %d (the small add at %d)", a.Doc.ID, a.Stored, a.Seq, res[0].Seq)
		}
		seqs[a.Seq] = true
	}
	if len(seqs) != 3 {
		t.Fatalf("12 documents in %d log messages, want 3", len(seqs))
	}
}

// TestLargeAddCutShort: a large add whose context ends while its first
// log message is appended finishes that message, begins no other, and
// says which documents are stored (the first message's) and that it was
// cut short.
func TestLargeAddCutShort(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(23, 1))
	big := sourcedDocs(rng, "big", make([]int, 12)...)
	r.maxMessage = 5 * entrySize(&db.Doc{ID: big[0].ID, Fingerprint: big[0].Fingerprint})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	r.beforeAppend = func() { once.Do(cancel) }
	res, err := r.Add(ctx, big, AddOptions{Threshold: 0.9})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "after 5 of them stored") {
		t.Fatalf("the add cut short: %v, want context.Canceled after 5 stored", err)
	}
	if len(res) != len(big) {
		t.Fatalf("%d results with the error, want %d", len(res), len(big))
	}
	for i, a := range res {
		if a.Stored != (i < 5) {
			t.Fatalf("document %d: stored %v, want the first 5 stored", i, a.Stored)
		}
	}
	// Nothing more comes later: the log's last message is the first part.
	time.Sleep(200 * time.Millisecond)
	if last, err := r.LastSeq(context.Background()); err != nil || last != res[0].Seq {
		t.Fatalf("the log's last sequence %d (%v), want the first part's %d", last, err, res[0].Seq)
	}
	storedIDs(t, r, big, func(i int) bool { return i < 5 })
}

// TestLargeCheckedAddAsOne: a checked add appended in several log
// messages gives each document the outcome and matches one database gives
// when the documents are added one after the other (as one message does):
// near duplicates of stored documents, of documents of an earlier part,
// of a document an earlier part replaced (its new version only), of a
// document rejected (no match), and an exact duplicate; with Reject and
// without.
func TestLargeCheckedAddAsOne(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	one, err := db.Open(t.TempDir(), &db.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	rng := rand.New(rand.NewPCG(24, 1))
	stored := sourcedDocs(rng, "stored", make([]int, 5)...)
	if _, err := r.Add(ctx, stored, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := one.AddBatch(ctx, stored); err != nil {
		t.Fatal(err)
	}
	r.maxMessage = 7 * entrySize(&db.Doc{ID: "b1-00", Fingerprint: stored[0].Fingerprint})
	for round, reject := range []bool{true, false} {
		docs := sourcedDocs(rng, fmt.Sprintf("b%d", round), make([]int, 30)...)
		near := func(i int, fp []uint64, d int) { docs[i].Fingerprint = nearFP(rng, fp, d) }
		near(2, stored[1].Fingerprint, 5) // a stored document
		near(9, docs[3].Fingerprint, 6)   // part 2, near part 1
		docs[10].ID = docs[1].ID          // part 2 replaces part 1's document
		near(16, docs[1].Fingerprint, 4)  // near the replaced version only
		near(20, docs[10].Fingerprint, 3) // near the new version
		near(22, docs[2].Fingerprint, 2)  // near document 2 (rejected with Reject)
		docs[25].Fingerprint = stored[3].Fingerprint
		near(29, docs[9].Fingerprint, 1) // part 5, near part 2 (and part 1)
		o := AddOptions{Threshold: 0.9, Reject: reject}
		res, err := r.Add(ctx, docs, o)
		if err != nil {
			t.Fatal(err)
		}
		seqs := map[uint64]bool{}
		matched, dropped := 0, 0
		for i, d := range docs {
			want, err := one.Add(ctx, d, &db.AddOptions{Threshold: o.Threshold, Reject: reject})
			if err != nil {
				t.Fatal(err)
			}
			got := res[i]
			if got.Stored != want.Stored || !sameMatches(got.Matches, want.Matches) {
				t.Fatalf("reject %v, document %d (%s): stored %v, matches %v; one database: stored %v, matches %v",
					reject, i, d.ID, got.Stored, ids(got.Matches), want.Stored, ids(want.Matches))
			}
			if got.Stored {
				seqs[got.Seq] = true
			} else {
				dropped++
			}
			if len(got.Matches) > 0 {
				matched++
			}
		}
		if len(seqs) < 4 || matched < 6 || reject != (dropped > 0) {
			t.Fatalf("reject %v: %d log messages, %d documents matched, %d dropped", reject, len(seqs), matched, dropped)
		}
		t.Logf("reject %v: %d log messages, %d documents matched, %d dropped", reject, len(seqs), matched, dropped)
	}
}

// TestLargeCheckedAddWriteBetweenParts: a write that comes between two
// parts of a large checked add is seen by the later parts only, as if the
// add were several: a document of the first part near it is stored
// without a match (it came first: in one message, after the write, it
// would be rejected), one of the third part near it is rejected with it
// among its matches.
func TestLargeCheckedAddWriteBetweenParts(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(26, 1))
	docs := sourcedDocs(rng, "big", make([]int, 15)...)
	r.maxMessage = 5 * entrySize(&db.Doc{ID: docs[0].ID, Fingerprint: docs[0].Fingerprint})
	between := nearFP(rng, docs[1].Fingerprint, 3)
	docs[12].Fingerprint = nearFP(rng, between, 3)
	calls := 0
	var sneakErr error
	r.beforeAppend = func() {
		if calls++; calls == 2 { // before the second part's append
			sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			_, sneakErr = r.Add(sctx, []db.Input{{ID: "between", Fingerprint: between}}, AddOptions{})
			cancel()
		}
	}
	res, err := r.Add(ctx, docs, AddOptions{Threshold: 0.9, Reject: true})
	if err != nil || sneakErr != nil {
		t.Fatal(err, sneakErr)
	}
	if !res[1].Stored || len(res[1].Matches) != 0 {
		t.Fatalf("document 1 (first part): stored %v, matches %v; want stored, no match", res[1].Stored, ids(res[1].Matches))
	}
	if res[12].Stored || !slices.ContainsFunc(res[12].Matches, func(m db.Match) bool { return m.ID == "between" }) {
		t.Fatalf("document 12 (third part): stored %v, matches %v; want rejected, near the write between the parts", res[12].Stored, ids(res[12].Matches))
	}
	for i, a := range res {
		if a.Stored != (i != 12) {
			t.Fatalf("document %d: stored %v", i, a.Stored)
		}
	}
}

// sameMatches compares matches by id, Hamming distance and exactness.
func sameMatches(a, b []db.Match) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Hamming != b[i].Hamming || a[i].Exact != b[i].Exact {
			return false
		}
	}
	return true
}

// TestHTTPLargeBatch: an unchecked POST /v1/batch whose log entries take
// more than the 7 MiB once refused (413) is stored, in several log
// messages; one whose second message the servers refuse is a 503 that
// counts the documents stored and names the first line not stored, and
// exactly the documents before it are stored.
func TestHTTPLargeBatch(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 1, 2, 1, nil)
	c := httpNodes(t, tc, nil, "")[0]
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(25, 1))
	lines := func(docs []db.Input) []api.AddRequest {
		out := make([]api.AddRequest, len(docs))
		for i, d := range docs {
			out[i] = api.AddRequest{ID: d.ID, Text: fmt.Sprintf("document %d of a large batch: %s", i, birdText), Source: d.Source}
		}
		return out
	}
	sizes := make([]int, 20)
	for i := range sizes {
		sizes[i] = 400 << 10
	}
	large := sourcedDocs(rng, "large", sizes...)
	before := r.Stats().Batches
	br, err := c.Batch(ctx, lines(large))
	if err != nil {
		t.Fatalf("a batch of 8 MiB of log entries: %v", err)
	}
	if br.Stored != len(large) || len(br.Skipped) != 0 {
		t.Fatalf("stored %d, skipped %v, want %d", br.Stored, br.Skipped, len(large))
	}
	if n := r.Stats().Batches - before; n != 2 {
		t.Fatalf("%d log messages, want 2", n)
	}
	for _, d := range large {
		got, err := c.Get(ctx, d.ID)
		if err != nil || got.Source != d.Source {
			t.Fatalf("get %s: %v", d.ID, err)
		}
	}

	r.maxMessage = 9 << 20
	failing := overLimitDocs(rng, "failing")
	_, err = c.Batch(ctx, lines(failing))
	ce := wantStatus(t, "a batch whose second message is refused", err, http.StatusServiceUnavailable, api.CodeUnavailable)
	if !strings.Contains(ce.Message, "stopped at line 8, after 7 documents stored") {
		t.Fatalf("message %q: want the line and the count", ce.Message)
	}
	storedIDs(t, r, failing, func(i int) bool { return i < 7 })
}

// TestLargeAddCloseWaits: Close waits for the part of a large add under
// way, which is stored, and the add begins no other part: when Close
// returns, the add has returned with ErrClosed and the count stored.
func TestLargeAddCloseWaits(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(25, 1))
	big := sourcedDocs(rng, "big", make([]int, 12)...)
	r.maxMessage = 5 * entrySize(&db.Doc{ID: big[0].ID, Fingerprint: big[0].Fingerprint})
	inPart := make(chan struct{})
	var once sync.Once
	r.beforeAppend = func() {
		once.Do(func() {
			close(inPart)
			time.Sleep(300 * time.Millisecond) // Close is called meanwhile
		})
	}
	done := make(chan struct{})
	var res []AddResult
	var err error
	go func() {
		defer close(done)
		res, err = r.Add(context.Background(), big, AddOptions{Threshold: 0.9})
	}()
	<-inPart
	r.Close()
	select {
	case <-done:
	default:
		t.Fatal("Close returned while a part of the large add was under way")
	}
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "after 5 of them stored") {
		t.Fatalf("the add: %v, want ErrClosed after 5 stored", err)
	}
	for i, a := range res {
		if a.Stored != (i < 5) {
			t.Fatalf("document %d: stored %v, want the first 5 stored", i, a.Stored)
		}
	}
}
