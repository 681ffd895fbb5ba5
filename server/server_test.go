package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/fpdb/fpdb/server/httpapi"
)

// text returns n random words.
func text(seed uint64, n int) string {
	rng := rand.New(rand.NewPCG(seed, 3))
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("w%d", rng.IntN(5000))
	}
	return strings.Join(ws, " ")
}

// testServer starts a server of a new database and registers its end: the
// database is checked and closed.
func testServer(t *testing.T, o *Options) (*httptest.Server, *db.DB) {
	t.Helper()
	d, err := db.Open(t.TempDir(), &db.Options{KeepTexts: true, AuditLog: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(d, o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		if err := d.Check(context.Background()); err != nil {
			t.Errorf("Check: %v", err)
		}
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return ts, d
}

// call sends a request and decodes the JSON answer into out (when not
// nil); it returns the status.
func call(t *testing.T, method, url, ctype string, body io.Reader, out any, hdr ...string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %q: %v", method, url, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

func jsonBody(v any) io.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

func TestDocumentsAndQuery(t *testing.T) {
	ts, d := testServer(t, nil)
	base := text(1, 300)
	var ar api.AddResult
	if st := call(t, "POST", ts.URL+"/v1/documents", "application/json", jsonBody(api.AddRequest{ID: "a/1.txt", Text: base, Source: "s"}), &ar); st != 201 || !ar.Stored {
		t.Fatalf("add JSON: %d %+v", st, ar)
	}
	// A plain body with parameters, then a form: near duplicates of a.
	near := base + " " + text(2, 10)
	if st := call(t, "POST", ts.URL+"/v1/documents?id=b&threshold=0.5", "text/plain", strings.NewReader(near), &ar); st != 201 || len(ar.Matches) != 1 || ar.Matches[0].ID != "a/1.txt" {
		t.Fatalf("add text: %d %+v", st, ar)
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "c.txt")
	fw.Write([]byte(near))
	mw.WriteField("id", "c")
	mw.WriteField("threshold", "0.5")
	mw.WriteField("reject", "true")
	mw.Close()
	if st := call(t, "POST", ts.URL+"/v1/documents", mw.FormDataContentType(), &form, &ar); st != 200 || !ar.Rejected || ar.Stored || len(ar.Matches) != 2 {
		t.Fatalf("add form with reject: %d %+v", st, ar)
	}
	// A form's parameters may also come in the query string (as a plain
	// body's do): reject there is honoured, not dropped; a parameter given
	// twice or unknown is refused.
	form.Reset()
	mw = multipart.NewWriter(&form)
	fw, _ = mw.CreateFormFile("file", "c.txt")
	fw.Write([]byte(near))
	mw.WriteField("id", "c")
	mw.Close()
	if st := call(t, "POST", ts.URL+"/v1/documents?threshold=0.5&reject=true", mw.FormDataContentType(), bytes.NewReader(form.Bytes()), &ar); st != 200 || !ar.Rejected || ar.Stored || len(ar.Matches) != 2 {
		t.Fatalf("add form with reject in the query string: %d %+v", st, ar)
	}
	for _, q := range []string{"?id=c2", "?bogus=1"} {
		var e api.Error
		if st := call(t, "POST", ts.URL+"/v1/documents"+q, mw.FormDataContentType(), bytes.NewReader(form.Bytes()), &e); st != 400 {
			t.Fatalf("add form%s: %d %+v", q, st, e)
		}
	}
	if _, err := d.Get(context.Background(), "c"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("a refused form stored c: %v", err)
	}
	// Unchanged, then replaced.
	if st := call(t, "POST", ts.URL+"/v1/documents", "application/json", jsonBody(api.AddRequest{ID: "a/1.txt", Text: base}), &ar); st != 200 || !ar.Unchanged {
		t.Fatalf("re-add: %d %+v", st, ar)
	}
	if st := call(t, "POST", ts.URL+"/v1/documents", "application/json", jsonBody(api.AddRequest{ID: "a/1.txt", Text: base, Replace: true}), &ar); st != 201 || !ar.Replaced {
		t.Fatalf("replace: %d %+v", st, ar)
	}

	// Query: JSON and plain, the same answer as the db's.
	var qr api.QueryResult
	if st := call(t, "POST", ts.URL+"/v1/query", "application/json", jsonBody(api.QueryRequest{Text: near, Threshold: 0.5, Explain: true}), &qr); st != 200 {
		t.Fatalf("query: %d", st)
	}
	want, err := d.Query(context.Background(), []byte(near), db.QueryOptions{Threshold: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(qr.Matches, apiconv.Matches(want.Matches)) || qr.Explain == nil || qr.Explain.Verified == 0 {
		t.Fatalf("query %+v, db %+v", qr, want.Matches)
	}
	var qp api.QueryResult
	if st := call(t, "POST", ts.URL+"/v1/query?threshold=0.5&plan=scan", "text/plain", strings.NewReader(near), &qp); st != 200 || !slices.Equal(qp.Matches, qr.Matches) {
		t.Fatalf("plain query: %d %+v", st, qp)
	}
	// By fingerprint, with containment.
	var doc api.Doc
	if st := call(t, "GET", ts.URL+"/v1/documents/"+url.PathEscape("a/1.txt"), "", nil, &doc); st != 200 || doc.ID != "a/1.txt" || doc.Source != "" || doc.Words != 300 {
		t.Fatalf("get: %d %+v", st, doc)
	}
	if st := call(t, "POST", ts.URL+"/v1/query", "application/json", jsonBody(api.QueryRequest{Fingerprint: doc.Fingerprint, Shingles: doc.Shingles, Containment: 0.9}), &qp); st != 200 || len(qp.Matches) != 2 {
		t.Fatalf("fingerprint query: %d %+v", st, qp)
	}

	var stats api.Stats
	if st := call(t, "GET", ts.URL+"/v1/stats", "", nil, &stats); st != 200 || stats.Docs != 2 || stats.K != 512 || !stats.KeepTexts {
		t.Fatalf("stats: %d %+v", st, stats)
	}
	var dr api.DeleteResult
	if st := call(t, "DELETE", ts.URL+"/v1/documents/b?dry_run=true", "", nil, &dr); st != 200 || !dr.DryRun || d.Len() != 2 {
		t.Fatalf("dry run: %d %+v", st, dr)
	}
	if st := call(t, "DELETE", ts.URL+"/v1/documents/b", "", nil, &dr); st != 200 || dr.Deleted != 1 || d.Len() != 1 {
		t.Fatalf("delete: %d %+v", st, dr)
	}
	var e api.ErrorBody
	if st := call(t, "GET", ts.URL+"/v1/documents/b", "", nil, &e); st != 404 || e.Error.Code != api.CodeNotFound || e.Error.RequestID == "" || e.Error.Message != `fpdb: get "b": document not found` {
		t.Fatalf("get deleted: %d %+v", st, e)
	}
	if st := call(t, "DELETE", ts.URL+"/v1/documents/b", "", nil, &e); st != 404 {
		t.Fatalf("delete again: %d %+v", st, e)
	}
	// Forgetting b, deleted before, erases its log entries: a success
	// that says so; forgetting it again, or an id never seen, is a 404.
	ctx := context.Background()
	logOf := func(id string) (n int) {
		if err := d.Log(ctx, db.LogOptions{ID: id}, func(db.LogEntry) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if logOf("b") == 0 {
		t.Fatal("b has no log entries to forget")
	}
	dr = api.DeleteResult{}
	if st := call(t, "DELETE", ts.URL+"/v1/documents/b?forget=true", "", nil, &dr); st != 200 || dr.Deleted != 0 || dr.Erased == nil || *dr.Erased == 0 || logOf("b") != 0 {
		t.Fatalf("forget a deleted document: %d %+v, %d log entries left", st, dr, logOf("b"))
	}
	for _, id := range []string{"b", "never"} {
		if st := call(t, "DELETE", ts.URL+"/v1/documents/"+id+"?forget=true", "", nil, &e); st != 404 {
			t.Fatalf("forget %s again: %d %+v", id, st, e)
		}
	}
}

// TestBadInputLeavesDBUnchanged: every malformed request gets a clear 4xx
// naming the problem, and the database does not change.
func TestBadInputLeavesDBUnchanged(t *testing.T) {
	ts, d := testServer(t, &Options{MaxBodyBytes: 1 << 16})
	if st := call(t, "POST", ts.URL+"/v1/documents?id=keep", "text/plain", strings.NewReader(text(5, 100)), nil); st != 201 {
		t.Fatal(st)
	}
	before := d.Stats().Docs
	big := strings.Repeat("word ", 20_000)
	for _, c := range []struct {
		name, method, path, ctype, body string
		status                          int
		msg                             string
	}{
		{"malformed JSON", "POST", "/v1/documents", "application/json", `{"id": "x", "text": `, 400, "malformed JSON"},
		{"invalid UTF-8", "POST", "/v1/documents", "application/json", "{\"id\": \"x\", \"text\": \"\xff\xfe\"}", 400, "UTF-8"},
		{"unknown field", "POST", "/v1/documents", "application/json", `{"id": "x", "text": "a b c d", "colour": 1}`, 400, "colour"},
		{"two values", "POST", "/v1/documents", "application/json", `{"id": "x", "text": "a b c d"} {}`, 400, "more than one"},
		{"no id", "POST", "/v1/documents", "application/json", `{"text": "a b c d"}`, 400, "id"},
		{"bad id", "POST", "/v1/documents?id=a%00b", "text/plain", "a b c d", 400, "NUL"},
		{"no words", "POST", "/v1/documents?id=x", "text/plain", " ... ", 400, "no words"},
		{"binary", "POST", "/v1/documents?id=x", "text/plain", "a\x00b", 400, ""},
		{"too large", "POST", "/v1/documents?id=x", "text/plain", big, 413, "larger than this server's limit of 65536 bytes (fpdb serve --max-body)"},
		{"unknown parameter", "POST", "/v1/documents?id=x&colour=1", "text/plain", "a b c d", 400, "colour"},
		{"bad threshold", "POST", "/v1/documents?id=x&threshold=2", "text/plain", "a b c d", 400, "threshold=2"},
		{"not a number", "POST", "/v1/documents?id=x&threshold=high", "text/plain", "a b c d", 400, "parameter threshold=\"high\" is not a number"},
		{"reject without threshold", "POST", "/v1/documents?id=x&reject=true", "text/plain", "a b c d", 400, "reject"},
		{"content type", "POST", "/v1/documents?id=x", "image/png", "a b c d", 415, "Content-Type"},
		{"bad format", "POST", "/v1/documents?id=x&format=pdf", "text/plain", "a b c d", 400, "pdf"},
		{"query without text", "POST", "/v1/query", "application/json", `{"threshold": 0.5}`, 400, "text or a fingerprint"},
		{"bad plan", "POST", "/v1/query", "application/json", `{"text": "a b c d", "plan": "fast"}`, 400, "fast"},
		{"bad fingerprint", "POST", "/v1/query", "application/json", `{"fingerprint": "zz"}`, 400, "fingerprint"},
		{"negative limit", "POST", "/v1/query?limit=-1", "text/plain", "a b c d e f", 400, "limit"},
		{"negative limit, JSON", "POST", "/v1/query", "application/json", `{"text": "a b c d e f", "limit": -1}`, 400, "limit"},
		{"recall above 1", "POST", "/v1/query?plan=approx&recall=5", "text/plain", "a b c d e f", 400, "recall"},
		{"negative recall", "POST", "/v1/query?plan=approx&recall=-1", "text/plain", "a b c d e f", 400, "recall"},
		{"query threshold 0", "POST", "/v1/query?threshold=0", "text/plain", "a b c d e f", 400, "threshold=0"},
		{"add threshold 0", "POST", "/v1/documents?id=x&threshold=0", "text/plain", "a b c d e f", 400, "threshold=0"},
		// In JSON an explicit threshold is one too, not the field left out.
		{"query threshold 0, JSON", "POST", "/v1/query", "application/json", `{"text": "a b c d e f", "threshold": 0}`, 400, "threshold 0"},
		{"query threshold 0 with containment, JSON", "POST", "/v1/query", "application/json", `{"text": "a b c d e f", "containment": 0.5, "threshold": 0}`, 400, "threshold 0"},
		{"query negative threshold, JSON", "POST", "/v1/query", "application/json", `{"text": "a b c d e f", "threshold": -0.5}`, 400, "threshold -0.5"},
		{"query threshold above 1, JSON", "POST", "/v1/query", "application/json", `{"text": "a b c d e f", "threshold": 1.5}`, 400, "threshold 1.5"},
		{"query threshold NaN, JSON", "POST", "/v1/query", "application/json", `{"text": "a b c d e f", "threshold": NaN}`, 400, "malformed JSON"},
		{"add threshold 0, JSON", "POST", "/v1/documents", "application/json", `{"id": "x", "text": "a b c d e f", "threshold": 0}`, 400, "threshold 0"},
		{"batch line threshold 0", "POST", "/v1/batch", "application/x-ndjson", `{"id": "x", "text": "a b c d e f", "threshold": 0}`, 400, "not allowed on a line"},
		{"recall without plan approx", "POST", "/v1/query?recall=0.9", "text/plain", "a b c d e f", 400, "goes with plan"},
		{"recall with plan probe", "POST", "/v1/query", "application/json", `{"text": "a b c d e f", "plan": "probe", "recall": 0.9}`, 400, "goes with plan"},
		{"tau out of range", "POST", "/v1/query?plan=probe&tau=100000", "text/plain", "a b c d e f", 400, "not a probe radius"},
		{"wrong method", "PUT", "/v1/documents", "text/plain", "a", 405, "this path takes POST"},
		{"wrong method on a document", "POST", "/v1/documents/x", "text/plain", "a", 405, "this path takes GET, HEAD, DELETE"},
		{"documents without an id", "GET", "/v1/documents", "", "", 405, "this path takes POST"},
		{"unknown path, not GET", "POST", "/v2/nothing", "text/plain", "a", 404, "no such path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, ts.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", c.ctype)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, b)
			}
			if want := map[string]string{"wrong method": "POST", "wrong method on a document": "GET, HEAD, DELETE", "documents without an id": "POST"}[c.name]; resp.Header.Get("Allow") != want {
				t.Fatalf("Allow %q, want %q", resp.Header.Get("Allow"), want)
			}
			{
				var e api.ErrorBody
				if err := json.Unmarshal(b, &e); err != nil || !strings.Contains(strings.ToLower(e.Error.Message), strings.ToLower(c.msg)) {
					t.Fatalf("error body %s (%v), want a message with %q", b, err, c.msg)
				}
				want := map[string]string{"no words": "no_words", "binary": "binary", "bad id": "invalid_id"}[c.name]
				if strings.HasPrefix(c.msg, "threshold") {
					want = "invalid_threshold"
				}
				if want != "" && e.Error.Reason != want {
					t.Fatalf("reason %q, want %q", e.Error.Reason, want)
				}
			}
		})
	}
	if d.Stats().Docs != before {
		t.Fatalf("bad requests changed the database: %d documents, want %d", d.Stats().Docs, before)
	}
}

// TestSlowClient: a body that arrives a byte at a time is cut off at the
// request timeout with 408, and the database is unchanged.
func TestSlowClient(t *testing.T) {
	ts, d := testServer(t, &Options{RequestTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := "slow words arrive one byte at a time"
	fmt.Fprintf(conn, "POST /v1/documents?id=slow HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n", len(body))
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(conn)
		done <- string(b)
	}()
	for i := 0; i < len(body); i++ {
		if _, err := conn.Write([]byte{body[i]}); err != nil {
			break
		}
		select {
		case resp := <-done:
			if !strings.HasPrefix(resp, "HTTP/1.1 408") {
				t.Fatalf("response %q, want 408", resp)
			}
			// The message names the limit, not the connection's addresses.
			if !strings.Contains(resp, "fpdb serve --timeout") || strings.Contains(resp, "127.0.0.1") || strings.Contains(resp, "i/o timeout") {
				t.Fatalf("response %q, want a message naming --timeout and no address", resp)
			}
			if d.Len() != 0 {
				t.Fatal("the slow add was stored")
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("the slow client was never cut off")
}

// TestTooManyRequests: with one request slot taken (a body still
// arriving), another request is answered 429 at once.
func TestTooManyRequests(t *testing.T) {
	ts, _ := testServer(t, &Options{MaxConcurrent: 1, RequestTimeout: 5 * time.Second})
	// hold takes the one slot with an add whose body is still arriving.
	hold := func() net.Conn {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/documents?id=hold HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nsome")
		return conn
	}
	conn := hold()
	defer func() { conn.Close() }()
	var e api.ErrorBody
	deadline := time.Now().Add(20 * time.Second)
	for st := 0; ; {
		if time.Now().After(deadline) {
			t.Fatalf("never 429 (last %d)", st)
		}
		// Give the held add time to reach the server and take the slot
		// before asking: a request on the client's open connection
		// would otherwise come first every time on a busy machine. An
		// add answered meanwhile (429, if a request of the previous
		// round held the slot, or a timeout) or a closed connection is
		// held again.
		_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if n, err := conn.Read(make([]byte, 1)); n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			conn.Close()
			conn = hold()
			continue
		}
		st = call(t, "GET", ts.URL+"/v1/stats", "", nil, &e)
		if st == 429 {
			if e.Error.Code != api.CodeTooManyRequests {
				t.Fatalf("429 body %+v", e)
			}
			break
		}
	}
	// Health checks are not limited.
	if st := call(t, "GET", ts.URL+"/healthz", "", nil, nil); st != 200 {
		t.Fatalf("healthz %d", st)
	}
}

func TestTokens(t *testing.T) {
	const ro, rw = "read-only-token-0123", "read-write-token-4567"
	toks, err := ParseTokens(strings.NewReader("# tokens\nro " + ro + "\n\nrw " + rw + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts, d := testServer(t, &Options{Tokens: toks})
	add := func(hdr ...string) int {
		return call(t, "POST", ts.URL+"/v1/documents?id=x", "text/plain", strings.NewReader(text(9, 50)), nil, hdr...)
	}
	if st := add(); st != 401 {
		t.Fatalf("no token: %d", st)
	}
	if st := add("Authorization", "Bearer wrong-token-wrong-token"); st != 401 {
		t.Fatalf("unknown token: %d", st)
	}
	// A 401 names the scheme it asks for.
	req, _ := http.NewRequest("GET", ts.URL+"/v1/stats", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("no token: %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	if st := add("Authorization", "Bearer "+ro); st != 403 {
		t.Fatalf("read-only token writing: %d", st)
	}
	if d.Len() != 0 {
		t.Fatal("a refused add was stored")
	}
	if st := add("Authorization", "Bearer "+rw); st != 201 {
		t.Fatalf("read-write token: %d", st)
	}
	if st := call(t, "GET", ts.URL+"/v1/stats", "", nil, nil, "Authorization", "Bearer "+ro); st != 200 {
		t.Fatalf("read-only token reading: %d", st)
	}
	if st := call(t, "GET", ts.URL+"/healthz", "", nil, nil); st != 200 {
		t.Fatalf("healthz needs no token: %d", st)
	}
	for _, bad := range []string{"", "# nothing\n", "rw short\n", "admin " + rw + "\n", "rw a b\n"} {
		if _, err := ParseTokens(strings.NewReader(bad)); err == nil {
			t.Errorf("token file %q accepted", bad)
		}
	}
}

// TestCheckThenAddConcurrent: 16 clients add near duplicates of one text
// at once with reject: exactly one is stored.
func TestCheckThenAddConcurrent(t *testing.T) {
	ts, d := testServer(t, nil)
	base := text(11, 400)
	var wg sync.WaitGroup
	stored := make(chan string, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := base + fmt.Sprintf(" extra%d", i)
			var ar api.AddResult
			req, _ := http.NewRequest("POST", fmt.Sprintf("%s/v1/documents?id=d%d&threshold=0.8&reject=true", ts.URL, i), strings.NewReader(body))
			req.Header.Set("Content-Type", "text/plain")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if err := json.NewDecoder(resp.Body).Decode(&ar); err != nil {
				t.Error(err)
				return
			}
			if ar.Stored {
				stored <- ar.ID
			}
		}()
	}
	wg.Wait()
	close(stored)
	var ids []string
	for id := range stored {
		ids = append(ids, id)
	}
	if len(ids) != 1 || d.Len() != 1 {
		t.Fatalf("stored %v (%d documents), want exactly one", ids, d.Len())
	}
}

// serveOn runs Serve of a new database with o and grace on a loopback
// port, and returns the database, the listener's address, the cancel
// that asks for the shutdown and the channel of Serve's result.
func serveOn(t *testing.T, o *Options, grace time.Duration) (*db.DB, string, context.CancelFunc, chan error) {
	t.Helper()
	d, err := db.Open(t.TempDir(), &db.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	s, err := New(d, o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, grace) }()
	return d, ln.Addr().String(), cancel, done
}

func TestReadyAndShutdown(t *testing.T) {
	d, addr, cancel, done := serveOn(t, nil, 5*time.Second)
	u := "http://" + addr
	if st := call(t, "GET", u+"/readyz", "", nil, nil); st != 200 {
		t.Fatalf("readyz %d", st)
	}
	if st := call(t, "POST", u+"/v1/documents?id=a", "text/plain", strings.NewReader(text(1, 50)), nil); st != 201 {
		t.Fatalf("add %d", st)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if _, err := http.Get(u + "/healthz"); err == nil {
		t.Fatal("the server still answers after shutdown")
	}
	if d.Len() != 1 {
		t.Fatal("the add before shutdown is missing")
	}
}

// TestShutdownGraceOver: a request still in flight when the grace period
// ends (a body that never completes) has its connection closed, and Serve
// returns nil (the shutdown was asked for) without waiting for it; what
// was stored before stays.
func TestShutdownGraceOver(t *testing.T) {
	d, addr, cancel, done := serveOn(t, &Options{RequestTimeout: time.Minute}, 200*time.Millisecond)
	u := "http://" + addr
	if st := call(t, "POST", u+"/v1/documents?id=a", "text/plain", strings.NewReader(text(1, 50)), nil); st != 201 {
		t.Fatalf("add %d", st)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A body announced as 1 MB, of which a few bytes come.
	fmt.Fprintf(conn, "POST /v1/documents?id=b HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1000000\r\n\r\nsome words")
	time.Sleep(100 * time.Millisecond) // the request is in its handler
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after the grace period: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the grace period")
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("Serve took %v to return", el)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the cut request's connection: %v, want it closed", err)
	}
	if d.Len() != 1 {
		t.Fatalf("%d documents after shutdown, want 1", d.Len())
	}
}

// TestOpenAPIMatchesRoutes: every route the server registers is in
// openapi.json with its method, every documented operation is a route,
// and every documented route answers (neither 404 for an unknown path nor
// 405).
func TestOpenAPIMatchesRoutes(t *testing.T) {
	ts, _ := testServer(t, nil)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	s := &Server{}
	inCode := map[string]bool{}
	for _, rt := range s.routes() {
		inCode[rt.Method+" "+strings.ReplaceAll(rt.Pattern, "{id...}", "{id}")] = true
	}
	for op := range inCode {
		if !documented[op] {
			t.Errorf("route %s is not in openapi.json", op)
		}
	}
	for op := range documented {
		if !inCode[op] {
			t.Errorf("openapi.json documents %s, which the server does not serve", op)
			continue
		}
		method, path, _ := strings.Cut(op, " ")
		path = strings.ReplaceAll(path, "{id}", "some-id")
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e api.ErrorBody
		if resp.StatusCode == 405 || resp.StatusCode == 404 && (json.Unmarshal(b, &e) != nil || e.Error.Code != api.CodeNotFound) {
			t.Errorf("%s: %d %s", op, resp.StatusCode, b)
		}
	}
	var served map[string]any
	if st := call(t, "GET", ts.URL+"/v1/openapi.json", "", nil, &served); st != 200 || served["openapi"] == nil {
		t.Fatalf("served document: %d", st)
	}
}

// TestStorageStats: GET /v1/stats?storage=true is what "fpdb stats --json"
// prints: the db's statistics and storage statistics.
func TestStorageStats(t *testing.T) {
	ts, d := testServer(t, nil)
	for i := range 5 {
		call(t, "POST", fmt.Sprintf("%s/v1/documents?id=d%d", ts.URL, i), "text/plain", strings.NewReader(text(uint64(i), 80)), nil)
	}
	var got api.StorageStats
	if st := call(t, "GET", ts.URL+"/v1/stats?storage=true", "", nil, &got); st != 200 {
		t.Fatalf("status %d", st)
	}
	ss, err := d.StorageStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Docs != 5 || got.Texts != ss.Texts || got.PostingKeys != ss.PostingKeys || got.LogEntries != ss.LogEntries || got.M != 32 || len(got.PostingLengths) == 0 {
		t.Fatalf("storage stats %+v, db %+v", got, ss)
	}
	var e api.ErrorBody
	if st := call(t, "GET", ts.URL+"/v1/stats?storage=maybe", "", nil, &e); st != 400 {
		t.Fatalf("storage=maybe: %d", st)
	}
}

// TestMultipartAddLeavesNoTempFile: the file part of a form over 1 MiB,
// which net/http keeps in a temporary file, is removed once the add is
// answered, stored or refused.
func TestMultipartAddLeavesNoTempFile(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ts, d := testServer(t, nil)
	big := text(7, 400_000) // over 2 MB
	for _, tc := range []struct {
		id     string
		status int
	}{{"big", 201}, {"", 400}} {
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		fw, _ := mw.CreateFormFile("file", "big.txt")
		fw.Write([]byte(big))
		if tc.id != "" {
			mw.WriteField("id", tc.id)
		}
		mw.Close()
		if st := call(t, "POST", ts.URL+"/v1/documents", mw.FormDataContentType(), &form, nil); st != tc.status {
			t.Fatalf("add form id %q: %d, want %d", tc.id, st, tc.status)
		}
		left, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range left {
			t.Errorf("after the add of id %q (%d): %s left in $TMPDIR", tc.id, tc.status, e.Name())
		}
	}
	if d.Len() != 1 {
		t.Fatalf("%d documents stored", d.Len())
	}
}

// TestNonUTF8Source: a source that is not UTF-8 (a file's path may be any
// bytes: "fpdb add" stores it as it is) is accepted as a parameter and
// answered byte for byte: in source_base64, which api.Doc reads back.
func TestNonUTF8Source(t *testing.T) {
	ts, d := testServer(t, nil)
	src := "dir/\xff\xfe-<a&b>.txt"
	if st := call(t, "POST", ts.URL+"/v1/documents?id=a&source="+url.QueryEscape(src), "text/plain", strings.NewReader(text(3, 50)), nil); st != 201 {
		t.Fatalf("add: %d", st)
	}
	if doc, err := d.Get(context.Background(), "a"); err != nil || doc.Source != src {
		t.Fatalf("stored source %q (%v), want %q", doc.Source, err, src)
	}
	resp, err := http.Get(ts.URL + "/v1/documents/a")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil || raw["source"] != "dir/\ufffd\ufffd-<a&b>.txt" || raw["source_base64"] == nil {
		t.Fatalf("GET: %s (%v)", b, err)
	}
	var doc api.Doc
	if err := json.Unmarshal(b, &doc); err != nil || doc.Source != src || doc.ID != "a" || doc.Words != 50 {
		t.Fatalf("as api.Doc: %+v (%v)", doc, err)
	}
	// A UTF-8 source has no source_base64.
	if st := call(t, "POST", ts.URL+"/v1/documents?id=b&source=caf%C3%A9", "text/plain", strings.NewReader(text(4, 50)), nil); st != 201 {
		t.Fatalf("add b: %d", st)
	}
	raw = nil
	if st := call(t, "GET", ts.URL+"/v1/documents/b", "", nil, &raw); st != 200 || raw["source"] != "café" || raw["source_base64"] != nil {
		t.Fatalf("GET b: %d %v", st, raw)
	}
}

// TestOpenAPIStatuses: openapi.json lists the statuses the server answers:
// 401 and 429 for every guarded route (the token check and the limit of
// requests at once), 403 for every write, and those of bad requests.
func TestOpenAPIStatuses(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	listed := func(method, pattern, status string) bool {
		pattern = strings.ReplaceAll(pattern, "{id...}", "{id}")
		_, ok := doc.Paths[pattern][strings.ToLower(method)].Responses[status]
		return ok
	}
	s := &Server{}
	for _, rt := range s.routes() {
		var want []string
		switch rt.Access {
		case httpapi.Read:
			want = []string{"401", "429"}
		case httpapi.Write:
			want = []string{"401", "403", "429"}
		}
		for _, st := range want {
			if !listed(rt.Method, rt.Pattern, st) {
				t.Errorf("%s %s: %s is not listed", rt.Method, rt.Pattern, st)
			}
		}
	}
	ts, _ := testServer(t, nil)
	for _, c := range []struct{ method, path, pattern string }{
		{"GET", "/v1/documents/%FF", "/v1/documents/{id}"},
		{"GET", "/v1/documents/", "/v1/documents/{id}"},
		{"DELETE", "/v1/documents/%FF", "/v1/documents/{id}"},
		{"DELETE", "/v1/documents/", "/v1/documents/{id}"},
		{"DELETE", "/v1/documents/a?dry_run=maybe", "/v1/documents/{id}"},
		{"DELETE", "/v1/templates/%FF", "/v1/templates/{name}"},
		{"GET", "/v1/stats?storage=maybe", "/v1/stats"},
	} {
		st := call(t, c.method, ts.URL+c.path, "", nil, nil)
		if !listed(c.method, c.pattern, strconv.Itoa(st)) {
			t.Errorf("%s %s: %d, which openapi.json does not list", c.method, c.path, st)
		}
	}
}
