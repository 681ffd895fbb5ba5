package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fpdb/fpdb/api"
)

// Options configure a Client. The zero value (or nil) is usable.
type Options struct {
	// Token is sent as "Authorization: Bearer TOKEN" when not empty.
	Token string
	// HTTPClient makes the requests (default: a client of its own, without
	// a time limit; streams last as long as the server sends).
	HTTPClient *http.Client
	// Timeout, when > 0, bounds each call that is not a stream (Pairs and
	// Clusters are bounded by their context only), its retries included.
	Timeout time.Duration
	// Retries is how many more times a call is sent when the server could
	// not take it for now and sending it again is safe:
	//   - the connection was refused (nothing was sent: no server listens
	//     there now, as while one restarts); an unknown host or a dial
	//     that times out is not retried;
	//   - the server answered 429 (too many requests at once: it did
	//     nothing);
	//   - the server answered 503 (unavailable: shutting down, or a
	//     cluster shard without a live replica for now) to a call that
	//     changes nothing: Get, Query, Stats, StorageStats, and Pairs and
	//     Clusters before their first line.
	// A write answered 503 is not sent again (a cluster may have logged
	// it). 0 means the default, 3; a negative value never retries. The
	// error of the last attempt is returned.
	Retries int
	// RetryWait is the wait before the first retry (default 100 ms),
	// doubled before each next one up to 2 s, with random jitter; a
	// Retry-After of the answer, when longer, is waited instead (at most
	// 10 s). A wait ends when the call's context does.
	RetryWait time.Duration
}

// Defaults and limits of the retries (Options.Retries, RetryWait).
const (
	defaultRetries   = 3
	defaultRetryWait = 100 * time.Millisecond
	maxRetryWait     = 2 * time.Second
	maxRetryAfter    = 10 * time.Second
)

// Client calls one fpdb server. It is safe for concurrent use.
type Client struct {
	base      string // the base URL, without a trailing slash
	token     string
	hc        *http.Client
	timeout   time.Duration
	retries   int // 0: none
	retryWait time.Duration
}

// ErrBadURL is returned by New for a base URL it cannot use.
var ErrBadURL = errors.New("fpdb client: invalid server URL")

// New returns a client of the server at baseURL ("http://127.0.0.1:7700";
// a URL without a scheme is taken as http://). A path in baseURL prefixes
// every request's (a server mounted under a path). opts may be nil.
func New(baseURL string, opts *Options) (*Client, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	raw := strings.TrimSpace(baseURL)
	if raw == "" {
		return nil, fmt.Errorf("%w: empty", ErrBadURL)
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrBadURL, baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: %q: the scheme must be http or https", ErrBadURL, baseURL)
	}
	if u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%w: %q: want http://HOST:PORT[/PATH]", ErrBadURL, baseURL)
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("fpdb client: negative timeout %v", o.Timeout)
	}
	if o.RetryWait < 0 {
		return nil, fmt.Errorf("fpdb client: negative retry wait %v", o.RetryWait)
	}
	switch {
	case o.Retries == 0:
		o.Retries = defaultRetries
	case o.Retries < 0:
		o.Retries = 0
	}
	if o.RetryWait == 0 {
		o.RetryWait = defaultRetryWait
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{base: strings.TrimSuffix(u.String(), "/"), token: o.Token, hc: hc, timeout: o.Timeout,
		retries: o.Retries, retryWait: o.RetryWait}, nil
}

// URL returns the server's base URL.
func (c *Client) URL() string { return c.base }

// request is one call: its method, path (under the base URL), query
// parameters, body and the body's content type. A read changes nothing
// on the server: a 503 answer to it is retried.
type request struct {
	method, path string
	query        url.Values
	body         []byte
	// reader, when not nil, is the body instead, read as it is sent (the
	// request is then never sent again).
	reader      io.Reader
	contentType string
	read        bool
}

// jsonRequest returns a request whose body is v as JSON.
func jsonRequest(method, path string, v any) (request, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return request{}, fmt.Errorf("%s %s: encode the request: %w", method, path, err)
	}
	return request{method: method, path: path, body: buf.Bytes(), contentType: "application/json"}, nil
}

