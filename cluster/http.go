package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/index"
	"github.com/fpdb/fpdb/internal/bitvec"
	"github.com/fpdb/fpdb/server"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/fpdb/fpdb/server/httpapi"
	"github.com/fpdb/fpdb/server/metrics"
)

// HTTPOptions configure a node's HTTP handler (Node.Handler). The zero
// value (or nil) is usable: a zero or negative field means its default.
type HTTPOptions struct {
	// Tokens, when not nil, are the bearer tokens every /v1 request needs
	// (the header "Authorization: Bearer TOKEN"): read-only tokens may
	// read, read-write tokens may also write, as with the single-node
	// server's server.Options.Tokens (read by server.LoadTokens or
	// server.ParseTokens). Nil: no token is needed.
	Tokens *server.Tokens
	// MaxBodyBytes is the largest request body accepted; a larger one is
	// answered 413 (default 64 MiB, as the single-node server).
	// MaxImportBytes is that of POST /v1/import, whose body is an export
	// (default server.DefaultMaxImportBytes).
	MaxBodyBytes, MaxImportBytes int64
	// MaxImportText is the longest text a line of POST /v1/import's export
	// leaves room for: each line is read up to the bound it sets
	// (httpapi.ImportLineLimits), and a longer line is answered 413
	// (default db.DefaultMaxTextSize, what a single server's database
	// takes by default: lines of about 385 to 391 MiB).
	MaxImportText int64
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
	defaultHTTPMaxBody    = 64 << 20
	defaultHTTPTimeout    = 60 * time.Second
	defaultHTTPStream     = 30 * time.Minute
	defaultHTTPConcurrent = 64
	defaultHTTPReady      = 2 * time.Second
	httpGetChunk          = 1000    // ids per shard get request
	httpDeleteChunkBytes  = 4 << 20 // ids per delete log message
)

// codeNotImplemented is the error code of a route or option a cluster
// node does not serve (status 501). The api package has no constant for
// it: a client sees an *Error with this Code and no sentinel.
const codeNotImplemented = "not_implemented"

// CodeOutcomeUnknown is the error code of a write whose outcome is unknown
// (status 504, the Go error ErrOutcomeUnknown): its log message was sent
// and the log's answer did not come, so that it may or may not be done.
// A write that a node knows it did not do is answered otherwise (408 when
// the request's time ran out before its message was sent). A Go client
// matches it with client.ErrOutcomeUnknown.
const CodeOutcomeUnknown = api.CodeOutcomeUnknown

// Handler returns the node's HTTP API: the paths, request and response
// bodies (package api) and statuses of the single-node server (package
// server) for health, adds (with check-then-add across the cluster),
// get, delete, query, stats, pairs, clusters, batch (checked or not),
// delete by ids, prefix or age, export and import, served through the
// node's Router; compare (of two texts), the review page and the OpenAPI
// document. Every read asks the
// shards for a log sequence of at least the last this node appended (read-your-writes for
// a client of one node; a client that writes through one node and reads
// through another may not see its write at once). The checks of writes
// (is the document stored, for a delete's 404 and an add's replaced or
// unchanged) read at the log's last sequence, so that they see the writes
// of every node.
//
// Requests are read and answered by the single-node server's own code
// (package server/httpapi): the request id, tokens, limits, error bodies
// and log lines are the same.
//
// Differences with the single-node server: a comparison with a stored
// document is answered 400 (db.ErrNoText: a cluster keeps no texts); the
// other routes (log, templates, backup) answer 501, as do the options a cluster cannot honour
// (replace, forget, query plans and explain, centers); storage statistics
// are the sums over the shards; pairs are oriented A < B by id, not by
// storing order; a cluster's members are in the order of their times
// added; the ids of a dry-run delete by prefix or age are sorted by id,
// and so are the documents of an export (which has no texts or audit
// log); an import leaves an export's texts and audit log behind, and
// counts them;
// /metrics gives the node's figures (its router's, and each shard
// replica's it holds, labeled by shard: package cluster's
// nodeCollector) beside its HTTP requests. An unavailable shard is a 503,
// except to a plain add, a delete by id and an unchecked batch: those are
// appended to the log all the same and answered 202 Accepted with
// "pending" (applied when a replica of the shard returns: see the Pending
// fields of api.AddResult, api.BatchResult and api.DeleteResult).
// A write whose request time runs out before its log message is sent is
// a 408, and not done; once sent, the answer waits for the log's, past
// the request's time (up to outcomeWait more), and when that does not
// come it is a 504 of code CodeOutcomeUnknown: the write may or may not
// be done, and the message says how to learn which.
func (n *Node) Handler(opts *HTTPOptions) http.Handler {
	o := opts.withDefaults(n.opts.Logger)
	h := &httpHandler{n: n, r: n.r, o: o, requests: metrics.NewHTTP(), compareSlots: server.NewCompareSlots()}
	mh, err := n.metricsHandler(h.requests)
	if err != nil {
		o.Logger.Error("no metrics", "err", err)
	}
	h.metricsPage = mh
	return httpapi.NewMux(h.routes(), o.mux(n.opts.Name, h.requests.Observe))
}

