package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/fpdb/fpdb/db"
)

// ErrInvalidOptions is wrapped by the errors of Options.Validate.
var ErrInvalidOptions = errors.New("fpdb cluster: invalid options")

// Peer is another node of the cluster.
type Peer struct {
	// Name is the peer's node name.
	Name string
	// Addr is the peer's cluster (route) address, host:port.
	Addr string
}

// ParsePeer parses "NAME@HOST:PORT": HOST is a DNS name, an IPv4
// address or an IPv6 address in brackets, PORT a number from 1 to 65535.
// A malformed entry is a *PeerError.
func ParsePeer(s string) (Peer, error) {
	name, addr, ok := strings.Cut(s, "@")
	if !ok || name == "" {
		return Peer{}, &PeerError{Peer: s, Reason: "want NAME@HOST:PORT"}
	}
	p := Peer{Name: name, Addr: addr}
	if err := p.validate(); err != nil {
		return Peer{}, err
	}
	return p, nil
}

// PeerError is the error of ParsePeer and Options.Validate for a peer
// that is not NAME@HOST:PORT (a bad name, host or port). It wraps
// ErrInvalidOptions.
type PeerError struct {
	// Peer is the peer as given (NAME@ADDR).
	Peer string
	// Reason says what is wrong with it.
	Reason string
}

// Error names the peer and what is wrong with it.
func (e *PeerError) Error() string {
	return fmt.Sprintf("%v: peer %q: %s", ErrInvalidOptions, e.Peer, e.Reason)
}

// Unwrap returns ErrInvalidOptions.
func (e *PeerError) Unwrap() error { return ErrInvalidOptions }

// validate checks the peer's name and route address (HOST:PORT).
func (p Peer) validate() error {
	bad := func(format string, args ...any) error {
		return &PeerError{Peer: p.Name + "@" + p.Addr, Reason: fmt.Sprintf(format, args...)}
	}
	if err := validName(p.Name); err != nil {
		return bad("node name %q: want 1 to 64 characters without spaces, dots, '*' or '>'", p.Name)
	}
	host, port, err := net.SplitHostPort(p.Addr)
	if err != nil {
		return bad("address %q is not HOST:PORT (an IPv6 address goes in brackets: [::1]:6222)", p.Addr)
	}
	if why := badHost(host); why != "" {
		return bad("host %q: %s", host, why)
	}
	if why := badPort(port); why != "" {
		return bad("port %q: %s", port, why)
	}
	return nil
}

// badHost says what is wrong with host, a DNS name or an IP address (""
// when nothing is).
func badHost(host string) string {
	if host == "" {
		return "no host"
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	name := strings.TrimSuffix(host, ".")
	if len(name) == 0 || len(name) > 253 {
		return "not a host name or IP address"
	}
	numeric := true
	for _, label := range strings.Split(name, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "not a host name or IP address"
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "not a host name or IP address"
			}
		}
		numeric = numeric && strings.Trim(label, "0123456789") == ""
	}
	if numeric {
		return "not an IP address"
	}
	return ""
}

// badPort says what is wrong with port, a TCP port number ("" when
// nothing is).
func badPort(port string) string {
	n, err := strconv.Atoi(port)
	if err != nil || strings.Trim(port, "0123456789") != "" || n < 1 || n > 65535 {
		return "want a port number from 1 to 65535"
	}
	return ""
}

