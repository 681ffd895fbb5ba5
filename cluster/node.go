package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/flock"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	logStream  = "FPDB_LOG"
	logSubject = "fpdb.log"
	// dupWindow is how long the log remembers a batch's id, so that a
	// publish retried after a lost acknowledgement is not appended twice.
	dupWindow = 2 * time.Minute
)

// ErrClosed is returned by the calls of a closed node or router.
var ErrClosed = errors.New("fpdb cluster: closed")

// Node is one member of a cluster: an embedded NATS server (a JetStream
// peer of the write log and the shard map), the replicas of the shards
// the map gives it, and a Router for clients.
type Node struct {
	opts Options
	ns   *server.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	smap *ShardMap // the map read at start (its parameters never change)
	cur  atomic.Pointer[ShardMap]
	kv   jetstream.KeyValue
	obj  jetstream.ObjectStore
	gw   *db.DB
	r    *Router
	// lock holds the node directory (lockNodeDir) until Close.
	lock io.Closer
	// clusterName is the NATS cluster name (clusterName).
	clusterName string

	stopWatch   context.CancelFunc
	wg          sync.WaitGroup
	reconcileMu sync.Mutex // one reconcile at a time

	mu       sync.Mutex
	replicas map[int]*replica
	closed   bool
}

// Start starts a node and returns when it has joined the cluster: the log
// stream and the shard map exist, and its replicas are open and following
// the log.
func Start(ctx context.Context, opts *Options) (_ *Node, err error) {
	if opts == nil {
		return nil, fmt.Errorf("%w: nil options", ErrInvalidOptions)
	}
	o := *opts
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("fpdb cluster: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	n := &Node{opts: o, replicas: map[int]*replica{}}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	// Before NATS opens its store in the directory: a second node given
	// the same directory must not write to the first one's log.
	if n.lock, err = lockNodeDir(o.Dir); err != nil {
		return nil, err
	}
	removeLeftovers(o.Dir)
	known, err := readClusterID(o.Dir)
	if err != nil {
		return nil, err
	}
	n.clusterName = clusterName(&o)
	if err := n.startServer(); err != nil {
		return nil, err
	}
	// The node talks to its own server in process: no client port is
	// needed (Options.ClientPort opens one for tools such as the nats CLI).
	n.nc, err = nats.Connect("", nats.InProcessServer(n.ns), nats.Name("fpdb-"+o.Name), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("fpdb cluster: connect to own server: %w", err)
	}
	n.js, err = jetstream.New(n.nc)
	if err != nil {
		return nil, err
	}
	if err := n.setupJetStream(ctx); err != nil {
		return nil, err
	}
	// The bucket's leader may be changing (a node that led it has just
	// failed): try again until the start's deadline.
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		n.smap, err = loadOrCreateMap(actx, n.kv, &o)
		cancel()
		if err == nil || permanent(err) || ctx.Err() != nil {
			break
		}
		o.Logger.Debug("shard map not readable yet", "node", o.Name, "err", err)
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	if err := n.checkClusterID(known, n.smap); err != nil {
		return nil, err
	}
	if err := n.smap.checkAsked(opts); err != nil {
		return nil, fmt.Errorf("fpdb cluster: node %s: %w", o.Name, err)
	}
	n.cur.Store(n.smap)
	if n.gw, err = db.Open(filepath.Join(o.Dir, "gateway"), n.smap.dbOptions()); err != nil {
		return nil, fmt.Errorf("fpdb cluster: gateway database: %w", err)
	}
	n.r, err = newRouter(ctx, n.nc, n.smap, n.gw, &o)
	if err != nil {
		return nil, err
	}
	// Watch the map before reading it again, so that no change is missed
	// between the read and the watch.
	wctx, stop := context.WithCancel(context.Background())
	n.stopWatch = stop
	w, err := n.kv.Watch(wctx, mapKey, jetstream.UpdatesOnly())
	if err != nil {
		return nil, fmt.Errorf("fpdb cluster: watch the shard map: %w", err)
	}
	if m, err := readMap(ctx, n.kv); err == nil {
		n.cur.Store(m)
		n.r.setAssign(m.Assign)
	}
	if !slices.Contains(n.Map().Nodes, o.Name) {
		w.Stop()
		return nil, fmt.Errorf("%w: node %q is not in the cluster's shard map (nodes %s)", ErrInvalidOptions, o.Name, strings.Join(n.Map().Nodes, ", "))
	}
	for _, s := range n.Map().shardsOf(o.Name) {
		rep, err := openReplica(ctx, n, s)
		if err != nil {
			return nil, err
		}
		n.mu.Lock()
		n.replicas[s] = rep
		n.mu.Unlock()
	}
	// Once its replicas have accepted the cluster's id (checkIdentity).
	if known == "" {
		if err := writeClusterID(o.Dir, n.smap.ID); err != nil {
			w.Stop()
			return nil, err
		}
	}
	n.wg.Add(1)
	go n.watchMap(wctx, w)
	o.Logger.Info("cluster node started", "node", o.Name, "shards", n.Map().shardsOf(o.Name), "routes", net.JoinHostPort(o.Host, strconv.Itoa(o.ClusterPort)))
	return n, nil
}

// startServer starts the node's NATS server.
func (n *Node) startServer() error {
	o := &n.opts
	var routes []*url.URL
	for _, p := range o.Peers {
		u, err := url.Parse("nats-route://" + p.Addr)
		if err != nil {
			return fmt.Errorf("%w: peer %s: %w", ErrInvalidOptions, p.Name, err)
		}
		routes = append(routes, u)
	}
	so := &server.Options{
		ServerName: o.Name,
		Host:       o.Host,
		Port:       o.ClientPort,
		JetStream:  true,
		StoreDir:   filepath.Join(o.Dir, "nats"),
		// Every write is synced to disk before it is acknowledged.
		SyncAlways: true,
		// The name keeps clusters apart (clusterName).
		Cluster: server.ClusterOpts{
			Name: n.clusterName,
			Host: o.Host,
			Port: o.ClusterPort,
		},
		Routes:     routes,
		NoSigs:     true,
		NoLog:      os.Getenv("FPDB_NATS_LOG") == "",
		MaxPayload: 8 << 20,
	}
	if o.ClientPort == 0 {
		// The node needs no client port (it connects in process); the
		// server opens one anyway (DontListen would close the routes too):
		// a random port on the loopback address only.
		so.Host, so.Port = "127.0.0.1", server.RANDOM_PORT
	}
	if len(o.Peers) == 0 {
		so.Cluster = server.ClusterOpts{}
	}
	// A port another process holds: the NATS server would only log it
	// (and not start); say it.
	for _, port := range []int{o.ClusterPort, o.ClientPort} {
		if port == 0 || (port == o.ClusterPort && len(o.Peers) == 0) {
			continue
		}
		addr := net.JoinHostPort(o.Host, strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("fpdb cluster: the node's NATS server cannot listen on %s: %w", addr, err)
		}
		ln.Close()
	}
	ns, err := server.NewServer(so)
	if err != nil {
		return fmt.Errorf("fpdb cluster: nats server: %w", err)
	}
	if os.Getenv("FPDB_NATS_LOG") != "" {
		ns.ConfigureLogger()
	}
	go ns.Start()
	if !ns.ReadyForConnections(o.StartTimeout) {
		ns.Shutdown()
		return fmt.Errorf("fpdb cluster: the node's NATS server (routes on %s) did not start", net.JoinHostPort(o.Host, strconv.Itoa(o.ClusterPort)))
	}
	n.ns = ns
	return nil
}

// setupJetStream creates (or finds) the log stream and the map bucket,
// retrying while the JetStream cluster elects its meta leader. Meanwhile
// it probes, every few seconds, the peers it has no route with: one of
// another NATS cluster never will (a *ForeignPeerError, at once).
func (n *Node) setupJetStream(ctx context.Context) error {
	o := &n.opts
	nextProbe := time.Now().Add(2 * time.Second)
	warned := false // of the peers not reached
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		err := n.setupOnce(actx)
		cancel()
		if err == nil {
			return nil
		}
		o.Logger.Debug("cluster not formed yet", "node", o.Name, "err", err)
		if len(o.Peers) > 0 && time.Now().After(nextProbe) {
			probes := n.probe()
			if ferr := n.foreignPeers(probes); ferr != nil {
				return ferr
			}
			if len(probes) > 0 && !warned {
				o.Logger.Info("cluster not formed yet: waiting for peers", "node", o.Name, "not reached", unreached(probes))
				warned = true
			}
			nextProbe = time.Now().Add(3 * time.Second)
		}
		select {
		case <-ctx.Done():
			return n.notFormed(err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// probe probes the peers the node has no route with (probeUnrouted),
// each for at most probeTimeout.
func (n *Node) probe() []routeProbe {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	return n.probeUnrouted(ctx)
}

// probeTimeout bounds a probe of a peer's route port.
const probeTimeout = 2 * time.Second

// notFormed is the error of a cluster that did not form before the
// start's end (cause): the last error of the set-up (last), and the peers
// never reached, with why.
func (n *Node) notFormed(last, cause error) error {
	o := &n.opts
	probes := n.probe()
	if err := n.foreignPeers(probes); err != nil {
		return err
	}
	msg := fmt.Sprintf("fpdb cluster: node %s: the cluster did not form in %v (%v)", o.Name, o.StartTimeout, last)
	if len(probes) > 0 {
		msg += "; peers never reached: " + unreached(probes)
	}
	return fmt.Errorf("%s: %w", msg, cause)
}

func (n *Node) setupOnce(ctx context.Context) (err error) {
	o := &n.opts
	{
		_, err := n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:       logStream,
			Subjects:   []string{logSubject},
			Storage:    jetstream.FileStorage,
			Replicas:   o.LogReplicas,
			Retention:  jetstream.LimitsPolicy,
			Duplicates: dupWindow,
			MaxMsgSize: 8 << 20,
		})
		if err != nil {
			return fmt.Errorf("log stream: %w", err)
		}
	}
	if n.kv, err = n.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: mapBucket, Storage: jetstream.FileStorage, Replicas: o.LogReplicas, History: 16,
	}); err != nil {
		return fmt.Errorf("map bucket: %w", err)
	}
	n.obj, err = n.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		// A checkpoint nobody fetched (its new replica gave up) expires.
		Bucket: seedBucket, Storage: jetstream.FileStorage, Replicas: o.LogReplicas, TTL: 2 * seedTimeout,
	})
	return err
}