// send makes the request and returns the response when its status is a
// success; the caller closes its body. Any other status is an *Error.
// What the server could not take for now is sent again (Options.Retries).
func (c *Client) send(ctx context.Context, rq request) (*http.Response, error) {
	wait := c.retryWait
	for attempt := 0; ; attempt++ {
		resp, err := c.sendOnce(ctx, rq)
		if err == nil || attempt >= c.retries || rq.reader != nil {
			return resp, err
		}
		d, ok := retryAfter(rq, err)
		if !ok {
			return nil, err
		}
		// Jitter: clients refused at once do not all come back at once.
		d = max(d, wait/2+rand.N(wait/2+1))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait = min(2*wait, maxRetryWait)
	}
}

// retryAfter reports whether the failed request rq may be sent again, and
// the least wait the server asked for.
func retryAfter(rq request, err error) (time.Duration, bool) {
	if errors.Is(err, ErrUnreachable) && errors.Is(err, syscall.ECONNREFUSED) {
		return 0, true // nothing listens there now: a server restarting
	}
	var e *Error
	if !errors.As(err, &e) {
		return 0, false
	}
	ok := e.Status == http.StatusTooManyRequests || (e.Status == http.StatusServiceUnavailable && rq.read)
	return min(e.RetryAfter, maxRetryAfter), ok
}

// sendOnce makes the request once.
func (c *Client) sendOnce(ctx context.Context, rq request) (*http.Response, error) {
	u := c.base + rq.path
	if len(rq.query) > 0 {
		u += "?" + rq.query.Encode()
	}
	var body io.Reader
	if rq.body != nil {
		body = bytes.NewReader(rq.body)
	}
	if rq.reader != nil {
		body = rq.reader
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", rq.method, rq.path, err)
	}
	if rq.contentType != "" {
		req.Header.Set("Content-Type", rq.contentType)
	}
	req.Header.Set("Accept", "application/json, application/x-ndjson")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", rq.method, rq.path, ctx.Err())
		}
		if isDialError(err) {
			return nil, &UnreachableError{URL: c.base, Err: err}
		}
		return nil, fmt.Errorf("%s %s: %w", rq.method, rq.path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := statusError(rq.method, rq.path, resp.StatusCode, b, resp.Header.Get("X-Request-ID"))
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(min(s, 3600)) * time.Second
	}
	return nil, e
}

// call makes the request (within the client's timeout) and decodes the
// JSON answer into out.
func (c *Client) call(ctx context.Context, rq request, out any) error {
	b, err := c.callRaw(ctx, rq)
	if err != nil {
		return err
	}
	if err := jsonUnmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: malformed answer: %w", rq.method, rq.path, err)
	}
	return nil
}

// callRaw makes the request (within the client's timeout) and returns the
// answer's body.
func (c *Client) callRaw(ctx context.Context, rq request) ([]byte, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	resp, err := c.send(ctx, rq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", rq.method, rq.path, err)
	}
	return b, nil
}

