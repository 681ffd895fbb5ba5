package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/bitvec"
)

// freePort returns a port free on host now.
func freePort(t testing.TB, host string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// testCluster is n nodes on 127.0.0.1 … 127.0.0.n.
type testCluster struct {
	mu    sync.Mutex
	t     testing.TB
	opts  []*Options
	nodes []*Node
	// warnings holds the nodes' log lines of level Warn and above (all
	// lines go to standard error instead with FPDB_TEST_LOG set), for a
	// failing test to show why.
	warnings syncBuffer
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startCluster(t testing.TB, n, shards, replicas int, dbo *db.Options) *testCluster {
	t.Helper()
	return startClusterWith(t, n, shards, replicas, dbo, nil)
}

// startClusterWith is startCluster with a hook that may change the nodes'
// options before they start.
func startClusterWith(t testing.TB, n, shards, replicas int, dbo *db.Options, hook func([]*Options)) *testCluster {
	t.Helper()
	dir := t.TempDir()
	tc := &testCluster{t: t}
	for i := 0; i < n; i++ {
		host := "127.0.0." + strconv.Itoa(i+1)
		tc.opts = append(tc.opts, &Options{
			Name: fmt.Sprintf("n%d", i+1), Dir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)), Host: host,
			ClientPort: freePort(t, host), ClusterPort: freePort(t, host), Shards: shards, Replicas: replicas, DB: dbo,
			// Generous: under the race detector, with other packages' tests
			// on the same 2 cores, replicas apply slowly.
			RequestTimeout: 20 * time.Second,
			// The same: a cluster that forms in seconds alone took over
			// the default 30 s once, with the CLI's cluster tests on the
			// same cores.
			StartTimeout: 2 * time.Minute,
		})
		if os.Getenv("FPDB_TEST_LOG") != "" {
			tc.opts[i].Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", tc.opts[i].Name)
		} else {
			tc.opts[i].Logger = slog.New(slog.NewTextHandler(&tc.warnings, &slog.HandlerOptions{Level: slog.LevelWarn})).With("node", tc.opts[i].Name)
		}
	}
	for i, o := range tc.opts {
		for j, p := range tc.opts {
			if i != j {
				o.Peers = append(o.Peers, Peer{Name: p.Name, Addr: net.JoinHostPort(p.Host, strconv.Itoa(p.ClusterPort))})
			}
		}
	}
	if hook != nil {
		hook(tc.opts)
	}
	tc.nodes = make([]*Node, n)
	errs := make(chan error, n)
	for i := range tc.opts {
		go func() {
			nd, err := Start(context.Background(), tc.opts[i])
			tc.nodes[i] = nd
			errs <- err
		}()
	}
	for range tc.opts {
		if err := <-errs; err != nil {
			t.Fatalf("start: %v", err)
		}
	}
	t.Cleanup(tc.close)
	return tc
}

func (tc *testCluster) close() {
	for _, nd := range tc.nodes {
		if nd != nil {
			nd.Close()
		}
	}
}

// randomFP returns a random fingerprint of k bits.
func randomFP(rng *rand.Rand, k int) []uint64 {
	fp := make([]uint64, k/64)
	for i := range fp {
		fp[i] = rng.Uint64()
	}
	return fp
}

// nearFP flips d random bits of fp.
func nearFP(rng *rand.Rand, fp []uint64, d int) []uint64 {
	out := append([]uint64(nil), fp...)
	k := 64 * len(fp)
	for _, b := range rng.Perm(k)[:d] {
		out[b/64] ^= 1 << (b % 64)
	}
	return out
}

