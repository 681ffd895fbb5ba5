package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/promtest"
)

// TestMetrics scrapes GET /metrics of each node of a cluster after adds
// and queries: every node reports each shard replica it holds (its
// applied sequence, equal to the log's last once caught up, and its
// database's document count), the documents of one replica of every shard
// add up to those stored, and the requests a node answered are counted by
// route.
func TestMetrics(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, 4, 2, nil)
	nodes := httpNodes(t, tc, nil, "")
	rng := rand.New(rand.NewPCG(11, 12))
	var ins []db.Input
	for i := range 50 {
		ins = append(ins, db.Input{ID: fmt.Sprintf("m-%02d", i), Fingerprint: randomFP(rng, 512)})
	}
	res, err := tc.nodes[0].Router().Add(ctx, ins, AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seq := res[0].Seq
	for range 3 {
		if _, err := nodes[1].Query(ctx, api.QueryRequest{Text: riverText}); err != nil {
			t.Fatal(err)
		}
	}
	// Every replica applies the adds.
	deadline := time.Now().Add(20 * time.Second)
	for _, nd := range tc.nodes {
		for s := range 4 {
			for {
				st, ok := nd.Replica(s)
				if !ok || st.Applied >= seq {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s shard %d: applied %d, not %d", nd.Name(), s, st.Applied, seq)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	// The router's counters of writes not sent and of unknown outcomes
	// (their events are tested in outcome_test.go), each its own metric.
	tc.nodes[0].Router().stats.withdrawn.Add(3)
	tc.nodes[0].Router().stats.unknown.Add(2)
	docs := map[string]float64{} // by shard, from the first node holding it
	for i, nd := range tc.nodes {
		fams := promtest.Scrape(t, nodes[i].URL())
		last := value(t, fams, "fpdb_cluster_log_last_sequence")
		if last < float64(seq) {
			t.Fatalf("node %d: log last sequence %v, below %d", i, last, seq)
		}
		held := 0
		for s := range 4 {
			if _, ok := nd.Replica(s); !ok {
				continue
			}
			held++
			shard := strconv.Itoa(s)
			if applied := value(t, fams, "fpdb_cluster_replica_applied_sequence", "shard", shard); applied < float64(seq) || applied > last {
				t.Fatalf("node %d shard %d: applied %v, want from %d to the log's last %v", i, s, applied, seq, last)
			}
			if f := value(t, fams, "fpdb_cluster_replica_failed", "shard", shard); f != 0 {
				t.Fatalf("node %d shard %d: failed %v", i, s, f)
			}
			n := value(t, fams, "fpdb_documents", "shard", shard)
			if _, seen := docs[shard]; !seen {
				docs[shard] = n
			} else if docs[shard] != n {
				t.Fatalf("shard %d: replicas hold %v and %v documents", s, docs[shard], n)
			}
		}
		if held == 0 {
			t.Fatalf("node %d holds no replica", i)
		}
		if i == 1 {
			if n := value(t, fams, "fpdb_http_requests_total", "route", "/v1/query", "method", "POST", "status", "200"); n != 3 {
				t.Fatalf("node 2 counted %v queries, want 3", n)
			}
			if n := value(t, fams, "fpdb_cluster_shard_query_requests_total"); n < 3 {
				t.Fatalf("node 2 sent %v shard query requests", n)
			}
		}
		if i == 0 {
			if n := value(t, fams, "fpdb_cluster_log_appended_documents_total"); n != 50 {
				t.Fatalf("node 1 appended %v documents, want 50", n)
			}
			for name, want := range map[string]float64{"fpdb_cluster_adds_withdrawn_total": 3, "fpdb_cluster_log_outcomes_unknown_total": 2} {
				if n := value(t, fams, name); n != want {
					t.Fatalf("node 1: %s = %v, want %v", name, n, want)
				}
			}
		}
	}
	total := 0.0
	for _, n := range docs {
		total += n
	}
	if len(docs) != 4 || total != 50 {
		t.Fatalf("documents by shard %v, want 4 shards holding 50", docs)
	}
}

// value returns the value of the counter or gauge of family name with the
// labels (name, value pairs); the test fails when there is none.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := promtest.Sample(fams, name, labels...)
	if m == nil {
		t.Fatalf("no metric %s %v", name, labels)
	}
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}
