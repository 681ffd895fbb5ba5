package server

import (
	"net/http"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/httpapi"
	"github.com/fpdb/fpdb/server/metrics"
)

// metricSet is the server's Prometheus metrics, in a registry of its own:
// the requests it served, the database's counters (read from db.Metrics
// at each scrape) and the Go runtime's and the process's figures.
type metricSet struct {
	http    *metrics.HTTP
	handler http.Handler
}

// newMetrics returns the metrics of a server of d.
func newMetrics(d *db.DB) (*metricSet, error) {
	m := &metricSet{http: metrics.NewHTTP()}
	var err error
	if m.handler, err = metrics.NewHandler(m.http, metrics.DBCollector(d)); err != nil {
		return nil, err
	}
	return m, nil
}

// metricsPage is GET /metrics: the metrics in Prometheus' text format.
func (s *Server) metricsPage(w http.ResponseWriter, r *http.Request) error {
	if s.metrics == nil {
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "no metrics"}
	}
	s.metrics.handler.ServeHTTP(w, r)
	return nil
}
