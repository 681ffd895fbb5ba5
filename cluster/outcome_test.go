package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// acks is a Router.afterPublish hook over the log's answers to appends:
// it passes them on, or loses them (as a connection lost once the message
// was sent: the message is appended, its answer never comes), and runs a
// function given by next at the next answer (which it holds until it
// returns).
type acks struct {
	lose atomic.Bool
	fn   atomic.Pointer[func()]
}

// watchAcks sets an acks hook on r.
func watchAcks(r *Router) *acks {
	a := &acks{}
	r.afterPublish = a.hook
	return a
}

func (a *acks) hook(ack *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
	if f := a.fn.Swap(nil); f != nil {
		(*f)()
	}
	if a.lose.Load() {
		return nil, nats.ErrTimeout
	}
	return ack, err
}

// next makes f run at the next answer.
func (a *acks) next(f func()) { a.fn.Store(&f) }

// watchLate sets r's onLate hook: the channel returned receives when an
// add waits for the log's answer past its end.
func watchLate(r *Router) <-chan struct{} {
	late := make(chan struct{}, 1)
	r.onLate = func() {
		select {
		case late <- struct{}{}:
		default:
		}
	}
	return late
}

// holdUntil makes the next answer of a wait, after then (when not nil),
// until late receives (the add waits for it past its end) or returned is
// closed (the add returned).
func (a *acks) holdUntil(late <-chan struct{}, returned <-chan struct{}, then func()) {
	a.next(func() {
		if then != nil {
			then()
		}
		select {
		case <-late:
		case <-returned:
		case <-time.After(time.Minute):
		}
	})
}

// settle returns once r's batcher has finished what was queued before
// (an add of its own goes after it).
func settle(t *testing.T, r *Router, rng *rand.Rand) {
	t.Helper()
	if _, err := r.Add(context.Background(), []db.Input{{ID: fmt.Sprintf("settle-%d", rng.Uint64()), Fingerprint: randomFP(rng, 512)}}, AddOptions{}); err != nil {
		t.Fatalf("settle: %v", err)
	}
}

// isStored reports whether id is stored as of the log's last sequence.
func isStored(t *testing.T, r *Router, id string) bool {
	t.Helper()
	ctx := context.Background()
	last, err := r.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Get(ctx, id, last)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("get %s: %v", id, err)
	}
	return err == nil
}

// TestAddAnsweredAfterItsEnd: an add whose context ends while the log's
// answer to its message is on its way waits for that answer and returns
// it (stored, at its sequence), unchecked and checked: not the context's
// error for a document that is stored.
func TestAddAnsweredAfterItsEnd(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(31, 1))
	a := watchAcks(r)
	late := watchLate(r)
	for i, o := range []AddOptions{{}, {Threshold: 0.9, Reject: true}} {
		id := fmt.Sprintf("late-%d", i)
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan struct{})
		// The add's context ends once its message is sent; the answer
		// waits until the add waits for it (or has returned).
		a.holdUntil(late, returned, cancel)
		res, err := r.Add(ctx, []db.Input{{ID: id, Fingerprint: randomFP(rng, 512)}}, o)
		close(returned)
		cancel()
		if err != nil {
			t.Fatalf("%+v: the add whose context ended after its message was sent: %v, want the log's answer", o, err)
		}
		if !res[0].Stored || res[0].Seq == 0 {
			t.Fatalf("%+v: %+v, want stored at a sequence", o, res[0])
		}
		if _, err := r.Get(context.Background(), id, res[0].Seq); err != nil {
			t.Fatalf("%+v: get %s: %v", o, id, err)
		}
	}
}

// TestAddWithdrawnBeforeSent: an add whose context ends while it waits
// for the batcher returns the context's error and is never appended: the
// error means that it is not stored.
func TestAddWithdrawnBeforeSent(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(32, 1))
	release := holdBatcher(t, r, rng)
	for i, o := range []AddOptions{{}, {Threshold: 0.9}} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := r.Add(ctx, []db.Input{{ID: fmt.Sprintf("gone-%d", i), Fingerprint: randomFP(rng, 512)}}, o)
			done <- err
		}()
		waitQueued(t, r, i+1, nil)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("%+v: the add withdrawn: %v, want context.Canceled", o, err)
		}
	}
	if n := r.Stats().Withdrawn; n != 2 {
		t.Fatalf("%d documents counted withdrawn, want 2", n)
	}
	release()
	settle(t, r, rng)
	for i := range 2 {
		if id := fmt.Sprintf("gone-%d", i); isStored(t, r, id) {
			t.Fatalf("%s, withdrawn before it was sent, is stored", id)
		}
	}
}

