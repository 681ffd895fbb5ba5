package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fpdb/fpdb/server/httpapi"
)

// routeProxy forwards one node's route connections to another node; a
// partition closes them and refuses new ones.
type routeProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func newRouteProxy(t *testing.T, host, target string) *routeProxy {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	p := &routeProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	return p
}

func (p *routeProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { io.Copy(u, c); u.Close(); c.Close() }()
		go func() { io.Copy(c, u); u.Close(); c.Close() }()
	}
}

func (p *routeProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// startProxiedCluster is startCluster with every route (i → j) through a
// proxy, so that a test can cut a node off (nodes only use the routes
// they are given: NoAdvertise).
func startProxiedCluster(t *testing.T) (*testCluster, map[[2]int]*routeProxy) {
	proxies := map[[2]int]*routeProxy{}
	tc := startClusterWith(t, 3, 4, 2, nil, func(opts []*Options) {
		for i, o := range opts {
			o.Peers = nil
			for j, p := range opts {
				if i == j {
					continue
				}
				px := newRouteProxy(t, o.Host, net.JoinHostPort(p.Host, strconv.Itoa(p.ClusterPort)))
				proxies[[2]int{i, j}] = px
				o.Peers = append(o.Peers, Peer{Name: p.Name, Addr: px.ln.Addr().String()})
			}
		}
	})
	return tc, proxies
}

// TestPartition cuts one node off from the other two while writers write
// through the majority's nodes (and one through all three) and readers
// read: the majority goes on, the cut node refuses (or cannot complete)
// writes rather than acknowledging them alone, and after the partition
// heals it catches up: replicas agree and no acknowledged write is lost.
func TestPartition(t *testing.T) {
	tc, proxies := startProxiedCluster(t)
	l := startLoad(t, tc, func(w int) []int {
		if w == 3 {
			return []int{2, 0, 1} // tries the cut node first
		}
		return []int{0, 1}
	})
	time.Sleep(1500 * time.Millisecond)
	cutOff := func(k int, cut bool) {
		for key, px := range proxies {
			if key[0] == k || key[1] == k {
				px.setCut(cut)
			}
		}
	}
	t.Log("cutting n3 off")
	l.phase.Store(1)
	cutOff(2, true)
	// If the cut node led the log, the majority elects a new leader after
	// a Raft election timeout (4 to 9 s in nats-server).
	time.Sleep(12 * time.Second)
	t.Log("healing")
	cutOff(2, false)
	l.phase.Store(2)
	time.Sleep(4 * time.Second)
	l.finish(t, 3)
}

// TestPinWithoutQuorum: a node cut off from the others (no quorum of the
// log) answers pairs with ErrLogUnavailable (503) once the pin's time is
// over, rather than retrying the pin for as long as its caller waits (a
// stream's caller waits up to --stream-timeout, receiving nothing).
func TestPinWithoutQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the pin's bound (20 s and the log's late answer)")
	}
	tc, proxies := startProxiedCluster(t)
	for key, px := range proxies {
		if key[0] == 2 || key[1] == 2 {
			px.setCut(true)
		}
	}
	// The caller would wait far longer than the pin's bound.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	_, err := tc.nodes[2].r.Pairs(ctx, 0.9)
	took := time.Since(start)
	if !errors.Is(err, ErrLogUnavailable) {
		t.Fatalf("pairs on a node without quorum: %v after %v, want ErrLogUnavailable", err, took)
	}
	if st, _ := httpapi.Classify(err, httpErrors); st != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", st)
	}
	if took > pinWait+outcomeWait+10*time.Second {
		t.Errorf("the pin took %v", took)
	}
}
