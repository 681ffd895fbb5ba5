package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/httpapi"
)

// metrics are the server's Prometheus metrics, in a registry of its own:
// the requests it served, the database's counters (read from db.Metrics
// at each scrape) and the Go runtime's and the process's figures.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	handler  http.Handler
}

// newMetrics returns the metrics of a server of d.
func newMetrics(d *db.DB) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fpdb_http_requests_total",
			Help: "HTTP requests answered, by route (the path pattern), method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fpdb_http_request_duration_seconds",
			Help: "Time to answer an HTTP request (a stream: to its end), by route.",
			// 100 µs to about 30 min (streams).
			Buckets: prometheus.ExponentialBuckets(100e-6, 4, 12),
		}, []string{"route"}),
	}
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{m.requests, m.latency, newDBCollector(d),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return m, nil
}

// observe counts a request answered.
func (m *metrics) observe(route, method string, status int, took time.Duration) {
	if m == nil {
		return
	}
	if status == 0 { // nothing written: net/http answers 200
		status = http.StatusOK
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(took.Seconds())
}

// metricsPage is GET /metrics: the metrics in Prometheus' text format.
func (s *Server) metricsPage(w http.ResponseWriter, r *http.Request) error {
	if s.metrics == nil {
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "no metrics"}
	}
	s.metrics.handler.ServeHTTP(w, r)
	return nil
}

// dbCollector reads the database's figures at each scrape.
type dbCollector struct {
	d *db.DB
	// queries and queryLatency are by plan.
	queries, queryLatency                              *prometheus.Desc
	cacheHits, cacheMisses                             *prometheus.Desc
	added, deleted, writes, flushes                    *prometheus.Desc
	docs, deferred                                     *prometheus.Desc
	diskBytes, memtableBytes, compactions, compactDebt *prometheus.Desc
	readAmp, blockHits, blockMisses, walBytes          *prometheus.Desc
}

func newDBCollector(d *db.DB) *dbCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("fpdb_"+name, help, labels, nil)
	}
	return &dbCollector{d: d,
		queries:       desc("queries_total", "Queries answered, by the plan that ran (probe, approx, scan).", "plan"),
		queryLatency:  desc("query_duration_seconds", "Time to answer a query, by plan.", "plan"),
		cacheHits:     desc("posting_cache_hits_total", "Posting lists query probes found in the in-memory cache."),
		cacheMisses:   desc("posting_cache_misses_total", "Posting lists query probes read from the store."),
		added:         desc("documents_added_total", "Documents stored (a replace counts here and as deleted)."),
		deleted:       desc("documents_deleted_total", "Documents removed."),
		writes:        desc("writes_total", "Atomic write batches committed."),
		flushes:       desc("deferred_flushes_total", "Writes of deferred postings (bulk loads)."),
		docs:          desc("documents", "Documents stored."),
		deferred:      desc("deferred_postings_documents", "Documents whose postings are not written yet (bulk load)."),
		diskBytes:     desc("store_disk_bytes", "Size of the Pebble store's files."),
		memtableBytes: desc("store_memtable_bytes", "Memory of the Pebble memtables."),
		compactions:   desc("store_compactions_total", "Pebble compactions since the database was opened."),
		compactDebt:   desc("store_compaction_debt_bytes", "Bytes Pebble's compactions are estimated to still have to rewrite."),
		readAmp:       desc("store_read_amplification", "Sorted runs a point read of the store may consult."),
		blockHits:     desc("store_block_cache_hits_total", "Table blocks found in Pebble's block cache."),
		blockMisses:   desc("store_block_cache_misses_total", "Table blocks read from disk."),
		walBytes:      desc("store_wal_bytes_written_total", "Bytes written to Pebble's write-ahead log."),
	}
}

// Describe sends the descriptions of the metrics.
func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queries, c.queryLatency, c.cacheHits, c.cacheMisses, c.added, c.deleted,
		c.writes, c.flushes, c.docs, c.deferred, c.diskBytes, c.memtableBytes, c.compactions, c.compactDebt,
		c.readAmp, c.blockHits, c.blockMisses, c.walBytes} {
		ch <- d
	}
}

// Collect reads the database's metrics.
func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.d.Metrics()
	st := c.d.Stats()
	send := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		mt, err := prometheus.NewConstMetric(d, t, v, labels...)
		if err != nil {
			mt = prometheus.NewInvalidMetric(d, err)
		}
		ch <- mt
	}
	bounds := db.LatencyBuckets()
	for _, q := range m.Queries {
		send(c.queries, prometheus.CounterValue, float64(q.Count), q.Plan)
		buckets := make(map[float64]uint64, len(bounds))
		for i, le := range bounds {
			if i < len(q.Buckets) {
				buckets[le.Seconds()] = uint64(q.Buckets[i])
			}
		}
		h, err := prometheus.NewConstHistogram(c.queryLatency, uint64(q.Count), q.Total.Seconds(), buckets, q.Plan)
		if err != nil {
			h = prometheus.NewInvalidMetric(c.queryLatency, err)
		}
		ch <- h
	}
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	sm := m.Store
	for _, v := range []struct {
		d *prometheus.Desc
		t prometheus.ValueType
		v float64
	}{
		{c.cacheHits, counter, float64(m.PostingCacheHits)}, {c.cacheMisses, counter, float64(m.PostingCacheMisses)},
		{c.added, counter, float64(m.Added)}, {c.deleted, counter, float64(m.Deleted)},
		{c.writes, counter, float64(m.Writes)}, {c.flushes, counter, float64(m.Flushes)},
		{c.docs, gauge, float64(st.Docs)}, {c.deferred, gauge, float64(st.Deferred)},
		{c.diskBytes, gauge, float64(sm.DiskBytes)}, {c.memtableBytes, gauge, float64(sm.MemTableBytes)},
		{c.compactions, counter, float64(sm.Compactions)}, {c.compactDebt, gauge, float64(sm.CompactionDebt)},
		{c.readAmp, gauge, float64(sm.ReadAmp)}, {c.blockHits, counter, float64(sm.BlockCacheHits)},
		{c.blockMisses, counter, float64(sm.BlockCacheMisses)}, {c.walBytes, counter, float64(sm.WALBytes)},
	} {
		send(v.d, v.t, v.v)
	}
}