// Router returns the node's router (queries, adds, pairs).
func (n *Node) Router() *Router { return n.r }

// Name returns the node's name.
func (n *Node) Name() string { return n.opts.Name }

// Map returns the shard map as the node last saw it.
func (n *Node) Map() *ShardMap { return n.cur.Load() }

func (n *Node) replicaDir(s int) string {
	return filepath.Join(n.opts.Dir, fmt.Sprintf("shard-%03d", s))
}

// Replica returns the state of the node's replica of shard s (ok false if
// it holds none).
func (n *Node) Replica(s int) (st ReplicaState, ok bool) {
	n.mu.Lock()
	rep := n.replicas[s]
	n.mu.Unlock()
	if rep == nil {
		return ReplicaState{}, false
	}
	return rep.state(), true
}

// Digest returns the node's replica of shard s's applied log sequence and
// a digest of its documents (ids, fingerprints, times added) at that
// sequence: replicas of one shard at one sequence have equal digests.
func (n *Node) Digest(ctx context.Context, s int) (seq uint64, digest uint64, docs int, err error) {
	n.mu.Lock()
	rep := n.replicas[s]
	n.mu.Unlock()
	if rep == nil {
		return 0, 0, 0, fmt.Errorf("fpdb cluster: node %s holds no replica of shard %d", n.opts.Name, s)
	}
	return rep.digest(ctx)
}

