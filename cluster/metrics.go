package cluster

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fpdb/fpdb/server/metrics"
)

// nodeCollector reads a node's figures at each scrape: its router's
// counters, the log's last sequence, and for each shard replica the node
// holds its applied sequence, whether it failed, and its database's
// metrics (those of the single-node server, labeled by shard).
type nodeCollector struct {
	n                                              *Node
	db                                             *metrics.DB
	applied, failed, logLast                       *prometheus.Desc
	batches, docs, conflicts, retries, shardQuerys *prometheus.Desc
	withdrawn, unknown                             *prometheus.Desc
}

func newNodeCollector(n *Node) *nodeCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("fpdb_cluster_"+name, help, labels, nil)
	}
	return &nodeCollector{n: n, db: metrics.NewDB("shard"),
		applied:     desc("replica_applied_sequence", "The last log sequence the node's replica of the shard applied.", "shard"),
		failed:      desc("replica_failed", "1 when the node's replica of the shard stopped on an error.", "shard"),
		logLast:     desc("log_last_sequence", "The write log's last sequence (lag of a replica: this less its applied sequence)."),
		batches:     desc("log_appends_total", "Log messages this node's router appended."),
		docs:        desc("log_appended_documents_total", "Documents those messages carried."),
		conflicts:   desc("log_conflicts_total", "Conditional appends refused because the log had moved (each checked again and retried)."),
		retries:     desc("retries_total", "Calls to the log or to shards sent again after a transient error."),
		shardQuerys: desc("shard_query_requests_total", "Query requests this node's router sent to shard replicas."),
		withdrawn:   desc("adds_withdrawn_total", "Documents of adds answered without being sent to the log (their time ran out, or the node closed): not stored (HTTP 408, or 503)."),
		unknown:     desc("log_outcomes_unknown_total", "Log messages whose outcome this node could not learn (no answer within the commit's time, or the log unreadable after a conflict): their writes may or may not be stored."),
	}
}

// Describe sends the descriptions of the metrics.
func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.applied, c.failed, c.logLast, c.batches, c.docs, c.conflicts, c.retries, c.shardQuerys, c.withdrawn, c.unknown} {
		ch <- d
	}
	c.db.Describe(ch)
}

// metricsLogWait bounds a scrape's read of the log's last sequence.
const metricsLogWait = 2 * time.Second

// Collect reads the node's figures.
func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	send := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		mt, err := prometheus.NewConstMetric(d, t, v, labels...)
		if err != nil {
			mt = prometheus.NewInvalidMetric(d, err)
		}
		ch <- mt
	}
	rs := c.n.r.Stats()
	counter := prometheus.CounterValue
	send(c.batches, counter, float64(rs.Batches))
	send(c.docs, counter, float64(rs.Docs))
	send(c.conflicts, counter, float64(rs.Conflicts))
	send(c.retries, counter, float64(rs.Retries))
	send(c.shardQuerys, counter, float64(rs.QueryRequests))
	send(c.withdrawn, counter, float64(rs.Withdrawn))
	send(c.unknown, counter, float64(rs.Unknown))
	ctx, cancel := context.WithTimeout(context.Background(), metricsLogWait)
	last, err := c.n.r.LastSeq(ctx)
	cancel()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.logLast, err)
	} else {
		send(c.logLast, prometheus.GaugeValue, float64(last))
	}
	c.n.mu.Lock()
	reps := make([]*replica, 0, len(c.n.replicas))
	for _, r := range c.n.replicas {
		reps = append(reps, r)
	}
	c.n.mu.Unlock()
	for _, r := range reps {
		st := r.state()
		shard := strconv.Itoa(st.Shard)
		failed := 0.0
		if st.Err != nil {
			failed = 1
		}
		send(c.applied, prometheus.GaugeValue, float64(st.Applied), shard)
		send(c.failed, prometheus.GaugeValue, failed, shard)
		c.db.Collect(ch, r.d, shard)
	}
}

// metricsHandler returns GET /metrics of a node's HTTP API (its requests
// counted by h), or an error when the metrics cannot be registered.
func (n *Node) metricsHandler(h *metrics.HTTP) (http.Handler, error) {
	return metrics.NewHandler(h, newNodeCollector(n))
}
