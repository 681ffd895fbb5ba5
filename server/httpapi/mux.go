package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fpdb/fpdb/api"
)

// Access is what a route needs of the caller's token.
type Access int

const (
	// Public routes need no token and are not counted in
	// Options.MaxConcurrent (health checks, the API document, the page).
	Public Access = iota
	// Read routes need a read-only or read-write token.
	Read
	// Write routes need a read-write token.
	Write
)

// Route is one endpoint: a method and a path pattern of net/http's
// ServeMux, the access it needs, whether it streams, and its handler.
type Route struct {
	// Method and Pattern make the ServeMux pattern "Method Pattern".
	Method, Pattern string
	// Access is the token the route needs.
	Access Access
	// Stream routes are bounded by Options.StreamTimeout instead of
	// Options.RequestTimeout.
	Stream bool
	// Import routes take an export as their body, limited by
	// Options.MaxImportBytes instead of Options.MaxBodyBytes.
	Import bool
	// Handle serves the request.
	Handle HandlerFunc
}

// HandlerFunc serves a request: it returns an error to be answered (see
// Classify), or nil once it has written its response. An error returned
// after the response has begun is only logged (a stream is cut off).
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Options are the limits and hooks of NewMux. Beyond a nil Logger, NewMux
// applies no defaults: each server fills them with its own.
type Options struct {
	// Tokens, when not nil, are the bearer tokens a route that is not
	// Public needs.
	Tokens *Tokens
	// MaxBodyBytes is the largest request body accepted; a larger one is
	// answered 413. MaxImportBytes is that of an Import route (0:
	// MaxBodyBytes).
	MaxBodyBytes, MaxImportBytes int64
	// RequestTimeout bounds a request, reading its body included, and
	// StreamTimeout a Stream route's.
	RequestTimeout, StreamTimeout time.Duration
	// MaxConcurrent is the number of requests to routes that are not
	// Public served at once; more are answered 429 at once. It must be
	// positive.
	MaxConcurrent int
	// Logger receives one line per request; nil logs nothing.
	Logger *slog.Logger
	// LogAttrs begin each request's log line (as key, value pairs).
	LogAttrs []any
	// Errors are the classes of the errors of the handlers (see Classify).
	Errors []Class
	// Observe, when not nil, is told of each request answered: its route's
	// pattern, its method, its status (0 when nothing was written) and its
	// time.
	Observe func(pattern, method string, status int, took time.Duration)
}

// NewMux returns a ServeMux of routes, each served through what every
// request goes through: a request id (the X-Request-ID header, echoed
// when it is 64 bytes or less, else made; see RequestID), the token check,
// the limit of requests at once, the body limit and deadline, the error
// answer and the log line.
func NewMux(routes []Route, o Options) *http.ServeMux {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := &mux{o: o, sem: make(chan struct{}, o.MaxConcurrent)}
	sm := http.NewServeMux()
	var patterns []string
	allow := map[string][]string{}
	for _, rt := range routes {
		sm.Handle(rt.Method+" "+rt.Pattern, m.wrap(rt))
		if allow[rt.Pattern] == nil {
			patterns = append(patterns, rt.Pattern)
		}
		allow[rt.Pattern] = append(allow[rt.Pattern], rt.Method)
		if rt.Method == http.MethodGet {
			allow[rt.Pattern] = append(allow[rt.Pattern], http.MethodHead)
		}
	}
	// A route's path with another method: 405 with the API's error body
	// (code bad_request) and the Allow header (the ServeMux's own answer
	// is plain text).
	// (Each other method gets a pattern of its own: a pattern without a
	// method would conflict with "GET /".)
	for _, p := range patterns {
		h := m.wrap(Route{Pattern: p, Access: Public, Handle: notAllowed(p, allow[p])})
		for _, method := range standardMethods {
			if !slices.Contains(allow[p], method) {
				sm.Handle(method+" "+p, h)
			}
		}
	}
	return sm
}

// standardMethods are the methods of RFC 9110 and PATCH: each gets the
// API's 405 on a route's path that does not take it. (Another method gets
// the ServeMux's own plain-text 405.)
var standardMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
	http.MethodOptions, http.MethodTrace, http.MethodConnect}

// notAllowed answers a request to pattern with a method not in methods:
// 405, or 404 for a path that only the catch-all "/" matches.
func notAllowed(pattern string, methods []string) HandlerFunc {
	list := strings.Join(methods, ", ")
	return func(w http.ResponseWriter, r *http.Request) error {
		if pattern == "/" && r.URL.Path != "/" {
			return &Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: "no such path: " + r.URL.Path}
		}
		w.Header().Set("Allow", list)
		return &Error{Status: http.StatusMethodNotAllowed, Code: api.CodeBadRequest,
			Message: fmt.Sprintf("%s %s: this path takes %s", r.Method, r.URL.Path, list)}
	}
}

// mux holds what the routes of a NewMux share.
type mux struct {
	o   Options
	sem chan struct{}
}

