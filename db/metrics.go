package db

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fpdb/fpdb/index"
)

// Metrics is a snapshot of a DB's activity since Open and of its store, for
// a server to export (Prometheus counters and histograms map onto it one to
// one). Counters only grow.
type Metrics struct {
	// Queries are the queries answered, by the plan that ran: "probe"
	// (exact), "approx" (a probe with a count filter above the exact one)
	// and "scan", in that order.
	Queries []PlanMetrics
	// PostingCacheHits and PostingCacheMisses count the posting lists
	// probes found in the in-memory cache and those read from the store.
	PostingCacheHits, PostingCacheMisses int64
	// Added and Deleted count documents stored and removed (a replace is
	// both); Writes counts the atomic batches that did it.
	Added, Deleted, Writes int64
	// Flushes counts the writes of deferred postings (bulk loads).
	Flushes int64
	// Store describes the Pebble store; zero after Close.
	Store StoreMetrics
}

// PlanMetrics count the queries of one plan and their latency.
type PlanMetrics struct {
	Plan  string
	Count int64
	// Total is the sum of the latencies.
	Total time.Duration
	// Buckets are cumulative: Buckets[i] queries took at most
	// LatencyBuckets()[i]; Count took at most +Inf.
	Buckets []int64
}

// LatencyBuckets returns the upper bounds of PlanMetrics.Buckets, from 10 µs
// to 3 s.
func LatencyBuckets() []time.Duration { return slices.Clone(latencyBuckets[:]) }

var latencyBuckets = [...]time.Duration{
	10 * time.Microsecond, 30 * time.Microsecond, 100 * time.Microsecond, 300 * time.Microsecond,
	time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond,
	100 * time.Millisecond, 300 * time.Millisecond, time.Second, 3 * time.Second,
}

// StoreMetrics are figures of the Pebble store.
type StoreMetrics struct {
	// DiskBytes is the size of the store's files.
	DiskBytes uint64
	// MemTableBytes is the memory of the memtables.
	MemTableBytes uint64
	// Compactions counts compactions since Open; CompactionDebt estimates
	// the bytes compactions still have to rewrite.
	Compactions    int64
	CompactionDebt uint64
	// ReadAmp is the number of sorted runs a point read may consult.
	ReadAmp int
	// BlockCacheHits and BlockCacheMisses count reads of table blocks.
	BlockCacheHits, BlockCacheMisses int64
	// WALBytes counts bytes written to the write-ahead log.
	WALBytes uint64
}

// plan labels of Metrics.Queries, by index.
var planLabels = [...]string{"probe", "approx", "scan"}

// metrics are the counters behind Metrics.
type metrics struct {
	queries                         [len(planLabels)]planCounters
	cacheHits, cacheMisses          atomic.Int64
	added, deleted, writes, flushes atomic.Int64
}

type planCounters struct {
	count, total atomic.Int64
	buckets      [len(latencyBuckets)]atomic.Int64
}

// query records one query.
func (m *metrics) query(st *index.Stats) {
	i := 0
	switch {
	case st.Plan.Kind == index.Scan:
		i = 2
	case st.Recall < 1:
		i = 1
	}
	c := &m.queries[i]
	c.count.Add(1)
	c.total.Add(int64(st.Elapsed))
	for b, le := range latencyBuckets {
		if st.Elapsed <= le {
			c.buckets[b].Add(1)
		}
	}
	m.cacheHits.Add(int64(st.Probes - st.Reads))
	m.cacheMisses.Add(int64(st.Reads))
}

// Metrics returns the counters of d and the figures of its store.
func (d *DB) Metrics() Metrics {
	m := &d.metrics
	out := Metrics{
		PostingCacheHits: m.cacheHits.Load(), PostingCacheMisses: m.cacheMisses.Load(),
		Added: m.added.Load(), Deleted: m.deleted.Load(), Writes: m.writes.Load(), Flushes: m.flushes.Load(),
	}
	for i, label := range planLabels {
		c := &m.queries[i]
		pm := PlanMetrics{Plan: label, Count: c.count.Load(), Total: time.Duration(c.total.Load()), Buckets: make([]int64, len(latencyBuckets))}
		for b := range pm.Buckets {
			pm.Buckets[b] = c.buckets[b].Load()
		}
		out.Queries = append(out.Queries, pm)
	}
	if d.enter(context.Background()) != nil {
		return out
	}
	defer d.leave()
	pm := d.pdb.Metrics()
	out.Store = StoreMetrics{
		DiskBytes: pm.DiskSpaceUsage(), MemTableBytes: pm.MemTable.Size,
		Compactions: pm.Compact.Count, CompactionDebt: pm.Compact.EstimatedDebt, ReadAmp: pm.ReadAmp(),
		BlockCacheHits: pm.BlockCache.Hits, BlockCacheMisses: pm.BlockCache.Misses, WALBytes: pm.WAL.BytesWritten,
	}
	return out
}