// withDefaults returns a copy of o (of a nil o, the zero HTTPOptions)
// with every zero or negative field at its default; logger is the
// default Logger.
func (o *HTTPOptions) withDefaults(logger *slog.Logger) HTTPOptions {
	var c HTTPOptions
	if o != nil {
		c = *o
	}
	c.fillDefaults(logger)
	return c
}

// fillDefaults sets every zero or negative field of o to its default.
func (o *HTTPOptions) fillDefaults(logger *slog.Logger) {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultHTTPMaxBody
	}
	if o.MaxImportBytes <= 0 {
		o.MaxImportBytes = server.DefaultMaxImportBytes
	}
	if o.MaxImportText <= 0 {
		o.MaxImportText = db.DefaultMaxTextSize
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
		o.Logger = logger
	}
}

// mux returns the options of the API's httpapi.NewMux for the node
// named node; observe (nil: none) is told of each request answered.
func (o *HTTPOptions) mux(node string, observe func(pattern, method string, status int, took time.Duration)) httpapi.Options {
	return httpapi.Options{Tokens: o.Tokens, MaxBodyBytes: o.MaxBodyBytes, MaxImportBytes: o.MaxImportBytes,
		RequestTimeout: o.RequestTimeout, StreamTimeout: o.StreamTimeout, MaxConcurrent: o.MaxConcurrent,
		Logger: o.Logger, LogAttrs: []any{"node", node}, Errors: httpErrors, Observe: observe}
}

// startingRetry is the Retry-After, in seconds, of the answers of a node
// that is starting.
const startingRetry = 1

// StartingHandler returns the HTTP API of the node named node while it
// starts (Start has not returned: it joins its peers, reads the shard map
// and opens its replicas, up to Options.StartTimeout), so that its
// address answers at once rather than leave connections waiting:
// /healthz answers 200 (the process is alive), /readyz 503 saying that
// the node is forming the cluster, and every other route 503 (code
// unavailable, with Retry-After) in the API's error body, saying that the
// node is starting. Tokens and the other limits of opts apply as in
// Node.Handler. A server switches to Node.Handler once Start returns.
//
// These 503s are not failures, and are not logged at ERROR as other 5xx
// answers are: the first /readyz answer is logged at INFO and the next
// ones (a readiness probe asks about twice a second) at DEBUG; another
// route's answer is logged at WARN (see startingLog).
func StartingHandler(node string, opts *HTTPOptions) http.Handler {
	o := opts.withDefaults(nil)
	starting := func(r *http.Request, k startingKind, what string) error {
		markStarting(r.Context(), k)
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, RetryAfter: startingRetry,
			Message: fmt.Sprintf("cluster node %s is starting: %s; try again shortly", node, what)}
	}
	hs := httpapi.Handlers{
		Healthz: healthz,
		Readyz: func(_ http.ResponseWriter, r *http.Request) error {
			return starting(r, startingReady, "forming the cluster (joining its peers, reading the shard map, opening its shard replicas)")
		},
	}
	mo := o.mux(node, nil)
	mo.Logger = newStartingLog(o.Logger)
	mux := httpapi.NewMux(hs.Routes(func(httpapi.Route) httpapi.HandlerFunc {
		return func(_ http.ResponseWriter, r *http.Request) error {
			return starting(r, startingAPI, "it serves the API once it has joined the cluster")
		}
	}), mo)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, withStartingMark(r))
	})
}

type httpHandler struct {
	n *Node
	r *Router
	o HTTPOptions
	// requests counts the requests answered; metricsPage serves them and
	// the node's figures (nil when they could not be registered).
	requests    *metrics.HTTP
	metricsPage http.Handler
	// compareSlots bound the comparisons run at once (server.CompareSlots).
	compareSlots server.CompareSlots
}

// routes are the single-node server's routes (httpapi.Handlers), each
// served or, without a handler here, answered 501.
func (h *httpHandler) routes() []httpapi.Route {
	hs := httpapi.Handlers{Healthz: healthz, Readyz: h.readyz, Page: server.ServePage, Asset: server.ServeAsset,
		OpenAPI: server.ServeOpenAPI, Add: h.add, Get: h.get, DeleteOne: h.deleteOne,
		Query: h.query, Stats: h.stats, Pairs: h.pairs, Clusters: h.clusters, Batch: h.batch, DeleteMany: h.deleteMany,
		Compare: h.compare, Export: h.export, Import: h.importExport, Metrics: h.metrics}
	return hs.Routes(func(rt httpapi.Route) httpapi.HandlerFunc {
		why := ""
		switch rt.Pattern {
		case "/v1/log":
			why = " (a cluster keeps no audit log)"
		case "/v1/templates", "/v1/templates/{name}":
			why = " (a cluster keeps no templates)"
		case "/v1/backup":
			why = " (GET /v1/export writes every document as of one log sequence; fpdb import reads it back)"
		}
		return func(http.ResponseWriter, *http.Request) error {
			return notServed("%s %s%s", rt.Method, rt.Pattern, why)
		}
	})
}

// notServed is the error of a route or option a cluster node does not
// serve.
func notServed(format string, args ...any) error {
	return &httpapi.Error{Status: http.StatusNotImplemented, Code: codeNotImplemented,
		Message: fmt.Sprintf(format, args...) + " is not served by a cluster node"}
}

