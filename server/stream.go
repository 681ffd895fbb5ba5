package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
)

// flushEvery is how often a stream sends what it has buffered.
const flushEvery = 100 * time.Millisecond

// ndjson writes a streamed response of JSON lines: buffered, sent at
// least every flushEvery while lines come. Nothing is sent before the
// first buffer is flushed, so an error before then is still answered with
// its status; a stream that fails later is cut off (see end).
type ndjson struct {
	w       http.ResponseWriter
	sink    *sink
	bw      *bufio.Writer
	enc     *json.Encoder
	flushed time.Time
}

// sink is the response body under a stream's buffer; it notes whether
// anything was written.
type sink struct {
	w     http.ResponseWriter
	wrote bool
}

func (s *sink) Write(p []byte) (int, error) {
	s.wrote = true
	return s.w.Write(p)
}

// newNDJSON begins a stream on w.
func newNDJSON(w http.ResponseWriter) *ndjson {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	sk := &sink{w: w}
	s := &ndjson{w: w, sink: sk, bw: bufio.NewWriterSize(sk, 32<<10), flushed: time.Now()}
	s.enc = json.NewEncoder(s.bw)
	s.enc.SetEscapeHTML(false)
	return s
}

// send writes v as one line, unless ctx is done (the client went away, or
// the stream's time is up).
func (s *ndjson) send(ctx context.Context, v any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enc.Encode(v); err != nil {
		return fmt.Errorf("write the stream: %w", err)
	}
	return s.tick()
}

// Write writes p (whole lines, as db.Export writes them) to the stream.
func (s *ndjson) Write(p []byte) (int, error) {
	n, err := s.bw.Write(p)
	if err == nil {
		err = s.tick()
	}
	return n, err
}

// tick flushes when the last flush is flushEvery old.
func (s *ndjson) tick() error {
	if time.Since(s.flushed) < flushEvery || s.bw.Buffered() == 0 {
		return nil
	}
	return s.flush()
}

// flush sends what is buffered.
func (s *ndjson) flush() error {
	if err := s.bw.Flush(); err != nil {
		return fmt.Errorf("write the stream: %w", err)
	}
	s.flushed = time.Now()
	if err := http.NewResponseController(s.w).Flush(); err != nil {
		return fmt.Errorf("write the stream: %w", err)
	}
	return nil
}

// end ends the stream with the run's error. Without error it sends the
// rest (an empty stream is a 200 with an empty body). With an error before
// anything was sent, it returns the error, to be answered as any other;
// after, it cuts the connection off, so that the client sees a broken
// response rather than a short list that looks complete, and returns the
// error for the log.
func (s *ndjson) end(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		// Say why the run stopped: the client left, or the time is up.
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	if err == nil {
		if !s.sink.wrote && s.bw.Buffered() == 0 {
			s.w.WriteHeader(http.StatusOK)
		}
		return s.flush()
	}
	if !s.sink.wrote {
		return err
	}
	if conn, _, herr := http.NewResponseController(s.w).Hijack(); herr == nil {
		_ = conn.Close()
	}
	return err
}

// pairs is GET /v1/pairs?threshold=R: every pair of stored near
// duplicates, one api.Pair per line, as they are found.
func (s *Server) pairs(w http.ResponseWriter, r *http.Request) error {
	p := params{v: r.URL.Query()}
	p.only("threshold")
	if p.str("threshold") == "" && p.err == nil {
		return badRequest("parameter threshold is required: the least resemblance, in (0, 1]")
	}
	th := p.float("threshold")
	if p.err != nil {
		return p.err
	}
	ctx := r.Context()
	out := newNDJSON(w)
	// Detached: the run holds its own copy of the fingerprints, so that
	// closing the database need not wait for a slow client.
	_, err := s.d.Pairs(ctx, db.PairsOptions{Threshold: th, Detached: func() {},
		Progress: func(int, int) { _ = out.tick() }},
		func(pr db.Pair) error { return out.send(ctx, apiconv.Pair(pr)) })
	return out.end(ctx, err)
}

