package cluster

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/server/apiconv"
)

// HTTPOptions configure a node's HTTP handler (Node.Handler). The zero
// value (or nil) is usable: a zero or negative field means its default.
type HTTPOptions struct {
	// ReadTokens may read; WriteTokens may read and write. When both are
	// empty no token is needed; else every /v1 request needs the header
	// "Authorization: Bearer TOKEN" (as the single-node server with
	// server.Options.Tokens). Empty strings are ignored.
	ReadTokens, WriteTokens []string
	// MaxBodyBytes is the largest request body accepted; a larger one is
	// answered 413 (default 64 MiB, as the single-node server).
	MaxBodyBytes int64
	// RequestTimeout bounds a request (default 60s); StreamTimeout bounds
	// the streams, /v1/pairs and /v1/clusters (default 30 minutes).
	RequestTimeout time.Duration
	StreamTimeout  time.Duration
	// MaxConcurrent is the number of /v1 requests served at once; more are
	// answered 429 (default 64).
	MaxConcurrent int
	// ReadyTimeout bounds the shard check of /readyz (default 2s).
	ReadyTimeout time.Duration
	// Logger receives one line per request (default: the node's logger).
	Logger *slog.Logger
}

// Defaults of HTTPOptions (those of the single-node server).
const (
	defaultHTTPMaxBody     = 64 << 20
	defaultHTTPTimeout     = 60 * time.Second
	defaultHTTPStream      = 30 * time.Minute
	defaultHTTPConcurrent  = 64
	defaultHTTPReady       = 2 * time.Second
	httpDefaultThreshold   = 0.7 // a query's, as the single-node server's
	httpFlushEvery         = 100 * time.Millisecond
	httpGetChunk           = 1000    // ids per shard get request
	httpDeleteChunkBytes   = 4 << 20 // ids per delete log message
	httpMaxLogMessageBytes = 7 << 20 // under the log's 8 MiB message limit
)

// codeNotImplemented is the error code of a route or option a cluster
// node does not serve (status 501). The api package has no constant for
// it: a client sees an *Error with this Code and no sentinel.
const codeNotImplemented = "not_implemented"

// Handler returns the node's HTTP API: the paths, request and response
// bodies (package api) and statuses of the single-node server (package
// server) for health, adds (with check-then-add across the cluster),
// get, delete, query, stats, pairs, clusters, batch and delete by ids,
// served through the node's Router. Every read asks the shards for a log
// sequence of at least the last this node appended (read-your-writes for
// a client of one node; a client that writes through one node and reads
// through another may not see its write at once). The checks of writes
// (is the document stored, for a delete's 404 and an add's replaced or
// unchanged) read at the log's last sequence, so that they see the writes
// of every node.
//
// Differences with the single-node server: the other routes (compare,
// export, log, templates, backup, import, metrics, the web page, the
// OpenAPI document) answer 501, as do the options a cluster cannot honour
// (replace, forget, delete by prefix or age, query plans and explain,
// storage statistics, centers); pairs are oriented A < B by id, not by
// storing order; a cluster's members are in the order of their times
// added. An unavailable shard is a 503.
func (n *Node) Handler(opts *HTTPOptions) http.Handler {
	o := HTTPOptions{}
	if opts != nil {
		o = *opts
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultHTTPMaxBody
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = defaultHTTPTimeout
	}
	if o.StreamTimeout <= 0 {
		o.StreamTimeout = defaultHTTPStream
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = defaultHTTPConcurrent
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = defaultHTTPReady
	}
	if o.Logger == nil {
		o.Logger = n.opts.Logger
	}
	h := &httpHandler{n: n, r: n.r, o: o, sem: make(chan struct{}, o.MaxConcurrent), mux: http.NewServeMux()}
	for _, t := range o.ReadTokens {
		if t != "" {
			h.tokens = append(h.tokens, httpToken{sum: sha256.Sum256([]byte(t))})
		}
	}
	for _, t := range o.WriteTokens {
		if t != "" {
			h.tokens = append(h.tokens, httpToken{sum: sha256.Sum256([]byte(t)), write: true})
		}
	}
	for _, rt := range h.routes() {
		h.mux.Handle(rt.method+" "+rt.pattern, h.wrap(rt))
	}
	return h.mux
}

type httpHandler struct {
	n      *Node
	r      *Router
	o      HTTPOptions
	tokens []httpToken
	sem    chan struct{}
	mux    *http.ServeMux
}

type httpToken struct {
	sum   [sha256.Size]byte
	write bool
}

// httpAccess is what a route needs of the caller's token.
type httpAccess int

const (
	accessPublic httpAccess = iota
	accessRead
	accessWrite
)

// httpRoute is one endpoint; a nil h answers 501.
type httpRoute struct {
	method, pattern string
	access          httpAccess
	stream          bool
	h               func(w http.ResponseWriter, r *http.Request) error
}

