package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

func (tc *testCluster) node(i int) *Node {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.nodes[i]
}

// kill stops node i (its NATS server, replicas and router).
func (tc *testCluster) kill(i int) {
	tc.mu.Lock()
	nd := tc.nodes[i]
	tc.nodes[i] = nil
	tc.mu.Unlock()
	if nd != nil {
		nd.Close()
	}
}

// restart starts node i again on its directory.
func (tc *testCluster) restart(i int) {
	tc.t.Helper()
	nd, err := Start(context.Background(), tc.opts[i])
	if err != nil {
		tc.t.Fatalf("restart %s: %v", tc.opts[i].Name, err)
	}
	tc.mu.Lock()
	tc.nodes[i] = nd
	tc.mu.Unlock()
}

// TestFaults kills the log's leader node, and later one shard replica on
// another node, while writers and readers run: operations go on (after
// retries), the restarted node and replica catch up, the replicas of each
// shard agree on (sequence, digest), and no acknowledged write is lost.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, 4, 2, nil)
	var (
		mu      sync.Mutex
		acked   = map[string]uint64{} // id → sequence of its acknowledged append
		stop    atomic.Bool
		phase   atomic.Int32 // 0 before the kill, 1 node down, 2 node back, 3 replica down, 4 all back
		okIn    [5]atomic.Int64
		failed  atomic.Int64
		queries atomic.Int64
	)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for i := 0; !stop.Load(); i++ {
				id := fmt.Sprintf("w%d-%05d", w, i)
				o := AddOptions{}
				if i%2 == 1 {
					o = AddOptions{Threshold: 0.95, Reject: true}
				}
				in := []db.Input{{ID: id, Fingerprint: randomFP(rng, 512)}}
				for try := 0; ; try++ {
					nd := tc.node((w + try) % 3)
					if nd == nil {
						continue
					}
					actx, cancel := context.WithTimeout(ctx, 20*time.Second)
					res, err := nd.Router().Add(actx, in, o)
					cancel()
					if err == nil && res[0].Stored {
						mu.Lock()
						acked[id] = res[0].Seq
						mu.Unlock()
						okIn[phase.Load()].Add(1)
						break
					}
					if err == nil {
						t.Errorf("%s: not stored: %+v", id, res[0])
						return
					}
					failed.Add(1)
					t.Logf("%s try %d via %s: %v", id, try, nd.Name(), err)
					if try > 50 {
						t.Errorf("%s: %d attempts failed, last: %v", id, try+1, err)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	for q := 0; q < 2; q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(q), 7))
			for !stop.Load() {
				nd := tc.node(rng.IntN(3))
				if nd == nil {
					continue
				}
				qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := nd.Router().QueryDoc(qctx, &db.Doc{Fingerprint: randomFP(rng, 512)}, QueryOptions{Threshold: 0.8, MinSeq: nd.Router().Written()})
				cancel()
				if err == nil {
					queries.Add(1)
				} else if !errors.Is(err, ErrShardUnavailable) && !errors.Is(err, ErrClosed) && !errors.Is(err, context.DeadlineExceeded) {
					t.Logf("query: %v", err)
				}
			}
		}()
	}

	time.Sleep(1500 * time.Millisecond)
	leader := -1
	for i := range tc.nodes {
		if tc.node(i).IsLogLeader() {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no node leads the log")
	}
	t.Logf("killing %s, the log's leader", tc.opts[leader].Name)
	phase.Store(1)
	tc.kill(leader)
	time.Sleep(3 * time.Second)
	tc.restart(leader)
	phase.Store(2)
	time.Sleep(3 * time.Second)

	// One replica of a shard on another node.
	other := (leader + 1) % 3
	shard := tc.node(other).Map().shardsOf(tc.opts[other].Name)[0]
	t.Logf("stopping %s's replica of shard %d", tc.opts[other].Name, shard)
	phase.Store(3)
	if err := tc.node(other).stopReplica(shard); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := tc.node(other).startReplica(ctx, shard); err != nil {
		t.Fatal(err)
	}
	phase.Store(4)
	time.Sleep(2 * time.Second)
	stop.Store(true)
	wg.Wait()
	if t.Failed() {
		return
	}
	for p := range okIn {
		if okIn[p].Load() == 0 {
			t.Errorf("no acknowledged write in phase %d", p)
		}
	}
	t.Logf("acknowledged writes by phase %v, failed attempts %d, queries answered %d", []int64{okIn[0].Load(), okIn[1].Load(), okIn[2].Load(), okIn[3].Load(), okIn[4].Load()}, failed.Load(), queries.Load())

	last, err := tc.node(0).Router().LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Every replica catches up with the log and agrees with its shard's
	// other replica.
	deadline := time.Now().Add(30 * time.Second)
	for s := 0; s < tc.node(0).Map().Shards; s++ {
		var got []string
		for i := range tc.nodes {
			for {
				st, ok := tc.node(i).Replica(s)
				if !ok || st.Applied >= last || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if _, ok := tc.node(i).Replica(s); !ok {
				continue
			}
			seq, dig, n, err := tc.node(i).Digest(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("seq %d digest %016x docs %d", seq, dig, n))
		}
		if len(got) != 2 || got[0] != got[1] || !slices.Contains(got, got[0]) {
			t.Errorf("shard %d replicas: %v", s, got)
		} else {
			t.Logf("shard %d: both replicas at %s", s, got[0])
		}
	}
	// No acknowledged write is lost.
	lost := 0
	for id, seq := range acked {
		if _, err := tc.node(2).Router().Get(ctx, id, seq); err != nil {
			lost++
			if lost < 5 {
				t.Errorf("acknowledged %s (sequence %d): %v", id, seq, err)
			}
		}
	}
	if n, err := tc.node(1).Router().Len(ctx, last); err != nil || n < len(acked) {
		t.Errorf("cluster holds %d documents (%v), %d acknowledged", n, err, len(acked))
	}
	t.Logf("%d acknowledged writes, %d lost, log at %d", len(acked), lost, last)
}