// Options configure a node. The zero value of each field means its
// documented default (EnsureDefaults fills them in).
type Options struct {
	// Name is the node's name, unique in the cluster (required).
	Name string
	// Dir holds the node's data: the NATS JetStream store (nats/), its
	// shard replicas (shard-NNN/) and pinned checkpoints.
	Dir string
	// Host is the address the node's NATS server listens on (default
	// 127.0.0.1).
	Host string
	// ClientPort, when not 0, is the NATS client port, on Host (for tools
	// such as the nats CLI); the node itself talks to its server in
	// process. By default the client port is a random one on 127.0.0.1:
	// only the routes listen on Host.
	ClientPort int
	// ClusterPort is the NATS cluster (route) port (default 6222).
	ClusterPort int
	// Peers are the other nodes. Every node must be given the same set of
	// names (its own plus its peers'): the first node to start writes the
	// shard map from them, and the set names the cluster's NATS servers
	// (clusterName), so that a node given another set, or a node of
	// another cluster listed by mistake, forms no route with them (Start
	// fails with a *ForeignPeerError). A node may change address: its
	// peers are then given the new one.
	Peers []Peer
	// Shards is the number of virtual shards V (default 4), fixed when the
	// cluster's shard map is created. When not 0, it must be the cluster's
	// (a *ParamsError otherwise): leave it 0 to join or restart a cluster
	// whatever its count (EnsureDefaults fills it in, so validate a copy).
	Shards int
	// Replicas is the number of replicas of each shard (default 2, at most
	// the number of nodes), fixed at creation. When not 0, it must be the
	// cluster's (a *ParamsError otherwise; leave it 0 as Shards).
	Replicas int
	// LogReplicas is the number of replicas of the write log and the shard
	// map (default 3, at most the number of nodes).
	LogReplicas int
	// DB sets the creation parameters of the shards' databases (K,
	// GroupWidths, ShingleWidth, Seed, NormalizeVersion): a zero field, or
	// a nil DB, means its default (db.Options.EnsureDefaults). The node
	// that creates the cluster's map records them there; on any node, a
	// parameter set here (not zero) that differs from the map's makes Start
	// fail with a *ParamsError, as db.Open does with a database's.
	DB *db.Options
	// GroupWidth, when not 0 and DB sets no GroupWidths, asks for index
	// groups of this many bits, db.EqualWidths(K, GroupWidth) (fpdb's
	// --group-bits): the groups of a new cluster, and those an existing
	// one must have.
	GroupWidth int
	// StartTimeout bounds how long Start waits for the cluster to form
	// (default 30s).
	StartTimeout time.Duration
	// RequestTimeout bounds one request to a shard (default 10s).
	RequestTimeout time.Duration
	// MaxBatch caps the documents of concurrent adds a router gathers into
	// one log message (default 256); one call's documents always go
	// together, in one message when they fit (a call larger than one
	// message is appended on its own, in parts of at most 6 MiB each).
	MaxBatch int
	// Logger receives the node's log (default: discarded).
	Logger *slog.Logger

	// queryDelay (tests) slows each query a replica answers by as much.
	queryDelay time.Duration
}

// EnsureDefaults fills in the zero fields with their defaults.
func (o *Options) EnsureDefaults() *Options {
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.ClusterPort == 0 {
		o.ClusterPort = 6222
	}
	if o.Shards == 0 {
		o.Shards = 4
	}
	n := len(o.Peers) + 1
	if o.Replicas == 0 {
		o.Replicas = min(2, n)
	}
	if o.LogReplicas == 0 {
		o.LogReplicas = min(3, n)
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = 256
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate reports the first invalid option.
func (o *Options) Validate() error {
	n := len(o.Peers) + 1
	names := map[string]bool{o.Name: true}
	for _, p := range o.Peers {
		if names[p.Name] {
			return fmt.Errorf("%w: node name %q given twice", ErrInvalidOptions, p.Name)
		}
		if err := p.validate(); err != nil {
			return err
		}
		names[p.Name] = true
	}
	if err := validName(o.Name); err != nil {
		return err
	}
	if why := badHost(o.Host); why != "" {
		return fmt.Errorf("%w: host %q: %s", ErrInvalidOptions, o.Host, why)
	}
	switch {
	case o.Dir == "":
		return fmt.Errorf("%w: no data directory", ErrInvalidOptions)
	case o.Shards < 1 || o.Shards > 4096:
		return fmt.Errorf("%w: %d shards (want 1 to 4096)", ErrInvalidOptions, o.Shards)
	case o.Replicas < 1 || o.Replicas > n:
		return fmt.Errorf("%w: %d replicas per shard with %d nodes", ErrInvalidOptions, o.Replicas, n)
	case o.LogReplicas < 1 || o.LogReplicas > n || o.LogReplicas > 5:
		return fmt.Errorf("%w: %d log replicas with %d nodes (at most 5)", ErrInvalidOptions, o.LogReplicas, n)
	case o.ClientPort < 0 || o.ClusterPort < 0 || o.ClientPort > 65535 || o.ClusterPort > 65535:
		return fmt.Errorf("%w: ports %d, %d", ErrInvalidOptions, o.ClientPort, o.ClusterPort)
	case o.MaxBatch < 1:
		return fmt.Errorf("%w: MaxBatch %d", ErrInvalidOptions, o.MaxBatch)
	case o.GroupWidth < 0 || o.GroupWidth > db.MaxGroupWidth:
		return fmt.Errorf("%w: GroupWidth %d (want 1 to %d)", ErrInvalidOptions, o.GroupWidth, db.MaxGroupWidth)
	}
	return nil
}

// validName checks a node name: it is part of NATS subjects.
func validName(name string) error {
	if name == "" || len(name) > 64 || strings.ContainsAny(name, ". *>\t\n\r") {
		return fmt.Errorf("%w: node name %q (want 1 to 64 characters without spaces, dots, '*' or '>')", ErrInvalidOptions, name)
	}
	return nil
}