// IsLogLeader reports whether this node's server leads the write log's
// replication group.
func (n *Node) IsLogLeader() bool {
	if n.ns == nil {
		return false
	}
	return n.ns.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, logStream)
}

// Close stops the node: its router, its replicas (each waits for the
// message it applies), its connection and its NATS server.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	reps := n.replicas
	n.replicas = map[int]*replica{}
	n.mu.Unlock()
	var errs []error
	if n.stopWatch != nil {
		n.stopWatch()
	}
	n.wg.Wait()
	if n.r != nil {
		n.r.Close()
	}
	// The replicas close at once: each may wait for its log consumer
	// (stopConsumer).
	closed := make(chan error, len(reps))
	for _, rep := range reps {
		go func() { closed <- rep.close() }()
	}
	for range reps {
		errs = append(errs, <-closed)
	}
	if n.gw != nil {
		errs = append(errs, n.gw.Close())
	}
	if n.nc != nil {
		n.nc.Close()
	}
	if n.ns != nil {
		n.ns.Shutdown()
		n.ns.WaitForShutdown()
	}
	if n.lock != nil {
		errs = append(errs, n.lock.Close()) // releases the lock
	}
	return errors.Join(errs...)
}

// removeLeftovers removes what a node killed midway may have left in its
// directory dir, held by no one now: checkpoints being handed to a new
// replica (seeds/), and pin checkpoints cut short (the hidden work
// directories of db.DB.Checkpoint in pins/).
func removeLeftovers(dir string) {
	_ = os.RemoveAll(filepath.Join(dir, "seeds"))
	m, _ := filepath.Glob(filepath.Join(dir, "pins", ".incomplete-backup-*"))
	for _, p := range m {
		_ = os.RemoveAll(p)
	}
}