// clusters is GET /v1/clusters?threshold=R[&centers=true][&keep=P]
// [&max_size=N]: the clusters of near duplicates, largest first, one
// api.Cluster per line, as "fpdb clusters --json" prints them.
func (s *Server) clusters(w http.ResponseWriter, r *http.Request) error {
	p := params{v: r.URL.Query()}
	p.only("threshold", "centers", "keep", "max_size")
	if p.str("threshold") == "" && p.err == nil {
		return badRequest("parameter threshold is required: the least resemblance, in (0, 1]")
	}
	o := db.ClusterOptions{PairsOptions: db.PairsOptions{Threshold: p.float("threshold"), Detached: func() {}}, MaxSize: p.int("max_size")}
	centers := p.bool("centers")
	if p.err != nil {
		return p.err
	}
	keep, ok := apiconv.Keep(p.str("keep"))
	switch {
	case !ok:
		return badRequest("parameter keep=%q: want oldest, newest, first, longest or shortest", p.str("keep"))
	case o.MaxSize < 0 || o.MaxSize == 1:
		return badRequest("parameter max_size=%d: want 0 (no limit) or at least 2", o.MaxSize)
	case o.MaxSize > 0 && !centers:
		return badRequest("parameter max_size needs centers=true (a chain of near duplicates cannot be cut)")
	}
	o.Keep = keep
	if centers {
		o.Mode = db.ClusterCenters
	}
	ctx := r.Context()
	cs, _, err := s.d.Clusters(ctx, o)
	if err != nil {
		return err
	}
	out := newNDJSON(w)
	for i, c := range cs {
		if err := out.send(ctx, apiconv.Cluster(i+1, c)); err != nil {
			return out.end(ctx, err)
		}
	}
	return out.end(ctx, nil)
}

// export is GET /v1/export: the database as "fpdb export" writes it (a
// header line, the documents, the audit log), read on a snapshot.
func (s *Server) export(w http.ResponseWriter, r *http.Request) error {
	p := params{v: r.URL.Query()}
	if p.only(); p.err != nil {
		return p.err
	}
	ctx := r.Context()
	out := newNDJSON(w)
	_, err := s.d.Export(ctx, out)
	return out.end(ctx, err)
}

// log is GET /v1/log[?id=ID][&since=T][&after=SEQ][&limit=N]: the audit
// log's entries, oldest first, one per line as "fpdb log --json" prints
// them.
func (s *Server) log(w http.ResponseWriter, r *http.Request) error {
	p := params{v: r.URL.Query()}
	p.only("id", "since", "after", "limit")
	lo := db.LogOptions{ID: p.str("id"), Limit: p.int("limit")}
	if p.err != nil {
		return p.err
	}
	if a := p.str("after"); a != "" {
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return badRequest("parameter after=%q is not a sequence number", a)
		}
		lo.After = n
	}
	if lo.Limit < 0 {
		return badRequest("parameter limit=%d must not be negative", lo.Limit)
	}
	if since := p.str("since"); since != "" {
		t, err := time.Parse(time.RFC3339Nano, since)
		if err != nil {
			age, aerr := apiconv.ParseAge(since)
			if aerr != nil {
				return badRequest("parameter since=%q: want an RFC 3339 time (2026-01-02T15:04:05Z) or an age (24h, 30d)", since)
			}
			t = time.Now().Add(-age)
		}
		lo.Since = t
	}
	if !s.d.Params().AuditLog {
		return fmt.Errorf("log: %w", db.ErrNoLog)
	}
	ctx := r.Context()
	out := newNDJSON(w)
	err := s.d.Log(ctx, lo, func(e db.LogEntry) error { return out.send(ctx, e) })
	return out.end(ctx, err)
}
