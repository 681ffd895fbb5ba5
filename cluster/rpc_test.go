package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestCollectShardUnavailable: a streamed read (pairs, pindocs) whose
// replica answers that it is behind the log, as one does for a while after
// a restart, is tried again until the replica answers, and ends as
// ErrShardUnavailable if it never does; a replica's other errors are not
// retried past two rounds and are not ErrShardUnavailable.
func TestCollectShardUnavailable(t *testing.T) {
	tc := startCluster(t, 1, 1, 1, nil)
	r := tc.node(0).r
	var calls atomic.Int32
	var behind atomic.Int32                     // answers "behind" this many times, then the data
	var other atomic.Bool                       // answers an error that is not transient
	rep := &replica{base: context.Background()} // classifies the errors
	sub, err := r.nc.Subscribe(replicaSubject(0, "fake", "echo"), func(m *nats.Msg) {
		calls.Add(1)
		s := &streamer[int]{m: m}
		switch {
		case other.Load():
			err := errors.New("checkpoint unreadable")
			s.fail(err, rep.transient(err))
		case behind.Add(-1) >= 0:
			err := fmt.Errorf("%w: shard 0 at sequence 1, asked for 2", errBehind)
			s.fail(err, rep.transient(err))
		default:
			_ = s.add(7)
			_ = s.send(true)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	r.setAssign([][]string{{"fake"}})
	ctx := context.Background()

	behind.Store(5)
	got, err := collectShard[int](ctx, r, 0, "echo", struct{}{})
	if err != nil || !slices.Equal(got, []int{7}) || calls.Load() != 6 {
		t.Fatalf("behind 5 times: got %v, %v after %d calls; want [7] after 6", got, err, calls.Load())
	}

	calls.Store(0)
	other.Store(true)
	_, err = collectShard[int](ctx, r, 0, "echo", struct{}{})
	if err == nil || errors.Is(err, ErrShardUnavailable) || calls.Load() != 2 {
		t.Fatalf("a replica's own error: %v after %d calls; want an error that is not ErrShardUnavailable after 2", err, calls.Load())
	}

	calls.Store(0)
	other.Store(false)
	behind.Store(1 << 30)
	// The end of the retries; long enough that a loaded machine (the race
	// detector, other packages' tests) gets a replica's answer in before.
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = collectShard[int](cctx, r, 0, "echo", struct{}{})
	if !errors.Is(err, ErrShardUnavailable) || calls.Load() < 3 {
		t.Fatalf("always behind: %v after %d calls; want ErrShardUnavailable after several", err, calls.Load())
	}
	if !strings.Contains(err.Error(), "asked for 2") {
		t.Errorf("always behind: %v does not say why the replica did not answer", err)
	}
}

// TestCollectBeating: a replica that waits for another shard's reply
// (collectBeating) sends its heartbeat meanwhile, so that the side that
// asked does not give its task up as lost.
func TestCollectBeating(t *testing.T) {
	tc := startCluster(t, 1, 1, 1, nil)
	nc := tc.node(0).r.nc
	sub, err := nc.Subscribe("fpdb.test.beat", func(m *nats.Msg) {
		s := &streamer[int]{m: m}
		got, err := collectBeating(context.Background(), s, func() ([]int, error) {
			time.Sleep(3*heartbeat + heartbeat/2)
			return []int{7}, nil
		})
		if err != nil || len(got) != 1 {
			s.fail(fmt.Errorf("collectBeating: %v, %v", got, err), false)
			return
		}
		_ = s.add(got[0])
		_ = s.send(true)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	inbox := nc.NewInbox()
	replies, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer replies.Unsubscribe()
	if err := nc.PublishMsg(&nats.Msg{Subject: "fpdb.test.beat", Reply: inbox}); err != nil {
		t.Fatal(err)
	}
	var beats int
	for {
		m, err := replies.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var c chunk
		if err := json.Unmarshal(m.Data, &c); err != nil || c.Err != "" {
			t.Fatalf("chunk %s: %v", m.Data, err)
		}
		if c.Last {
			break
		}
		beats++
	}
	if beats < 2 {
		t.Fatalf("%d heartbeats during a wait of 3.5 heartbeats, want at least 2", beats)
	}
}