// nodeLockName is the file a node locks in its directory while it runs.
const nodeLockName = "FPDB-NODE.LOCK"

// lockNodeDir locks dir for this node (flock(2) on nodeLockName): one
// node per directory, as one DB value per database directory. Another
// holder is db.ErrLocked.
func lockNodeDir(dir string) (io.Closer, error) {
	l, err := flock.Lock(filepath.Join(dir, nodeLockName), false)
	switch {
	case errors.Is(err, flock.ErrHeld):
		return nil, fmt.Errorf("fpdb cluster: node directory %s is in use by another node: %w", dir, db.ErrLocked)
	case err != nil:
		return nil, fmt.Errorf("fpdb cluster: lock %s: %w", dir, err)
	}
	return l, nil
}

// stopReplica closes the node's replica of shard s (as a crash of that
// replica alone would; tests). A map change seen after it may open the
// replica again (reconcile), as it would after a crash.
func (n *Node) stopReplica(s int) error {
	n.reconcileMu.Lock()
	defer n.reconcileMu.Unlock()
	return n.closeReplica(s)
}

// closeReplica closes the node's replica of shard s; n.reconcileMu is held.
func (n *Node) closeReplica(s int) error {
	n.mu.Lock()
	rep := n.replicas[s]
	delete(n.replicas, s)
	n.mu.Unlock()
	if rep == nil {
		return fmt.Errorf("fpdb cluster: node %s holds no replica of shard %d", n.opts.Name, s)
	}
	return rep.close()
}

// startReplica opens the node's replica of shard s again unless it is
// open (a map change may have opened it first): it resumes following the
// log after the last sequence it applied.
func (n *Node) startReplica(ctx context.Context, s int) error {
	n.reconcileMu.Lock()
	defer n.reconcileMu.Unlock()
	return n.openReplica(ctx, s)
}

// openReplica opens the node's replica of shard s unless it is open;
// n.reconcileMu is held, so that no two calls open the same shard.
func (n *Node) openReplica(ctx context.Context, s int) error {
	n.mu.Lock()
	open := n.replicas[s] != nil
	n.mu.Unlock()
	if open {
		return nil
	}
	rep, err := openReplica(ctx, n, s)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		rep.close()
		return ErrClosed
	}
	n.replicas[s] = rep
	return nil
}
