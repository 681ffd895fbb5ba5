package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	mapBucket = "FPDB_MAP"
	mapKey    = "map"
	mapFormat = 1
)

// ShardMap says which nodes hold which shard, and the shards' database
// parameters. It is written once, by compare-and-swap, by the first node
// to start, and changed only by compare-and-swap.
type ShardMap struct {
	// Format is the map's format version.
	Format int `json:"format"`
	// ID names the cluster (its log): random, set at creation; every
	// replica records it and refuses to follow another cluster's log.
	ID string `json:"id"`
	// Shards is the number of virtual shards V.
	Shards int `json:"shards"`
	// Nodes are the cluster's node names, sorted.
	Nodes []string `json:"nodes"`
	// Assign lists, for each shard, the nodes holding a replica of it.
	Assign [][]string `json:"assign"`
	// Replicas is the number of replicas of each shard the cluster was
	// created with (Node.AddReplica and RemoveReplica change Assign, not
	// this); 0 in a map written before it was recorded.
	Replicas int `json:"replicas,omitempty"`
	// K, GroupWidths, ShingleWidth, Seed and NormalizeVersion are the
	// shards' creation parameters: every replica of every shard uses
	// them. A map written before NormalizeVersion was recorded has 0
	// there: each database keeps the version it was created with, the
	// newest for a new one.
	K                int    `json:"k"`
	GroupWidths      []int  `json:"group_widths"`
	ShingleWidth     int    `json:"shingle_width"`
	Seed             uint64 `json:"seed"`
	NormalizeVersion int    `json:"normalize_version,omitempty"`
	// Revision is the map's revision in the bucket (not stored).
	Revision uint64 `json:"-"`
}