// wantUnknown checks that err is ErrOutcomeUnknown, and not a context's
// error (which would say that nothing was stored).
func wantUnknown(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: %v, want ErrOutcomeUnknown alone", what, err)
	}
}

// losing makes a lose the log's answers until the test ends or the
// returned function is called.
func losing(t *testing.T, a *acks) (stop func()) {
	a.lose.Store(true)
	stop = func() { a.lose.Store(false) }
	t.Cleanup(stop)
	return stop
}

// TestAddOutcomeUnknown: when the log's answer to an add's message does
// not come (the message appended, its answer lost), the error is
// ErrOutcomeUnknown, not a timeout that would read as "not stored": when
// the add's own time runs out first (it waits lateWait more), when its
// commit's does (the batcher's), for an add appended in parts (the part
// under way), and for a delete. In each case the write is in fact done.
func TestAddOutcomeUnknown(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(33, 1))
	a := watchAcks(r)
	r.lateWait = 200 * time.Millisecond

	t.Run("its time", func(t *testing.T) {
		r.commitWait = time.Minute // the batcher waits for the answer longer than the add
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stop := losing(t, a)
		a.next(cancel)
		_, err := r.Add(ctx, []db.Input{{ID: "lost-own", Fingerprint: randomFP(rng, 512)}}, AddOptions{})
		stop() // the batcher's next attempt is answered: appended once
		wantUnknown(t, "the add whose answer is lost", err)
		settle(t, r, rng)
		if !isStored(t, r, "lost-own") {
			t.Fatal("lost-own is not stored")
		}
	})

	t.Run("the commit's time", func(t *testing.T) {
		r.commitWait = time.Second
		for i, o := range []AddOptions{{}, {Threshold: 0.9}} {
			id := fmt.Sprintf("lost-commit-%d", i)
			stop := losing(t, a)
			_, err := r.Add(context.Background(), []db.Input{{ID: id, Fingerprint: randomFP(rng, 512)}}, o)
			stop()
			wantUnknown(t, fmt.Sprintf("%+v: the add whose answer is lost", o), err)
			if !isStored(t, r, id) {
				t.Fatalf("%s is not stored", id)
			}
		}
	})

	t.Run("large", func(t *testing.T) {
		r.commitWait = time.Second
		big := sourcedDocs(rng, "lost-big", make([]int, 12)...)
		r.maxMessage = 5 * entrySize(&db.Doc{ID: big[0].ID, Fingerprint: big[0].Fingerprint})
		defer func() { r.maxMessage = maxMessage }()
		t.Cleanup(func() { a.lose.Store(false) })
		// The first part is answered, the second part's answers are lost.
		a.next(func() { a.next(func() { a.lose.Store(true) }) })
		res, err := r.Add(context.Background(), big, AddOptions{})
		a.lose.Store(false)
		wantUnknown(t, "the large add whose second part's answer is lost", err)
		if !strings.Contains(err.Error(), "documents 6 to 10") || !strings.Contains(err.Error(), "after 5 of them stored") {
			t.Fatalf("the large add: %v, want the part whose outcome is unknown and the count stored", err)
		}
		for i, ar := range res {
			if ar.Stored != (i < 5) {
				t.Fatalf("document %d: stored %v, want the first 5 stored", i, ar.Stored)
			}
		}
		for i, d := range big {
			if isStored(t, r, d.ID) != (i < 10) {
				t.Fatalf("%s stored: %v, want the first two parts stored", d.ID, !(i < 10))
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		id := "lost-delete"
		if _, err := r.Add(context.Background(), []db.Input{{ID: id, Fingerprint: randomFP(rng, 512)}}, AddOptions{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		stop := losing(t, a)
		_, err := r.Delete(ctx, []string{id})
		stop()
		wantUnknown(t, "the delete whose answer is lost", err)
		if isStored(t, r, id) {
			t.Fatalf("%s is still stored", id)
		}
	})
}

// TestHTTPAddOutcome: over HTTP, an add whose request time runs out while
// the log's answer is on its way is answered with it (201); one whose
// answer does not come is a 504 outcome_unknown that says how to learn
// the outcome, and sending it again is answered unchanged; one whose
// time runs out before its message is sent is a 408, and not stored. A
// batch, checked or not, whose answer does not come is a 504 too.
func TestHTTPAddOutcome(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(34, 1))
	c := httpNodes(t, tc, &HTTPOptions{RequestTimeout: 3 * time.Second}, "")[0]
	a := watchAcks(r)
	late := watchLate(r)
	r.lateWait = 200 * time.Millisecond

	t.Run("late answer", func(t *testing.T) {
		returned := make(chan struct{})
		a.holdUntil(late, returned, nil)
		res, err := c.Add(ctx, api.AddRequest{ID: "late", Text: riverText})
		close(returned)
		if err != nil || !res.Stored {
			t.Fatalf("the add answered after its request's time: %+v, %v; want stored", res, err)
		}
	})

	t.Run("lost answer", func(t *testing.T) {
		r.commitWait = time.Second
		stop := losing(t, a)
		_, err := c.Add(ctx, api.AddRequest{ID: "lost", Text: notesText, Threshold: 0.9, Reject: true})
		stop()
		ce := wantStatus(t, "the add whose answer is lost", err, http.StatusGatewayTimeout, CodeOutcomeUnknown)
		for _, s := range []string{`add "lost"`, "may or may not be stored", "Send the same add again"} {
			if !strings.Contains(ce.Message, s) {
				t.Fatalf("message %q: want %q", ce.Message, s)
			}
		}
		again, err := c.Add(ctx, api.AddRequest{ID: "lost", Text: notesText, Threshold: 0.9, Reject: true})
		if err != nil || !again.Unchanged || again.Stored || again.Rejected {
			t.Fatalf("the add sent again: %+v, %v; want unchanged", again, err)
		}
	})

	t.Run("batch", func(t *testing.T) {
		r.commitWait = time.Second
		stop := losing(t, a)
		_, err := c.Batch(ctx, []api.AddRequest{{ID: "b1", Text: shipText}, {ID: "b2", Text: birdText}})
		stop()
		ce := wantStatus(t, "the batch whose answer is lost", err, http.StatusGatewayTimeout, CodeOutcomeUnknown)
		if !strings.Contains(ce.Message, "stopped at line 1, after 0 documents stored") || !strings.Contains(ce.Message, "may or may not be stored") {
			t.Fatalf("message %q: want the line and the count", ce.Message)
		}
		stop = losing(t, a)
		_, err = c.BatchChecked(ctx, []api.AddRequest{{ID: "c1", Text: shipText}, {ID: "c2", Text: birdText}}, api.BatchCheck{Threshold: 0.9})
		stop()
		ce = wantStatus(t, "the checked batch whose answer is lost", err, http.StatusGatewayTimeout, CodeOutcomeUnknown)
		if !strings.Contains(ce.Message, "stopped at line 1, after 0 documents stored") {
			t.Fatalf("message %q: want the line and the count", ce.Message)
		}
		for _, id := range []string{"b1", "b2", "c1", "c2"} {
			if !isStored(t, r, id) {
				t.Fatalf("%s is not stored", id)
			}
		}
	})

	t.Run("queued", func(t *testing.T) {
		release := holdBatcher(t, r, rng)
		_, err := c.Add(ctx, api.AddRequest{ID: "queued", Text: shipText})
		wantStatus(t, "the add whose time ran out in the queue", err, http.StatusRequestTimeout, api.CodeTimeout)
		release()
		settle(t, r, rng)
		if isStored(t, r, "queued") {
			t.Fatal("queued, answered 408, is stored")
		}
	})
}

// TestLateConflictIsRead: an append whose answers are lost until its time
// has run out, then answered for real, is answered "wrong last sequence"
// by a log that checks the expected sequence before the message id (a log
// that is not replicated, as here): the caller then reads the log, past
// its time, finds its message and answers stored, not a definite error
// for a write that is done. A checked add, and a delete by prefix.
func TestLateConflictIsRead(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(77, 1))
	if _, err := r.Add(context.Background(), []db.Input{{ID: "dw-1", Fingerprint: randomFP(rng, 512)}, {ID: "dw-2", Fingerprint: randomFP(rng, 512)}}, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	a := watchAcks(r)
	r.commitWait = time.Second
	r.lateWait = 5 * time.Second
	loseFor := func(d time.Duration) {
		a.lose.Store(true)
		time.AfterFunc(d, func() { a.lose.Store(false) })
	}

	loseFor(1500 * time.Millisecond)
	_, err := r.Add(context.Background(), []db.Input{{ID: "late-conflict", Fingerprint: randomFP(rng, 512)}}, AddOptions{Threshold: 0.9})
	if stored := isStored(t, r, "late-conflict"); err != nil || !stored {
		t.Fatalf("checked add: %v, stored %v (want stored, and said so)", err, stored)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	loseFor(1500 * time.Millisecond)
	_, err = r.DeleteWhere(ctx, Where{Prefix: "dw-"}, false)
	if gone := !isStored(t, r, "dw-1") && !isStored(t, r, "dw-2"); err != nil || !gone {
		t.Fatalf("delete by prefix: %v, deleted %v (want deleted, and said so)", err, gone)
	}
}

// TestRetryWithinDupWindow: a write whose answers are lost for longer
// than the log's duplicate window (which then forgets its id) is appended
// once. An unconditional one (a delete by id) is not sent again past the
// window (it would be appended twice): its outcome is unknown. A
// conditional one (a delete by prefix: the log checks its last sequence)
// goes on being sent, since the log refuses a second copy by its
// sequence; the conflict leads the node to its own message in the log,
// and the delete is answered done.
func TestRetryWithinDupWindow(t *testing.T) {
	for _, conditional := range []bool{false, true} {
		t.Run(fmt.Sprintf("conditional=%v", conditional), func(t *testing.T) {
			tc := startCluster(t, 1, 2, 1, nil)
			r := tc.nodes[0].Router()
			rng := rand.New(rand.NewPCG(79, 1))
			ctx := context.Background()
			cfg := r.stream.CachedInfo().Config
			cfg.Duplicates = time.Second // for the 2 minutes of dupWindow
			if _, err := r.js.UpdateStream(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			r.dupWindow = time.Second
			if _, err := r.Add(ctx, []db.Input{{ID: "dd-1", Fingerprint: randomFP(rng, 512)}}, AddOptions{}); err != nil {
				t.Fatal(err)
			}
			before, err := r.LastSeq(ctx)
			if err != nil {
				t.Fatal(err)
			}
			a := watchAcks(r)
			a.lose.Store(true)
			time.AfterFunc(2500*time.Millisecond, func() { a.lose.Store(false) })
			dctx, cancel := context.WithTimeout(ctx, 6*time.Second)
			defer cancel()
			if conditional {
				_, err = r.DeleteWhere(dctx, Where{Prefix: "dd-"}, false)
			} else {
				_, err = r.Delete(dctx, []string{"dd-1"})
			}
			r.afterPublish = nil
			after, lerr := r.LastSeq(ctx)
			if lerr != nil {
				t.Fatal(lerr)
			}
			unknown := errors.Is(err, ErrOutcomeUnknown)
			if after-before != 1 || unknown == conditional || (conditional && err != nil) {
				t.Fatalf("one delete appended %d times, error %v (want once; outcome unknown: %v)", after-before, err, !conditional)
			}
			if gone := !isStored(t, r, "dd-1"); !gone {
				t.Fatal("dd-1 is not deleted")
			}
			want := int64(1)
			if conditional {
				want = 0
			}
			if n := r.Stats().Unknown; n != want {
				t.Fatalf("%d outcomes counted unknown, want %d", n, want)
			}
		})
	}
}

// TestDupWindowFromMaybeAppended: the duplicate window is counted from
// the first attempt that may have been appended, not from attempts that
// reached no server: a delete whose first attempts reach none for most of
// the window, then whose first answer is lost, is sent again within the
// window of that attempt and answered done, appended once.
func TestDupWindowFromMaybeAppended(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(97, 1))
	ctx := context.Background()
	const window = 3 * time.Second // more than an attempt's 2 s
	cfg := r.stream.CachedInfo().Config
	cfg.Duplicates = window
	if _, err := r.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	r.dupWindow = window
	if _, err := r.Add(ctx, []db.Input{{ID: "dw-1", Fingerprint: randomFP(rng, 512)}}, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := r.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(2 * time.Second)
	r.notSent = func() error {
		if time.Now().Before(until) {
			return jetstream.ErrNoStreamResponse
		}
		return nil
	}
	var calls atomic.Int32
	r.afterPublish = func(ack *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		if calls.Add(1) == 1 {
			return nil, nats.ErrTimeout // appended, its answer lost
		}
		return ack, err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = r.Delete(dctx, []string{"dw-1"})
	r.notSent, r.afterPublish = nil, nil
	after, lerr := r.LastSeq(ctx)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if err != nil || after-before != 1 || calls.Load() != 2 {
		t.Fatalf("delete: %v, appended %d times, %d attempts sent (want done, once, after 2)", err, after-before, calls.Load())
	}
}

// TestConflictLogUnreadable: after an attempt whose answer was lost (it
// was appended) and a conflict, a node that cannot read the log answers
// that the outcome is unknown, not a definite error: the write is done.
func TestConflictLogUnreadable(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(89, 1))
	if _, err := r.Add(context.Background(), []db.Input{{ID: "lu-1", Fingerprint: randomFP(rng, 512)}}, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	r.afterPublish = func(ack *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		switch calls.Add(1) {
		case 1: // appended, its answer lost
			return nil, nats.ErrTimeout
		case 2: // the conflict; then the log cannot be read
			r.nc.Close()
		}
		return ack, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := r.DeleteWhere(ctx, Where{Prefix: "lu-"}, false)
	if took := time.Since(start); !errors.Is(err, ErrOutcomeUnknown) || calls.Load() != 2 || took > 5*time.Second {
		t.Fatalf("delete by prefix: %v after %d attempts and %v (want an unknown outcome at once after 2: the first was appended)", err, calls.Load(), took)
	}
	if n := r.Stats().Unknown; n != 1 {
		t.Fatalf("%d outcomes counted unknown, want 1", n)
	}
}

// TestAppendAfterClose: a delete through the router of a closed node
// ends at once with ErrClosed (its connection is closed: nothing is sent),
// not with an unknown outcome when its time and the wait for a late
// answer have run out.
func TestAppendAfterClose(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	if err := tc.nodes[0].Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := r.Delete(ctx, []string{"x"})
	if !errors.Is(err, ErrClosed) || errors.Is(err, ErrOutcomeUnknown) || ctx.Err() != nil {
		t.Fatalf("delete after Close: %v after %v (want ErrClosed at once: nothing was sent)", err, time.Since(start))
	}
}

// TestReadAfterClose: the calls that only read the log (its last
// sequence, a delete by prefix's first step) end at once with ErrClosed on
// a closed node, rather than retry the closed connection until their time
// ends.
func TestReadAfterClose(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	if err := tc.nodes[0].Close(); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func(context.Context) error{
		"LastSeq": func(ctx context.Context) error { _, err := r.LastSeq(ctx); return err },
		"DeleteWhere": func(ctx context.Context) error {
			_, err := r.DeleteWhere(ctx, Where{Prefix: "x"}, false)
			return err
		},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		err := call(ctx)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, ErrClosed) || errors.Is(err, ErrOutcomeUnknown) || took > 5*time.Second {
			t.Errorf("%s after Close: %v after %v (want ErrClosed at once)", name, err, took)
		}
	}
}

// TestConflictNearDeadline: a conflict answered just before the caller's
// time ends, after an attempt whose answer was lost (appended), is read
// past that time: the delete is answered done, not an unknown outcome.
func TestConflictNearDeadline(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(91, 1))
	if _, err := r.Add(context.Background(), []db.Input{{ID: "nd-1", Fingerprint: randomFP(rng, 512)}}, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var calls atomic.Int32
	r.afterPublish = func(ack *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		switch calls.Add(1) {
		case 1: // appended, its answer lost
			return nil, nats.ErrTimeout
		case 2: // the real "wrong last sequence", just before the end
			time.Sleep(time.Until(deadline) - 2*time.Millisecond)
		}
		return ack, err
	}
	_, err := r.DeleteWhere(ctx, Where{Prefix: "nd-"}, false)
	r.afterPublish = nil
	if gone := !isStored(t, r, "nd-1"); err != nil || !gone {
		t.Fatalf("delete by prefix: %v, deleted %v (want deleted, and said so: the log holds it)", err, gone)
	}
}
