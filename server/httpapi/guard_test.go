package httpapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/api"
)

// TestStrictJSON: members named in another case than their field, given
// twice, or holding an escaped lone surrogate are refused (encoding/json
// alone would fill the field with the last of them, or read U+FFFD); exact
// names, surrogate pairs and an escaped backslash before "u" are read.
func TestStrictJSON(t *testing.T) {
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"id":"a","text":"x y z"}`, true},
		{`{"id":"a","text":"x y z","ID":"b"}`, false},
		{`{"ID":"b","text":"x y z"}`, false},
		{`{"id":"a","id":"b","text":"x"}`, false},
		{`{"id":"s\udc00","text":"x"}`, false},
		{`{"id":"s\ud800","text":"x"}`, false},
		{`{"id":"s\ud800x","text":"x"}`, false},
		{`{"id":"s\ud800\u0041","text":"x"}`, false},
		{`{"id":"s\ud83d\ude00","text":"x"}`, true},
		{`{"id":"s\\udc00","text":"x"}`, true}, // a backslash, then "udc00"
		{`{"id":"s\u00e9","text":"x"}`, true},
		{"{\"id\":\"a\",\"text\":\"x\"} \r\n", true},
		{`{"id":"a","text":"x"}]`, false}, // a stray bracket after the value
		{`{"id":"a","text":"x"}}garbage{{`, false},
		{`{"id":"a","text":"x"} {"id":"b"}`, false},
	} {
		var v api.AddRequest
		err := DecodeJSON([]byte(c.body), &v)
		if (err == nil) != c.ok || (err != nil && status(err) != http.StatusBadRequest) {
			t.Errorf("%s: %v (%+v), want ok %v", c.body, err, v, c.ok)
		}
	}
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"ids":["a"],"dry_run":true}`, true},
		{`{"ids":["a"],"dry_run":true,"Dry_Run":false}`, false},
		{`{"ids":["a"],"dry_run":true,"dry_run":false}`, false},
	} {
		var v api.DeleteRequest
		if err := DecodeJSON([]byte(c.body), &v); (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.body, err, c.ok)
		}
	}
	// Nested: the sides of a comparison are structs too.
	var cr api.CompareRequest
	if err := DecodeJSON([]byte(`{"a":{"text":"x"},"b":{"ID":"y"}}`), &cr); err == nil || !strings.Contains(err.Error(), `"b.ID"`) {
		t.Errorf("nested case-variant member: %v", err)
	}
	if err := DecodeJSON([]byte(`{"a":{"text":"x"},"b":{"id":"y"}}`), &cr); err != nil {
		t.Errorf("nested exact members: %v", err)
	}
}

// TestCrossOrigin: a request to the API that a page of another origin
// sent (its Origin header names another host, or "null", or the browser
// marks it cross-site) is refused 403, before the token check; one from
// the server's own page, or from a client that is not a browser, is
// served. Public routes (the page itself, health) are not concerned.
func TestCrossOrigin(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) error { w.WriteHeader(http.StatusNoContent); return nil }
	routes := []Route{{Method: "POST", Pattern: "/v1/x", Access: Write, Handle: ok}, {Method: "GET", Pattern: "/healthz", Access: Public, Handle: ok}}
	for _, c := range []struct {
		target string
		header map[string]string
		want   int
	}{
		{"/v1/x", nil, http.StatusNoContent},
		{"/v1/x", map[string]string{"Origin": "http://example.com"}, http.StatusNoContent}, // httptest's Host is example.com
		{"/v1/x", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"/v1/x", map[string]string{"Origin": "http://example.com:8080"}, http.StatusForbidden},
		{"/v1/x", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"/v1/x", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"/v1/x", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://other.example.com"}, http.StatusForbidden},
		{"/v1/x", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"}, http.StatusNoContent},
		// Behind a reverse proxy that sets Host to the upstream: the
		// browser's same-origin, or X-Forwarded-Host, says the page is the
		// server's own.
		{"/v1/x", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "https://fpdb.example.org"}, http.StatusNoContent},
		{"/v1/x", map[string]string{"Origin": "https://fpdb.example.org", "X-Forwarded-Host": "fpdb.example.org"}, http.StatusNoContent},
		{"/v1/x", map[string]string{"Origin": "https://evil.example", "X-Forwarded-Host": "fpdb.example.org"}, http.StatusForbidden},
		{"/v1/x", map[string]string{"Sec-Fetch-Site": "none"}, http.StatusNoContent},
		{"/healthz", map[string]string{"Origin": "http://evil.example"}, http.StatusNoContent},
	} {
		r := httptest.NewRequest(http.MethodPost, c.target, strings.NewReader("{}"))
		if c.target == "/healthz" {
			r.Method = http.MethodGet
		}
		for k, v := range c.header {
			r.Header.Set(k, v)
		}
		if w, eb := serve(t, routes, Options{}, r); w.Code != c.want || (c.want == http.StatusForbidden && !strings.Contains(eb.Error.Message, "another site")) {
			t.Errorf("%s %v: %d %q, want %d", c.target, c.header, w.Code, eb.Error.Message, c.want)
		}
	}
}