// ctxKey keys the request id in a request's context.
type ctxKey struct{}

// RequestID returns the request id of a request served by a NewMux, from
// its context ("" for another context).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// requestID returns the id of r: the client's X-Request-ID when it gives
// one of at most 64 bytes, else a new one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-ID"); id != "" && len(id) <= 64 {
		return id
	}
	return newRequestID()
}

// newRequestID returns a new random request id.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// wrap applies to rt what every request goes through.
func (m *mux) wrap(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := requestID(r)
		w.Header().Set("X-Request-ID", id)
		timeout := m.o.RequestTimeout
		if rt.Stream {
			timeout = m.o.StreamTimeout
		}
		sw := &statusWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: min(timeout, maxWriteStall)}
		var body *eofBody
		if r.Body != nil && r.Body != http.NoBody {
			body = &eofBody{ReadCloser: r.Body}
			r.Body = body
		}
		err := m.serve(sw, r.WithContext(context.WithValue(r.Context(), ctxKey{}, id)), rt)
		if err != nil && sw.status == 0 { // else a stream failed midway: it ends, and the log says why
			if body != nil && !body.eof {
				closeUnread(sw, sw.rc)
			}
			writeError(sw, id, err, m.o.Errors)
		}
		if m.o.Observe != nil {
			m.o.Observe(rt.Pattern, r.Method, sw.status, time.Since(start))
		}
		level := slog.LevelInfo
		if sw.status >= 500 {
			level = slog.LevelError
		}
		attrs := append([]any{}, m.o.LogAttrs...)
		attrs = append(attrs, "request_id", id, "method", r.Method, "path", r.URL.Path, "status", sw.status,
			"bytes", sw.bytes, "duration_ms", float64(time.Since(start).Microseconds())/1000, "remote", r.RemoteAddr)
		if err != nil {
			attrs = append(attrs, "error", err.Error())
		}
		m.o.Logger.Log(r.Context(), level, "request", attrs...)
	})
}

// eofBody is a request body that tells whether it was read to its end.
type eofBody struct {
	io.ReadCloser
	eof bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// closeUnread makes the answer to a request whose body was not read to its
// end (a request refused before its body is read: no token, too many at
// once, another site's) the last of its connection, and ends the reading
// of that body now. net/http would otherwise read the rest of the body,
// with no deadline, before it answers (or, the connection closing, before
// it closes it): a client that announced a body and sends none would hold
// the connection, unanswered, for as long as it likes.
func closeUnread(w http.ResponseWriter, rc *http.ResponseController) {
	w.Header().Set("Connection", "close")
	_ = rc.SetReadDeadline(time.Now())
}

// serve runs rt's handler under the limits.
func (m *mux) serve(w http.ResponseWriter, r *http.Request, rt Route) error {
	if rt.Access != Public { // health checks and the API document are neither guarded nor limited
		if err := crossOrigin(r); err != nil {
			return err
		}
		if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
			// The body would be read as it came: gzip bytes as a text.
			return &Error{Status: http.StatusUnsupportedMediaType, Code: api.CodeBadRequest,
				Message: "Content-Encoding " + ce + ": request bodies are read as sent; send them without a content encoding"}
		}
		if err := m.o.Tokens.Check(r, rt.Access == Write); err != nil {
			return err
		}
		select {
		case m.sem <- struct{}{}:
			defer func() { <-m.sem }()
		default:
			return &Error{Status: http.StatusTooManyRequests, Code: api.CodeTooManyRequests,
				Message: fmt.Sprintf("more than %d requests at once; retry later", m.o.MaxConcurrent)}
		}
	}
	timeout := m.o.RequestTimeout
	if rt.Stream {
		timeout = m.o.StreamTimeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	timeoutFlag := "--timeout"
	if rt.Stream {
		timeoutFlag = "--stream-timeout"
	}
	// A slow client: its body must arrive within the request's time. The
	// connection's read deadline is armed only while a body is to be read:
	// net/http reads the connection in the background once the body is
	// read (to see a client hang up), and that read, failing at the
	// deadline, cancels the request's context — a request past its time
	// would end "canceled" (a 503 to retry) rather than timed out.
	rc := http.NewResponseController(w)
	var clear func()
	if r.Body != nil && r.Body != http.NoBody {
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
		clear = func() { _ = rc.SetReadDeadline(time.Time{}) }
	}
	limit, flag := m.o.MaxBodyBytes, "--max-body"
	if rt.Import && m.o.MaxImportBytes > 0 {
		limit, flag = m.o.MaxImportBytes, "--max-import"
	}
	r.Body = &limitedBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit), flag: flag, timeout: timeout, timeoutFlag: timeoutFlag, atEOF: clear}
	err := rt.Handle(w, r.WithContext(ctx))
	if err != nil && ctx.Err() != nil && !time.Now().Before(deadlineOf(ctx)) && !errors.As(err, new(*BodyTimeoutError)) &&
		(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		// The request's time ran out (a cancellation past the deadline is
		// the same end, whichever was seen first).
		err = &RequestTimeoutError{Timeout: timeout, Flag: timeoutFlag, Err: err}
	}
	return err
}