// stream makes the request and calls line for each line of its NDJSON
// answer, as it arrives. An error of line stops the stream and is
// returned.
func (c *Client) stream(ctx context.Context, rq request, line func([]byte) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // closes the connection when line stops early
	resp, err := c.send(ctx, rq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 && b[len(b)-1] != '\n' {
			// The last line was cut: the server stopped midway.
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("%s %s: the stream ended midway: %w", rq.method, rq.path, err)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return fmt.Errorf("%s %s: %w", rq.method, rq.path, err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if bytes.HasPrefix(b, []byte(`{"error":`)) { // a failure the server reports in the stream
			var eb api.ErrorBody
			if jsonUnmarshal(b, &eb) == nil && eb.Error.Code != "" {
				return &Error{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message, RequestID: eb.Error.RequestID}
			}
		}
		if err := line(b); err != nil {
			return err
		}
	}
}

// jsonUnmarshal decodes b into v.
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// itoa formats n.
func itoa(n int) string { return strconv.Itoa(n) }

// formatFloat formats f for a query parameter.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// setText sets the parameters of how a text is read.
func setText(q url.Values, t api.TextInput) {
	if t.Format != "" {
		q.Set("format", t.Format)
	}
	if t.Encoding != "" {
		q.Set("encoding", t.Encoding)
	}
}

// Add adds a document (POST /v1/documents): with a Threshold, the server
// checks for stored near duplicates first and, with Reject, stores
// nothing when it finds one. The text is sent as it is, in any encoding.
// A document left out by Reject is a result (Rejected), not an error. A
// cluster node answers a plain add (no Threshold) whose shard has no live
// replica with the result's Pending set: logged, stored when a replica
// returns.
func (c *Client) Add(ctx context.Context, req api.AddRequest) (*api.AddResult, error) {
	q := url.Values{"id": {req.ID}}
	if req.Source != "" {
		q.Set("source", req.Source)
	}
	if req.Threshold != 0 {
		q.Set("threshold", formatFloat(req.Threshold))
	}
	if req.Reject {
		q.Set("reject", "true")
	}
	if req.Replace {
		q.Set("replace", "true")
	}
	if req.Limit != 0 {
		q.Set("limit", itoa(req.Limit))
	}
	setText(q, req.TextInput)
	var out api.AddResult
	err := c.call(ctx, request{method: "POST", path: "/v1/documents", query: q, body: []byte(req.Text),
		contentType: "application/octet-stream"}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Query lists the stored near duplicates of a text, or of a fingerprint
// (POST /v1/query). A text is sent as it is, in any encoding.
func (c *Client) Query(ctx context.Context, req api.QueryRequest) (*api.QueryResult, error) {
	var rq request
	if req.Fingerprint != "" {
		var err error
		if rq, err = jsonRequest("POST", "/v1/query", req); err != nil {
			return nil, err
		}
	} else {
		q := url.Values{}
		for name, f := range map[string]float64{"threshold": req.Threshold, "containment": req.Containment, "recall": req.Recall} {
			if f != 0 {
				q.Set(name, formatFloat(f))
			}
		}
		if req.Limit != 0 {
			q.Set("limit", itoa(req.Limit))
		}
		if req.Plan != "" {
			q.Set("plan", req.Plan)
		}
		if req.Tau != nil {
			q.Set("tau", itoa(*req.Tau))
		}
		if req.Explain {
			q.Set("explain", "true")
		}
		setText(q, req.TextInput)
		rq = request{method: "POST", path: "/v1/query", query: q, body: []byte(req.Text), contentType: "application/octet-stream"}
	}
	rq.read = true
	var out api.QueryResult
	if err := c.call(ctx, rq, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// docPath returns the path of the document id.
func docPath(id string) string {
	if id == "." || id == ".." {
		// Dot segments are not escaped by PathEscape, and an HTTP path of
		// them would be cleaned away from the document's route.
		return "/v1/documents/" + strings.ReplaceAll(id, ".", "%2E")
	}
	return "/v1/documents/" + url.PathEscape(id)
}

// Get returns the stored document id (GET /v1/documents/{id}); an error
// matching ErrNotFound when there is none.
func (c *Client) Get(ctx context.Context, id string) (*api.Doc, error) {
	var out api.Doc
	if err := c.call(ctx, request{method: "GET", path: docPath(id), read: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteOptions configure Delete.
type DeleteOptions struct {
	// DryRun reports whether the document is stored and deletes nothing.
	DryRun bool
	// Forget also erases the document's audit-log entries.
	Forget bool
}

// Delete deletes the document id (DELETE /v1/documents/{id}); an error
// matching ErrNotFound when there is none. opts may be nil. A cluster node
// whose shard of id has no live replica answers with id in the result's
// Pending (and Deleted 0): the delete is logged, and applied when a
// replica returns.
func (c *Client) Delete(ctx context.Context, id string, opts *DeleteOptions) (*api.DeleteResult, error) {
	q := url.Values{}
	if opts != nil && opts.DryRun {
		q.Set("dry_run", "true")
	}
	if opts != nil && opts.Forget {
		q.Set("forget", "true")
	}
	var out api.DeleteResult
	if err := c.call(ctx, request{method: "DELETE", path: docPath(id), query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteMany deletes the documents req selects — by ids, by id prefix or
// by age — in atomic batches (POST /v1/delete). Ids that are not stored
// are listed in the result's NotFound, not an error; a cluster node lists
// in Pending the ids whose shard has no live replica (their deletes are
// logged, and applied when a replica returns), counted neither in Deleted
// nor in NotFound.
func (c *Client) DeleteMany(ctx context.Context, req api.DeleteRequest) (*api.DeleteResult, error) {
	rq, err := jsonRequest("POST", "/v1/delete", req)
	if err != nil {
		return nil, err
	}
	var out api.DeleteResult
	if err := c.call(ctx, rq, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Batch adds documents without the near-duplicate check (POST /v1/batch,
// one JSON object per line). The server reads every line first, then
// writes them in atomic chunks of up to 1 000 documents: a crash leaves
// each chunk wholly stored or absent, and a request cut short midway (its
// time over, the server shutting down) is an error (503) that says how
// many documents were stored. Texts go as JSON strings: they must be
// UTF-8. Lines the server could not store (a bad id, no words) are listed
// in the result's Skipped. A cluster node counts in the result's Pending
// (and in Stored) the documents whose shard has no live replica: logged,
// stored when a replica returns.
func (c *Client) Batch(ctx context.Context, docs []api.AddRequest) (*api.BatchResult, error) {
	return c.batch(ctx, docs, nil)
}

// BatchChecked adds documents with a near-duplicate check (check's
// Threshold is required): each document is checked in order, as Add with
// the same threshold, reject and limit checks it, against the stored
// documents and the documents before it, and the server stores them in
// atomic chunks with one sync each (POST /v1/batch?threshold=R). The
// result's Results hold each document's outcome (Line: its position + 1);
// Skipped the documents the server could not store.
func (c *Client) BatchChecked(ctx context.Context, docs []api.AddRequest, check api.BatchCheck) (*api.BatchResult, error) {
	q := url.Values{"threshold": {formatFloat(check.Threshold)}}
	if check.Reject {
		q.Set("reject", "true")
	}
	if check.Limit != 0 {
		q.Set("limit", strconv.Itoa(check.Limit))
	}
	return c.batch(ctx, docs, q)
}

// batch sends POST /v1/batch with the query q.
func (c *Client) batch(ctx context.Context, docs []api.AddRequest, q url.Values) (*api.BatchResult, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range docs {
		if err := enc.Encode(&docs[i]); err != nil {
			return nil, fmt.Errorf("POST /v1/batch: encode document %d: %w", i+1, err)
		}
	}
	var out api.BatchResult
	err := c.call(ctx, request{method: "POST", path: "/v1/batch", query: q, body: buf.Bytes(), contentType: "application/x-ndjson"}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Stats returns the database's statistics (GET /v1/stats).
func (c *Client) Stats(ctx context.Context) (*api.Stats, error) {
	var out api.Stats
	if err := c.call(ctx, request{method: "GET", path: "/v1/stats", read: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StorageStats returns the database's statistics with its storage
// statistics (GET /v1/stats?storage=true): what "fpdb stats" prints. It
// reads every posting list: seconds for millions of documents.
func (c *Client) StorageStats(ctx context.Context) (*api.StorageStats, error) {
	var out api.StorageStats
	if err := c.call(ctx, request{method: "GET", path: "/v1/stats", query: url.Values{"storage": {"true"}}, read: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Pairs calls fn for every pair of stored documents whose estimated
// resemblance is at least threshold (GET /v1/pairs), as the server finds
// them. An error of fn stops the stream and is returned.
func (c *Client) Pairs(ctx context.Context, threshold float64, fn func(api.Pair) error) error {
	rq := request{method: "GET", path: "/v1/pairs", query: url.Values{"threshold": {formatFloat(threshold)}}, read: true}
	return c.stream(ctx, rq, func(b []byte) error {
		var p api.Pair
		if err := jsonUnmarshal(b, &p); err != nil {
			return fmt.Errorf("GET /v1/pairs: malformed line: %w", err)
		}
		return fn(p)
	})
}

// ClustersOptions configure Clusters.
type ClustersOptions struct {
	// Threshold is the least resemblance of a pair, in (0, 1].
	Threshold float64
	// Keep names the policy that chooses the member to keep: oldest,
	// newest, first, longest or shortest ("": none).
	Keep string
	// Centers makes clusters around centers (no chaining), of at most
	// MaxSize members (0: no limit).
	Centers bool
	MaxSize int
}

// Clusters calls fn for every cluster of near duplicates, largest first
// (GET /v1/clusters). An error of fn stops the stream and is returned.
func (c *Client) Clusters(ctx context.Context, o ClustersOptions, fn func(api.Cluster) error) error {
	q := url.Values{"threshold": {formatFloat(o.Threshold)}}
	if o.Keep != "" {
		q.Set("keep", o.Keep)
	}
	if o.Centers {
		q.Set("centers", "true")
	}
	if o.MaxSize != 0 {
		q.Set("max_size", itoa(o.MaxSize))
	}
	return c.stream(ctx, request{method: "GET", path: "/v1/clusters", query: q, read: true}, func(b []byte) error {
		var cl api.Cluster
		if err := jsonUnmarshal(b, &cl); err != nil {
			return fmt.Errorf("GET /v1/clusters: malformed line: %w", err)
		}
		return fn(cl)
	})
}

// Export writes the export of the served database or cluster (GET
// /v1/export: a header line, one line per document, then a database's
// audit log; "fpdb export" writes the same) to w, line by line as it
// arrives, and returns the number of documents its header announces. An
// export that fails midway, or holds fewer or more lines than its header
// announces (a stream cut at a line's end), is an error after the lines
// written: what w holds is then cut short, and Import refuses it.
func (c *Client) Export(ctx context.Context, w io.Writer) (int, error) {
	var h struct {
		Docs       *int `json:"docs"`
		LogEntries int  `json:"log_entries"`
	}
	lines := 0
	err := c.stream(ctx, request{method: "GET", path: "/v1/export", read: true}, func(b []byte) error {
		if lines == 0 {
			if err := jsonUnmarshal(b, &h); err != nil || h.Docs == nil {
				return fmt.Errorf("GET /v1/export: the first line is not an export header: %.100q", b)
			}
		}
		lines++
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return 0, err
	}
	if lines == 0 {
		return 0, errors.New("GET /v1/export: an empty answer")
	}
	if want := 1 + *h.Docs + h.LogEntries; lines != want {
		return 0, fmt.Errorf("GET /v1/export: %d lines, the header announces %d: %w", lines, want, io.ErrUnexpectedEOF)
	}
	return *h.Docs, nil
}

// Import sends the export r holds (POST /v1/import), read as it is sent,
// to be stored in the served database or cluster, which must hold no
// document. The client's Timeout does not bound it (ctx does), and it is
// never sent again. On an error after documents were stored, the error
// (a 503) gives their number. A server that refuses the import (a
// database that is not empty, another import running) reads the rest of
// the export first (up to 1 GiB), so that the answer is not lost.
func (c *Client) Import(ctx context.Context, r io.Reader) (*api.ImportResult, error) {
	rq := request{method: "POST", path: "/v1/import", reader: r, contentType: "application/x-ndjson"}
	resp, err := c.send(ctx, rq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out api.ImportResult
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("POST /v1/import: malformed answer: %w", err)
	}
	return &out, nil
}

// Compare compares two texts or stored documents (POST /v1/compare): the
// estimated and exact resemblances, the containments and the passages
// they share, as "fpdb compare --json" prints them. A stored document
// needs its text (a database that keeps none, and a cluster, answer 400).
func (c *Client) Compare(ctx context.Context, req api.CompareRequest) (*api.Comparison, error) {
	rq, err := jsonRequest("POST", "/v1/compare", req)
	if err != nil {
		return nil, err
	}
	rq.read = true
	var out api.Comparison
	if err := c.call(ctx, rq, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CompareHTML is Compare answered as the HTML page "fpdb compare --html"
// writes: both texts with their shared passages marked.
func (c *Client) CompareHTML(ctx context.Context, req api.CompareRequest) ([]byte, error) {
	rq, err := jsonRequest("POST", "/v1/compare", req)
	if err != nil {
		return nil, err
	}
	rq.read, rq.query = true, url.Values{"html": {"true"}}
	return c.callRaw(ctx, rq)
}