// TestLoopbackHosts: a server on a loopback address answers requests to
// localhost or a loopback IP address, and refuses others (DNS rebinding:
// an attacker's domain pointed at 127.0.0.1) with 421.
func TestLoopbackHosts(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	var log bytes.Buffer
	h := LoopbackHosts(ok, []string{"fpdb.example.org"}, slog.New(slog.NewTextHandler(&log, nil)))
	for host, want := range map[string]int{
		"127.0.0.1:7700": 204, "localhost:7700": 204, "LOCALHOST": 204, "[::1]:7700": 204, "127.0.0.2": 204, "a.localhost:1": 204,
		"evil.example:7700": 421, "evil.example": 421, "10.0.0.1:7700": 421, "": 421, "127.0.0.1.evil.example": 421,
		// Allowed (--allow-host), any port, any case.
		"fpdb.example.org": 204, "FPDB.example.org:443": 204, "x.fpdb.example.org": 421,
	} {
		for _, path := range []string{"/v1/stats", "/healthz"} {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.Host = host
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if want := map[bool]int{true: 204, false: want}[path == "/healthz"]; w.Code != want {
				t.Errorf("Host %q %s: %d, want %d", host, path, w.Code, want)
			}
		}
	}
	// A refused request has a request id, in its header, its body and the
	// log line that names the host asked for.
	r := httptest.NewRequest(http.MethodPost, "/v1/documents", nil)
	r.Host = "rebound.example"
	r.Header.Set("X-Request-ID", "rq-421")
	log.Reset()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 421 || w.Header().Get("X-Request-ID") != "rq-421" || !strings.Contains(w.Body.String(), `"request_id":"rq-421"`) {
		t.Errorf("a refused host: %d %q %s, want 421 with its request id", w.Code, w.Header().Get("X-Request-ID"), w.Body)
	}
	for _, want := range []string{"request_id=rq-421", "status=421", "host=rebound.example", "path=/v1/documents"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log line %q lacks %s", log.String(), want)
		}
	}
	r = httptest.NewRequest(http.MethodGet, "/v1/stats", nil)
	r.Host = "evil.example"
	w = httptest.NewRecorder()
	if h.ServeHTTP(w, r); w.Header().Get("X-Request-ID") == "" {
		t.Error("a refused request without X-Request-ID got none")
	}

	// "*" allows any host.
	r = httptest.NewRequest(http.MethodGet, "/v1/stats", nil)
	r.Host = "evil.example"
	w = httptest.NewRecorder()
	LoopbackHosts(ok, []string{"*"}, nil).ServeHTTP(w, r)
	if w.Code != 204 {
		t.Errorf("--allow-host '*': %d", w.Code)
	}
}

// TestContainmentZero: an explicit containment of 0 (or out of (0, 1]) is
// refused, in the query string and in JSON, rather than read as absent
// (the query would then take the default threshold).
func TestContainmentZero(t *testing.T) {
	for _, r := range []*http.Request{
		post("/v1/query?containment=0", "text/plain", "some words of a text"),
		post("/v1/query?containment=1.5", "text/plain", "some words of a text"),
		post("/v1/query", "application/json", `{"text":"some words of a text","containment":0}`),
		post("/v1/query", "application/json", `{"text":"some words of a text","containment":-0.5}`),
	} {
		if _, err := ReadQuery(r); status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "containment") {
			t.Errorf("%s: %v, want a 400 naming containment", r.URL, err)
		}
	}
	for _, r := range []*http.Request{
		post("/v1/query?containment=0.5", "text/plain", "some words of a text"),
		post("/v1/query", "application/json", `{"text":"some words of a text","containment":0.5}`),
	} {
		if req, err := ReadQuery(r); err != nil || req.Containment != 0.5 {
			t.Errorf("%s: %+v, %v", r.URL, req, err)
		}
	}
}

// TestContentEncoding: a body with a content encoding (gzip, br) is
// refused 415 rather than read as sent (gzip bytes as a text).
func TestContentEncoding(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) error { w.WriteHeader(http.StatusNoContent); return nil }
	routes := []Route{{Method: "POST", Pattern: "/v1/x", Access: Write, Handle: ok}}
	for ce, want := range map[string]int{"": 204, "identity": 204, "gzip": 415, "br": 415} {
		r := post("/v1/x", "text/plain", "words")
		if ce != "" {
			r.Header.Set("Content-Encoding", ce)
		}
		if w, _ := serve(t, routes, Options{}, r); w.Code != want {
			t.Errorf("Content-Encoding %q: %d, want %d", ce, w.Code, want)
		}
	}
}
