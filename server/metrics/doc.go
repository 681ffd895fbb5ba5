// Package metrics exports fpdb's figures in Prometheus' format: a
// database's counters and store statistics (DB, read at each scrape) and
// the HTTP requests a server answers (HTTP). The single-node server and a
// cluster node serve them at GET /metrics, each from a registry of its
// own.
//
// # Basics
//
//	h := metrics.NewHTTP()
//	reg := prometheus.NewRegistry()
//	err := metrics.Register(reg, h, metrics.DBCollector(d))
//	// httpapi.Options{Observe: h.Observe}; serve metrics.Handler(reg)
//
// # Caveats
//
// A DB's metrics carry the label values the caller gives (a cluster node
// labels each shard's by "shard"); metrics of the same name must have the
// same labels in one registry.
package metrics
