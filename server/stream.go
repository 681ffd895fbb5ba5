package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/fpdb/fpdb/server/httpapi"
)

// pairs is GET /v1/pairs?threshold=R: every pair of stored near
// duplicates, one api.Pair per line, as they are found.
func (s *Server) pairs(w http.ResponseWriter, r *http.Request) error {
	th, err := httpapi.ReadPairs(r, nil)
	if err != nil {
		return err
	}
	ctx := r.Context()
	out := httpapi.NewNDJSON(w)
	// Detached: the run holds its own copy of the fingerprints, so that
	// closing the database need not wait for a slow client.
	_, err = s.d.Pairs(ctx, db.PairsOptions{Threshold: th, Detached: func() {},
		Progress: func(int, int) { _ = out.Tick() }},
		func(pr db.Pair) error { return out.Send(ctx, apiconv.Pair(pr)) })
	return out.End(ctx, err)
}

// clusters is GET /v1/clusters?threshold=R[&centers=true][&keep=P]
// [&max_size=N]: the clusters of near duplicates, largest first, one
// api.Cluster per line, as "fpdb clusters --json" prints them.
func (s *Server) clusters(w http.ResponseWriter, r *http.Request) error {
	cp, err := httpapi.ReadClusters(r, nil)
	if err != nil {
		return err
	}
	o := db.ClusterOptions{PairsOptions: db.PairsOptions{Threshold: cp.Threshold, Detached: func() {}}, MaxSize: cp.MaxSize,
		Keep: cp.Keep}
	if cp.Centers {
		o.Mode = db.ClusterCenters
	}
	ctx := r.Context()
	cs, _, err := s.d.Clusters(ctx, o)
	if err != nil {
		return err
	}
	out := httpapi.NewNDJSON(w)
	for i, c := range cs {
		if err := out.Send(ctx, apiconv.Cluster(i+1, c)); err != nil {
			return out.End(ctx, err)
		}
	}
	return out.End(ctx, nil)
}

// export is GET /v1/export: the database as "fpdb export" writes it (a
// header line, the documents, the audit log), read on a snapshot.
func (s *Server) export(w http.ResponseWriter, r *http.Request) error {
	return httpapi.ServeExport(w, r, s.d.Export)
}

// log is GET /v1/log[?id=ID][&since=T][&after=SEQ][&limit=N]: the audit
// log's entries, oldest first, one per line as "fpdb log --json" prints
// them.
func (s *Server) log(w http.ResponseWriter, r *http.Request) error {
	p := httpapi.Params{Values: r.URL.Query()}
	p.Only("id", "since", "after", "limit")
	lo := db.LogOptions{ID: p.Str("id"), Limit: p.Int("limit")}
	if p.Err != nil {
		return p.Err
	}
	if a := p.Str("after"); a != "" {
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return httpapi.BadRequest("parameter after=%q is not a sequence number", a)
		}
		lo.After = n
	}
	if lo.Limit < 0 {
		return httpapi.BadRequest("parameter limit=%d must not be negative", lo.Limit)
	}
	if since := p.Str("since"); since != "" {
		t, err := time.Parse(time.RFC3339Nano, since)
		if err != nil {
			age, aerr := apiconv.ParseAge(since)
			if aerr != nil {
				return httpapi.BadRequest("parameter since=%q: want an RFC 3339 time (2026-01-02T15:04:05Z) or an age (24h, 30d)", since)
			}
			t = time.Now().Add(-age)
		}
		lo.Since = t
	}
	if !s.d.Params().AuditLog {
		return fmt.Errorf("log: %w", db.ErrNoLog)
	}
	ctx := r.Context()
	out := httpapi.NewNDJSON(w)
	err := s.d.Log(ctx, lo, func(e db.LogEntry) error { return out.Send(ctx, e) })
	return out.End(ctx, err)
}
