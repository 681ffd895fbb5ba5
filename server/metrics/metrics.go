package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fpdb/fpdb/db"
)

// HTTP counts the requests a server answers, by route.
type HTTP struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewHTTP returns the request metrics of a server (to serve with
// NewHandler).
func NewHTTP() *HTTP {
	return &HTTP{
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
}

// Observe counts a request answered (httpapi.Options.Observe): its
// route's pattern, method, status (0: nothing written, which net/http
// answers 200) and time.
func (h *HTTP) Observe(route, method string, status int, took time.Duration) {
	if h == nil {
		return
	}
	if status == 0 {
		status = http.StatusOK
	}
	h.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	h.latency.WithLabelValues(route).Observe(took.Seconds())
}

// Describe sends the descriptions of the request metrics.
func (h *HTTP) Describe(ch chan<- *prometheus.Desc) {
	h.requests.Describe(ch)
	h.latency.Describe(ch)
}

// Collect sends the request metrics.
func (h *HTTP) Collect(ch chan<- prometheus.Metric) {
	h.requests.Collect(ch)
	h.latency.Collect(ch)
}

// NewHandler returns a handler of GET /metrics that serves the metrics of
// cs, and the Go runtime's and the process's, in Prometheus' text format,
// from a registry of its own.
func NewHandler(cs ...prometheus.Collector) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}), nil
}

// DB describes a database's metrics, with the variable labels it was made
// with (NewDB); Collect reads one database's.
type DB struct {
	// queries and queryLatency are by plan.
	queries, queryLatency                              *prometheus.Desc
	cacheHits, cacheMisses                             *prometheus.Desc
	added, deleted, writes, flushes                    *prometheus.Desc
	docs, deferred                                     *prometheus.Desc
	diskBytes, memtableBytes, compactions, compactDebt *prometheus.Desc
	readAmp, blockHits, blockMisses, walBytes          *prometheus.Desc
}

// NewDB returns the descriptions of a database's metrics, each with the
// variable labels named (none for a server's one database).
func NewDB(labels ...string) *DB {
	desc := func(name, help string, more ...string) *prometheus.Desc {
		return prometheus.NewDesc("fpdb_"+name, help, append(append([]string{}, labels...), more...), nil)
	}
	return &DB{
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
func (c *DB) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queries, c.queryLatency, c.cacheHits, c.cacheMisses, c.added, c.deleted,
		c.writes, c.flushes, c.docs, c.deferred, c.diskBytes, c.memtableBytes, c.compactions, c.compactDebt,
		c.readAmp, c.blockHits, c.blockMisses, c.walBytes} {
		ch <- d
	}
}

// Collect sends the metrics of d, with the values of NewDB's labels.
func (c *DB) Collect(ch chan<- prometheus.Metric, d *db.DB, labelValues ...string) {
	m := d.Metrics()
	st := d.Stats()
	send := func(desc *prometheus.Desc, t prometheus.ValueType, v float64, more ...string) {
		mt, err := prometheus.NewConstMetric(desc, t, v, append(append([]string{}, labelValues...), more...)...)
		if err != nil {
			mt = prometheus.NewInvalidMetric(desc, err)
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
		h, err := prometheus.NewConstHistogram(c.queryLatency, uint64(q.Count), q.Total.Seconds(), buckets, append(append([]string{}, labelValues...), q.Plan)...)
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

// DBCollector returns a collector of d's metrics (without labels).
func DBCollector(d *db.DB) prometheus.Collector { return dbCollector{desc: NewDB(), d: d} }

type dbCollector struct {
	desc *DB
	d    *db.DB
}

func (c dbCollector) Describe(ch chan<- *prometheus.Desc) { c.desc.Describe(ch) }
func (c dbCollector) Collect(ch chan<- prometheus.Metric) { c.desc.Collect(ch, c.d) }
