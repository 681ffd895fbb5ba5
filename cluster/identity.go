package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Two clusters must never merge: their NATS servers would mix two
// JetStream clusters, whose logs and maps have the same names, and a
// write answered stored in one could land in the other. The NATS
// cluster name is made from the members' names (clusterName), and
// nats-server refuses a route between servers of different cluster
// names: a node given another member list, or listing a node of another
// cluster, forms no route with them, and Start fails with a
// *ForeignPeerError naming the peers. Each node also records its
// cluster's id (the shard map's ID) in its directory (clusterIDFile), and
// Start refuses a map of another id (ErrWrongCluster).
//
// Two clusters of the same node names have the same cluster name: nats
// cannot tell them apart, and a node listing a node of the other by
// mistake would join their servers. A route-level check of the id was
// tried: nats-server retries a refused route learnt by gossip at once,
// without end (tens of thousands of attempts in 30 s). Clusters whose
// route ports can reach each other must have distinct node names.

// clusterName returns the NATS cluster name of a node with options o:
// "fpdb-" and a hash of the sorted names of its members (itself and its
// peers), the same on every node of a cluster, since every node lists
// the same members.
func clusterName(o *Options) string {
	sum := sha256.Sum256([]byte(strings.Join(memberNames(o), "\n")))
	return "fpdb-" + hex.EncodeToString(sum[:6])
}

// legacyClusterName is the NATS cluster name of the nodes of the fpdb
// versions before clusterName.
const legacyClusterName = "fpdb"