// routes are the single-node server's routes (server/routes.go), each
// served or answered 501.
func (h *httpHandler) routes() []httpRoute {
	return []httpRoute{
		{method: "GET", pattern: "/healthz", h: h.healthz},
		{method: "GET", pattern: "/readyz", h: h.readyz},
		{method: "GET", pattern: "/v1/openapi.json"},
		{method: "GET", pattern: "/", h: h.root},
		{method: "GET", pattern: "/web/{file}"},
		{method: "POST", pattern: "/v1/documents", access: accessWrite, h: h.add},
		{method: "GET", pattern: "/v1/documents/{id...}", access: accessRead, h: h.get},
		{method: "DELETE", pattern: "/v1/documents/{id...}", access: accessWrite, h: h.deleteOne},
		{method: "POST", pattern: "/v1/query", access: accessRead, h: h.query},
		{method: "GET", pattern: "/v1/stats", access: accessRead, h: h.stats},
		{method: "GET", pattern: "/v1/pairs", access: accessRead, stream: true, h: h.pairs},
		{method: "GET", pattern: "/v1/clusters", access: accessRead, stream: true, h: h.clusters},
		{method: "POST", pattern: "/v1/batch", access: accessWrite, h: h.batch},
		{method: "POST", pattern: "/v1/delete", access: accessWrite, h: h.deleteMany},
		{method: "POST", pattern: "/v1/compare", access: accessRead},
		{method: "GET", pattern: "/v1/export", access: accessRead},
		{method: "GET", pattern: "/v1/log", access: accessRead},
		{method: "GET", pattern: "/v1/templates", access: accessRead},
		{method: "POST", pattern: "/v1/templates", access: accessWrite},
		{method: "DELETE", pattern: "/v1/templates/{name}", access: accessWrite},
		{method: "POST", pattern: "/v1/backup", access: accessWrite},
		{method: "POST", pattern: "/v1/import", access: accessWrite},
		{method: "GET", pattern: "/metrics"},
	}
}

// notServed is the error of a route or option a cluster node does not
// serve.
func notServed(format string, args ...any) error {
	return &httpError{status: http.StatusNotImplemented, code: codeNotImplemented,
		msg: fmt.Sprintf(format, args...) + " is not served by a cluster node"}
}

// wrap applies to rt what every request goes through: a request id, the
// token check, the concurrency limit, the body limit and deadline, the
// error answer and the log line.
func (h *httpHandler) wrap(rt httpRoute) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-ID")
		if id == "" || len(id) > 64 {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-ID", id)
		sw := &httpStatusWriter{ResponseWriter: w}
		err := h.serve(sw, r, rt)
		if err != nil && sw.status == 0 {
			writeHTTPError(sw, id, err)
		}
		level := slog.LevelInfo
		if sw.status >= 500 {
			level = slog.LevelError
		}
		attrs := []any{"node", h.n.opts.Name, "request_id", id, "method", r.Method, "path", r.URL.Path, "status", sw.status,
			"bytes", sw.bytes, "duration_ms", float64(time.Since(start).Microseconds()) / 1000, "remote", r.RemoteAddr}
		if err != nil {
			attrs = append(attrs, "error", err.Error())
		}
		h.o.Logger.Log(r.Context(), level, "request", attrs...)
	})
}

// serve runs rt's handler under the limits.
func (h *httpHandler) serve(w http.ResponseWriter, r *http.Request, rt httpRoute) error {
	if rt.access != accessPublic {
		if err := h.checkToken(r, rt.access == accessWrite); err != nil {
			return err
		}
		select {
		case h.sem <- struct{}{}:
			defer func() { <-h.sem }()
		default:
			return &httpError{status: http.StatusTooManyRequests, code: api.CodeTooManyRequests,
				msg: fmt.Sprintf("more than %d requests at once; retry later", h.o.MaxConcurrent)}
		}
	}
	if rt.h == nil {
		return notServed("%s %s", rt.method, rt.pattern)
	}
	timeout := h.o.RequestTimeout
	if rt.stream {
		timeout = h.o.StreamTimeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
	r.Body = http.MaxBytesReader(w, r.Body, h.o.MaxBodyBytes)
	return rt.h(w, r.WithContext(ctx))
}

// checkToken accepts r when it carries a known token (one that may write
// when write is set), comparing SHA-256 digests in constant time against
// every token, as the single-node server does.
func (h *httpHandler) checkToken(r *http.Request, write bool) error {
	if len(h.tokens) == 0 {
		return nil
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return &httpError{status: http.StatusUnauthorized, code: api.CodeUnauthorized,
			msg: "this server needs a token: send the header Authorization: Bearer TOKEN"}
	}
	sum := sha256.Sum256([]byte(tok))
	found, canWrite := 0, 0
	for _, e := range h.tokens {
		m := subtle.ConstantTimeCompare(sum[:], e.sum[:])
		found |= m
		if e.write {
			canWrite |= m
		}
	}
	switch {
	case found == 0:
		return &httpError{status: http.StatusUnauthorized, code: api.CodeUnauthorized, msg: "unknown token"}
	case write && canWrite == 0:
		return &httpError{status: http.StatusForbidden, code: api.CodeForbidden, msg: "this token may only read"}
	}
	return nil
}

// httpError is an error with its HTTP status and code.
type httpError struct {
	status int
	code   string
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func httpBadRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, code: api.CodeBadRequest, msg: fmt.Sprintf(format, args...)}
}

// classifyHTTP returns the status and code of err, as the single-node
// server's, plus the cluster's own errors.
func classifyHTTP(err error) (int, string) {
	var he *httpError
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		return he.status, he.code
	case errors.As(err, &mb), errors.Is(err, db.ErrTextTooLarge):
		return http.StatusRequestEntityTooLarge, api.CodeTooLarge
	case errors.Is(err, ErrShardUnavailable), errors.Is(err, ErrClosed), errors.Is(err, db.ErrClosed),
		errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, api.CodeUnavailable
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return http.StatusRequestTimeout, api.CodeTimeout
	case errors.Is(err, db.ErrNotFound):
		return http.StatusNotFound, api.CodeNotFound
	case errors.Is(err, db.ErrInvalidID), errors.Is(err, db.ErrInvalidOptions), errors.Is(err, db.ErrInvalidThreshold),
		errors.Is(err, db.ErrBadInput), errors.Is(err, db.ErrBadFingerprint), errors.Is(err, db.ErrNoWords),
		errors.Is(err, db.ErrBinary), errors.Is(err, db.ErrNoText), errors.Is(err, ErrInvalidOptions):
		return http.StatusBadRequest, api.CodeBadRequest
	}
	return http.StatusInternalServerError, api.CodeInternal
}

