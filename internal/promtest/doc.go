// Package promtest reads a server's Prometheus metrics in tests: Scrape
// GETs /metrics and parses the text format, Sample picks a metric by its
// labels.
//
// # Basics
//
//	fams := promtest.Scrape(t, srv.URL)
//	m := promtest.Sample(fams, "fpdb_http_requests_total", "route", "/v1/query")
//
// # Caveats
//
// For tests only: a failed scrape fails the test.
package promtest