// deadlineOf returns the deadline of ctx (one made by context.WithTimeout).
func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// RequestTimeoutError is the error of a request that took longer than the
// server's limit (--timeout, or --stream-timeout for a stream): a 408 (see
// Classify) whose message names the limit and the flag that sets it.
type RequestTimeoutError struct {
	// Timeout is the request's time.
	Timeout time.Duration
	// Flag is the flag of "fpdb serve" that sets it (--timeout,
	// --stream-timeout).
	Flag string
	// Err is the handler's error (a context's deadline or cancellation).
	Err error
}

// Error says that the request took too long, and what the limit is.
func (e *RequestTimeoutError) Error() string {
	return fmt.Sprintf("the request took longer than this server's limit of %v (fpdb serve %s)", e.Timeout, e.Flag)
}

// Unwrap returns the handler's error.
func (e *RequestTimeoutError) Unwrap() error { return e.Err }

// BodyTooLargeError is the error of reading a request body larger than the
// server's limit: its message names the limit and the flag of "fpdb
// serve" that sets it. It wraps the *http.MaxBytesError (a 413, see
// Classify).
type BodyTooLargeError struct {
	// Limit is the limit, in bytes.
	Limit int64
	// Flag is the flag of "fpdb serve" that sets it (--max-body,
	// --max-import).
	Flag string
	err  *http.MaxBytesError
}

// Error says that the body is over the limit, and which.
func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("the request body is larger than this server's limit of %d bytes (fpdb serve %s)", e.Limit, e.Flag)
}

// Unwrap returns the *http.MaxBytesError.
func (e *BodyTooLargeError) Unwrap() error { return e.err }

// BodyTimeoutError is the error of reading a request body that did not
// arrive within the request's time: its message names the timeout and the
// flag of "fpdb serve" that sets it, not the connection's addresses. It
// is (errors.Is) os.ErrDeadlineExceeded, a 408 (see Classify).
type BodyTimeoutError struct {
	// Timeout is the request's time.
	Timeout time.Duration
	// Flag is the flag of "fpdb serve" that sets it (--timeout,
	// --stream-timeout).
	Flag string
}

// Error says that the body came too slowly, and what the limit is.
func (e *BodyTimeoutError) Error() string {
	return fmt.Sprintf("the request body did not arrive within this server's limit of %v for a request (fpdb serve %s)", e.Timeout, e.Flag)
}

// Unwrap returns os.ErrDeadlineExceeded.
func (e *BodyTimeoutError) Unwrap() error { return os.ErrDeadlineExceeded }

// limitedBody is a request body under http.MaxBytesReader whose error,
// past the limit, is a *BodyTooLargeError naming flag, and past the
// connection's read deadline a *BodyTimeoutError naming timeoutFlag:
// every endpoint that reads a body says so alike.
// At the body's end it calls atEOF, when not nil (once).
type limitedBody struct {
	io.ReadCloser
	flag        string
	timeout     time.Duration
	timeoutFlag string
	atEOF       func()
}

// Read reads the body, its error past the limit a *BodyTooLargeError, past
// the deadline a *BodyTimeoutError.
func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && b.atEOF != nil {
		b.atEOF()
		b.atEOF = nil
	}
	if mb, ok := err.(*http.MaxBytesError); ok {
		err = &BodyTooLargeError{Limit: mb.Limit, Flag: b.flag, err: mb}
	} else if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = &BodyTimeoutError{Timeout: b.timeout, Flag: b.timeoutFlag}
	}
	return n, err
}

// maxWriteStall bounds how long one write of a response may wait for a
// client that does not read (statusWriter.stall).
const maxWriteStall = time.Minute

// statusWriter records the status and size of a response. Each write
// (and flush) must be taken by the client within stall: a write blocked
// on the full socket of a client that stopped reading does not see the
// request's context end, and would hold the request, its slot and its
// run for ever. The deadline is set at each write, not at the start of
// the request, so that an answer sent late on purpose (a backup or a
// template change that finished after the request's time, a cluster's
// outcome_unknown) still goes out.
type statusWriter struct {
	http.ResponseWriter
	rc     *http.ResponseController
	stall  time.Duration
	status int
	bytes  int64
}

// deadline gives the next write stall to complete; the returned func
// clears it once the write is done (under HTTP/2 an armed deadline resets
// the stream even when no write waits: a quiet stream would be cut).
func (w *statusWriter) deadline() func() {
	if w.stall <= 0 {
		return func() {}
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.stall))
	return func() { _ = w.rc.SetWriteDeadline(time.Time{}) }
}

// WriteHeader records the first status written.
func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

// Write counts the bytes written (a first write is a 200).
func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	defer w.deadline()()
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush sends what is buffered (streams).
func (w *statusWriter) Flush() {
	defer w.deadline()()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
