package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/client"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server"
)

// serve serves a new database on 127.0.0.1 and returns its URL.
func serve(t *testing.T, tokens *server.Tokens) string {
	t.Helper()
	d, err := db.Open(filepath.Join(t.TempDir(), "db"), &db.Options{AuditLog: true, KeepTexts: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(d, &server.Options{Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return ts.URL
}

// newClient returns a client of url.
func newClient(t *testing.T, url string, opts *client.Options) *client.Client {
	t.Helper()
	c, err := client.New(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const (
	textA = "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat by the old kitchen door"
	textB = "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat by the old kitchen window"
	textC = "an entirely different text about ships and harbours and the tides of the northern sea in winter storms"
)

func TestClientCalls(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, serve(t, nil), nil)
	for _, d := range []struct{ id, text string }{{"a", textA}, {"dir/b", textB}, {"c", textC}} {
		res, err := c.Add(ctx, api.AddRequest{ID: d.id, Text: d.text, Threshold: 0.5})
		if err != nil || !res.Stored {
			t.Fatalf("add %s: %+v, %v", d.id, res, err)
		}
	}
	res, err := c.Add(ctx, api.AddRequest{ID: "a2", Text: textA, Threshold: 0.5, Reject: true})
	if err != nil || !res.Rejected || len(res.Matches) != 2 || res.Matches[0].ID != "a" || !res.Matches[0].Exact {
		t.Fatalf("add with reject: %+v, %v", res, err)
	}
	// A Latin-1 text goes byte for byte.
	latin := "caf\xe9 cr\xe8me br\xfbl\xe9e for the winter menu of the little harbour restaurant"
	if _, err := c.Add(ctx, api.AddRequest{ID: "latin", Text: latin, TextInput: api.TextInput{Encoding: "latin1"}}); err != nil {
		t.Fatal(err)
	}
	doc, err := c.Get(ctx, "latin")
	if err != nil || doc.Size != int64(len(latin)) {
		t.Fatalf("get latin: %+v, %v", doc, err)
	}

	q, err := c.Query(ctx, api.QueryRequest{Text: textA, Threshold: 0.5, Explain: true})
	if err != nil || len(q.Matches) != 2 || q.Explain == nil || q.Explain.Plan == "" {
		t.Fatalf("query: %+v, %v", q, err)
	}
	doc, err = c.Get(ctx, "dir/b")
	if err != nil || doc.ID != "dir/b" || doc.Fingerprint == "" {
		t.Fatalf("get dir/b: %+v, %v", doc, err)
	}
	// Ids of dot segments alone round-trip: their paths are escaped, not
	// cleaned away from the document's route.
	for i, id := range []string{".", "..", "%2E", "./."} {
		if _, err := c.Add(ctx, api.AddRequest{ID: id, Text: textC + " dots " + strconv.Itoa(i)}); err != nil {
			t.Fatalf("add %q: %v", id, err)
		}
		if got, err := c.Get(ctx, id); err != nil || got.ID != id {
			t.Fatalf("get %q: %+v, %v", id, got, err)
		}
		if res, err := c.Delete(ctx, id, nil); err != nil || res.Deleted != 1 {
			t.Fatalf("delete %q: %+v, %v", id, res, err)
		}
	}
	q, err = c.Query(ctx, api.QueryRequest{Fingerprint: doc.Fingerprint, Threshold: 0.99})
	if err != nil || len(q.Matches) != 1 || q.Matches[0].ID != "dir/b" {
		t.Fatalf("query by fingerprint: %+v, %v", q, err)
	}

	var pairs []api.Pair
	if err := c.Pairs(ctx, 0.5, func(p api.Pair) error { pairs = append(pairs, p); return nil }); err != nil || len(pairs) != 1 {
		t.Fatalf("pairs: %+v, %v", pairs, err)
	}
	var clusters []api.Cluster
	err = c.Clusters(ctx, client.ClustersOptions{Threshold: 0.5, Keep: "oldest"}, func(cl api.Cluster) error {
		clusters = append(clusters, cl)
		return nil
	})
	if err != nil || len(clusters) != 1 || clusters[0].Keep != "a" || len(clusters[0].Drop) != 1 {
		t.Fatalf("clusters: %+v, %v", clusters, err)
	}
	stop := errors.New("stop")
	if err := c.Pairs(ctx, 0.5, func(api.Pair) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("an error of fn: %v", err)
	}

	br, err := c.Batch(ctx, []api.AddRequest{{ID: "x", Text: textC + " again"}, {ID: "y", Text: ""}})
	if err != nil || br.Stored != 1 || len(br.Skipped) != 1 || br.Skipped[0].ID != "y" {
		t.Fatalf("batch: %+v, %v", br, err)
	}
	st, err := c.Stats(ctx)
	if err != nil || st.Docs != 5 || st.K != db.DefaultK {
		t.Fatalf("stats: %+v, %v", st, err)
	}

	dr, err := c.Delete(ctx, "x", &client.DeleteOptions{DryRun: true})
	if err != nil || dr.Deleted != 1 || !dr.DryRun {
		t.Fatalf("delete dry run: %+v, %v", dr, err)
	}
	if _, err := c.Delete(ctx, "x", nil); err != nil {
		t.Fatal(err)
	}
	dr, err = c.DeleteMany(ctx, api.DeleteRequest{IDs: []string{"latin", "nope"}})
	if err != nil || dr.Deleted != 1 || len(dr.NotFound) != 1 || dr.NotFound[0] != "nope" {
		t.Fatalf("delete many: %+v, %v", dr, err)
	}
	dr, err = c.DeleteMany(ctx, api.DeleteRequest{Prefix: "dir/"})
	if err != nil || dr.Deleted != 1 {
		t.Fatalf("delete prefix: %+v, %v", dr, err)
	}

	// Errors: the API's, with their sentinels.
	_, err = c.Get(ctx, "nope")
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusNotFound || ce.Code != api.CodeNotFound || ce.RequestID == "" ||
		!strings.Contains(ce.Message, "nope") || !errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrBadRequest) {
		t.Errorf("get nope: %#v", err)
	}
	if _, err := c.Delete(ctx, "nope", nil); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("delete nope: %v", err)
	}
	if _, err := c.Add(ctx, api.AddRequest{ID: "empty", Text: "  "}); !errors.Is(err, client.ErrBadRequest) {
		t.Errorf("add without words: %v", err)
	}
	if err := c.Pairs(ctx, 0, func(api.Pair) error { return nil }); !errors.Is(err, client.ErrBadRequest) {
		t.Errorf("pairs at 0: %v", err)
	}
}

func TestClientTokens(t *testing.T) {
	ctx := context.Background()
	tokens, err := server.ParseTokens(strings.NewReader("ro read-only-token-0123\nrw read-write-token-0123\n"))
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, tokens)
	rw := newClient(t, url, &client.Options{Token: "read-write-token-0123"})
	if _, err := rw.Add(ctx, api.AddRequest{ID: "a", Text: textA}); err != nil {
		t.Fatal(err)
	}
	ro := newClient(t, url, &client.Options{Token: "read-only-token-0123"})
	if _, err := ro.Get(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Add(ctx, api.AddRequest{ID: "b", Text: textB}); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("add with a read-only token: %v", err)
	}
	if _, err := newClient(t, url, nil).Stats(ctx); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("stats without a token: %v", err)
	}
}

func TestClientTransport(t *testing.T) {
	ctx := context.Background()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/pairs": // one line, then the connection is cut
			w.Header().Set("Content-Type", "application/x-ndjson")
			_, _ = w.Write([]byte(`{"a":"x","b":"y","similarity":0.9,"hamming":25,"exact":false}` + "\n" + `{"a":"x",`))
			w.(http.Flusher).Flush()
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	c := newClient(t, ts.URL+"/", nil)
	n := 0
	err := c.Pairs(ctx, 0.9, func(api.Pair) error { n++; return nil })
	if err == nil || n != 1 {
		t.Errorf("a cut stream: %d pairs, %v", n, err)
	}
	// A 404 that is not the API's: not ErrNotFound, and it says so.
	_, err = c.Stats(ctx)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 404 || ce.Code != "" || errors.Is(err, client.ErrNotFound) ||
		!strings.Contains(err.Error(), "fpdb server") {
		t.Errorf("a foreign 404: %v", err)
	}

	url := ts.URL
	ts.Close()
	_, err = c.Stats(ctx)
	var ue *client.UnreachableError
	if !errors.Is(err, client.ErrUnreachable) || !errors.As(err, &ue) || err.Error() != "no fpdb server at "+url+": connection refused" {
		t.Errorf("no server: %v", err)
	}
}

func TestNew(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "http://", "http://h/?q=1", "http://u:p@h"} {
		if _, err := client.New(u, nil); !errors.Is(err, client.ErrBadURL) {
			t.Errorf("New(%q): %v", u, err)
		}
	}
	c, err := client.New("127.0.0.1:7700/", nil)
	if err != nil || c.URL() != "http://127.0.0.1:7700" {
		t.Errorf("New without a scheme: %v, %v", c, err)
	}
}