// httpErrors are the statuses and codes of the cluster's and the db's
// errors (beyond those of every httpapi.Classify: an *httpapi.Error's own,
// 413 for a body, a text or an export's line too large), the first that
// matches.
var httpErrors = []httpapi.Class{
	{Status: http.StatusGatewayTimeout, Code: CodeOutcomeUnknown, Errs: []error{ErrOutcomeUnknown}},
	{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable,
		Errs: []error{ErrShardUnavailable, ErrLogUnavailable, ErrClosed, db.ErrClosed, context.Canceled}, RetryAfter: 1},
	{Status: http.StatusRequestTimeout, Code: api.CodeTimeout, Errs: []error{os.ErrDeadlineExceeded, context.DeadlineExceeded}},
	{Status: http.StatusNotFound, Code: api.CodeNotFound, Errs: []error{db.ErrNotFound}},
	{Status: http.StatusBadRequest, Code: api.CodeBadRequest,
		Errs: slices.Concat(httpapi.InputErrors, []error{ErrInvalidOptions, db.ErrBadExport, db.ErrNotEmpty, db.ErrEmptyPrefix}),
		As:   func(err error) bool { return errors.As(err, new(*db.ParamsError)) }},
}

// unknownOutcome returns the answer (504, CodeOutcomeUnknown) of a write
// whose outcome is unknown, when err wraps ErrOutcomeUnknown (else nil):
// the message formatted by format and args says what may be done and how
// to learn it, then err's.
func unknownOutcome(err error, format string, args ...any) error {
	if !errors.Is(err, ErrOutcomeUnknown) {
		return nil
	}
	return &httpapi.Error{Status: http.StatusGatewayTimeout, Code: CodeOutcomeUnknown,
		Message: fmt.Sprintf(format, args...) + " (" + apiconv.Message(err) + ")"}
}

// resendSafe says why sending documents again after an unknown outcome
// is safe.
const resendSafe = "an add of a stored document's id and content changes nothing and is answered unchanged"

// validHTTPID checks an id as the db package does, so that a delete of an
// invalid id is refused before it reaches the router.
func validHTTPID(id string) error { return db.ValidID(id) }

// validHTTPThreshold checks a threshold of what as the db package does,
// so that the shards are not asked about an invalid one.
func validHTTPThreshold(what string, t float64) error {
	if math.IsNaN(t) || t <= 0 || t > 1 {
		return fmt.Errorf("%s: %w: got %v", what, db.ErrInvalidThreshold, t)
	}
	return nil
}

// validThresholdOf returns the check of the threshold parameter of what
// (pairs, clusters): see httpapi.Params.Threshold.
func validThresholdOf(what string) func(float64) error {
	return func(t float64) error { return validHTTPThreshold(what, t) }
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
	docs, _, err := h.getShards(ctx, ids, minSeq, false)
	return docs, err
}

// getAvailable is getMany where a shard that no replica answers
// (ErrShardUnavailable) is no error: its ids are left out of docs and
// listed in down instead.
func (h *httpHandler) getAvailable(ctx context.Context, ids []string, minSeq uint64) (docs map[string]*db.Doc, down map[string]bool, err error) {
	return h.getShards(ctx, ids, minSeq, true)
}

// getShards is getMany; with tolerate, getAvailable.
func (h *httpHandler) getShards(ctx context.Context, ids []string, minSeq uint64, tolerate bool) (map[string]*db.Doc, map[string]bool, error) {
	r := h.r
	byShard := map[int][]string{}
	for _, id := range ids {
		s := Shard(id, r.smap.Shards)
		byShard[s] = append(byShard[s], id)
	}
	out := make(map[string]*db.Doc, len(ids))
	down := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, 0, len(byShard))
	for s, sids := range byShard {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := 0; lo < len(sids); lo += httpGetChunk {
				chunk := sids[lo:min(lo+httpGetChunk, len(sids))]
				docs, err := h.getChunk(ctx, s, chunk, minSeq)
				mu.Lock()
				switch {
				case err != nil && tolerate && errors.Is(err, ErrShardUnavailable):
					for _, id := range sids[lo:] {
						down[id] = true
					}
				case err != nil:
					errs = append(errs, err)
				default:
					for i, d := range docs {
						if d != nil {
							out[chunk[i]] = d
						}
					}
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return out, down, nil
}

// getChunk returns the stored documents of ids, all of shard s (nil for
// an absent one), at a log sequence of at least minSeq.
func (h *httpHandler) getChunk(ctx context.Context, s int, ids []string, minSeq uint64) ([]*db.Doc, error) {
	r := h.r
	rctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
	defer cancel()
	var rep getReply
	err := r.request(rctx, s, "get", getRequest{IDs: ids, atSeq: atSeq{MinSeq: minSeq, WaitMs: waitMs}}, &rep)
	switch {
	case err != nil:
		return nil, err
	case rep.Err != "":
		return nil, fmt.Errorf("fpdb cluster: shard %d: %s", s, rep.Err)
	case len(rep.Docs) != len(ids):
		return nil, fmt.Errorf("fpdb cluster: shard %d answered %d documents of %d", s, len(rep.Docs), len(ids))
	}
	return rep.Docs, nil
}

// latest returns the log's last sequence: the sequence the checks of the
// writes (is the document stored, is its content unchanged) read at, so
// that they see the writes made through every node, not only this one's.
func (h *httpHandler) latest(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, h.r.opts.RequestTimeout)
	defer cancel()
	seq, err := h.r.LastSeq(ctx)
	if err != nil {
		return 0, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "the write log: " + err.Error(), RetryAfter: 1}
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

// metrics is GET /metrics: the node's figures (its router, its shard
// replicas and their databases, labeled by shard) and its HTTP requests,
// in Prometheus' text format.
func (h *httpHandler) metrics(w http.ResponseWriter, r *http.Request) error {
	if h.metricsPage == nil {
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "no metrics"}
	}
	h.metricsPage.ServeHTTP(w, r)
	return nil
}

// healthz is GET /healthz: the process answers.
func healthz(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err := w.Write([]byte("ok\n"))
	return err
}

// readyz is ready when one replica of every shard answers.
func (h *httpHandler) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), h.o.ReadyTimeout)
	defer cancel()
	if _, err := h.r.Len(ctx, 0); err != nil {
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "shards: " + err.Error(), RetryAfter: 1}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err := w.Write([]byte("ready\n"))
	return err
}