// newShardMap assigns shard s to nodes (s+i) mod N, i < replicas, over the
// sorted node names.
func newShardMap(o *Options) *ShardMap {
	names := []string{o.Name}
	for _, p := range o.Peers {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	var id [16]byte
	rand.Read(id[:])
	m := &ShardMap{Format: mapFormat, ID: hex.EncodeToString(id[:]), Shards: o.Shards, Nodes: names, Assign: make([][]string, o.Shards),
		Replicas: o.Replicas}
	for s := range m.Assign {
		for i := 0; i < o.Replicas; i++ {
			m.Assign[s] = append(m.Assign[s], names[(s+i)%len(names)])
		}
	}
	dbo := creationOptions(o)
	m.K, m.GroupWidths, m.ShingleWidth, m.Seed = dbo.K, dbo.GroupWidths, dbo.ShingleWidth, dbo.Seed
	m.NormalizeVersion = dbo.NormalizeVersion
	return m
}

// creationOptions returns the shards' creation parameters o asks for,
// every parameter it leaves zero at its default.
func creationOptions(o *Options) *db.Options {
	dbo := o.DB.Clone()
	if len(dbo.GroupWidths) == 0 && o.GroupWidth > 0 {
		k := dbo.K
		if k == 0 {
			k = db.DefaultK
		}
		dbo.GroupWidths = db.EqualWidths(k, o.GroupWidth)
	}
	return dbo.EnsureDefaults()
}

// ParamsError is the error of Start when a creation parameter set in the
// node's Options (Shards, Replicas, a DB field, GroupWidth) differs from
// the cluster's, recorded in its shard map when it was created: the node
// would otherwise serve the cluster's without a word.
// errors.Is(err, db.ErrParamsMismatch) holds.
type ParamsError struct {
	// Param names the parameter, as the Options field that sets it: Shards,
	// Replicas, K, GroupWidths, ShingleWidth, Seed or NormalizeVersion.
	Param string
	// Cluster is the cluster's value, Given the one asked for (decimal;
	// GroupWidths as fmt prints a slice).
	Cluster, Given string
}

// Error names the parameter and both values.
func (e *ParamsError) Error() string {
	return fmt.Sprintf("fpdb cluster: creation parameter %s is %s in the cluster, but %s was asked for", e.Param, e.Cluster, e.Given)
}

// Unwrap returns db.ErrParamsMismatch.
func (e *ParamsError) Unwrap() error { return db.ErrParamsMismatch }

// checkAsked compares the creation parameters set in o, the node's
// options as given (a zero field asks for nothing), with the map's: the
// first that differs is a *ParamsError.
func (m *ShardMap) checkAsked(o *Options) error {
	mismatch := func(param string, cluster, given any) error {
		return &ParamsError{Param: param, Cluster: fmt.Sprint(cluster), Given: fmt.Sprint(given)}
	}
	if o.Shards != 0 && o.Shards != m.Shards {
		return mismatch("Shards", m.Shards, o.Shards)
	}
	if r := m.replicas(); o.Replicas != 0 && r != 0 && o.Replicas != r {
		return mismatch("Replicas", r, o.Replicas)
	}
	asked := o.DB
	if asked == nil {
		asked = &db.Options{}
	}
	widths := asked.GroupWidths
	if len(widths) == 0 && o.GroupWidth > 0 {
		widths = db.EqualWidths(m.K, o.GroupWidth)
	}
	switch {
	case asked.K != 0 && asked.K != m.K:
		return mismatch("K", m.K, asked.K)
	case len(widths) != 0 && !slices.Equal(widths, m.GroupWidths):
		return mismatch("GroupWidths", m.GroupWidths, widths)
	case asked.ShingleWidth != 0 && asked.ShingleWidth != m.ShingleWidth:
		return mismatch("ShingleWidth", m.ShingleWidth, asked.ShingleWidth)
	case asked.Seed != 0 && asked.Seed != m.Seed:
		return mismatch("Seed", m.Seed, asked.Seed)
	case asked.NormalizeVersion != 0 && m.NormalizeVersion != 0 && asked.NormalizeVersion != m.NormalizeVersion:
		return mismatch("NormalizeVersion", m.NormalizeVersion, asked.NormalizeVersion)
	}
	return nil
}

// replicas returns the number of replicas of each shard the cluster was
// created with: recorded, or for a map that does not record it, the
// shards' number when they all have as many (else 0: unknown).
func (m *ShardMap) replicas() int {
	if m.Replicas != 0 {
		return m.Replicas
	}
	r := 0
	for s, nodes := range m.Assign {
		if s > 0 && len(nodes) != r {
			return 0
		}
		r = len(nodes)
	}
	return r
}

// shardsOf returns the shards node holds a replica of.
func (m *ShardMap) shardsOf(node string) []int {
	var out []int
	for s, nodes := range m.Assign {
		if slices.Contains(nodes, node) {
			out = append(out, s)
		}
	}
	return out
}

// dbOptions returns the options a shard's database is opened with.
func (m *ShardMap) dbOptions() *db.Options {
	o := db.DefaultOptions()
	o.K, o.GroupWidths, o.ShingleWidth, o.Seed = m.K, slices.Clone(m.GroupWidths), m.ShingleWidth, m.Seed
	o.NormalizeVersion = m.NormalizeVersion
	o.AuditLog = false
	return o
}

func (m *ShardMap) validate() error {
	if m.Format != mapFormat {
		return fmt.Errorf("fpdb cluster: shard map format %d (this build reads %d)", m.Format, mapFormat)
	}
	if m.ID == "" {
		return fmt.Errorf("fpdb cluster: shard map without a cluster id")
	}
	if m.Shards < 1 || len(m.Assign) != m.Shards {
		return fmt.Errorf("fpdb cluster: shard map of %d shards lists %d", m.Shards, len(m.Assign))
	}
	for s, nodes := range m.Assign {
		if len(nodes) == 0 {
			return fmt.Errorf("fpdb cluster: shard map: shard %d has no replica", s)
		}
		for _, n := range nodes {
			if !slices.Contains(m.Nodes, n) {
				return fmt.Errorf("fpdb cluster: shard map: shard %d on %q, not a node of the cluster", s, n)
			}
		}
	}
	return nil
}

// loadOrCreateMap creates the map from o if the bucket has none
// (compare-and-swap: of nodes starting at once, one map wins) and returns
// the stored one.
func loadOrCreateMap(ctx context.Context, kv jetstream.KeyValue, o *Options) (*ShardMap, error) {
	b, err := json.Marshal(newShardMap(o))
	if err != nil {
		return nil, err
	}
	if _, err := kv.Create(ctx, mapKey, b); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, fmt.Errorf("fpdb cluster: create shard map: %w", err)
	}
	for {
		// The map exists; a read served by a bucket replica that has not
		// received it yet finds none, and is tried again.
		m, err := readMap(ctx, kv)
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return m, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func readMap(ctx context.Context, kv jetstream.KeyValue) (*ShardMap, error) {
	e, err := kv.Get(ctx, mapKey)
	if err != nil {
		return nil, fmt.Errorf("fpdb cluster: read shard map: %w", err)
	}
	m := &ShardMap{}
	if err := json.Unmarshal(e.Value(), m); err != nil {
		return nil, fmt.Errorf("fpdb cluster: shard map: %w", err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	m.Revision = e.Revision()
	return m, nil
}

// UpdateMap changes the shard map by compare-and-swap: change is applied
// to the map as read, and the result stored only if no other change came
// between; on a conflict it is read again and change applied again.
func UpdateMap(ctx context.Context, kv jetstream.KeyValue, change func(*ShardMap) error) (*ShardMap, error) {
	for {
		m, err := readMap(ctx, kv)
		if err != nil {
			return nil, err
		}
		if err := change(m); err != nil {
			return nil, err
		}
		if err := m.validate(); err != nil {
			return nil, err
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		rev, err := kv.Update(ctx, mapKey, b, m.Revision)
		if err == nil {
			m.Revision = rev
			return m, nil
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || !wrongLastSeq(apiErr.ErrorCode) {
			return nil, fmt.Errorf("fpdb cluster: update shard map: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

func wrongLastSeq(c jetstream.ErrorCode) bool {
	return c == jetstream.JSErrCodeStreamWrongLastSequence || c == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
