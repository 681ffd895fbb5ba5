package server

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/promtest"
)

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily { return promtest.Scrape(t, url) }

func sample(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	return promtest.Sample(fams, name, labels...)
}

func TestMetricsEndpoint(t *testing.T) {
	ts, d := testServer(t, nil)
	fill(t, d, 2, 2, 3, 100)
	for range 3 {
		if st := call(t, "GET", ts.URL+"/v1/stats", "", nil, nil); st != 200 {
			t.Fatal(st)
		}
	}
	call(t, "GET", ts.URL+"/v1/documents/nope", "", nil, nil)
	for _, plan := range []string{"scan", "probe", "probe"} {
		var qr api.QueryResult
		if st := call(t, "POST", ts.URL+"/v1/query", "application/json", jsonBody(api.QueryRequest{Text: text(1000, 100), Plan: plan}), &qr); st != 200 || len(qr.Matches) == 0 {
			t.Fatalf("query: %d %+v", st, qr)
		}
	}
	fams := scrape(t, ts.URL)
	counter := func(name string, labels ...string) float64 {
		t.Helper()
		m := sample(fams, name, labels...)
		if m == nil {
			t.Fatalf("no %s%v in /metrics", name, labels)
		}
		return m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	if n := counter("fpdb_http_requests_total", "route", "/v1/stats", "method", "GET", "status", "200"); n != 3 {
		t.Errorf("stats requests: %v, want 3", n)
	}
	if n := counter("fpdb_http_requests_total", "route", "/v1/documents/{id...}", "method", "GET", "status", "404"); n != 1 {
		t.Errorf("404 requests: %v, want 1", n)
	}
	if h := sample(fams, "fpdb_http_request_duration_seconds", "route", "/v1/query").GetHistogram(); h.GetSampleCount() != 3 || h.GetSampleSum() <= 0 {
		t.Errorf("query latency histogram %v", h)
	}
	m := d.Metrics()
	for _, q := range m.Queries {
		if n := counter("fpdb_queries_total", "plan", q.Plan); n != float64(q.Count) {
			t.Errorf("queries of plan %s: %v, db %d", q.Plan, n, q.Count)
		}
		h := sample(fams, "fpdb_query_duration_seconds", "plan", q.Plan).GetHistogram()
		bs := h.GetBucket() // the text format adds +Inf
		if h.GetSampleCount() != uint64(q.Count) || len(bs) != len(db.LatencyBuckets())+1 {
			t.Fatalf("query latency of plan %s: %v", q.Plan, h)
		}
		for i, le := range db.LatencyBuckets() {
			if bs[i].GetUpperBound() != le.Seconds() || bs[i].GetCumulativeCount() != uint64(q.Buckets[i]) {
				t.Errorf("plan %s bucket %v: %v, db %d", q.Plan, le, bs[i], q.Buckets[i])
			}
		}
	}
	if n := counter("fpdb_queries_total", "plan", "scan"); n != 1 {
		t.Errorf("scan queries: %v, want 1", n)
	}
	if n := counter("fpdb_posting_cache_hits_total") + counter("fpdb_posting_cache_misses_total"); n == 0 {
		t.Error("no posting lists counted")
	}
	if n := counter("fpdb_documents"); n != float64(d.Len()) {
		t.Errorf("documents %v, want %d", n, d.Len())
	}
	if n := counter("fpdb_documents_added_total"); n != float64(d.Len()) {
		t.Errorf("added %v, want %d", n, d.Len())
	}
	if counter("fpdb_store_disk_bytes") <= 0 || counter("fpdb_store_wal_bytes_written_total") <= 0 {
		t.Error("no store figures")
	}
	if fams["go_goroutines"] == nil {
		t.Error("no Go runtime metrics")
	}
	// Another server has its own registry: its counts start at zero.
	d2, err := db.Open(t.TempDir(), &db.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	other := scrape(t, serveDB(t, d2, nil).URL)
	if sample(other, "fpdb_http_requests_total", "route", "/v1/stats") != nil {
		t.Error("a second server counts the first one's requests")
	}
}
