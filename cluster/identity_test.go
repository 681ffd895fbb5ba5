package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// startNamedCluster starts a cluster of nodes named names, node i on
// 127.0.0.(first+i).
func startNamedCluster(t *testing.T, names []string, first int) *testCluster {
	t.Helper()
	return startClusterWith(t, len(names), 2, len(names), nil, func(opts []*Options) {
		for i, o := range opts {
			o.Name = names[i]
			o.Dir = filepath.Join(filepath.Dir(o.Dir), names[i])
			o.Host = "127.0.0." + strconv.Itoa(first+i)
			o.ClientPort, o.ClusterPort = freePort(t, o.Host), freePort(t, o.Host)
		}
		for _, o := range opts {
			o.Peers = nil
			for _, p := range opts {
				if p != o {
					o.Peers = append(o.Peers, Peer{Name: p.Name, Addr: routeAddr(p)})
				}
			}
		}
	})
}

// routeAddr returns the route address of the node of options o.
func routeAddr(o *Options) string { return net.JoinHostPort(o.Host, strconv.Itoa(o.ClusterPort)) }

// addOne adds a random document id through node nd and returns the log
// sequence it was appended at.
func addOne(t *testing.T, nd *Node, id string) uint64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(len(id)), 7))
	res, err := nd.Router().Add(context.Background(), []db.Input{{ID: id, Fingerprint: randomFP(rng, 512)}}, AddOptions{})
	if err != nil || !res[0].Stored {
		t.Fatalf("add %s through %s: %+v, %v", id, nd.Name(), res, err)
	}
	return res[0].Seq
}

// wantDocs checks, through node nd, that the ids of has are stored and
// those of hasNot are not, at the log's last sequence.
func wantDocs(t *testing.T, nd *Node, has, hasNot []string) {
	t.Helper()
	ctx := context.Background()
	seq, err := nd.Router().LastSeq(ctx)
	if err != nil {
		t.Fatalf("%s: last sequence: %v", nd.Name(), err)
	}
	for _, id := range has {
		if _, err := nd.Router().Get(ctx, id, seq); err != nil {
			t.Errorf("%s: get %s: %v, want it stored", nd.Name(), id, err)
		}
	}
	for _, id := range hasNot {
		if d, err := nd.Router().Get(ctx, id, seq); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("%s: get %s: %+v, %v, want not found", nd.Name(), id, d, err)
		}
	}
}

// TestClustersDoNotMerge: a node of one cluster restarted with a node of
// another among its peers fails at once, naming that peer, and the two
// clusters keep their own documents (the merged NATS cluster gave a write
// answered stored through one cluster to the other).
func TestClustersDoNotMerge(t *testing.T) {
	a := startNamedCluster(t, []string{"a1", "a2"}, 1)
	b := startNamedCluster(t, []string{"b1", "b2"}, 3)
	addOne(t, a.node(0), "doc-a")
	addOne(t, b.node(0), "doc-b")

	b.kill(1)
	o := *b.opts[1]
	o.Peers = append(append([]Peer(nil), o.Peers...), Peer{Name: "a1", Addr: routeAddr(a.opts[0])})
	o.StartTimeout = time.Minute
	nd, err := Start(context.Background(), &o)
	if err == nil {
		nd.Close()
		t.Fatal("b2 started with a1 among its peers")
	}
	var fe *ForeignPeerError
	if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "a1@"+routeAddr(a.opts[0])) {
		t.Fatalf("b2 with a1 among its peers: %v, want a *ForeignPeerError naming a1", err)
	}
	t.Logf("b2 with a1 among its peers: %v", err)

	// b2 given its own peers joins its cluster again (of two nodes, b
	// takes no write without it), and writes through each cluster stay
	// in it.
	b.restart(1)
	addOne(t, a.node(0), "doc-a2")
	addOne(t, b.node(0), "doc-b2")
	wantDocs(t, a.node(1), []string{"doc-a", "doc-a2"}, []string{"doc-b", "doc-b2"})
	for _, nd := range b.nodes {
		wantDocs(t, nd, []string{"doc-b", "doc-b2"}, []string{"doc-a", "doc-a2"})
	}
	if n, err := a.node(0).Router().Len(context.Background(), 0); err != nil || n != 2 {
		t.Errorf("cluster a holds %d documents (%v), want 2", n, err)
	}
}

// TestClusterIDRecorded: a node records its cluster's id in its directory,
// and refuses a cluster of another id (here, the log and map created
// anew), naming both.
func TestClusterIDRecorded(t *testing.T) {
	tc := startCluster(t, 1, 1, 1, nil)
	id := tc.node(0).Map().ID
	if got, err := readClusterID(tc.opts[0].Dir); err != nil || got != id {
		t.Fatalf("recorded cluster id %q (%v), want %q", got, err, id)
	}
	tc.kill(0)
	if err := os.RemoveAll(filepath.Join(tc.opts[0].Dir, "nats")); err != nil {
		t.Fatal(err)
	}
	nd, err := Start(context.Background(), tc.opts[0])
	if err == nil {
		nd.Close()
		t.Fatal("a node started in a cluster of another id")
	}
	if !errors.Is(err, ErrWrongCluster) || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "belongs to cluster") {
		t.Fatalf("a node in a cluster of another id: %v, want ErrWrongCluster naming %s", err, id)
	}
}