// writeHTTPError answers err with the API's error body.
func writeHTTPError(w http.ResponseWriter, id string, err error) {
	status, code := classifyHTTP(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		msg = "internal error (see the server's log for request " + id + ")"
	}
	reason := ""
	if status < 500 {
		reason = apiconv.Reason(err)
	}
	_ = writeHTTPJSON(w, status, api.ErrorBody{Error: api.Error{Code: code, Message: msg, RequestID: id, Reason: reason}})
}

func writeHTTPJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// httpStatusWriter records the status and size of a response.
type httpStatusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *httpStatusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *httpStatusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *httpStatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// --- request reading ---

func readHTTPBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	return b, nil
}

// decodeHTTPJSON decodes body into v strictly: valid UTF-8, one value, no
// unknown field.
func decodeHTTPJSON(body []byte, v any) error {
	if !utf8.Valid(body) {
		return httpBadRequest("the JSON body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return httpBadRequest("malformed JSON body: %v", err)
	}
	if dec.More() {
		return httpBadRequest("malformed JSON body: more than one value")
	}
	return nil
}

func httpMediaType(r *http.Request) (string, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return "", nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", httpBadRequest("Content-Type %q: %v", ct, err)
	}
	return mt, nil
}

func unsupportedMedia(mt, want string) error {
	return &httpError{status: http.StatusUnsupportedMediaType, code: api.CodeBadRequest,
		msg: fmt.Sprintf("Content-Type %q: %s", mt, want)}
}

// textBody reports whether a body of media type mt is the text itself.
func textBody(mt string) bool {
	switch mt {
	case "", "text/plain", "application/octet-stream", "text/html", "application/x-www-form-urlencoded":
		return true
	}
	return false
}

// httpParams reads typed values from query or form parameters,
// remembering the first error, which names the parameter.
type httpParams struct {
	v   url.Values
	err error
}

func (p *httpParams) only(names ...string) {
	for k := range p.v {
		if !slices.Contains(names, k) && p.err == nil {
			p.err = httpBadRequest("unknown parameter %q", k)
		}
	}
}

func (p *httpParams) str(name string) string { return p.v.Get(name) }

func (p *httpParams) float(name string) float64 {
	s := p.v.Get(name)
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && p.err == nil {
		p.err = httpBadRequest("parameter %s=%q is not a number", name, s)
	}
	return f
}

func (p *httpParams) int(name string) int {
	s := p.v.Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil && p.err == nil {
		p.err = httpBadRequest("parameter %s=%q is not an integer", name, s)
	}
	return n
}

func (p *httpParams) bool(name string) bool {
	s := p.v.Get(name)
	if s == "" {
		return false
	}
	b, err := strconv.ParseBool(s)
	if err != nil && p.err == nil {
		p.err = httpBadRequest("parameter %s=%q is not true or false", name, s)
	}
	return b
}

// httpTextOptions parses a text's format and encoding.
func httpTextOptions(t api.TextInput) (db.TextOptions, error) {
	var to db.TextOptions
	if t.Format != "" {
		f, err := db.ParseFormat(t.Format)
		if err != nil {
			return to, err
		}
		to.Format = f
	}
	if t.Encoding != "" {
		if _, err := db.ParseEncoding(t.Encoding); err != nil {
			return to, err
		}
		to.Encoding = t.Encoding
	}
	return to, nil
}

// validHTTPID checks an id as the db package does (a delete of an invalid
// id must not reach the log, whose decoder refuses it).
func validHTTPID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", db.ErrInvalidID)
	case len(id) > db.MaxIDLen:
		return fmt.Errorf("%w: %q… is %d bytes, at most %d", db.ErrInvalidID, id[:32], len(id), db.MaxIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %q is not valid UTF-8", db.ErrInvalidID, id)
	case strings.ContainsRune(id, 0):
		return fmt.Errorf("%w: %q contains a NUL byte", db.ErrInvalidID, id)
	}
	return nil
}

func validHTTPThreshold(what string, t float64) error {
	if math.IsNaN(t) || t <= 0 || t > 1 {
		return fmt.Errorf("%s: %w: got %v", what, db.ErrInvalidThreshold, t)
	}
	return nil
}

// --- conversions ---

func apiMatches(ms []db.Match) []api.Match {
	out := make([]api.Match, len(ms))
	for i, m := range ms {
		out[i] = api.Match{ID: m.ID, Similarity: m.Similarity, Hamming: m.Hamming, Exact: m.Exact,
			QueryInDoc: m.QueryInDoc, DocInQuery: m.DocInQuery}
	}
	return out
}

// fpInput is the input of a prepared document (fingerprinted once, by
// the handler).
func fpInput(d *db.Doc) db.Input {
	return db.Input{ID: d.ID, Fingerprint: d.Fingerprint, ContentHash: d.ContentHash, Size: d.Size, Words: d.Words,
		Shingles: d.Shingles, Source: d.Source}
}

// sameContent reports whether a replica would leave stored as it is when
// doc is added (the db's unchanged: content hash and fingerprint equal).
func sameContent(stored, doc *db.Doc) bool {
	return stored != nil && stored.ContentHash == doc.ContentHash && slices.Equal(stored.Fingerprint, doc.Fingerprint)
}

// --- shard access ---

