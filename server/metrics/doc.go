// Package metrics exports fpdb's figures in Prometheus' format: a
// database's counters and store statistics (DB, read at each scrape) and
// the HTTP requests a server answers (HTTP). The single-node server and a
// cluster node serve them at GET /metrics, each from a registry of its
// own.
//
// # Basics
//
//	h := metrics.NewHTTP()
//	page, err := metrics.NewHandler(h, metrics.DBCollector(d))
//	// httpapi.Options{Observe: h.Observe}; serve page at GET /metrics
//
// # Caveats
//
// A DB's metrics carry the label values the caller gives (a cluster node
// labels each shard's by "shard"); metrics of the same name must have the
// same labels in one handler.
package metrics