func TestSmoke(t *testing.T) {
	tc := startCluster(t, 3, 4, 2, nil)
	ctx := context.Background()
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(1, 2))
	fp := randomFP(rng, 512)
	res, err := r.Add(ctx, []db.Input{{ID: "a", Fingerprint: fp}, {ID: "b", Fingerprint: nearFP(rng, fp, 10)}}, AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seq := res[1].Seq
	ms, err := tc.nodes[2].Router().QueryDoc(ctx, &db.Doc{Fingerprint: fp}, QueryOptions{Threshold: 0.9, MinSeq: seq})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].ID != "a" || ms[1].ID != "b" || ms[1].Hamming != 10 {
		t.Fatalf("matches %+v", ms)
	}
	res, err = tc.nodes[1].Router().Add(ctx, []db.Input{{ID: "c", Fingerprint: nearFP(rng, fp, 5)}}, AddOptions{Threshold: 0.9, Reject: true})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Stored || len(res[0].Matches) != 2 {
		t.Fatalf("check-then-add: %+v", res[0])
	}
	// A document whose log entry cannot fit in a log message (a source of
	// 7 MiB) is refused at once, and the router goes on adding.
	bctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	_, err = r.Add(bctx, []db.Input{{ID: "big-source", Fingerprint: randomFP(rng, 512), Source: strings.Repeat("s", 7<<20)}}, AddOptions{})
	cancel()
	if !errors.Is(err, db.ErrTextTooLarge) {
		t.Fatalf("a 7 MiB source: %v, want ErrTextTooLarge", err)
	}
	if _, err := r.Add(ctx, []db.Input{{ID: "after-big", Fingerprint: randomFP(rng, 512)}}, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Delete(ctx, []string{"after-big"}); err != nil {
		t.Fatal(err)
	}
	// One call with an id twice: the last version wins, as in one database.
	v2 := randomFP(rng, 512)
	res, err = r.Add(ctx, []db.Input{{ID: "twice", Fingerprint: randomFP(rng, 512)}, {ID: "twice", Fingerprint: v2}}, AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := r.Get(ctx, "twice", res[1].Seq); err != nil || bitvec.Hamming(d.Fingerprint, v2) != 0 {
		t.Fatalf("twice: %v, %v", d, err)
	}
	if _, err := r.Delete(ctx, []string{"twice"}); err != nil {
		t.Fatal(err)
	}
	pr, err := r.Pairs(ctx, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Pairs) != 1 || pr.Pairs[0].A != "a" || pr.Pairs[0].B != "b" {
		t.Fatalf("pairs %+v", pr.Pairs)
	}
}

// TestLargeBatch adds one call's documents in more than one log message
// when they do not fit in one.
func TestLargeBatch(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(4, 4))
	src := strings.Repeat("s", 200)
	tc.nodes[0].Router().maxMessage = 256 << 10 // as 6 MiB would be for 24 times the documents
	docs := make([]db.Input, 4000)              // about 1.2 MB of entries
	for i := range docs {
		docs[i] = db.Input{ID: fmt.Sprintf("big%05d", i), Fingerprint: randomFP(rng, 512), Source: src}
	}
	res, err := tc.nodes[0].Router().Add(ctx, docs, AddOptions{Threshold: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[uint64]bool{}
	for i, r := range res {
		if !r.Stored {
			t.Fatalf("%s not stored", docs[i].ID)
		}
		seqs[r.Seq] = true
	}
	if len(seqs) < 2 {
		t.Fatalf("one message for 4 000 documents of 300 bytes: %v", seqs)
	}
	if n, err := tc.nodes[0].Router().Len(ctx, tc.nodes[0].Router().Written()); err != nil || n != len(docs) {
		t.Fatalf("%d documents (%v)", n, err)
	}
	if _, err := tc.nodes[0].Router().Delete(ctx, []string{""}); err == nil {
		t.Fatal("delete of an empty id accepted")
	}
}

// TestQueryBudget: a replica answers the part of a query request it
// finished within the router's budget, and the router sends the rest again;
// the matches are those of whole answers.
func TestQueryBudget(t *testing.T) {
	tc := startCluster(t, 1, 2, 1, nil)
	ctx := context.Background()
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(6, 6))
	const n = 30
	orig := make([]db.Input, n)
	for i := range orig {
		orig[i] = db.Input{ID: fmt.Sprintf("o%02d", i), Fingerprint: randomFP(rng, 512)}
	}
	if _, err := r.Add(ctx, orig, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	dups := make([]db.Input, n)
	for i := range dups {
		dups[i] = db.Input{ID: fmt.Sprintf("d%02d", i), Fingerprint: nearFP(rng, orig[i].Fingerprint, 5)}
	}
	check := func(res []AddResult, lo int) {
		t.Helper()
		for i, a := range res {
			o := orig[lo+i]
			if !a.Stored || len(a.Matches) != 1 || a.Matches[0].ID != o.ID || a.Matches[0].Hamming != 5 {
				t.Fatalf("%s: stored %v, matches %+v; want %s at distance 5", dups[lo+i].ID, a.Stored, a.Matches, o.ID)
			}
		}
	}
	before := r.Stats().QueryRequests
	res, err := r.Add(ctx, dups[:n/2], AddOptions{Threshold: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	check(res, 0)
	whole := r.Stats().QueryRequests - before
	r.queryBudget = time.Microsecond // set before Add hands its batch to the batcher
	before = r.Stats().QueryRequests
	res, err = r.Add(ctx, dups[n/2:], AddOptions{Threshold: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	check(res, n/2)
	// One query a request: a request per shard and query, where the whole
	// batch took one per shard.
	if parts := r.Stats().QueryRequests - before; parts != 2*n/2 || whole != 2 {
		t.Fatalf("%d query requests for %d queries on 2 shards in parts (%d whole)", parts, n/2, whole)
	}
}

// TestSlowQueryBatch: a batch of checks that takes a replica longer than
// a request may wait (its answer would come after the router's attempt)
// is answered in parts, by both replicas of each shard in turn.
func TestSlowQueryBatch(t *testing.T) {
	const delay = 10 * time.Millisecond
	tc := startClusterWith(t, 2, 2, 2, nil, func(o []*Options) {
		for _, x := range o {
			x.queryDelay = delay
		}
	})
	ctx := context.Background()
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(8, 8))
	const n = 400 // 200 a shard: 2 s of queries each, more than waitMs
	orig := make([]db.Input, n)
	dups := make([]db.Input, n)
	for i := range orig {
		orig[i] = db.Input{ID: fmt.Sprintf("o%03d", i), Fingerprint: randomFP(rng, 512)}
		dups[i] = db.Input{ID: fmt.Sprintf("d%03d", i), Fingerprint: nearFP(rng, orig[i].Fingerprint, 3)}
	}
	if _, err := r.Add(ctx, orig, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	before := r.Stats().QueryRequests
	res, err := r.Add(ctx, dups, AddOptions{Threshold: 0.9, Reject: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range res {
		if a.Stored || len(a.Matches) != 1 || a.Matches[0].ID != orig[i].ID {
			t.Fatalf("%s: stored %v, matches %+v; want rejected as a near duplicate of %s", dups[i].ID, a.Stored, a.Matches, orig[i].ID)
		}
	}
	if parts := r.Stats().QueryRequests - before; parts < 4 {
		t.Errorf("%d query requests for 2 shards of %v of queries each", parts, time.Duration(n/2)*delay)
	}
}
