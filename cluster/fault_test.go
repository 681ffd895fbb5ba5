package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// load runs writers (plain and check-then-adds, each retried through the
// other nodes until acknowledged) and readers against a test cluster, and
// counts acknowledged writes by phase.
type load struct {
	tc      *testCluster
	mu      sync.Mutex
	acked   map[string]uint64 // id → sequence of its acknowledged append
	stop    atomic.Bool
	phase   atomic.Int32
	okIn    [8]atomic.Int64
	failed  atomic.Int64
	queries atomic.Int64
	wg      sync.WaitGroup
	// nodesFor, when set, says through which nodes writer w may write.
	nodesFor func(w int) []int
}

func startLoad(t *testing.T, tc *testCluster, nodesFor func(int) []int) *load {
	l := &load{tc: tc, acked: map[string]uint64{}, nodesFor: nodesFor}
	ctx := context.Background()
	for w := 0; w < 4; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			nodes := []int{0, 1, 2}
			if nodesFor != nil {
				nodes = nodesFor(w)
			}
			for i := 0; !l.stop.Load(); i++ {
				id := fmt.Sprintf("w%d-%05d", w, i)
				o := AddOptions{}
				if i%2 == 1 {
					o = AddOptions{Threshold: 0.95, Reject: true}
				}
				in := []db.Input{{ID: id, Fingerprint: randomFP(rng, 512)}}
				for try := 0; ; try++ {
					nd := tc.node(nodes[(w+try)%len(nodes)])
					if nd == nil {
						continue
					}
					actx, cancel := context.WithTimeout(ctx, 20*time.Second)
					res, err := nd.Router().Add(actx, in, o)
					cancel()
					if err == nil && res[0].Stored {
						l.mu.Lock()
						l.acked[id] = res[0].Seq
						l.mu.Unlock()
						l.okIn[l.phase.Load()].Add(1)
						break
					}
					if err == nil {
						t.Errorf("%s: not stored: %+v", id, res[0])
						return
					}
					l.failed.Add(1)
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
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(q), 7))
			for !l.stop.Load() {
				nd := tc.node(rng.IntN(3))
				if nd == nil {
					continue
				}
				qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := nd.Router().QueryDoc(qctx, &db.Doc{Fingerprint: randomFP(rng, 512)}, QueryOptions{Threshold: 0.8, MinSeq: nd.Router().Written()})
				cancel()
				if err == nil {
					l.queries.Add(1)
				} else if !errors.Is(err, ErrShardUnavailable) && !errors.Is(err, ErrClosed) && !errors.Is(err, context.DeadlineExceeded) {
					t.Logf("query: %v", err)
				}
			}
		}()
	}
	return l
}

// finish stops the load and checks that writes were acknowledged in each
// of the phases, that every replica caught up with the log and agrees
// with its shard's other replica, and that no acknowledged write is lost.
func (l *load) finish(t *testing.T, phases int) {
	t.Helper()
	ctx := context.Background()
	tc := l.tc
	l.stop.Store(true)
	l.wg.Wait()
	if t.Failed() {
		return
	}
	var by []int64
	for p := 0; p < phases; p++ {
		by = append(by, l.okIn[p].Load())
		if l.okIn[p].Load() == 0 {
			t.Errorf("no acknowledged write in phase %d", p)
		}
	}
	t.Logf("acknowledged writes by phase %v, failed attempts %d, queries answered %d", by, l.failed.Load(), l.queries.Load())

	last, err := tc.node(0).Router().LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for s := 0; s < tc.node(0).Map().Shards; s++ {
		var got []string
		for {
			got = got[:0]
			var seqs []uint64
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
				seqs = append(seqs, seq)
				got = append(got, fmt.Sprintf("seq %d digest %016x docs %d", seq, dig, n))
			}
			// A write still in flight when the load stopped (a retry of
			// an attempt that failed) can reach one replica between the
			// two digests: compare them at one sequence.
			if len(seqs) != 2 || seqs[0] == seqs[1] || time.Now().After(deadline) {
				break
			}
			last = max(seqs[0], seqs[1])
		}
		if len(got) != 2 || got[0] != got[1] {
			t.Errorf("shard %d replicas: %v", s, got)
		} else {
			t.Logf("shard %d: both replicas at %s", s, got[0])
		}
	}
	lost := 0
	for id, seq := range l.acked {
		if _, err := tc.node(2).Router().Get(ctx, id, seq); err != nil {
			lost++
			if lost < 5 {
				t.Errorf("acknowledged %s (sequence %d): %v", id, seq, err)
			}
		}
	}
	if n, err := tc.node(1).Router().Len(ctx, last); err != nil || n < len(l.acked) {
		t.Errorf("cluster holds %d documents (%v), %d acknowledged", n, err, len(l.acked))
	}
	t.Logf("%d acknowledged writes, %d lost, log at %d", len(l.acked), lost, last)
}

// TestFaults kills the log's leader node, and later one shard replica on
// another node, while writers and readers run: operations go on (after
// retries), the restarted node and replica catch up, the replicas of each
// shard agree on (sequence, digest), and no acknowledged write is lost.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, 4, 2, nil)
	l := startLoad(t, tc, nil)
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
	l.phase.Store(1)
	tc.kill(leader)
	time.Sleep(3 * time.Second)
	tc.restart(leader)
	l.phase.Store(2)
	time.Sleep(3 * time.Second)

	// One replica of a shard on another node.
	other := (leader + 1) % 3
	shard := tc.node(other).Map().shardsOf(tc.opts[other].Name)[0]
	t.Logf("stopping %s's replica of shard %d", tc.opts[other].Name, shard)
	l.phase.Store(3)
	if err := tc.node(other).stopReplica(shard); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := tc.node(other).startReplica(ctx, shard); err != nil {
		t.Fatal(err)
	}
	l.phase.Store(4)
	time.Sleep(2 * time.Second)
	l.finish(t, 5)
}
