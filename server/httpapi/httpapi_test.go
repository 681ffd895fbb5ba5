package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
)

// serve answers one request of method, target and body through a NewMux
// of routes with the options o (defaults for what o leaves zero).
func serve(t *testing.T, routes []Route, o Options, req *http.Request) (*httptest.ResponseRecorder, api.ErrorBody) {
	t.Helper()
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout, o.StreamTimeout = time.Minute, time.Minute
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = 4
	}
	w := httptest.NewRecorder()
	NewMux(routes, o).ServeHTTP(w, req)
	var eb api.ErrorBody
	if w.Code >= 400 {
		if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil {
			t.Fatalf("error body %q: %v", w.Body, err)
		}
	}
	return w, eb
}

func TestTokens(t *testing.T) {
	for _, bad := range []string{"", "# nothing\n", "rw short", "xx a-token-of-twenty-chars", "rw two tokens-of-sixteen"} {
		if _, err := ParseTokens(strings.NewReader(bad)); !errors.Is(err, ErrBadTokens) {
			t.Errorf("ParseTokens(%q): %v, want ErrBadTokens", bad, err)
		}
	}
	const ro, rw = "read-only-token-0123", "read-write-token-0123"
	tk, err := ParseTokens(strings.NewReader("# tokens\n\nro " + ro + "\nrw " + rw + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		header string
		write  bool
		status int // 0: accepted
	}{
		{"", false, 401}, {"Bearer ", false, 401}, {"Basic " + rw, false, 401}, {"Bearer not-a-known-token-0123", false, 401},
		{"Bearer " + ro, false, 0}, {"Bearer " + ro, true, 403}, {"Bearer " + rw, false, 0}, {"Bearer " + rw, true, 0},
		// The scheme's name is case-insensitive.
		{"bearer " + rw, true, 0}, {"BEARER " + ro, false, 0}, {"Bearer" + rw, false, 401},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		err := tk.Check(r, c.write)
		var he *Error
		switch {
		case c.status == 0 && err != nil, c.status != 0 && (!errors.As(err, &he) || he.Status != c.status):
			t.Errorf("Check(%q, write %v): %v, want status %d", c.header, c.write, err, c.status)
		}
	}
	if err := (*Tokens)(nil).Check(httptest.NewRequest("GET", "/", nil), true); err != nil {
		t.Errorf("nil Tokens: %v", err)
	}
}

func TestParams(t *testing.T) {
	r := httptest.NewRequest("GET", "/?threshold=0.8&limit=3&explain=true&name=x", nil)
	p := Params{Values: r.URL.Query()}
	p.Only("threshold", "limit", "explain", "name")
	if th, n, ex, s := p.Float("threshold"), p.Int("limit"), p.Bool("explain"), p.Str("name"); th != 0.8 || n != 3 || !ex || s != "x" || p.Err != nil {
		t.Fatalf("%v %v %v %q %v", th, n, ex, s, p.Err)
	}
	if p.Int("absent") != 0 || p.Err != nil {
		t.Fatalf("absent: %v", p.Err)
	}
	p = Params{Values: httptest.NewRequest("GET", "/?limit=x&explain=maybe", nil).URL.Query()}
	p.Int("limit")
	p.Bool("explain")
	if p.Err == nil || p.Err.Error() != `parameter limit="x" is not an integer` {
		t.Fatalf("first error: %v", p.Err)
	}
	p = Params{Values: httptest.NewRequest("GET", "/?colour=red", nil).URL.Query()}
	if p.Only("threshold"); p.Err == nil || !strings.Contains(p.Err.Error(), `unknown parameter "colour"`) {
		t.Fatalf("unknown parameter: %v", p.Err)
	}
	p = Params{Values: httptest.NewRequest("GET", "/?threshold=2", nil).URL.Query()}
	check := func(th float64) error { return fmt.Errorf("threshold %v", th) }
	if th := p.Threshold(check); th != 2 || p.Err == nil || p.Err.Error() != "threshold 2" {
		t.Fatalf("checked threshold: %v %v", th, p.Err)
	}
	p = Params{Values: httptest.NewRequest("GET", "/", nil).URL.Query()}
	if p.Threshold(check); p.Err == nil || !strings.Contains(p.Err.Error(), "threshold is required") {
		t.Fatalf("no threshold: %v", p.Err)
	}
}

func TestClassify(t *testing.T) {
	classes := []Class{
		{Status: 503, Code: api.CodeUnavailable, Errs: []error{context.Canceled}},
		{Status: 400, Code: api.CodeBadRequest, Errs: InputErrors, As: func(err error) bool { return errors.As(err, new(*db.ParamsError)) }},
	}
	for _, c := range []struct {
		err    error
		status int
	}{
		{BadRequest("x"), 400}, {fmt.Errorf("wrapped: %w", &Error{Status: 418, Code: "teapot"}), 418},
		{&http.MaxBytesError{Limit: 1}, 413}, {db.ErrTextTooLarge, 413}, {fmt.Errorf("a: %w", context.Canceled), 503},
		{fmt.Errorf("b: %w", db.ErrNoWords), 400}, {&db.ParamsError{}, 400}, {errors.New("other"), 500},
	} {
		if st, _ := Classify(c.err, classes); st != c.status {
			t.Errorf("Classify(%v) = %d, want %d", c.err, st, c.status)
		}
	}
}

// TestRetryAfter: an answer says Retry-After only for a cause that
// passes (its class's or its *Error's RetryAfter), not for every 503.
func TestRetryAfter(t *testing.T) {
	classes := []Class{{Status: 503, Code: api.CodeUnavailable, Errs: []error{context.Canceled}, RetryAfter: 1}}
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("a: %w", context.Canceled), "1"},
		{&Error{Status: 503, Code: api.CodeUnavailable, Message: "shutting down", RetryAfter: 2}, "2"},
		{&Error{Status: 503, Code: api.CodeUnavailable, Message: "the batch stopped at line 3 after 2 stored"}, ""},
		{errors.New("other"), ""},
	} {
		w := httptest.NewRecorder()
		writeError(w, "r1", c.err, classes)
		if got := w.Header().Get("Retry-After"); got != c.want {
			t.Errorf("%v: Retry-After %q, want %q", c.err, got, c.want)
		}
	}
}