// getMany returns the stored documents of ids (absent ones missing from
// the map) at a log sequence of at least minSeq: one get request per
// shard and chunk of ids, the shards in parallel.
func (h *httpHandler) getMany(ctx context.Context, ids []string, minSeq uint64) (map[string]*db.Doc, error) {
	r := h.r
	byShard := map[int][]string{}
	for _, id := range ids {
		s := Shard(id, r.smap.Shards)
		byShard[s] = append(byShard[s], id)
	}
	out := make(map[string]*db.Doc, len(ids))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, 0, len(byShard))
	for s, sids := range byShard {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := 0; lo < len(sids); lo += httpGetChunk {
				chunk := sids[lo:min(lo+httpGetChunk, len(sids))]
				rctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
				var rep getReply
				err := r.request(rctx, s, "get", getRequest{IDs: chunk, MinSeq: minSeq, WaitMs: waitMs}, &rep)
				cancel()
				if err == nil && rep.Err != "" {
					err = fmt.Errorf("fpdb cluster: shard %d: %s", s, rep.Err)
				}
				if err == nil && len(rep.Docs) != len(chunk) {
					err = fmt.Errorf("fpdb cluster: shard %d answered %d documents of %d", s, len(rep.Docs), len(chunk))
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				for i, d := range rep.Docs {
					if d != nil {
						out[chunk[i]] = d
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// latest returns the log's last sequence: the sequence the checks of the
// writes (is the document stored, is its content unchanged) read at, so
// that they see the writes made through every node, not only this one's.
func (h *httpHandler) latest(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, h.r.opts.RequestTimeout)
	defer cancel()
	seq, err := h.r.LastSeq(ctx)
	if err != nil {
		return 0, &httpError{status: http.StatusServiceUnavailable, code: api.CodeUnavailable, msg: "the write log: " + err.Error()}
	}
	return max(seq, h.r.Written()), nil
}

// stored returns the document id as of the log's last sequence, or nil
// when it is absent.
func (h *httpHandler) stored(ctx context.Context, id string) (*db.Doc, error) {
	seq, err := h.latest(ctx)
	if err != nil {
		return nil, err
	}
	d, err := h.r.Get(ctx, id, seq)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil
	}
	return d, err
}

// --- handlers ---

func (h *httpHandler) healthz(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err := w.Write([]byte("ok\n"))
	return err
}

// readyz is ready when one replica of every shard answers.
func (h *httpHandler) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), h.o.ReadyTimeout)
	defer cancel()
	if _, err := h.r.Len(ctx, 0); err != nil {
		return &httpError{status: http.StatusServiceUnavailable, code: api.CodeUnavailable, msg: "shards: " + err.Error()}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err := w.Write([]byte("ready\n"))
	return err
}

// root is GET / (the single-node server's web page): 501 for "/", 404
// for every other unrouted path, as the single-node server.
func (h *httpHandler) root(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Path != "/" {
		return &httpError{status: http.StatusNotFound, code: api.CodeNotFound, msg: "no such path: " + r.URL.Path}
	}
	return notServed("the review page (GET /)")
}

// addParamNames are the parameters of an add sent as a plain body or a
// form.
var addParamNames = []string{"id", "source", "threshold", "reject", "replace", "limit", "format", "encoding"}

// readAdd reads an add as the single-node server does: JSON, a plain
// body with its parameters in the query string, or a multipart form with
// a "file" part.
func readAdd(r *http.Request) (api.AddRequest, []byte, error) {
	var req api.AddRequest
	mt, err := httpMediaType(r)
	if err != nil {
		return req, nil, err
	}
	p := httpParams{v: r.URL.Query()}
	var text []byte
	switch {
	case mt == "application/json":
		body, err := readHTTPBody(r)
		if err != nil {
			return req, nil, err
		}
		if err := decodeHTTPJSON(body, &req); err != nil {
			return req, nil, err
		}
		if len(r.URL.Query()) > 0 {
			return req, nil, httpBadRequest("an add sent as JSON takes no query parameters")
		}
		return req, []byte(req.Text), nil
	case mt == "multipart/form-data":
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				return req, nil, err
			}
			return req, nil, httpBadRequest("read the form: %v", err)
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			return req, nil, httpBadRequest("the form has no \"file\" part: %v", err)
		}
		defer f.Close()
		if text, err = io.ReadAll(f); err != nil {
			return req, nil, err
		}
		p.v = r.MultipartForm.Value
	case textBody(mt):
		if text, err = readHTTPBody(r); err != nil {
			return req, nil, err
		}
		if mt == "text/html" && p.v.Get("format") == "" {
			p.v.Set("format", "html")
		}
	default:
		return req, nil, unsupportedMedia(mt, "send JSON, text/plain or multipart/form-data")
	}
	p.only(addParamNames...)
	req = api.AddRequest{ID: p.str("id"), Source: p.str("source"), Threshold: p.float("threshold"),
		Reject: p.bool("reject"), Replace: p.bool("replace"), Limit: p.int("limit"),
		TextInput: api.TextInput{Format: p.str("format"), Encoding: p.str("encoding")}}
	return req, text, p.err
}

