package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
)

// fill stores groups of size near duplicates (a text and edits of it) and
// singles unrelated documents, ids g<i>-<j> and s<i>, with AddBatch.
func fill(t *testing.T, d *db.DB, groups, size, singles, words int) {
	t.Helper()
	var ins []db.Input
	for g := range groups {
		base := text(uint64(1000+g), words)
		for j := range size {
			ins = append(ins, db.Input{ID: fmt.Sprintf("g%d-%d", g, j), Text: []byte(base + " " + text(uint64(5000+100*g+j), 1+j*3)),
				Source: "group"})
		}
	}
	for i := range singles {
		ins = append(ins, db.Input{ID: fmt.Sprintf("s%d", i), Text: []byte(text(uint64(9000+i), words))})
	}
	res, err := d.AddBatch(context.Background(), ins)
	if err != nil || len(res.Skipped) > 0 {
		t.Fatalf("fill: %v %+v", err, res)
	}
}

// getLines GETs url and returns the status, the content type and the
// lines of the body.
func getLines(t *testing.T, url string) (int, string, [][]byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	var lines [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(l) > 0 {
			lines = append(lines, l)
		}
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), lines
}

// strictDecode decodes one JSON value, refusing unknown fields: the API
// type must hold every field the server sends.
func strictDecode(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// wantError checks a 4xx answer: its status, a JSON error body and a
// message holding msg.
func wantError(t *testing.T, method, url, ctype, body string, status int, msg string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e api.ErrorBody
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &e) != nil ||
		!strings.Contains(e.Error.Message, msg) {
		t.Errorf("%s %s %q: %d %s %s, want %d and a message with %q", method, url, body, resp.StatusCode,
			resp.Header.Get("Content-Type"), b, status, msg)
	}
}