// TestRetries checks which failures are sent again, how often, and the
// waits: a 429 always, a 503 only for a read, no connection always.
func TestRetries(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	fail := atomic.Int32{} // answers to fail before succeeding
	status := atomic.Int32{}
	retryAfter := atomic.Value{}
	retryAfter.Store("")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if fail.Add(-1) >= 0 {
			if ra := retryAfter.Load().(string); ra != "" {
				w.Header().Set("Retry-After", ra)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(int(status.Load()))
			code := api.CodeUnavailable
			switch status.Load() {
			case http.StatusTooManyRequests:
				code = api.CodeTooManyRequests
			case http.StatusGatewayTimeout:
				code = api.CodeOutcomeUnknown
			}
			_, _ = w.Write([]byte(`{"error":{"code":"` + code + `","message":"not now"}}`))
			return
		}
		switch r.URL.Path {
		case "/v1/stats":
			_, _ = w.Write([]byte(`{"docs":7}`))
		case "/v1/documents":
			_, _ = w.Write([]byte(`{"id":"a","stored":true}`))
		case "/v1/documents/a":
			_, _ = w.Write([]byte(`{"id":"a","size":3}`))
		case "/v1/query":
			_, _ = w.Write([]byte(`{"matches":[]}`))
		case "/v1/pairs":
			_, _ = w.Write([]byte(`{"a":"x","b":"y","similarity":0.9,"hamming":25,"exact":false}` + "\n"))
		}
	}))
	defer ts.Close()
	fast := &client.Options{RetryWait: time.Millisecond}
	try := func(opts *client.Options, st, failures int, call func(*client.Client) error) error {
		t.Helper()
		calls.Store(0)
		status.Store(int32(st))
		fail.Store(int32(failures))
		return call(newClient(t, ts.URL, opts))
	}
	stats := func(c *client.Client) error {
		s, err := c.Stats(ctx)
		if err == nil && s.Docs != 7 {
			err = fmt.Errorf("stats %+v", s)
		}
		return err
	}
	add := func(c *client.Client) error {
		_, err := c.Add(ctx, api.AddRequest{ID: "a", Text: textA})
		return err
	}
	get := func(c *client.Client) error {
		_, err := c.Get(ctx, "a")
		return err
	}
	query := func(c *client.Client) error {
		_, err := c.Query(ctx, api.QueryRequest{Text: textA})
		return err
	}
	pairs := func(c *client.Client) error {
		n := 0
		err := c.Pairs(ctx, 0.9, func(api.Pair) error { n++; return nil })
		if err == nil && n != 1 {
			err = fmt.Errorf("%d pairs", n)
		}
		return err
	}
	for _, tc := range []struct {
		name          string
		opts          *client.Options
		status, fails int
		call          func(*client.Client) error
		wantCalls     int
		wantErr       error
	}{
		{"read 503 x3", fast, 503, 3, stats, 4, nil},
		{"read 503 x4", fast, 503, 4, stats, 4, client.ErrUnavailable},
		{"stream 503 x2", fast, 503, 2, pairs, 3, nil},
		{"get 503 x2", fast, 503, 2, get, 3, nil},
		{"query 503 x1", fast, 503, 1, query, 2, nil},
		{"write 503", fast, 503, 1, add, 1, client.ErrUnavailable},
		{"write 429 x2", fast, 429, 2, add, 3, nil},
		{"no retries", &client.Options{Retries: -1}, 429, 1, add, 1, client.ErrTooManyRequests},
		{"write outcome unknown", fast, 504, 1, add, 1, client.ErrOutcomeUnknown},
		{"one retry", &client.Options{Retries: 1, RetryWait: time.Millisecond}, 503, 5, stats, 2, client.ErrUnavailable},
	} {
		err := try(tc.opts, tc.status, tc.fails, tc.call)
		if got := int(calls.Load()); got != tc.wantCalls || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("%s: %d calls, %v; want %d calls, %v", tc.name, got, err, tc.wantCalls, tc.wantErr)
		}
	}

	// The server's Retry-After is waited, and the error carries it.
	retryAfter.Store("1")
	start := time.Now()
	if err := try(fast, 503, 1, stats); err != nil || time.Since(start) < time.Second {
		t.Errorf("Retry-After 1: %v after %v", err, time.Since(start))
	}
	err := try(&client.Options{Retries: -1}, 503, 1, stats)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.RetryAfter != time.Second {
		t.Errorf("Retry-After 1 without retries: %#v", err)
	}
	// A wait ends with the call's context.
	retryAfter.Store("5")
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	calls.Store(0)
	fail.Store(10)
	_, err = newClient(t, ts.URL, fast).Stats(cctx)
	if !errors.Is(err, client.ErrUnavailable) || time.Since(start) > 3*time.Second || calls.Load() != 1 {
		t.Errorf("canceled during the wait: %v after %v, %d calls", err, time.Since(start), calls.Load())
	}
	retryAfter.Store("")

	// No connection: sent again, a write too, since nothing was sent.
	var dials atomic.Int32
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}}}
	c := newClient(t, ts.URL, &client.Options{HTTPClient: hc, Retries: 2, RetryWait: time.Millisecond})
	if _, err := c.Add(ctx, api.AddRequest{ID: "a", Text: textA}); !errors.Is(err, client.ErrUnreachable) || dials.Load() != 3 {
		t.Errorf("unreachable: %v after %d dials", err, dials.Load())
	}
	// An unknown host is not retried: it will not come.
	dials.Store(0)
	hc = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return nil, &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}
	}}}
	c = newClient(t, ts.URL, &client.Options{HTTPClient: hc, Retries: 2, RetryWait: time.Millisecond})
	if _, err := c.Stats(ctx); !errors.Is(err, client.ErrUnreachable) || dials.Load() != 1 {
		t.Errorf("unknown host: %v after %d dials", err, dials.Load())
	}
	if _, err := client.New(ts.URL, &client.Options{RetryWait: -time.Second}); err == nil {
		t.Error("a negative RetryWait was accepted")
	}
}

// TestClientCompare compares a text with a stored document, in JSON and
// as the HTML page, and refuses an unknown id as the server does.
func TestClientCompare(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, serve(t, nil), nil)
	if _, err := c.Add(ctx, api.AddRequest{ID: "a", Text: textA}); err != nil {
		t.Fatal(err)
	}
	req := api.CompareRequest{A: api.CompareText{Text: textB, Name: "new.txt"}, B: api.CompareText{ID: "a"}}
	cmp, err := c.Compare(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.A.Name != "new.txt" || cmp.B.Name != "a" || !cmp.B.Stored || cmp.Jaccard <= 0.5 || cmp.Jaccard >= 1 || len(cmp.Passages) == 0 {
		t.Fatalf("comparison %+v", cmp)
	}
	p := cmp.Passages[0].A
	if got := textB[p.Start:p.End]; !strings.HasPrefix(textA, got[:20]) {
		t.Fatalf("first passage %q is not shared", got)
	}
	page, err := c.CompareHTML(ctx, req)
	if err != nil || !strings.Contains(string(page), "<html") || !strings.Contains(string(page), "new.txt") {
		t.Fatalf("html: %v %.200s", err, page)
	}
	req.B.ID = "missing"
	if _, err := c.Compare(ctx, req); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}