// add is POST /v1/documents: the document is fingerprinted here, its
// stored version read (for replaced and unchanged), then checked against
// the whole cluster and appended by one Router.Add.
func (h *httpHandler) add(w http.ResponseWriter, r *http.Request) error {
	req, text, err := readAdd(r)
	if err != nil {
		return err
	}
	if req.ID == "" {
		return httpBadRequest("the document needs an id")
	}
	to, err := httpTextOptions(req.TextInput)
	if err != nil {
		return err
	}
	switch {
	case req.Threshold < 0 || req.Limit < 0:
		return httpBadRequest("threshold %v and limit %d must not be negative", req.Threshold, req.Limit)
	case req.Reject && req.Threshold == 0:
		return httpBadRequest("reject needs a threshold")
	case req.Threshold != 0:
		if err := validHTTPThreshold(fmt.Sprintf("add %q", req.ID), req.Threshold); err != nil {
			return err
		}
	}
	if req.Replace {
		return notServed("replace (storing anew a document whose content is unchanged)")
	}
	if text == nil {
		text = []byte{}
	}
	ctx := r.Context()
	doc, err := h.r.gw.Prepare(ctx, db.Input{ID: req.ID, Text: text, Source: req.Source, TextOptions: to})
	if err != nil {
		return err
	}
	prev, err := h.stored(ctx, req.ID)
	if err != nil {
		return err
	}
	res, err := h.r.Add(ctx, []db.Input{fpInput(doc)}, AddOptions{Threshold: req.Threshold, Reject: req.Reject})
	if err != nil {
		return err
	}
	ar := res[0]
	ms := ar.Matches
	if req.Limit > 0 && len(ms) > req.Limit {
		ms = ms[:req.Limit]
	}
	// A replica leaves a document of unchanged content as it is: report it
	// as the single-node server does.
	unchanged := ar.Stored && sameContent(prev, doc)
	out := api.AddResult{ID: req.ID, Stored: ar.Stored && !unchanged, Replaced: ar.Stored && prev != nil && !unchanged,
		Unchanged: unchanged, Rejected: !ar.Stored, Matches: apiMatches(ms)}
	status := http.StatusOK
	if out.Stored {
		status = http.StatusCreated
	}
	return writeHTTPJSON(w, status, out)
}

// get is GET /v1/documents/{id...}.
func (h *httpHandler) get(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := validHTTPID(id); err != nil {
		return fmt.Errorf("get: %w", err)
	}
	doc, err := h.r.Get(r.Context(), id, h.r.Written())
	if err != nil {
		return err
	}
	return writeHTTPJSON(w, http.StatusOK, api.Doc{ID: doc.ID, Source: doc.Source, Size: doc.Size, Words: doc.Words,
		Shingles: doc.Shingles, Added: doc.Added.Format(time.RFC3339Nano), ContentHash: hex.EncodeToString(doc.ContentHash[:]),
		Fingerprint: db.FormatFingerprint(doc.Fingerprint)})
}

// deleteOne is DELETE /v1/documents/{id...} (?dry_run=true reports
// without deleting): 404 when the document is absent.
func (h *httpHandler) deleteOne(w http.ResponseWriter, r *http.Request) error {
	p := httpParams{v: r.URL.Query()}
	p.only("dry_run", "forget")
	dry, forget := p.bool("dry_run"), p.bool("forget")
	if p.err != nil {
		return p.err
	}
	if forget {
		return notServed("forget (a cluster keeps no audit log)")
	}
	id := r.PathValue("id")
	if err := validHTTPID(id); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	ctx := r.Context()
	d, err := h.stored(ctx, id)
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("%q: %w", id, db.ErrNotFound)
	}
	if dry {
		return writeHTTPJSON(w, http.StatusOK, api.DeleteResult{Deleted: 1, DryRun: true})
	}
	if _, err := h.r.Delete(ctx, []string{id}); err != nil {
		return err
	}
	return writeHTTPJSON(w, http.StatusOK, api.DeleteResult{Deleted: 1})
}

// queryParamNames are the parameters of a query sent as a plain body.
var queryParamNames = []string{"threshold", "containment", "limit", "plan", "tau", "recall", "explain", "format", "encoding"}

// readQuery reads a query as the single-node server does: JSON, or a
// plain body with its parameters in the query string.
func readQuery(r *http.Request) (api.QueryRequest, error) {
	var req api.QueryRequest
	mt, err := httpMediaType(r)
	if err != nil {
		return req, err
	}
	body, err := readHTTPBody(r)
	if err != nil {
		return req, err
	}
	if mt == "application/json" {
		if len(r.URL.Query()) > 0 {
			return req, httpBadRequest("a query sent as JSON takes no query parameters")
		}
		return req, decodeHTTPJSON(body, &req)
	}
	if !textBody(mt) {
		return req, unsupportedMedia(mt, "send JSON or the text as text/plain")
	}
	p := httpParams{v: r.URL.Query()}
	p.only(queryParamNames...)
	req = api.QueryRequest{Text: string(body), Threshold: p.float("threshold"), Containment: p.float("containment"),
		Limit: p.int("limit"), Plan: p.str("plan"), Recall: p.float("recall"), Explain: p.bool("explain"),
		TextInput: api.TextInput{Format: p.str("format"), Encoding: p.str("encoding")}}
	if mt == "text/html" && req.Format == "" {
		req.Format = "html"
	}
	if p.str("tau") != "" {
		tau := p.int("tau")
		req.Tau = &tau
	}
	return req, p.err
}

