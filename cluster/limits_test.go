package cluster

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// TestEntryBounds: what a database accepts goes through the log and
// comes back the same: counts up to 2^62, the zero time (none), a time at
// 1970-01-01T00:00:00Z exactly (its Unix nanoseconds are 0), the first
// and last years a database takes; a negative size does not decode.
func TestEntryBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	in := []Entry{
		{Kind: KindAdd, ID: "big", Fingerprint: randomFP(rng, 512), Words: 1 << 62, Shingles: 1 << 62, Size: 1 << 62},
		{Kind: KindAdd, ID: "none", Fingerprint: randomFP(rng, 512)},
		{Kind: KindAdd, ID: "epoch", Fingerprint: randomFP(rng, 512), Added: time.Unix(0, 0).UTC()},
		{Kind: KindAdd, ID: "1678", Fingerprint: randomFP(rng, 512), Added: time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Kind: KindAdd, ID: "2261", Fingerprint: randomFP(rng, 512), Added: time.Date(2261, 12, 31, 23, 59, 59, 0, time.UTC)},
	}
	out, err := DecodeBatch(EncodeBatch(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n%+v\n%+v", in, out)
	}
	if _, err := DecodeBatch(EncodeBatch([]Entry{{Kind: KindAdd, ID: "neg", Fingerprint: randomFP(rng, 512), Size: -5}})); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("negative size: %v, want ErrBadEntry", err)
	}
}

// TestLogTakesWhatADatabaseTakes adds through the cluster the documents a
// single database accepts at the edges of its ranges, and one it refuses:
// the accepted ones are stored as given on every replica (none stops),
// and the refused one is refused before anything is appended. A
// document the log could not decode stopped every replica for good.
func TestLogTakesWhatADatabaseTakes(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 2, 2, 2, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(4, 4))
	epoch := time.Unix(0, 0).UTC()
	good := []db.Input{
		{ID: "big", Fingerprint: randomFP(rng, 512), Words: 2_000_000_000_000, Shingles: 1 << 62, Size: 60},
		{ID: "epoch", Fingerprint: randomFP(rng, 512), Words: 12, Added: epoch},
	}
	if _, err := r.Add(ctx, good, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	before := r.Written()
	if _, err := r.Add(ctx, []db.Input{{ID: "neg", Fingerprint: randomFP(rng, 512), Size: -5}}, AddOptions{}); !errors.Is(err, db.ErrBadInput) {
		t.Fatalf("negative size: %v, want ErrBadInput", err)
	}
	if r.Written() != before {
		t.Fatalf("the refused document was appended: written %d, was %d", r.Written(), before)
	}
	last := r.Written()
	for _, n := range tc.nodes {
		for _, in := range good {
			doc, err := n.Router().Get(ctx, in.ID, last)
			if err != nil {
				t.Fatalf("node %s: get %s: %v", n.opts.Name, in.ID, err)
			}
			if doc.Words != in.Words || (!in.Added.IsZero() && !doc.Added.Equal(in.Added)) {
				t.Errorf("node %s: %s stored with words %d, added %v; want %d, %v", n.opts.Name, in.ID, doc.Words, doc.Added, in.Words, in.Added)
			}
		}
		for s := range 2 {
			if st, ok := n.Replica(s); ok && st.Err != nil {
				t.Errorf("node %s: replica of shard %d stopped: %v", n.opts.Name, s, st.Err)
			}
		}
	}
}

// TestStartRefusesWhatIsTaken: a second node given a running node's
// directory is refused at once (db.ErrLocked), before its NATS server
// opens the first one's store; a node whose route port another process
// holds says so, at once, instead of waiting for its server to start.
func TestStartRefusesWhatIsTaken(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 1, 2, 1, nil)
	o := *tc.opts[0]
	o.ClientPort, o.ClusterPort = freePort(t, o.Host), freePort(t, o.Host)
	start := time.Now()
	if n, err := Start(ctx, &o); !errors.Is(err, db.ErrLocked) {
		if n != nil {
			n.Close()
		}
		t.Fatalf("a second node in a running node's directory: %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refused after %v", d)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	o.Dir = t.TempDir()
	o.Peers = []Peer{{Name: "n9", Addr: "127.0.0.1:1"}}
	o.ClusterPort = ln.Addr().(*net.TCPAddr).Port
	start = time.Now()
	if n, err := Start(ctx, &o); err == nil || !strings.Contains(err.Error(), "address already in use") {
		if n != nil {
			n.Close()
		}
		t.Fatalf("a route port in use: %v, want an error saying so", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refused after %v", d)
	}
}

// TestRemoveLeftovers: what a node killed midway leaves (a seed being
// handed over, a pin checkpoint cut short) is removed when it starts
// again; the pins themselves stay.
func TestRemoveLeftovers(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"seeds/shard-001-abc/000001.sst", "pins/.incomplete-backup-shard-001-0001-abcd/MANIFEST", "pins/shard-001-00000000000000000007/MANIFEST", "gateway/MANIFEST"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removeLeftovers(dir)
	for p, want := range map[string]bool{"seeds": false, "pins/.incomplete-backup-shard-001-0001-abcd": false, "pins/shard-001-00000000000000000007/MANIFEST": true, "gateway/MANIFEST": true} {
		if _, err := os.Stat(filepath.Join(dir, p)); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", p, err == nil, want)
		}
	}
}

// TestAppendRefusesWhatDoesNotDecode: the last guard before the log, past
// the database's checks: a message that would not decode is not appended
// (every replica would stop at it), and the error is ErrBadInput.
func TestAppendRefusesWhatDoesNotDecode(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 1, 1, 1, nil)
	r := tc.node(0).r
	before, err := r.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for _, e := range []Entry{
		{Kind: KindAdd, ID: "neg", Fingerprint: randomFP(rng, 512), Size: -5},
		{Kind: KindAdd, ID: "", Fingerprint: randomFP(rng, 512)},
		{Kind: KindAdd, ID: "huge", Fingerprint: randomFP(rng, 512), Words: 1<<62 + 1},
	} {
		if _, _, err := r.appendMsg(ctx, []Entry{e}, newBatchID(), 0, false); !errors.Is(err, db.ErrBadInput) {
			t.Errorf("append of %+v: %v, want ErrBadInput", e, err)
		}
	}
	if last, err := r.LastSeq(ctx); err != nil || last != before {
		t.Fatalf("log at %d (%v), was %d: something was appended", last, err, before)
	}
}
