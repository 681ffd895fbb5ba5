package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
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

// options builds the node's options; dir is its data directory, dbo the
// creation parameters given (the others zero: the cluster's, or their
// defaults for a new cluster), groupBits --group-bits when given without
// --k (0 otherwise).
func (c *nodeFlags) options(dir string, dbo *db.Options, groupBits int, logger *slog.Logger) (*cluster.Options, error) {
	name, host, ok := strings.Cut(c.node, "@")
	if !ok || name == "" || host == "" || strings.ContainsAny(host, "[]") || strings.Count(host, ":") == 1 {
		return nil, usageErrorf("invalid --cluster %q: want NAME@HOST, without a port (e.g. n1@127.0.0.1; --route-port sets the port)", c.node)
	}
	o := &cluster.Options{Name: name, Dir: dir, Host: host, ClientPort: c.natsPort, ClusterPort: c.routePort, DB: dbo, GroupWidth: groupBits, Logger: logger}
	if c.changed != nil && c.changed("shards") {
		o.Shards = c.shards
	}
	if c.changed != nil && c.changed("replicas") {
		o.Replicas = c.replicas
	}
	for _, p := range c.peers {
		peer, err := cluster.ParsePeer(withRoutePort(p, c.routePort))
		if err != nil {
			return nil, peersError(p, err)
		}
		o.Peers = append(o.Peers, peer)
	}
	// Validated with the defaults filled in, but the creation parameters
	// stay as given: a zero Shards or Replicas asks for the cluster's
	// (cluster.Start refuses values that differ from its map), so the
	// defaults must not stand for flags that were not given.
	v := *o
	if err := v.EnsureDefaults().Validate(); err != nil {
		return nil, usageError(err)
	}
	v.Shards, v.Replicas = o.Shards, o.Replicas
	return &v, nil
}

// withRoutePort returns the --peers entry p (NAME@HOST[:PORT]) with the
// port port when it gives none: HOST a name, an IPv4 address, or an IPv6
// address bare or in brackets. Any other entry is returned as it is, for
// cluster.ParsePeer to check.
func withRoutePort(p string, port int) string {
	name, addr, ok := strings.Cut(p, "@")
	if !ok {
		return p
	}
	host := ""
	switch {
	case strings.HasPrefix(addr, "[") && strings.HasSuffix(addr, "]") && strings.Count(addr, "[") == 1:
		host = addr[1 : len(addr)-1]
	case strings.HasPrefix(addr, "["):
		return p // [IPv6]:PORT, or malformed
	case !strings.Contains(addr, ":"):
		host = addr
	default:
		if _, err := netip.ParseAddr(addr); err != nil {
			return p // HOST:PORT, or malformed
		}
		host = addr // a bare IPv6 address
	}
	if host == "" {
		return p
	}
	return name + "@" + net.JoinHostPort(host, strconv.Itoa(port))
}

// clusterFlagError is an error of a cluster flag worded for the command
// line; it wraps the cluster package's error.
type clusterFlagError struct {
	text string
	err  error
}

func (e *clusterFlagError) Error() string { return e.text }

func (e *clusterFlagError) Unwrap() error { return e.err }

// peersError is the usage error of the --peers entry p, refused by
// cluster.ParsePeer with err.
func peersError(p string, err error) error {
	why := "want NAME@HOST[:ROUTE-PORT]"
	var pe *cluster.PeerError
	if errors.As(err, &pe) {
		why = pe.Reason + "; " + why
	}
	return usageError(&clusterFlagError{text: fmt.Sprintf("invalid --peers entry %q: %s", p, why), err: err})
}

// clusterParamsError rewrites a *cluster.ParamsError in the terms of the
// flags, as a single database's *db.ParamsError is (creationFlags'
// paramsError): "the cluster was created with --k 512, but --k 256 was
// given". Other errors are returned as they are.
func clusterParamsError(err error, groupBits int) error {
	var pe *cluster.ParamsError
	if !errors.As(err, &pe) {
		return err
	}
	flag := map[string]string{"Shards": "--shards", "Replicas": "--replicas", "K": "--k", "GroupWidths": "--group-bits",
		"ShingleWidth": "--shingle-width", "Seed": "--seed", "NormalizeVersion": "--normalize-version"}[pe.Param]
	if flag == "" {
		return err
	}
	stored, given := pe.Cluster, pe.Given
	switch pe.Param {
	case "GroupWidths":
		stored, given = widthsText(stored), widthsText(given)
		if groupBits > 0 {
			given = strconv.Itoa(groupBits)
		}
	case "Seed":
		stored, given = hexSeed(stored), hexSeed(given)
	}
	return &clusterFlagError{text: fmt.Sprintf("the cluster was created with %s %s, but %s %s was given (omit the flag, or give the cluster's value)",
		flag, stored, flag, given), err: err}
}

// creationOptions returns the creation parameters given (--k,
// --group-bits, --shingle-width, --seed, --normalize-version; the others
// zero), and --group-bits when given without --k (its groups then split
// the cluster's K).
func (o *serveOptions) creationOptions() (*db.Options, int) {
	dbo := &db.Options{}
	o.creation.apply(dbo, db.DefaultK)
	if o.creation.given("group-bits") && !o.creation.given("k") {
		dbo.GroupWidths = nil
		return dbo, o.creation.groupBits
	}
	return dbo, 0
}

// switchHandler serves each request with the handler last set.
type switchHandler struct{ h atomic.Pointer[http.Handler] }

func (s *switchHandler) set(h http.Handler) { s.h.Store(&h) }

func (s *switchHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

// runCluster runs a cluster node and its HTTP API until ctx ends. The API
// answers from the start: while the node joins the cluster, /healthz is
// 200 and every other route 503 (cluster.StartingHandler).
func (o *serveOptions) runCluster(ctx context.Context, so *server.Options, tlsConf *tls.Config, logger *slog.Logger) (err error) {
	dir, err := o.dir()
	if err != nil {
		return err
	}
	dbo, groupBits := o.creationOptions()
	co, err := o.cluster.options(dir, dbo, groupBits, logger)
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
	hopts := &cluster.HTTPOptions{Tokens: so.Tokens, MaxBodyBytes: so.MaxBodyBytes, MaxImportBytes: so.MaxImportBytes, RequestTimeout: so.RequestTimeout,
		StreamTimeout: so.StreamTimeout, MaxConcurrent: so.MaxConcurrent, Logger: logger}
	sw := &switchHandler{}
	sw.set(cluster.StartingHandler(co.Name, hopts))
	scheme := "http"
	if tlsConf != nil {
		ln, scheme = tls.NewListener(ln, tlsConf), "https"
	}
	var h http.Handler = sw
	if httpapi.IsLoopback(ln.Addr()) {
		h = httpapi.LoopbackHosts(h, so.AllowedHosts, logger) // DNS rebinding
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	logger.Info("starting cluster node", "node", co.Name, "url", scheme+"://"+ln.Addr().String(),
		"routes", net.JoinHostPort(co.Host, strconv.Itoa(co.ClusterPort)), "peers", len(co.Peers))
	n, err := cluster.Start(ctx, co)
	if err != nil {
		_ = hs.Close()
		<-errc
		return failure(fmt.Errorf("serve: %w", clusterParamsError(err, groupBits)))
	}
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = failure(cerr)
		}
		logger.Info("stopped")
	}()
	sw.set(n.Handler(hopts))
	m := n.Map()
	logger.Info("serving", "url", scheme+"://"+ln.Addr().String(), "node", co.Name, "shards", m.Shards, "replicas of", fmt.Sprint(shardsOf(m, co.Name)))
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