// query is POST /v1/query: a text (fingerprinted here) or a fingerprint,
// asked of every shard.
func (h *httpHandler) query(w http.ResponseWriter, r *http.Request) error {
	req, err := readQuery(r)
	if err != nil {
		return err
	}
	if (req.Text == "") == (req.Fingerprint == "") {
		return httpBadRequest("give a text or a fingerprint (one of them)")
	}
	switch req.Plan {
	case "", "auto":
	case "scan", "probe", "approx":
		return notServed("plan %q (each shard chooses its own exact plan)", req.Plan)
	default:
		return httpBadRequest("plan %q: want auto, scan, probe or approx", req.Plan)
	}
	if req.Tau != nil {
		return httpBadRequest("tau goes with plan \"probe\"")
	}
	if req.Explain {
		return notServed("explain")
	}
	to, err := httpTextOptions(req.TextInput)
	if err != nil {
		return err
	}
	o := QueryOptions{Threshold: req.Threshold, Containment: req.Containment, Limit: req.Limit, MinSeq: h.r.Written()}
	if o.Threshold == 0 && o.Containment == 0 {
		o.Threshold = httpDefaultThreshold
	}
	switch {
	case o.Containment != 0 && (math.IsNaN(o.Containment) || o.Containment < 0 || o.Containment > 1):
		return fmt.Errorf("query: %w: Containment %v is not in (0, 1]", db.ErrInvalidOptions, o.Containment)
	case o.Containment == 0 || o.Threshold != 0:
		if err := validHTTPThreshold("query", o.Threshold); err != nil {
			return err
		}
	}
	switch {
	case o.Limit < 0:
		return httpBadRequest("negative limit %d", o.Limit)
	case req.Shingles < 0:
		return fmt.Errorf("query: %w: negative Shingles %d", db.ErrInvalidOptions, req.Shingles)
	}
	ctx := r.Context()
	var doc *db.Doc
	if req.Fingerprint != "" {
		fp, err := bitvec.ParseHex(req.Fingerprint, h.n.smap.K)
		if err != nil {
			return httpBadRequest("fingerprint: %v", err)
		}
		if o.Containment > 0 && req.Shingles == 0 {
			return fmt.Errorf("query: %w: Containment needs the query's shingle count (shingles with a fingerprint)", db.ErrInvalidOptions)
		}
		doc = &db.Doc{Fingerprint: fp, Shingles: req.Shingles}
	} else if doc, err = h.r.gw.Prepare(ctx, db.Input{ID: "query", Text: []byte(req.Text), TextOptions: to}); err != nil {
		return err
	}
	ms, err := h.r.QueryDoc(ctx, doc, o)
	if err != nil {
		return err
	}
	return writeHTTPJSON(w, http.StatusOK, api.QueryResult{Matches: apiMatches(ms)})
}

// stats is GET /v1/stats: the documents of every shard and the cluster's
// creation parameters; what a cluster does not know (disk bytes, creation
// time) is zero.
func (h *httpHandler) stats(w http.ResponseWriter, r *http.Request) error {
	p := httpParams{v: r.URL.Query()}
	p.only("storage")
	storage := p.bool("storage")
	if p.err != nil {
		return p.err
	}
	if storage {
		return notServed("storage statistics (storage=true)")
	}
	n, err := h.r.Len(r.Context(), h.r.Written())
	if err != nil {
		return err
	}
	m := h.n.smap
	gp := h.r.gw.Params() // the shards' format and the normalization texts are fingerprinted with
	return writeHTTPJSON(w, http.StatusOK, api.Stats{Docs: n, K: m.K, GroupWidths: slices.Clone(m.GroupWidths),
		ShingleWidth: m.ShingleWidth, Seed: m.Seed, FormatVersion: gp.FormatVersion, NormalizeVersion: gp.NormalizeVersion})
}

// httpNDJSON writes a stream of JSON lines, flushed at least every
// httpFlushEvery. Nothing is sent before the first flush, so that an error
// before then is still answered with its status.
type httpNDJSON struct {
	w       http.ResponseWriter
	sink    *httpSink
	bw      *bufio.Writer
	enc     *json.Encoder
	flushed time.Time
}

// httpSink is the response body under a stream's buffer; it notes whether
// anything was written.
type httpSink struct {
	w     http.ResponseWriter
	wrote bool
}

func (s *httpSink) Write(p []byte) (int, error) {
	s.wrote = true
	return s.w.Write(p)
}

func newHTTPNDJSON(w http.ResponseWriter) *httpNDJSON {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	sk := &httpSink{w: w}
	s := &httpNDJSON{w: w, sink: sk, bw: bufio.NewWriterSize(sk, 32<<10), flushed: time.Now()}
	s.enc = json.NewEncoder(s.bw)
	s.enc.SetEscapeHTML(false)
	return s
}

func (s *httpNDJSON) send(ctx context.Context, v any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enc.Encode(v); err != nil {
		return fmt.Errorf("write the stream: %w", err)
	}
	if time.Since(s.flushed) >= httpFlushEvery {
		return s.flush()
	}
	return nil
}