func TestPairsEndpoint(t *testing.T) {
	ts, d := testServer(t, nil)
	fill(t, d, 8, 3, 20, 200)
	for _, th := range []float64{0.9, 0.6} {
		st, ct, lines := getLines(t, fmt.Sprintf("%s/v1/pairs?threshold=%v", ts.URL, th))
		if st != 200 || ct != "application/x-ndjson" {
			t.Fatalf("pairs: %d %s", st, ct)
		}
		var got, want []api.Pair
		for _, l := range lines {
			var p api.Pair
			strictDecode(t, l, &p)
			got = append(got, p)
		}
		if _, err := d.Pairs(context.Background(), db.PairsOptions{Threshold: th}, func(p db.Pair) error {
			want = append(want, apiconv.Pair(p))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		less := func(a, b api.Pair) int { return strings.Compare(a.A+"\x00"+a.B, b.A+"\x00"+b.B) }
		slices.SortFunc(got, less)
		slices.SortFunc(want, less)
		if len(want) < 8*3 || !slices.Equal(got, want) {
			t.Fatalf("threshold %v: %d pairs served, db has %d:\n%v\n%v", th, len(got), len(want), got, want)
		}
	}
	// An empty answer is a 200 with no line.
	d2 := ts.URL + "/v1/pairs?threshold=1"
	if st, _, lines := getLines(t, d2); st != 200 || len(lines) != 0 {
		t.Fatalf("threshold 1: %d, %d lines", st, len(lines))
	}
	for q, msg := range map[string]string{"": "threshold is required", "?threshold=0": "threshold", "?threshold=1.5": "threshold",
		"?threshold=high": "not a number", "?threshold=0.9&colour=red": "colour", "?threshold=NaN": "threshold"} {
		wantError(t, "GET", ts.URL+"/v1/pairs"+q, "", "", 400, msg)
	}
}

func TestClustersEndpoint(t *testing.T) {
	ts, d := testServer(t, nil)
	fill(t, d, 6, 4, 10, 200)
	for _, c := range []struct {
		query string
		o     db.ClusterOptions
	}{
		{"threshold=0.8", db.ClusterOptions{PairsOptions: db.PairsOptions{Threshold: 0.8}}},
		{"threshold=0.8&keep=longest", db.ClusterOptions{PairsOptions: db.PairsOptions{Threshold: 0.8}, Keep: db.KeepLongest}},
		{"threshold=0.7&centers=true&keep=oldest&max_size=2", db.ClusterOptions{PairsOptions: db.PairsOptions{Threshold: 0.7},
			Keep: db.KeepOldest, Mode: db.ClusterCenters, MaxSize: 2}},
	} {
		st, ct, lines := getLines(t, ts.URL+"/v1/clusters?"+c.query)
		if st != 200 || ct != "application/x-ndjson" {
			t.Fatalf("%s: %d %s", c.query, st, ct)
		}
		cs, _, err := d.Clusters(context.Background(), c.o)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != len(cs) || len(cs) < 6 {
			t.Fatalf("%s: %d lines, db has %d clusters", c.query, len(lines), len(cs))
		}
		for i, l := range lines {
			var got api.Cluster
			strictDecode(t, l, &got)
			want := apiconv.Cluster(i+1, cs[i])
			wb, _ := json.Marshal(want)
			if gb, _ := json.Marshal(got); !bytes.Equal(gb, wb) || !bytes.Equal(l, wb) {
				t.Fatalf("%s: cluster %d\n%s\nwant\n%s", c.query, i+1, l, wb)
			}
		}
	}
	for q, msg := range map[string]string{"keep=oldest": "threshold is required", "threshold=0.8&keep=best": "keep",
		"threshold=0.8&centers=true&max_size=1": "max_size", "threshold=0.8&max_size=3": "centers",
		"threshold=0.8&centers=maybe": "centers", "threshold=2": "threshold"} {
		wantError(t, "GET", ts.URL+"/v1/clusters?"+q, "", "", 400, msg)
	}
}

func TestExportEndpoint(t *testing.T) {
	ts, d := testServer(t, nil)
	fill(t, d, 3, 3, 5, 100)
	if err := d.Delete(context.Background(), "s0"); err != nil {
		t.Fatal(err)
	}
	st, ct, lines := getLines(t, ts.URL+"/v1/export")
	var want bytes.Buffer
	n, err := d.Export(context.Background(), &want)
	if err != nil {
		t.Fatal(err)
	}
	got := append(bytes.Join(lines, []byte("\n")), '\n')
	if st != 200 || ct != "application/x-ndjson" || !bytes.Equal(got, want.Bytes()) || len(lines) < n+2 {
		t.Fatalf("export: %d %s, %d lines (%d documents):\n%s\nwant\n%s", st, ct, len(lines), n, got, want.Bytes())
	}
	// It imports.
	if m, err := db.Import(context.Background(), t.TempDir(), bytes.NewReader(got), &db.Options{NoSync: true}); err != nil || m != d.Len() {
		t.Fatalf("import of the served export: %d, %v", m, err)
	}
	wantError(t, "GET", ts.URL+"/v1/export?salvage=true", "", "", 400, "salvage")
}

func TestLogEndpoint(t *testing.T) {
	ts, d := testServer(t, nil)
	fill(t, d, 2, 2, 3, 100)
	ctx := context.Background()
	if _, err := d.Add(ctx, db.Input{ID: "g0-9", Text: []byte(text(1000, 100))}, &db.AddOptions{Threshold: 0.5, Reject: true}); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query string
		o     db.LogOptions
	}{
		{"", db.LogOptions{}},
		{"?id=s1", db.LogOptions{ID: "s1"}},
		{"?after=3&limit=2", db.LogOptions{After: 3, Limit: 2}},
		{"?since=1h", db.LogOptions{Since: time.Now().Add(-time.Hour)}},
		{"?since=2000-01-01T00:00:00Z", db.LogOptions{Since: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	} {
		st, ct, lines := getLines(t, ts.URL+"/v1/log"+c.query)
		var want [][]byte
		if err := d.Log(ctx, c.o, func(e db.LogEntry) error {
			b, err := json.Marshal(e)
			want = append(want, b)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if st != 200 || ct != "application/x-ndjson" || len(want) == 0 || len(lines) != len(want) {
			t.Fatalf("log%s: %d %s, %d lines, db %d", c.query, st, ct, len(lines), len(want))
		}
		for i, l := range lines {
			// Each line is what "fpdb log --json" prints, and api.LogEntry
			// holds all of it.
			var e api.LogEntry
			strictDecode(t, l, &e)
			again, _ := json.Marshal(e)
			if !bytes.Equal(l, want[i]) || !bytes.Equal(again, l) {
				t.Fatalf("log%s line %d:\n%s\nwant\n%s\nas api.LogEntry\n%s", c.query, i, l, want[i], again)
			}
		}
	}
	for q, msg := range map[string]string{"?since=yesterday": "since", "?after=-1": "after", "?limit=-2": "limit", "?limit=x": "limit", "?who=me": "who"} {
		wantError(t, "GET", ts.URL+"/v1/log"+q, "", "", 400, msg)
	}
	// A database without a log: 400 before any line.
	nd, err := db.Open(t.TempDir(), &db.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	nts := serveDB(t, nd, nil)
	wantError(t, "GET", nts.URL+"/v1/log", "", "", 400, "log")
}

// serveDB serves d (with options o) on 127.0.0.1 until the test ends.
func serveDB(t *testing.T, d *db.DB, o *Options) *httptestSrv {
	t.Helper()
	s, err := New(d, o)
	if err != nil {
		t.Fatal(err)
	}
	return httptestServer(t, s)
}

// httptestServer serves s on 127.0.0.1 until the test ends.
func httptestServer(t *testing.T, s *Server) *httptestSrv {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return &httptestSrv{URL: "http://" + ln.Addr().String(), Addr: ln.Addr().String()}
}

// httptestSrv is a server started by httptestServer.
type httptestSrv struct{ URL, Addr string }

// logLines is a slog handler that sends the server's request lines.
type logLines chan slog.Record

func (c logLines) Enabled(context.Context, slog.Level) bool { return true }
func (c logLines) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "request" {
		select {
		case c <- r:
		default:
		}
	}
	return nil
}
func (c logLines) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c logLines) WithGroup(string) slog.Handler      { return c }

// attr returns the value of the attribute key of r.
func attr(r slog.Record, key string) string {
	var v string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

// manyPairs returns a server whose pairs at threshold 0.001 are many
// (about half of all pairs of n unrelated documents: 560 000 lines for
// 1 500), and its log lines.
func manyPairs(t *testing.T, n int, o Options) (*httptestSrv, logLines) {
	t.Helper()
	d, err := db.Open(t.TempDir(), &db.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	fill(t, d, 0, 0, n, 40)
	logs := make(logLines, 16)
	o.Logger = slog.New(logs)
	return serveDB(t, d, &o), logs
}

// TestStreamStopsWhenClientGoes: a client reads one line of a long stream
// and hangs up; the run stops at once and leaves no goroutine behind.
func TestStreamStopsWhenClientGoes(t *testing.T) {
	srv, logs := manyPairs(t, 1500, Options{})
	runtime.GC()
	before := runtime.NumGoroutine()
	conn, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /v1/pairs?threshold=0.001 HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("status line %q: %v", status, err)
	}
	for { // the headers, the first chunk's size, the first pair
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(l, "{") {
			break
		}
	}
	start := time.Now()
	conn.Close()
	select {
	case r := <-logs:
		if attr(r, "path") != "/v1/pairs" || attr(r, "error") == "" {
			t.Fatalf("log line %v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not stop within 5 s of the client leaving")
	}
	t.Logf("stopped %v after the client left", time.Since(start))
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before the stream:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStreamTimeout: a stream is bounded by StreamTimeout; one cut short
// is a broken response, never a short list that looks complete.
func TestStreamTimeout(t *testing.T) {
	srv, logs := manyPairs(t, 3000, Options{StreamTimeout: 100 * time.Millisecond})
	resp, err := http.Get(srv.URL + "/v1/pairs?threshold=0.001")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil || resp.StatusCode != 200 {
		t.Fatalf("the stream ended cleanly after %d bytes (status %d)", n, resp.StatusCode)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("the stream ran %v past its 100 ms", el)
	}
	// The error is the request's time running out, naming its limit.
	r := <-logs
	if e := attr(r, "error"); !strings.Contains(e, "fpdb serve --stream-timeout") {
		t.Fatalf("log line with error %q", attr(r, "error"))
	}
}

// TestStalledReaderIsCutOff: a client that asks for a long stream and
// then stops reading (its connection open) must not hold the request, its
// slot and its run for ever: the response's writes have a deadline, so
// the request ends soon after StreamTimeout and frees its slot.
func TestStalledReaderIsCutOff(t *testing.T) {
	srv, logs := manyPairs(t, 1500, Options{StreamTimeout: 400 * time.Millisecond, MaxConcurrent: 1})
	conn, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/pairs?threshold=0.001 HTTP/1.1\r\nHost: x\r\n\r\n")
	// Read nothing: the server's writes fill the socket buffers and block.
	select {
	case r := <-logs:
		if p := attr(r, "path"); p != "/v1/pairs" {
			t.Fatalf("request line for %s", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a stream whose client stopped reading was still running 20 s after its 400 ms timeout")
	}
	resp, err := http.Get(srv.URL + "/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /v1/stats after the stalled stream: %d, want 200 (its slot is free)", resp.StatusCode)
	}
}

// TestLateAnswerIsSent: a request whose work goes on past its timeout by
// design (a template change reindexes once it has committed; a backup is
// not cut short once its copy has begun) still gets its answer: writes
// are bounded per write, against a client that stops reading, not by a
// deadline from the request's start. The timeout that falls between the
// commit and the end of the work depends on the machine, so shorter ones
// are tried first: each must answer (a 408 only when nothing was done),
// until one answers its success after its timeout.
func TestLateAnswerIsSent(t *testing.T) {
	for _, c := range []struct {
		path string
		body func(t *testing.T, n int) any
		want int
		done func(d *db.DB, n int) bool
	}{
		{"/v1/templates", func(t *testing.T, n int) any {
			return api.TemplateRequest{Name: fmt.Sprint("t", n), Text: text(1000, 60)}
		}, http.StatusCreated, func(d *db.DB, n int) bool {
			ts, _ := d.Templates(context.Background())
			return len(ts) > 0
		}},
		{"/v1/backup", func(t *testing.T, n int) any {
			return api.BackupRequest{Dir: filepath.Join(t.TempDir(), "copy")}
		}, http.StatusOK, nil},
	} {
		late := false
		for n, timeout := 0, time.Millisecond; !late && timeout < 4*time.Second; n, timeout = n+1, 2*timeout {
			ts, d := testServer(t, &Options{RequestTimeout: timeout})
			fill(t, d, 0, 0, 3000, 200)
			b, _ := json.Marshal(c.body(t, n))
			start := time.Now()
			resp, err := http.Post(ts.URL+c.path, "application/json", bytes.NewReader(b))
			took := time.Since(start)
			if err != nil {
				t.Fatalf("POST %s with a timeout of %v: %v after %v", c.path, timeout, err, took)
			}
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusServiceUnavailable:
				if c.done != nil && c.done(d, n) {
					t.Fatalf("POST %s with a timeout of %v: %d, but the change was made", c.path, timeout, resp.StatusCode)
				}
			case resp.StatusCode != c.want:
				t.Fatalf("POST %s with a timeout of %v: %d, want %d", c.path, timeout, resp.StatusCode, c.want)
			default:
				late = took > timeout
			}
		}
		if !late {
			t.Errorf("POST %s: no timeout from 1 ms to 4 s fell between the start of the work and its end", c.path)
		}
	}
}

// TestClustersPastStreamTimeout: clusters that take longer than
// StreamTimeout, before their first line, are a 408 (code timeout) naming
// --stream-timeout, not a 503 with Retry-After (the connection's read
// deadline, armed at the same time as the request's, cancelled its
// context first: the client would retry what times out again).
func TestClustersPastStreamTimeout(t *testing.T) {
	srv, _ := manyPairs(t, 3000, Options{StreamTimeout: 50 * time.Millisecond})
	for range 5 {
		resp, err := http.Get(srv.URL + "/v1/clusters?threshold=0.001")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var eb api.ErrorBody
		_ = json.Unmarshal(b, &eb)
		if resp.StatusCode != http.StatusRequestTimeout || eb.Error.Code != api.CodeTimeout || resp.Header.Get("Retry-After") != "" ||
			!strings.Contains(eb.Error.Message, "fpdb serve --stream-timeout") {
			t.Fatalf("%d Retry-After %q %s, want 408 timeout naming --stream-timeout, no Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
	}
}