func TestNewMux(t *testing.T) {
	block, started := make(chan struct{}), make(chan struct{}, 1)
	h := Handlers{
		Healthz: func(w http.ResponseWriter, r *http.Request) error {
			_, err := w.Write([]byte(RequestID(r.Context())))
			return err
		},
		Stats: func(w http.ResponseWriter, r *http.Request) error { return errors.New("a secret cause") },
		Add: func(w http.ResponseWriter, r *http.Request) error {
			_, _, err := ReadAdd(r)
			return err
		},
		Batch: func(w http.ResponseWriter, r *http.Request) error {
			select {
			case started <- struct{}{}:
			default:
			}
			<-block
			return nil
		},
	}
	missing := func(rt Route) HandlerFunc {
		return func(http.ResponseWriter, *http.Request) error {
			return &Error{Status: 501, Code: "not_implemented", Message: rt.Method + " " + rt.Pattern}
		}
	}
	routes := h.Routes(missing)
	if n := len(h.Routes(nil)); n != 4 || len(routes) != 23 {
		t.Fatalf("%d routes served, %d in all", n, len(routes))
	}

	w, _ := serve(t, routes, Options{}, httptest.NewRequest("GET", "/healthz", nil))
	if id := w.Header().Get("X-Request-ID"); w.Code != 200 || id == "" || w.Body.String() != id {
		t.Fatalf("healthz: %d %q, request id %q", w.Code, w.Body, id)
	}
	r := httptest.NewRequest("GET", "/v1/stats", nil)
	r.Header.Set("X-Request-ID", "req-1")
	w, eb := serve(t, routes, Options{}, r)
	if w.Code != 500 || eb.Error.Code != api.CodeInternal || eb.Error.RequestID != "req-1" || strings.Contains(eb.Error.Message, "secret") {
		t.Fatalf("internal error: %d %+v", w.Code, eb)
	}
	w, eb = serve(t, routes, Options{}, httptest.NewRequest("GET", "/v1/export", nil))
	if w.Code != 501 || eb.Error.Message != "GET /v1/export" {
		t.Fatalf("missing route: %d %+v", w.Code, eb)
	}
	// Every standard method a path does not take gets the API's 405
	// (JSON, with Allow), OPTIONS and TRACE too.
	for _, method := range []string{"OPTIONS", "TRACE", "PUT"} {
		w, eb = serve(t, routes, Options{}, httptest.NewRequest(method, "/v1/documents", nil))
		if w.Code != 405 || eb.Error.Code != api.CodeBadRequest || w.Header().Get("Allow") != "POST" {
			t.Fatalf("%s /v1/documents: %d %+v, Allow %q", method, w.Code, eb, w.Header().Get("Allow"))
		}
	}
	w, eb = serve(t, routes, Options{MaxBodyBytes: 10}, httptest.NewRequest("POST", "/v1/documents?id=a", strings.NewReader("a text longer than ten bytes")))
	if w.Code != 413 || eb.Error.Code != api.CodeTooLarge {
		t.Fatalf("body over the limit: %d %+v", w.Code, eb)
	}
	w, eb = serve(t, routes, Options{}, httptest.NewRequest("POST", "/v1/documents", strings.NewReader("text")))
	if w.Code != 400 || eb.Error.Message != "the document needs an id" {
		t.Fatalf("add without id: %d %+v", w.Code, eb)
	}
	tk, _ := ParseTokens(strings.NewReader("ro read-only-token-0123\n"))
	r = httptest.NewRequest("POST", "/v1/documents?id=a", strings.NewReader("text"))
	r.Header.Set("Authorization", "Bearer read-only-token-0123")
	if w, eb = serve(t, routes, Options{Tokens: tk}, r); w.Code != 403 || eb.Error.Code != api.CodeForbidden {
		t.Fatalf("write with a read token: %d %+v", w.Code, eb)
	}
	if w, _ = serve(t, routes, Options{Tokens: tk}, httptest.NewRequest("GET", "/healthz", nil)); w.Code != 200 {
		t.Fatalf("public route with tokens: %d", w.Code)
	}

	// One request at once: a second is a 429. The first is in its handler
	// (holding the one place) before the second is sent: sent together,
	// either could be the one refused.
	mux := NewMux(routes, Options{MaxBodyBytes: 1 << 20, RequestTimeout: time.Minute, StreamTimeout: time.Minute, MaxConcurrent: 1})
	done := make(chan struct{})
	first := httptest.NewRecorder()
	go func() {
		defer close(done)
		mux.ServeHTTP(first, httptest.NewRequest("POST", "/v1/batch", nil))
	}()
	select {
	case <-started:
	case <-done:
		t.Fatalf("the first request ended without being served: %d %s", first.Code, first.Body)
	case <-time.After(10 * time.Second):
		t.Fatal("the first request did not reach its handler")
	}
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/v1/stats", nil))
	if w.Code != 429 {
		t.Errorf("a second request while one is served: %d, want 429", w.Code)
	}
	close(block)
	<-done
	if first.Code != 200 {
		t.Errorf("the first request: %d, want 200", first.Code)
	}
}