func (s *httpNDJSON) flush() error {
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
// anything was sent it returns the error, to be answered as any other;
// after, it cuts the connection off, so that the client sees a broken
// response rather than a short list that looks complete.
func (s *httpNDJSON) end(err error) error {
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

// thresholdParam reads the required threshold of pairs and clusters.
func thresholdParam(p *httpParams, what string) float64 {
	if p.str("threshold") == "" && p.err == nil {
		p.err = httpBadRequest("parameter threshold is required: the least resemblance, in (0, 1]")
		return 0
	}
	th := p.float("threshold")
	if p.err == nil {
		p.err = validHTTPThreshold(what, th)
	}
	return th
}

// pairs is GET /v1/pairs?threshold=R: every pair of stored near
// duplicates at one log sequence (a pin appended after this node's
// writes), one api.Pair per line, A < B by id.
func (h *httpHandler) pairs(w http.ResponseWriter, r *http.Request) error {
	p := httpParams{v: r.URL.Query()}
	p.only("threshold")
	th := thresholdParam(&p, "pairs")
	if p.err != nil {
		return p.err
	}
	ctx := r.Context()
	pr, err := h.r.Pairs(ctx, th)
	if err != nil {
		return err
	}
	out := newHTTPNDJSON(w)
	for _, e := range pr.Pairs {
		if err := out.send(ctx, apiconv.Pair(e)); err != nil {
			return out.end(err)
		}
	}
	return out.end(nil)
}

// clusters is GET /v1/clusters?threshold=R[&keep=P]: the connected
// components of the pairs, largest first, one api.Cluster per line. The
// members are read (at the pairs' sequence) for their order (by time
// added, then id), the keep policy and the cohesion.
func (h *httpHandler) clusters(w http.ResponseWriter, r *http.Request) error {
	p := httpParams{v: r.URL.Query()}
	p.only("threshold", "centers", "keep", "max_size")
	th := thresholdParam(&p, "clusters")
	maxSize := p.int("max_size")
	centers := p.bool("centers")
	if p.err != nil {
		return p.err
	}
	keep, ok := apiconv.Keep(p.str("keep"))
	switch {
	case !ok:
		return httpBadRequest("parameter keep=%q: want oldest, newest, first, longest or shortest", p.str("keep"))
	case maxSize < 0 || maxSize == 1:
		return httpBadRequest("parameter max_size=%d: want 0 (no limit) or at least 2", maxSize)
	case maxSize > 0 && !centers:
		return httpBadRequest("parameter max_size needs centers=true (a chain of near duplicates cannot be cut)")
	case centers:
		return notServed("centers=true")
	}
	ctx := r.Context()
	pr, err := h.r.Pairs(ctx, th)
	if err != nil {
		return err
	}
	comps := Components(pr.Pairs)
	var members []string
	for _, c := range comps {
		members = append(members, c...)
	}
	docs, err := h.getMany(ctx, members, pr.Pin)
	if err != nil {
		return err
	}
	cs := make([]api.Cluster, len(comps))
	of := make(map[string]int, len(members))
	for i, ids := range comps {
		for _, id := range ids {
			of[id] = i
		}
	}
	for _, e := range pr.Pairs {
		cs[of[e.A]].Pairs++
	}
	for i, ids := range comps {
		c := &cs[i]
		c.IDs = slices.Clone(ids)
		// Storing order, as well as the cluster knows it: time added, then
		// id; a member deleted since the pin last.
		slices.SortFunc(c.IDs, func(a, b string) int {
			da, dbb := docs[a], docs[b]
			switch {
			case (da == nil) != (dbb == nil):
				if da == nil {
					return 1
				}
				return -1
			case da != nil:
				if x := da.Added.Compare(dbb.Added); x != 0 {
					return x
				}
			}
			return strings.Compare(a, b)
		})
		c.Size = len(c.IDs)
		k := -1
		if keep != db.KeepNone {
			k = 0
			for j := range c.IDs {
				if keepBefore(docs[c.IDs[j]], docs[c.IDs[k]], c.IDs[j], c.IDs[k], keep) {
					k = j
				}
			}
		}
		center := max(k, 0)
		c.Center = c.IDs[center]
		c.Cohesion = 1
		if cd := docs[c.Center]; cd != nil {
			for _, id := range c.IDs {
				if d := docs[id]; d != nil && len(d.Fingerprint) == len(cd.Fingerprint) {
					c.Cohesion = min(c.Cohesion, index.Similarity(h.n.smap.K, bitvec.Hamming(d.Fingerprint, cd.Fingerprint)))
				}
			}
		}
		if k >= 0 {
			c.Keep = c.IDs[k]
			c.Drop = slices.Concat(c.IDs[:k], c.IDs[k+1:])
		}
	}
	slices.SortFunc(cs, func(a, b api.Cluster) int {
		if x := cmp.Compare(b.Size, a.Size); x != 0 {
			return x
		}
		return strings.Compare(a.IDs[0], b.IDs[0])
	})
	out := newHTTPNDJSON(w)
	for i := range cs {
		cs[i].Cluster = i + 1
		if err := out.send(ctx, cs[i]); err != nil {
			return out.end(err)
		}
	}
	return out.end(nil)
}

// keepBefore reports whether member a (document da, nil if deleted since
// the pin) comes before b under the keep policy; ties keep the earlier in
// storing order, except under newest.
func keepBefore(da, dbb *db.Doc, a, b string, k db.Keep) bool {
	if (da == nil) != (dbb == nil) {
		return da != nil
	}
	if da == nil {
		return false
	}
	switch k {
	case db.KeepOldest:
		return da.Added.Before(dbb.Added)
	case db.KeepNewest:
		return !da.Added.Before(dbb.Added) && a != b
	case db.KeepFirst:
		return a < b
	case db.KeepLongest:
		return da.Words > dbb.Words
	case db.KeepShortest:
		return da.Words < dbb.Words
	}
	return false
}

// batchParsed is a document of a batch and the body line it came from.
type batchParsed struct {
	line int
	req  api.AddRequest
	to   db.TextOptions
}

// batch is POST /v1/batch: one api.AddRequest per line, without check,
// appended by one Router.Add (one log message: the batch is stored whole
// or not at all). Every line is read and checked first; lines whose id
// was given before, or whose text cannot be fingerprinted, are skipped.
func (h *httpHandler) batch(w http.ResponseWriter, r *http.Request) error {
	mt, err := httpMediaType(r)
	if err != nil {
		return err
	}
	switch mt {
	case "", "application/x-ndjson", "application/jsonl", "application/json", "text/plain":
	default:
		return unsupportedMedia(mt, "send JSON lines (application/x-ndjson)")
	}
	if len(r.URL.Query()) > 0 {
		return httpBadRequest("a batch takes no query parameters")
	}
	body, err := readHTTPBody(r)
	if err != nil {
		return err
	}
	if !utf8.Valid(body) {
		return httpBadRequest("the body is not valid UTF-8")
	}
	var lines []batchParsed
	for n, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var req api.AddRequest
		if err := decodeHTTPJSON(line, &req); err != nil {
			return httpBadRequest("line %d: %v", n+1, err)
		}
		switch {
		case req.ID == "":
			return httpBadRequest("line %d: the document needs an id", n+1)
		case req.Threshold != 0 || req.Reject || req.Limit != 0:
			return httpBadRequest("line %d (id %q): threshold, reject and limit are not allowed in a batch, which checks nothing (add it with POST /v1/documents)", n+1, req.ID)
		case req.Replace:
			return notServed("line %d (id %q): replace", n+1, req.ID)
		}
		to, err := httpTextOptions(req.TextInput)
		if err != nil {
			return httpBadRequest("line %d (id %q): %v", n+1, req.ID, err)
		}
		lines = append(lines, batchParsed{line: n + 1, req: req, to: to})
	}
	ctx := r.Context()
	res := api.BatchResult{Skipped: []api.BatchSkip{}}
	seen := make(map[string]bool, len(lines))
	var docs []*db.Doc
	size := 0
	for _, l := range lines {
		if seen[l.req.ID] {
			res.Skipped = append(res.Skipped, api.BatchSkip{Line: l.line, ID: l.req.ID, Error: db.ErrDuplicateInBatch.Error()})
			continue
		}
		seen[l.req.ID] = true
		doc, err := h.r.gw.Prepare(ctx, db.Input{ID: l.req.ID, Text: []byte(l.req.Text), Source: l.req.Source, TextOptions: l.to})
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, db.ErrClosed) {
				return err
			}
			res.Skipped = append(res.Skipped, api.BatchSkip{Line: l.line, ID: l.req.ID, Error: err.Error()})
			continue
		}
		docs = append(docs, doc)
		size += 8*len(doc.Fingerprint) + len(doc.ID) + len(doc.Source) + 64
	}
	if size > httpMaxLogMessageBytes {
		return &httpError{status: http.StatusRequestEntityTooLarge, code: api.CodeTooLarge,
			msg: fmt.Sprintf("a batch of %d documents is about %d bytes in the log, more than its %d: send fewer documents per batch", len(docs), size, httpMaxLogMessageBytes)}
	}
	if len(docs) > 0 {
		ids := make([]string, len(docs))
		ins := make([]db.Input, len(docs))
		for i, d := range docs {
			ids[i], ins[i] = d.ID, fpInput(d)
		}
		seq, err := h.latest(ctx)
		if err != nil {
			return err
		}
		prev, err := h.getMany(ctx, ids, seq)
		if err != nil {
			return err
		}
		if _, err := h.r.Add(ctx, ins, AddOptions{}); err != nil {
			return err
		}
		for _, d := range docs {
			switch p := prev[d.ID]; {
			case sameContent(p, d):
				res.Unchanged++
			case p != nil:
				res.Stored++
				res.Replaced++
			default:
				res.Stored++
			}
		}
	}
	slices.SortFunc(res.Skipped, func(a, b api.BatchSkip) int { return a.Line - b.Line })
	return writeHTTPJSON(w, http.StatusOK, res)
}