// TestParsePeer: a peer's host and port are checked when it is parsed,
// and by Options.Validate: a bad one is refused at once, naming it.
func TestParsePeer(t *testing.T) {
	for _, s := range []string{"n1@127.0.0.1:6222", "n1@[::1]:6222", "n1@node-1.example.com:6222", "n1@localhost:1", "n1@10.0.0.1:65535"} {
		if _, err := ParsePeer(s); err != nil {
			t.Errorf("ParsePeer(%q): %v", s, err)
		}
	}
	for _, s := range []string{"n8@127.0.0.8:99999", "n9@127.0.0.9:0", "n5@[::1", "n5@::1", "n1@127.0.0.1:", "n1@:6222", "n1@bad host:6222",
		"n1@256.1.1.1:6222", "n1@host:http", "n1@-host:6222", "n1@127.0.0.1:-1", "n1@127.0.0.1:+80", "n.1@127.0.0.1:6222", "n1", "@127.0.0.1:6222"} {
		p, err := ParsePeer(s)
		var pe *PeerError
		if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), strconv.Quote(s)) {
			t.Errorf("ParsePeer(%q): %+v, %v, want a *PeerError naming it", s, p, err)
		}
	}
	o := &Options{Name: "n1", Dir: t.TempDir(), Peers: []Peer{{Name: "n8", Addr: "127.0.0.8:99999"}}}
	if err := o.EnsureDefaults().Validate(); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "n8@127.0.0.8:99999") {
		t.Errorf("Validate with a peer on port 99999: %v", err)
	}
	o.Peers, o.Host = nil, "bad host"
	if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Validate with host %q: %v", o.Host, err)
	}
}

// TestNotFormedNamesPeers: a node whose peers never answer fails at the
// end of its start with an error naming each, and why.
func TestNotFormedNamesPeers(t *testing.T) {
	host := "127.0.0.1"
	closed := freePort(t, "127.0.0.8") // nothing listens there
	o := &Options{Name: "n1", Dir: t.TempDir(), Host: host, ClientPort: freePort(t, host), ClusterPort: freePort(t, host),
		Peers:        []Peer{{Name: "n8", Addr: net.JoinHostPort("127.0.0.8", strconv.Itoa(closed))}, {Name: "n9", Addr: "nosuchhost.invalid:6222"}},
		StartTimeout: 4 * time.Second}
	nd, err := Start(context.Background(), o)
	if err == nil {
		nd.Close()
		t.Fatal("a node without its peers started")
	}
	msg := err.Error()
	for _, want := range []string{"did not form", "peers never reached", fmt.Sprintf("n8@127.0.0.8:%d (", closed), "n9@nosuchhost.invalid:6222 ("} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want it to wrap context.DeadlineExceeded", err)
	}
}

// TestParamsMismatch: a node started with creation parameters that differ
// from its cluster's map is refused (a *ParamsError naming the parameter
// and both values). (On a new cluster, the node whose map was not written
// is refused the same way, once it reads the other's.)
func TestParamsMismatch(t *testing.T) {
	t.Run("Check", func(t *testing.T) {
		m := newShardMap((&Options{Name: "n1", Peers: []Peer{{Name: "n2"}}, Shards: 4, Replicas: 2}).EnsureDefaults())
		for _, c := range []struct {
			o     Options
			param string
		}{
			{Options{}, ""},
			{Options{Shards: 4, Replicas: 2, DB: db.DefaultOptions()}, ""},
			{Options{GroupWidth: 16, DB: &db.Options{K: 512}}, ""},
			{Options{Shards: 16}, "Shards"},
			{Options{Replicas: 1}, "Replicas"},
			{Options{DB: &db.Options{K: 256}}, "K"},
			{Options{GroupWidth: 18}, "GroupWidths"},
			{Options{DB: &db.Options{GroupWidths: db.EqualWidths(512, 20)}}, "GroupWidths"},
			{Options{DB: &db.Options{ShingleWidth: 5}}, "ShingleWidth"},
			{Options{DB: &db.Options{Seed: 7}}, "Seed"},
			{Options{DB: &db.Options{NormalizeVersion: db.MinNormalizeVersion}}, "NormalizeVersion"},
		} {
			err := m.checkAsked(&c.o)
			var pe *ParamsError
			switch {
			case c.param == "" && err != nil:
				t.Errorf("%+v: %v", c.o, err)
			case c.param != "" && (!errors.As(err, &pe) || pe.Param != c.param || !errors.Is(err, db.ErrParamsMismatch)):
				t.Errorf("%+v: %v, want a *ParamsError of %s", c.o, err, c.param)
			}
		}
	})
	t.Run("Restart", func(t *testing.T) {
		tc := startCluster(t, 1, 4, 1, nil)
		tc.kill(0)
		for _, c := range []struct {
			change func(*Options)
			want   string
		}{
			{func(o *Options) { o.Shards = 16 }, "creation parameter Shards is 4 in the cluster, but 16 was asked for"},
			{func(o *Options) { o.DB = &db.Options{K: 256} }, "creation parameter K is 512 in the cluster, but 256 was asked for"},
		} {
			o := *tc.opts[0]
			c.change(&o)
			nd, err := Start(context.Background(), &o)
			if err == nil {
				nd.Close()
			}
			if !errors.Is(err, db.ErrParamsMismatch) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("restart: %v, want %q", err, c.want)
			}
		}
		tc.restart(0) // the cluster's own parameters
	})
}