func TestReadDelete(t *testing.T) {
	for _, c := range []struct {
		body, by, err string
	}{
		{`{"ids": ["a"]}`, "ids", ""}, {`{"prefix": ""}`, "prefix", ""}, {`{"older_than": "1d", "dry_run": true}`, "older_than", ""},
		{`{}`, "", "got 0"}, {`{"ids": [], "prefix": "a"}`, "", "got 2: ids, prefix"}, {`{"colour": 1}`, "", "unknown field"},
	} {
		_, by, err := ReadDelete(httptest.NewRequest("POST", "/v1/delete", strings.NewReader(c.body)))
		if by != c.by || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %q %v, want %q %q", c.body, by, err, c.by, c.err)
		}
	}
}

// TestJSONTypeErrors: a JSON value of the wrong type is named by its JSON
// field, not by the Go structs the server decodes into.
func TestJSONTypeErrors(t *testing.T) {
	for body, want := range map[string]string{
		`{"text": "a b c", "threshold": "high"}`: `malformed JSON body: "threshold" must be a number, not a string`,
		`{"text": 5}`:                            `malformed JSON body: "text" must be a string, not a number`,
		`{"text": "a", "limit": 1.5}`:            `malformed JSON body: "limit" must be an integer, not a number 1.5`,
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/query", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		_, err := ReadQuery(r)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Go struct") {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

// TestQuietStreamIsNotCut: a stream that writes, then says nothing for
// longer than a write may wait, then writes again, arrives whole over
// HTTP/1.1 and HTTP/2 (where a write deadline left armed resets the
// stream even when no write waits).
func TestQuietStreamIsNotCut(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		mux := NewMux([]Route{{Method: "GET", Pattern: "/s", Access: Public, Stream: true, Handle: func(w http.ResponseWriter, r *http.Request) error {
			_, _ = w.Write([]byte("first\n"))
			_ = http.NewResponseController(w).Flush()
			time.Sleep(600 * time.Millisecond) // quiet for longer than a write may wait
			_, err := w.Write([]byte("second\n"))
			return err
		}}}, Options{MaxConcurrent: 2, RequestTimeout: 200 * time.Millisecond, StreamTimeout: 200 * time.Millisecond, MaxBodyBytes: 1 << 20})
		ts := httptest.NewUnstartedServer(mux) // on 127.0.0.1
		ts.EnableHTTP2 = h2
		ts.StartTLS()
		resp, err := ts.Client().Get(ts.URL + "/s")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		ts.Close()
		if string(b) != "first\nsecond\n" || err != nil {
			t.Errorf("%s: %q, %v; want the two lines", resp.Proto, b, err)
		}
	}
}