// deleteMany is POST /v1/delete: by ids (or with dry_run how many of them
// are stored); by prefix or age answers 501.
func (h *httpHandler) deleteMany(w http.ResponseWriter, r *http.Request) error {
	body, err := readHTTPBody(r)
	if err != nil {
		return err
	}
	var req api.DeleteRequest
	if err := decodeHTTPJSON(body, &req); err != nil {
		return err
	}
	var given struct {
		IDs       *[]string `json:"ids"`
		Prefix    *string   `json:"prefix"`
		OlderThan *string   `json:"older_than"`
	}
	_ = json.Unmarshal(body, &given)
	var sel []string
	for _, s := range []struct {
		name string
		set  bool
	}{{"ids", given.IDs != nil}, {"older_than", given.OlderThan != nil}, {"prefix", given.Prefix != nil}} {
		if s.set {
			sel = append(sel, s.name)
		}
	}
	switch {
	case len(sel) != 1:
		return httpBadRequest("give exactly one of ids, prefix and older_than (got %d: %s)", len(sel), strings.Join(sel, ", "))
	case given.Prefix != nil:
		return notServed("delete by prefix")
	case given.OlderThan != nil:
		return notServed("delete by age (older_than)")
	case len(req.IDs) == 0:
		return httpBadRequest("ids is empty")
	case req.Forget:
		return notServed("forget (a cluster keeps no audit log)")
	}
	seen := make(map[string]bool, len(req.IDs))
	var uniq []string
	for _, id := range req.IDs {
		if err := validHTTPID(id); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	ctx := r.Context()
	seq, err := h.latest(ctx)
	if err != nil {
		return err
	}
	have, err := h.getMany(ctx, uniq, seq)
	if err != nil {
		return err
	}
	res := api.DeleteResult{DryRun: req.DryRun}
	var del []string
	for _, id := range uniq {
		if have[id] != nil {
			del = append(del, id)
		} else {
			res.NotFound = append(res.NotFound, id)
		}
	}
	if req.DryRun {
		res.Deleted = len(del)
		return writeHTTPJSON(w, http.StatusOK, res)
	}
	for lo := 0; lo < len(del); {
		hi, size := lo, 0
		for hi < len(del) && (hi == lo || size+len(del[hi])+8 <= httpDeleteChunkBytes) {
			size += len(del[hi]) + 8
			hi++
		}
		if _, err := h.r.Delete(ctx, del[lo:hi]); err != nil {
			if lo == 0 {
				return err
			}
			return &httpError{status: http.StatusServiceUnavailable, code: api.CodeUnavailable,
				msg: fmt.Sprintf("the delete stopped after %d documents deleted: %v", res.Deleted, err)}
		}
		res.Deleted += hi - lo
		lo = hi
	}
	return writeHTTPJSON(w, http.StatusOK, res)
}