// compare is POST /v1/compare, as the single-node server answers it:
// two texts are compared here (the router's own empty database holds the
// cluster's parameters); a stored document, whose text a cluster does not
// keep, is answered as a database without texts answers it (db.ErrNoText
// when it is stored, db.ErrNotFound otherwise).
func (h *httpHandler) compare(w http.ResponseWriter, r *http.Request) error {
	return server.ServeCompare(w, r, h.r.gw.Params().K, h.compareSlots.Limit(func(ctx context.Context, a, b db.CompareInput, o *db.CompareOptions) (*db.Comparison, error) {
		for _, in := range []db.CompareInput{a, b} {
			if in.ID == "" {
				continue
			}
			if err := validHTTPID(in.ID); err != nil {
				return nil, fmt.Errorf("fpdb cluster: compare: %w", err)
			}
			doc, err := h.stored(ctx, in.ID)
			if err != nil {
				return nil, err
			}
			if doc == nil {
				return nil, fmt.Errorf("fpdb cluster: compare %q: %w", in.ID, db.ErrNotFound)
			}
			return nil, fmt.Errorf("fpdb cluster: compare %q: %w: a cluster keeps no texts (compare two texts instead)", in.ID, db.ErrNoText)
		}
		return h.r.gw.Compare(ctx, a, b, o)
	}))
}

// add is POST /v1/documents: the document is fingerprinted here, its
// stored version read (for replaced and unchanged), then checked against
// the whole cluster and appended by one Router.Add. A plain add (no
// threshold) whose shard no replica answers is appended all the same,
// and answered 202 (api.AddResult.Pending).
func (h *httpHandler) add(w http.ResponseWriter, r *http.Request) error {
	req, in, err := httpapi.ReadAdd(r)
	if err != nil {
		return err
	}
	if req.Threshold != 0 {
		if err := validHTTPThreshold(fmt.Sprintf("add %q", req.ID), req.Threshold); err != nil {
			return err
		}
	}
	if req.Replace {
		return notServed("replace (storing anew a document whose content is unchanged)")
	}
	ctx := r.Context()
	doc, err := h.r.gw.Prepare(ctx, in)
	if err != nil {
		return err
	}
	prev, err := h.stored(ctx, req.ID)
	pending := err != nil && req.Threshold == 0 && errors.Is(err, ErrShardUnavailable)
	if err != nil && !pending {
		return err
	}
	res, err := h.r.Add(ctx, []db.Input{doc.Input()}, AddOptions{Threshold: req.Threshold, Reject: req.Reject})
	if err != nil {
		if u := unknownOutcome(err, "add %q: the outcome is unknown: the document was sent to the write log, whose answer did not come; "+
			"it may or may not be stored (now or shortly). Send the same add again (%s), or GET the document", req.ID, resendSafe); u != nil {
			return u
		}
		return err
	}
	if pending {
		return httpapi.WriteJSON(w, http.StatusAccepted, api.AddResult{ID: req.ID, Stored: true, Matches: []api.Match{}, Pending: true})
	}
	out := addOutcome(req.ID, prev, doc, res[0], req.Limit)
	status := http.StatusOK
	if out.Stored {
		status = http.StatusCreated
	}
	return httpapi.WriteJSON(w, status, out)
}

// addOutcome is the API outcome of the add of doc (id), whose stored
// version was prev (nil when absent), appended or not as ar says, with at
// most limit matches (0: all). A replica leaves a document of unchanged
// content as it is: it is reported as the single-node server does, also
// when Reject refused it (it is stored).
func addOutcome(id string, prev, doc *db.Doc, ar AddResult, limit int) api.AddResult {
	ms := ar.Matches
	if limit > 0 && len(ms) > limit {
		ms = ms[:limit]
	}
	unchanged := sameContent(prev, doc)
	return api.AddResult{ID: id, Stored: ar.Stored && !unchanged, Replaced: ar.Stored && prev != nil && !unchanged,
		Unchanged: unchanged, Rejected: !ar.Stored && !unchanged, Matches: apiconv.Matches(ms)}
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
	return httpapi.WriteJSON(w, http.StatusOK, apiconv.Doc(doc))
}