// memberNames returns the names of o's members (its node and its peers),
// sorted.
func memberNames(o *Options) []string {
	names := []string{o.Name}
	for _, p := range o.Peers {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// clusterIDFile holds, in a node's directory, the id of the cluster the
// node belongs to (its shard map's ID), written once the node has read
// the map.
const clusterIDFile = "CLUSTER-ID"

// readClusterID returns the cluster id recorded in the node directory dir
// ("" when none is).
func readClusterID(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, clusterIDFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("fpdb cluster: read the node's cluster id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// writeClusterID records id in the node directory dir (a whole file,
// synced, renamed into place).
func writeClusterID(dir, id string) error {
	tmp, err := os.CreateTemp(dir, "."+clusterIDFile+"-*")
	if err != nil {
		return fmt.Errorf("fpdb cluster: record the cluster id: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(id + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, clusterIDFile))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("fpdb cluster: record the cluster id: %w", err)
	}
	return nil
}

// syncDir syncs the directory dir (a rename in it).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// checkClusterID compares the id of the cluster's map with the one the
// node recorded (known, "" when none).
func (n *Node) checkClusterID(known string, m *ShardMap) error {
	if known != "" && known != m.ID {
		return fmt.Errorf("%w: node %s (directory %s) belongs to cluster %s, but the cluster it joined is %s: "+
			"its peers are another cluster's nodes, or the cluster's log and map were created anew", ErrWrongCluster, n.opts.Name, n.opts.Dir, known, m.ID)
	}
	return nil
}

// routeProbe is what a peer's route port said (see probeRoute).
type routeProbe struct {
	peer Peer
	// name and cluster are the node name and NATS cluster name of the
	// server there; err why it could not be read.
	name, cluster string
	err           error
}

// probeRoute reads the INFO a NATS server sends first on its route port
// at p.Addr: its server (node) name and its cluster name. It sends
// nothing, so that no route forms.
func probeRoute(ctx context.Context, p Peer) routeProbe {
	pr := routeProbe{peer: p}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.Addr)
	if err != nil {
		pr.err = err
		return pr
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(dl)
	}
	line, err := bufio.NewReaderSize(conn, 64<<10).ReadSlice('\n')
	if err != nil {
		pr.err = fmt.Errorf("no NATS route port there: %w", err)
		return pr
	}
	body, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("INFO "))
	var info struct {
		Name    string `json:"server_name"`
		Cluster string `json:"cluster"`
	}
	if !ok || json.Unmarshal(body, &info) != nil {
		pr.err = errors.New("no NATS route port there")
		return pr
	}
	pr.name, pr.cluster = info.Name, info.Cluster
	return pr
}

// routedPeers returns the names of the nodes the node's server has a
// route with.
func (n *Node) routedPeers() map[string]bool {
	out := map[string]bool{}
	rz, err := n.ns.Routez(nil)
	if err != nil {
		return out
	}
	for _, r := range rz.Routes {
		out[r.RemoteName] = true
	}
	return out
}

// probeUnrouted probes, at once, the peers the node has no route with.
func (n *Node) probeUnrouted(ctx context.Context) []routeProbe {
	routed := n.routedPeers()
	var out []routeProbe
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range n.opts.Peers {
		if routed[p.Name] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr := probeRoute(ctx, p)
			mu.Lock()
			out = append(out, pr)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b routeProbe) int { return strings.Compare(a.peer.Name, b.peer.Name) })
	return out
}

// ForeignPeerError is the error of Start when peers answer on their route
// ports as servers of another NATS cluster than the node's: they were
// given another member list than the node's own, or are nodes of another
// cluster. nats-server forms no route between them, so that two clusters
// never merge; the node stops rather than wait. It wraps
// ErrInvalidOptions.
type ForeignPeerError struct {
	// Node is the node's name, Cluster its NATS cluster name and Members
	// its members' names (its own and its peers'), sorted.
	Node, Cluster string
	Members       []string
	// Peers are the peers whose NATS cluster names differ from the
	// node's, with theirs (Clusters[i] is that of Peers[i]) and the node
	// names their servers gave (Names[i]).
	Peers    []Peer
	Clusters []string
	Names    []string
}

// Error names the peers by NATS cluster name, and the node's.
func (e *ForeignPeerError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fpdb cluster: node %s (NATS cluster %s, made from its members %s) cannot join its peers: ",
		e.Node, e.Cluster, strings.Join(e.Members, ", "))
	var order []string // the peers' cluster names, in order of first appearance
	of := map[string][]string{}
	for i, p := range e.Peers {
		what := p.Name + "@" + p.Addr
		if e.Names[i] != "" && e.Names[i] != p.Name {
			what += " (node " + e.Names[i] + ")"
		}
		if of[e.Clusters[i]] == nil {
			order = append(order, e.Clusters[i])
		}
		of[e.Clusters[i]] = append(of[e.Clusters[i]], what)
	}
	for i, c := range order {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s in NATS cluster %s", strings.Join(of[c], ", "), c)
		if c == legacyClusterName {
			b.WriteString(" (a node of an older fpdb version: stop every node, then start them on this one)")
		}
	}
	b.WriteString(". A cluster's name is made from its members' names: every node of a cluster must be given the same members " +
		"(its own name and its peers'). A peer of another cluster among the peers, or a member list that differs from the others', " +
		"makes this; the nodes form no route rather than merge two clusters")
	return b.String()
}

// Unwrap returns ErrInvalidOptions.
func (e *ForeignPeerError) Unwrap() error { return ErrInvalidOptions }

// foreignPeers returns the *ForeignPeerError of the probes that found a
// server of another NATS cluster than the node's, or nil.
func (n *Node) foreignPeers(probes []routeProbe) error {
	e := &ForeignPeerError{Node: n.opts.Name, Cluster: n.clusterName, Members: memberNames(&n.opts)}
	for _, pr := range probes {
		if pr.err == nil && pr.cluster != "" && pr.cluster != n.clusterName {
			e.Peers = append(e.Peers, pr.peer)
			e.Clusters = append(e.Clusters, pr.cluster)
			e.Names = append(e.Names, pr.name)
		}
	}
	if len(e.Peers) == 0 {
		return nil
	}
	return e
}

// unreached describes the probes of the peers the node has no route
// with, for the error of a cluster that did not form: why each could not
// be reached, or what answered there.
func unreached(probes []routeProbe) string {
	var parts []string
	for _, pr := range probes {
		what := pr.peer.Name + "@" + pr.peer.Addr
		switch {
		case pr.err != nil:
			what += " (" + pr.err.Error() + ")"
		case pr.name != "" && pr.name != pr.peer.Name:
			what += fmt.Sprintf(" (the node there is %s, not %s)", pr.name, pr.peer.Name)
		default:
			what += " (its route port answers, but no route formed with it)"
		}
		parts = append(parts, what)
	}
	return strings.Join(parts, ", ")
}
