package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fpdb/fpdb/cluster"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server"
	"github.com/fpdb/fpdb/server/httpapi"
)

// nodeFlags are the flags of "fpdb serve --cluster": a cluster node.
type nodeFlags struct {
	node      string // NAME@HOST
	peers     []string
	natsPort  int
	routePort int
	shards    int
	replicas  int
	changed   func(name string) bool
}

// peersGiven reports whether a cluster-only flag was given.
func (c *nodeFlags) peersGiven() bool {
	for _, f := range []string{"peers", "nats-port", "route-port", "shards", "replicas"} {
		if c.changed != nil && c.changed(f) {
			return true
		}
	}
	return false
}

func (c *nodeFlags) register(f *pflag.FlagSet) {
	f.StringVar(&c.node, "cluster", "", "run as the cluster node `NAME@HOST` (HOST: the address its NATS server and --addr listen on)")
	f.StringSliceVar(&c.peers, "peers", nil, "the cluster's other nodes, `NAME@HOST[:ROUTE-PORT]`,… (every node lists all the others)")
	f.IntVar(&c.natsPort, "nats-port", 0, "cluster: a NATS client `PORT` on HOST for tools such as the nats CLI (0: a random port on 127.0.0.1; the node itself needs none)")
	f.IntVar(&c.routePort, "route-port", 6222, "cluster: this node's NATS route `PORT` (and the peers', unless given)")
	f.IntVar(&c.shards, "shards", 4, "new cluster: number of virtual shards `V`")
	f.IntVar(&c.replicas, "replicas", 2, "new cluster: replicas of each shard `R` (at most the number of nodes)")
}

// options builds the node's options; dir is its data directory.
func (c *nodeFlags) options(dir string, dbo *db.Options, logger *slog.Logger) (*cluster.Options, error) {
	name, host, ok := strings.Cut(c.node, "@")
	if !ok || name == "" || host == "" || strings.ContainsAny(host, "[]") || strings.Count(host, ":") == 1 {
		return nil, usageErrorf("invalid --cluster %q: want NAME@HOST, without a port (e.g. n1@127.0.0.1; --route-port sets the port)", c.node)
	}
	o := &cluster.Options{Name: name, Dir: dir, Host: host, ClientPort: c.natsPort, ClusterPort: c.routePort, DB: dbo, Logger: logger}
	if c.changed != nil && c.changed("shards") {
		o.Shards = c.shards
	}
	if c.changed != nil && c.changed("replicas") {
		o.Replicas = c.replicas
	}
	for _, p := range c.peers {
		if pname, addr, ok := strings.Cut(p, "@"); ok && addr != "" {
			if _, _, err := net.SplitHostPort(addr); err != nil { // no port: the route port
				p = pname + "@" + net.JoinHostPort(strings.Trim(addr, "[]"), strconv.Itoa(c.routePort))
			}
		}
		peer, err := cluster.ParsePeer(p)
		if err != nil {
			return nil, usageErrorf("invalid --peers entry %q: want NAME@HOST[:ROUTE-PORT]", p)
		}
		o.Peers = append(o.Peers, peer)
	}
	if err := o.EnsureDefaults().Validate(); err != nil {
		return nil, usageError(err)
	}
	return o, nil
}

// runCluster runs a cluster node and its HTTP API until ctx ends.
func (o *serveOptions) runCluster(ctx context.Context, so *server.Options, tlsConf *tls.Config, logger *slog.Logger) (err error) {
	dir, err := o.dir()
	if err != nil {
		return err
	}
	dbo := db.DefaultOptions()
	o.creation.apply(dbo, dbo.K)
	if o.creation.given("k") && !o.creation.given("group-bits") {
		// The default groups of the K given, as a single database gets
		// (DefaultOptions filled them in for the default K).
		dbo.GroupWidths = db.EqualWidths(dbo.K, db.DefaultGroupWidth)
	}
	co, err := o.cluster.options(dir, dbo, logger)
	if err != nil {
		return err
	}
	addr := o.addr
	if !o.addrGiven {
		addr = net.JoinHostPort(co.Host, "7700")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return failure(fmt.Errorf("serve: %w", err))
	}
	defer ln.Close()
	logger.Info("starting cluster node", "node", co.Name, "routes", net.JoinHostPort(co.Host, strconv.Itoa(co.ClusterPort)), "peers", len(co.Peers))
	n, err := cluster.Start(ctx, co)
	if err != nil {
		return failure(fmt.Errorf("serve: %w", err))
	}
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = failure(cerr)
		}
		logger.Info("stopped")
	}()
	h := n.Handler(&cluster.HTTPOptions{Tokens: so.Tokens, MaxBodyBytes: so.MaxBodyBytes, MaxImportBytes: so.MaxImportBytes, RequestTimeout: so.RequestTimeout,
		StreamTimeout: so.StreamTimeout, MaxConcurrent: so.MaxConcurrent, Logger: logger})
	scheme := "http"
	if tlsConf != nil {
		ln, scheme = tls.NewListener(ln, tlsConf), "https"
	}
	m := n.Map()
	logger.Info("serving", "url", scheme+"://"+ln.Addr().String(), "node", co.Name, "shards", m.Shards, "replicas of", fmt.Sprint(shardsOf(m, co.Name)))
	if httpapi.IsLoopback(ln.Addr()) {
		h = httpapi.LoopbackHosts(h, so.AllowedHosts, logger) // DNS rebinding
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return failure(fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining requests", "grace", o.grace)
	sctx, cancel := context.WithTimeout(context.Background(), o.grace)
	defer cancel()
	err = hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// As a single server: the requests still running after the
		// grace period are cut off (their connections closed, their
		// contexts cancelled), and the node closes.
		logger.Warn("shutting down: grace period over, closing the connections of the requests still in flight", "grace", o.grace)
		_ = hs.Close()
		err = nil
	}
	if err != nil {
		return failure(fmt.Errorf("serve: %w", err))
	}
	<-errc
	logger.Info("closing the node")
	return nil
}

func shardsOf(m *cluster.ShardMap, node string) []int {
	var out []int
	for s, nodes := range m.Assign {
		for _, n := range nodes {
			if n == node {
				out = append(out, s)
			}
		}
	}
	return out
}