// deleteOne is DELETE /v1/documents/{id...} (?dry_run=true reports
// without deleting): 404 when the document is absent. When no replica of
// its shard answers, the delete is appended all the same and answered
// 202 (api.DeleteResult.Pending; a dry run is a 503).
func (h *httpHandler) deleteOne(w http.ResponseWriter, r *http.Request) error {
	dry, forget, err := httpapi.ReadDeleteOne(r)
	if err != nil {
		return err
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
	pending := err != nil && !dry && errors.Is(err, ErrShardUnavailable)
	switch {
	case err != nil && !pending:
		return err
	case !pending && d == nil:
		return fmt.Errorf("%q: %w", id, db.ErrNotFound)
	case dry:
		return httpapi.WriteJSON(w, http.StatusOK, api.DeleteResult{Deleted: 1, DryRun: true})
	}
	if _, err := h.r.Delete(ctx, []string{id}); err != nil {
		return err
	}
	if pending {
		return httpapi.WriteJSON(w, http.StatusAccepted, api.DeleteResult{Pending: []string{id}})
	}
	return httpapi.WriteJSON(w, http.StatusOK, api.DeleteResult{Deleted: 1})
}

// query is POST /v1/query: a text (fingerprinted here) or a fingerprint,
// asked of every shard.
func (h *httpHandler) query(w http.ResponseWriter, r *http.Request) error {
	req, err := httpapi.ReadQuery(r)
	if err != nil {
		return err
	}
	switch req.Plan {
	case "", "auto":
	case "scan", "probe", "approx":
		return notServed("plan %q (each shard chooses its own exact plan)", req.Plan)
	default:
		return httpapi.BadRequest("plan %q: want auto, scan, probe or approx", req.Plan)
	}
	if req.Tau != nil {
		return httpapi.BadRequest("tau goes with plan \"probe\"")
	}
	if req.Recall != 0 {
		return httpapi.BadRequest("recall %v goes with plan \"approx\" (the other plans are exact)", req.Recall)
	}
	if req.Explain {
		return notServed("explain")
	}
	to, err := httpapi.TextOptions(req.TextInput)
	if err != nil {
		return err
	}
	o := QueryOptions{Threshold: req.Threshold, Containment: req.Containment, Limit: req.Limit, MinSeq: h.r.Written()}
	if o.Threshold == 0 && o.Containment == 0 {
		o.Threshold = httpapi.DefaultThreshold
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
		return fmt.Errorf("query: %w: negative limit %d", db.ErrInvalidOptions, o.Limit)
	case req.Shingles < 0:
		return fmt.Errorf("query: %w: negative Shingles %d", db.ErrInvalidOptions, req.Shingles)
	}
	ctx := r.Context()
	var doc *db.Doc
	if req.Fingerprint != "" {
		fp, err := bitvec.ParseHex(req.Fingerprint, h.n.smap.K)
		if err != nil {
			return httpapi.BadRequest("fingerprint: %v", err)
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
	return httpapi.WriteJSON(w, http.StatusOK, api.QueryResult{Matches: apiconv.Matches(ms)})
}

// stats is GET /v1/stats: the documents of every shard and the cluster's
// creation parameters; what a cluster does not know (disk bytes, creation
// time) is zero. With storage=true: the shards' statistics summed
// (Router.StorageStats).
func (h *httpHandler) stats(w http.ResponseWriter, r *http.Request) error {
	storage, err := httpapi.ReadFlag(r, "storage")
	if err != nil {
		return err
	}
	if storage {
		st, ss, err := h.r.StorageStats(r.Context(), h.r.Written())
		if err != nil {
			return err
		}
		return httpapi.WriteJSON(w, http.StatusOK, apiconv.StorageStats(st, ss))
	}
	n, err := h.r.Len(r.Context(), h.r.Written())
	if err != nil {
		return err
	}
	m := h.n.smap
	gp := h.r.gw.Params() // the shards' format and the normalization texts are fingerprinted with
	// The cluster was created with its log.
	var created string
	if info := h.r.stream.CachedInfo(); info != nil && !info.Created.IsZero() {
		created = info.Created.Format(time.RFC3339)
	}
	return httpapi.WriteJSON(w, http.StatusOK, api.Stats{Docs: n, K: m.K, GroupWidths: slices.Clone(m.GroupWidths),
		ShingleWidth: m.ShingleWidth, Seed: m.Seed, FormatVersion: gp.FormatVersion, NormalizeVersion: gp.NormalizeVersion, Created: created})
}

// pairs is GET /v1/pairs?threshold=R: every pair of stored near
// duplicates at one log sequence (a pin appended after this node's
// writes), one api.Pair per line, A < B by id.
func (h *httpHandler) pairs(w http.ResponseWriter, r *http.Request) error {
	th, err := httpapi.ReadPairs(r, validThresholdOf("pairs"))
	if err != nil {
		return err
	}
	ctx := r.Context()
	pr, err := h.r.Pairs(ctx, th)
	if err != nil {
		return err
	}
	out := httpapi.NewNDJSON(w)
	for _, e := range pr.Pairs {
		if err := out.Send(ctx, apiconv.Pair(e)); err != nil {
			return out.End(ctx, err)
		}
	}
	return out.End(ctx, nil)
}

// clusters is GET /v1/clusters?threshold=R[&keep=P]: the connected
// components of the pairs, largest first, one api.Cluster per line. The
// members are read (at the pairs' sequence) for their order (by time
// added, then id), the keep policy and the cohesion.
func (h *httpHandler) clusters(w http.ResponseWriter, r *http.Request) error {
	cp, err := httpapi.ReadClusters(r, validThresholdOf("clusters"))
	if err != nil {
		return err
	}
	if cp.Centers {
		return notServed("centers=true")
	}
	keep := cp.Keep
	ctx := r.Context()
	pr, err := h.r.Pairs(ctx, cp.Threshold)
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
					c.Cohesion = min(c.Cohesion, max(0, index.Similarity(h.n.smap.K, bitvec.Hamming(d.Fingerprint, cd.Fingerprint))))
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
	out := httpapi.NewNDJSON(w)
	for i := range cs {
		cs[i].Cluster = i + 1
		if err := out.Send(ctx, cs[i]); err != nil {
			return out.End(ctx, err)
		}
	}
	return out.End(ctx, nil)
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

// batch is POST /v1/batch: one api.AddRequest per line (with ?threshold=R,
// checkedBatch). Without check, the lines are appended by one Router.Add:
// every line is read and checked first, and lines whose id an earlier line
// has, or whose text cannot be fingerprinted, are skipped. A batch whose
// log entries fit in one log message is appended whole or not at all; a
// larger one (any batch a single-node server takes) in several messages,
// one after the other, each document whole: when one fails, or the
// request's time runs out, after earlier messages were stored, the answer
// is a 503 that counts the documents stored and names the first line not
// stored (httpapi.BatchStopped, as the single-node server's cut-short
// batch). Only a line whose log entry alone exceeds a message is refused
// (413), before anything is appended. When the log's answer to the
// message under way does not come, the answer is a 504
// (CodeOutcomeUnknown, batchUnknown) that counts the documents stored
// before it and names its first line. Documents whose shard no replica
// answers are appended all the same, and the answer is a 202
// (api.BatchResult.Pending).
func (h *httpHandler) batch(w http.ResponseWriter, r *http.Request) error {
	lines, check, err := httpapi.ReadBatch(r, func(line int, req api.AddRequest) error {
		if req.Replace {
			return notServed("line %d (id %q): replace", line, req.ID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if check != nil {
		return h.checkedBatch(w, r, lines, check)
	}
	ctx := r.Context()
	kept, dups := httpapi.SkipDuplicates(lines)
	res := api.BatchResult{Skipped: append([]api.BatchSkip{}, dups...)}
	docs, docLines, skipped, err := h.prepareLines(ctx, kept)
	if err != nil {
		return err
	}
	res.Skipped = append(res.Skipped, skipped...)
	if len(docs) > 0 {
		prev, down, err := h.storedAvailable(ctx, docs)
		if err != nil {
			return err
		}
		if ars, err := h.r.Add(ctx, inputsOf(docs), AddOptions{}); err != nil {
			// The documents stored come first (a large batch is appended
			// in order).
			n := 0
			for n < len(ars) && ars[n].Stored {
				n++
			}
			line := 0
			if n < len(docLines) {
				line = docLines[n]
			}
			if u := batchUnknown(line, n, err); u != nil {
				return u
			}
			return httpapi.BatchStopped(n, line, n, err)
		}
		for _, d := range docs {
			switch p := prev[d.ID]; {
			case down[d.ID]:
				res.Stored++
				res.Pending++
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
	if res.Pending > 0 {
		return httpapi.WriteJSON(w, http.StatusAccepted, res)
	}
	return httpapi.WriteJSON(w, http.StatusOK, res)
}

// batchUnknown is the answer of a batch that stopped at line (the
// documents before it, n of them stored, are done) when the outcome of
// the log message under way is unknown (err wraps ErrOutcomeUnknown);
// else nil.
func batchUnknown(line, n int, err error) error {
	return unknownOutcome(err, "the batch stopped at line %d, after %d documents stored (lines before it are done): the outcome of the documents "+
		"from line %d on is unknown: those of the log message sent may or may not be stored (now or shortly), those after it were not sent. "+
		"Send the lines from line %d again (%s)", line, n, line, line, resendSafe)
}

// checkedBatchChunk is the most documents of a checked batch appended by
// one Router.Add (the single-node server stores as many per atomic
// write).
const checkedBatchChunk = 1000

// checkedBatch is POST /v1/batch?threshold=R: each document checked as
// POST /v1/documents with the batch's threshold, reject and limit checks
// it, in line order — against the whole cluster and the lines before it —
// and appended in chunks of up to checkedBatchChunk documents that fit in
// one log message, each one Router.Add (one optimistic transaction on the
// log). A line whose id an earlier line has replaces that line's
// document, as a later add would (it starts the next chunk). The answer
// lists each document's outcome, as the single-node server's does. As for
// a single add, whether a document is reported replaced or unchanged is
// read before its transaction: a concurrent write of the same id may make
// that report stale.
func (h *httpHandler) checkedBatch(w http.ResponseWriter, r *http.Request, lines []httpapi.BatchLine, o *db.AddOptions) error {
	ctx := r.Context()
	// A chunk fits in one log message, so that Router.Add appends it in
	// one: one transaction.
	limit := httpapi.ChunkLimit{Lines: checkedBatchChunk, Bytes: h.r.maxMessage, Size: func(l httpapi.BatchLine) int {
		return addEntrySize(l.Input.ID, l.Input.Source, h.r.smap.K/64)
	}}
	stored := 0       // by the chunks before
	var unknown error // the answer of a chunk whose outcome is unknown
	res, err := httpapi.CheckedBatch(lines, limit, func(chunk []httpapi.BatchLine) ([]api.AddResult, []api.BatchSkip, error) {
		docs, docLines, skipped, err := h.prepareLines(ctx, chunk)
		if err != nil || len(docs) == 0 {
			return nil, skipped, err
		}
		prev, err := h.storedMany(ctx, docs)
		if err != nil {
			return nil, nil, err
		}
		ars, err := h.r.Add(ctx, inputsOf(docs), AddOptions{Threshold: o.Threshold, Reject: o.Reject})
		if err != nil {
			unknown = batchUnknown(docLines[0], stored, err)
			return nil, nil, err
		}
		outs := make([]api.AddResult, len(docs))
		for i, d := range docs {
			outs[i] = addOutcome(d.ID, prev[d.ID], d, ars[i], o.Limit)
			outs[i].Line = docLines[i]
			if outs[i].Stored {
				stored++
			}
		}
		return outs, skipped, nil
	})
	if unknown != nil {
		return unknown
	}
	if err != nil {
		return err
	}
	return httpapi.WriteJSON(w, http.StatusOK, res)
}

// deleteWhere is POST /v1/delete by prefix or by age (older_than): the
// documents selected on every shard, their deletion appended to the log
// (Router.DeleteWhere); with dry_run the count and the ids, sorted, and
// nothing deleted.
func (h *httpHandler) deleteWhere(w http.ResponseWriter, r *http.Request, req api.DeleteRequest, by string) error {
	var where Where
	switch {
	case by == "prefix" && req.Prefix == "":
		return fmt.Errorf("prefix: %w (it would delete every document)", db.ErrEmptyPrefix)
	case by == "prefix":
		where.Prefix = req.Prefix
	default:
		age, err := apiconv.ParseAge(req.OlderThan)
		if err != nil {
			return httpapi.BadRequest("older_than %v", err)
		}
		where.Before = time.Now().Add(-age)
	}
	ids, err := h.r.DeleteWhere(r.Context(), where, req.DryRun)
	res := api.DeleteResult{DryRun: req.DryRun, Deleted: len(ids)}
	if u := deleteUnknown(len(ids), err); u != nil {
		return u
	}
	switch {
	case err != nil && len(ids) > 0 && !req.DryRun:
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable,
			Message: fmt.Sprintf("the delete stopped after %d documents deleted: %v", len(ids), err)}
	case err != nil:
		return err
	case req.DryRun:
		res.IDs = ids
	}
	return httpapi.WriteJSON(w, http.StatusOK, res)
}

// deleteUnknown is the answer of a delete that stopped after n documents
// deleted when the outcome of the log message under way is unknown (err
// wraps ErrOutcomeUnknown); else nil.
func deleteUnknown(n int, err error) error {
	return unknownOutcome(err, "the delete stopped after %d documents deleted: the outcome of the next log message of deletes is unknown: "+
		"its documents may or may not be deleted (now or shortly). Delete again (a delete of documents deleted already changes nothing)", n)
}

// prepareLines fingerprints the documents of lines: the prepared ones with
// their line numbers, and the lines skipped because their text cannot be
// fingerprinted (binary or without words, an invalid id).
func (h *httpHandler) prepareLines(ctx context.Context, lines []httpapi.BatchLine) ([]*db.Doc, []int, []api.BatchSkip, error) {
	ins := make([]db.Input, len(lines))
	for i, l := range lines {
		ins[i] = l.Input
	}
	prepared, errs, err := h.r.gw.PrepareBatch(ctx, ins)
	if err != nil {
		return nil, nil, nil, err
	}
	var docs []*db.Doc
	var docLines []int
	var skipped []api.BatchSkip
	for i, doc := range prepared {
		if err := errs[i]; err != nil {
			// PrepareBatch's error names the document; the line names it
			// in its own fields, so it gives the cause, as the single-node
			// server does.
			if u := errors.Unwrap(err); u != nil {
				err = u
			}
			skipped = append(skipped, api.BatchSkip{Line: lines[i].Line, ID: ins[i].ID, Error: err.Error(), Reason: apiconv.Reason(err)})
			continue
		}
		docs, docLines = append(docs, doc), append(docLines, lines[i].Line)
	}
	return docs, docLines, skipped, nil
}

// storedMany returns the stored versions of docs (by id; absent ones
// missing) as of the log's last sequence.
func (h *httpHandler) storedMany(ctx context.Context, docs []*db.Doc) (map[string]*db.Doc, error) {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	seq, err := h.latest(ctx)
	if err != nil {
		return nil, err
	}
	return h.getMany(ctx, ids, seq)
}

// storedAvailable is storedMany where the documents of a shard that no
// replica answers are left out of the map and listed in down (by id).
func (h *httpHandler) storedAvailable(ctx context.Context, docs []*db.Doc) (map[string]*db.Doc, map[string]bool, error) {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	seq, err := h.latest(ctx)
	if err != nil {
		return nil, nil, err
	}
	return h.getAvailable(ctx, ids, seq)
}

// shardDown is the error of a read of id, whose shard no replica
// answered (a shard of shards).
func shardDown(id string, shards int) error {
	return fmt.Errorf("%w: shard %d (of %q): no replica answered", ErrShardUnavailable, Shard(id, shards), id)
}

// inputsOf returns the inputs of prepared documents.
func inputsOf(docs []*db.Doc) []db.Input {
	ins := make([]db.Input, len(docs))
	for i, d := range docs {
		ins[i] = d.Input()
	}
	return ins
}

// export is GET /v1/export: the cluster's documents in the export format
// of a single database, sorted by id, at one log sequence (Router.Export).
func (h *httpHandler) export(w http.ResponseWriter, r *http.Request) error {
	return httpapi.ServeExport(w, r, h.r.Export)
}

// importExport is POST /v1/import: the body is an export (of a single
// database or a cluster), stored in the cluster, which must be empty
// (Router.Import). Each line is read up to its bound
// (httpapi.ImportLineLimits of HTTPOptions.MaxImportText), never further:
// a longer one is refused (413).
func (h *httpHandler) importExport(w http.ResponseWriter, r *http.Request) error {
	body := &httpapi.ImportBody{R: &httpapi.LineLimiter{R: r.Body, Lim: httpapi.ImportLineLimits(h.o.MaxImportText),
		Reader: "a cluster node", Instead: `cannot be imported into a cluster, which keeps no texts (nor templates): remove its lines' "text" fields`},
		Raw: r.Body}
	res, err := h.r.Import(r.Context(), body)
	if u := unknownOutcome(err, "the import stopped after %d documents imported: the outcome of the next log message of documents is unknown: "+
		"they may or may not be stored (now or shortly): GET /v1/export tells which", res.Imported); u != nil {
		return httpapi.WriteImport(w, body, api.ImportResult{}, u)
	}
	return httpapi.WriteImport(w, body, api.ImportResult{Imported: res.Imported, DroppedTexts: res.DroppedTexts,
		DroppedLogEntries: res.DroppedLogEntries}, err)
}

// deleteMany is POST /v1/delete: by ids (or with dry_run how many of them
// are stored), or by prefix or age (deleteWhere). The ids of a shard that
// no replica answers are deleted all the same (their deletion appended to
// the log), and the answer is a 202 (api.DeleteResult.Pending); a dry run
// is a 503.
func (h *httpHandler) deleteMany(w http.ResponseWriter, r *http.Request) error {
	req, by, err := httpapi.ReadDelete(r)
	if err != nil {
		return err
	}
	switch {
	case req.Forget && by != "ids":
		return httpapi.BadRequest("forget goes with ids, not with %s", by)
	case req.Forget:
		return notServed("forget (a cluster keeps no audit log)")
	case by == "prefix" || by == "older_than":
		return h.deleteWhere(w, r, req, by)
	case len(req.IDs) == 0:
		return httpapi.BadRequest("ids is empty")
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
	have, down, err := h.getAvailable(ctx, uniq, seq)
	if err != nil {
		return err
	}
	res := api.DeleteResult{DryRun: req.DryRun}
	var del, pending []string
	for _, id := range uniq {
		switch {
		case down[id]:
			pending = append(pending, id)
		case have[id] != nil:
			del = append(del, id)
		default:
			res.NotFound = append(res.NotFound, id)
		}
	}
	if req.DryRun {
		if len(pending) > 0 {
			return shardDown(pending[0], h.r.smap.Shards)
		}
		res.Deleted = len(del)
		return httpapi.WriteJSON(w, http.StatusOK, res)
	}
	// The ids known stored first, then those of shards down: an error
	// midway counts the first.
	known := len(del)
	del = append(del, pending...)
	done := 0 // ids whose deletion is appended
	for lo := 0; lo < len(del); {
		hi, size := lo, 0
		for hi < len(del) && (hi == lo || size+len(del[hi])+8 <= httpDeleteChunkBytes) {
			size += len(del[hi]) + 8
			hi++
		}
		if _, err := h.r.Delete(ctx, del[lo:hi]); err != nil {
			res.Deleted = min(done, known)
			if u := deleteUnknown(res.Deleted, err); u != nil {
				return u
			}
			if lo == 0 {
				return err
			}
			return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable,
				Message: fmt.Sprintf("the delete stopped after %d documents deleted: %v", res.Deleted, err)}
		}
		done = hi
		lo = hi
	}
	res.Deleted = known
	if len(pending) > 0 {
		res.Pending = pending
		return httpapi.WriteJSON(w, http.StatusAccepted, res)
	}
	return httpapi.WriteJSON(w, http.StatusOK, res)
}
