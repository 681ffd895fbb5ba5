package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
)

// access is what a route needs of the caller's token.
type access int

const (
	public access = iota // no token needed
	read                 // a read-only or read-write token
	write                // a read-write token
)

// route is one endpoint: a method and a path pattern of net/http's
// ServeMux, the access it needs, whether it streams, and its handler. A
// handler returns an error to answer with (see writeError) or nil once it
// has written its response.
type route struct {
	method, pattern string
	access          access
	stream          bool
	// import takes a body up to Options.MaxImportBytes (an export).
	bigBody bool
	h       func(w http.ResponseWriter, r *http.Request) error
}

// routes are the server's endpoints; the OpenAPI document (openapi.json)
// must describe exactly these (TestOpenAPIMatchesRoutes).
func (s *Server) routes() []route {
	return []route{
		{method: "GET", pattern: "/healthz", access: public, h: s.healthz},
		{method: "GET", pattern: "/readyz", access: public, h: s.readyz},
		{method: "GET", pattern: "/v1/openapi.json", access: public, h: s.openapi},
		{method: "GET", pattern: "/", access: public, h: s.page}, // the review page (web.go); every other unrouted path: 404
		{method: "GET", pattern: "/web/{file}", access: public, h: s.asset},
		{method: "POST", pattern: "/v1/documents", access: write, h: s.add},
		{method: "GET", pattern: "/v1/documents/{id...}", access: read, h: s.get},
		{method: "DELETE", pattern: "/v1/documents/{id...}", access: write, h: s.deleteOne},
		{method: "POST", pattern: "/v1/query", access: read, h: s.query},
		{method: "GET", pattern: "/v1/stats", access: read, h: s.stats},
		{method: "GET", pattern: "/v1/pairs", access: read, stream: true, h: s.pairs},
		{method: "GET", pattern: "/v1/clusters", access: read, stream: true, h: s.clusters},
		{method: "POST", pattern: "/v1/batch", access: write, h: s.batch},
		{method: "POST", pattern: "/v1/delete", access: write, h: s.deleteMany},
		{method: "POST", pattern: "/v1/compare", access: read, h: s.compare},
		{method: "GET", pattern: "/v1/export", access: read, stream: true, h: s.export},
		{method: "GET", pattern: "/v1/log", access: read, stream: true, h: s.log},
		{method: "GET", pattern: "/v1/templates", access: read, h: s.templates},
		{method: "POST", pattern: "/v1/templates", access: write, h: s.addTemplate},
		{method: "DELETE", pattern: "/v1/templates/{name}", access: write, h: s.removeTemplate},
		{method: "POST", pattern: "/v1/backup", access: write, h: s.backup},
		{method: "POST", pattern: "/v1/import", access: write, stream: true, bigBody: true, h: s.importExport},
		{method: "GET", pattern: "/metrics", access: public, h: s.metricsPage},
	}
}

// ctxKey keys the request id in a request's context.
type ctxKey struct{}

// wrap applies to rt what every request goes through: a request id, the
// token check, the concurrency limit, the body limit and deadline, the
// error answer and the log line.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-ID")
		if id == "" || len(id) > 64 {
			id = requestID()
		}
		w.Header().Set("X-Request-ID", id)
		sw := &statusWriter{ResponseWriter: w}
		err := s.serve(sw, r.WithContext(context.WithValue(r.Context(), ctxKey{}, id)), rt)
		if err != nil {
			s.writeError(sw, id, err)
		}
		s.metrics.observe(rt.pattern, r.Method, sw.status, time.Since(start))
		level := slog.LevelInfo
		if sw.status >= 500 {
			level = slog.LevelError
		}
		attrs := []any{"request_id", id, "method", r.Method, "path", r.URL.Path, "status", sw.status, "bytes", sw.bytes,
			"duration_ms", float64(time.Since(start).Microseconds()) / 1000, "remote", r.RemoteAddr}
		if err != nil {
			attrs = append(attrs, "error", err.Error())
		}
		s.o.Logger.Log(r.Context(), level, "request", attrs...)
	})
}

// serve runs rt's handler under the limits.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt route) error {
	if rt.access != public { // health checks and the API document are neither guarded nor limited
		if err := s.o.Tokens.check(r, rt.access == write); err != nil {
			return err
		}
		select {
		case s.sem <- struct{}{}:
			defer func() { <-s.sem }()
		default:
			return &httpError{status: http.StatusTooManyRequests, code: api.CodeTooManyRequests,
				msg: fmt.Sprintf("more than %d requests at once; retry later", s.o.MaxConcurrent)}
		}
	}
	timeout := s.o.RequestTimeout
	if rt.stream {
		timeout = s.o.StreamTimeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	// A slow client: its body must arrive within the request's time.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(timeout))
	limit := s.o.MaxBodyBytes
	if rt.bigBody {
		limit = s.o.MaxImportBytes
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	return rt.h(w, r.WithContext(ctx))
}

// httpError is an error with its HTTP status and code.
type httpError struct {
	status int
	code   string
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// badRequest returns a 400 error.
func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, code: api.CodeBadRequest, msg: fmt.Sprintf(format, args...)}
}

// classify returns the status and code of err.
func classify(err error) (int, string) {
	var he *httpError
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		return he.status, he.code
	case errors.As(err, &mb), errors.Is(err, db.ErrTextTooLarge):
		return http.StatusRequestEntityTooLarge, api.CodeTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return http.StatusRequestTimeout, api.CodeTimeout
	case errors.Is(err, db.ErrNotFound), errors.Is(err, db.ErrNoTemplate):
		return http.StatusNotFound, api.CodeNotFound
	case errors.Is(err, db.ErrReadOnly):
		return http.StatusForbidden, api.CodeForbidden
	case errors.Is(err, db.ErrClosed), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, api.CodeUnavailable
	case errors.Is(err, db.ErrInvalidID), errors.Is(err, db.ErrInvalidOptions), errors.Is(err, db.ErrInvalidThreshold),
		errors.Is(err, db.ErrBadInput), errors.Is(err, db.ErrBadFingerprint), errors.Is(err, db.ErrNoWords),
		errors.Is(err, db.ErrBinary), errors.Is(err, db.ErrInfeasiblePlan), errors.Is(err, db.ErrNoText),
		errors.Is(err, db.ErrEmptyPrefix), errors.Is(err, db.ErrTemplateNeedsTexts), errors.Is(err, db.ErrNoLog),
		errors.Is(err, db.ErrBadExport), errors.Is(err, db.ErrNotEmpty), errors.As(err, new(*db.ParamsError)):
		return http.StatusBadRequest, api.CodeBadRequest
	}
	return http.StatusInternalServerError, api.CodeInternal
}

// writeError answers err, unless a response has begun (a stream that
// failed midway ends, and the log says why).
func (s *Server) writeError(w *statusWriter, id string, err error) {
	if w.status != 0 {
		return
	}
	status, code := classify(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		msg = "internal error (see the server's log for request " + id + ")"
	}
	reason := ""
	if status < 500 {
		reason = apiconv.Reason(err)
	}
	writeJSON(w, status, api.ErrorBody{Error: api.Error{Code: code, Message: msg, RequestID: id, Reason: reason}})
}

// writeJSON writes v as the response with the status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// statusWriter records the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush sends what is buffered (streams).
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
