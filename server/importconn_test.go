package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/client"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/httpapi"
)

// postAllThenRead posts a body of n bytes from body to url's /v1/import
// over a connection of its own as Python's urllib does: it writes the
// whole body, and only then reads the answer. A write that fails (the
// server closed the connection under it) is the error.
func postAllThenRead(base string, body io.Reader, n int64) (int, api.ErrorBody, error) {
	u, err := url.Parse(base)
	if err != nil {
		return 0, api.ErrorBody{}, err
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		return 0, api.ErrorBody{}, err
	}
	defer conn.Close()
	w := bufio.NewWriter(conn)
	fmt.Fprintf(w, "POST /v1/import HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", u.Host, n)
	if _, err := io.Copy(w, body); err != nil {
		return 0, api.ErrorBody{}, fmt.Errorf("write the body: %w", err)
	}
	if err := w.Flush(); err != nil {
		return 0, api.ErrorBody{}, fmt.Errorf("write the body: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, api.ErrorBody{}, fmt.Errorf("read the answer: %w", err)
	}
	defer resp.Body.Close()
	return decodeAnswer(resp)
}

// postGo posts a body of n bytes to url's /v1/import with a plain
// http.Client (no Expect: 100-continue), as fpdb's client did.
func postGo(base string, body io.Reader, n int64) (int, api.ErrorBody, error) {
	return postGoExpect(base, body, n, false)
}

// postGoExpect is postGo, sending "Expect: 100-continue" when expect: a
// Transport whose ExpectContinueTimeout is 0 (its zero value) sends the
// body at once all the same.
func postGoExpect(base string, body io.Reader, n int64, expect bool) (int, api.ErrorBody, error) {
	req, err := http.NewRequest("POST", base+"/v1/import", body)
	if err != nil {
		return 0, api.ErrorBody{}, err
	}
	req.ContentLength = n
	req.Header.Set("Content-Type", "application/x-ndjson")
	if expect {
		req.Header.Set("Expect", "100-continue")
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, api.ErrorBody{}, err
	}
	defer resp.Body.Close()
	return decodeAnswer(resp)
}

// postClient posts body to url's /v1/import with fpdb's Go client
// (client.Client.Import, what "fpdb import --server" runs).
func postClient(base string, body io.Reader, _ int64) (int, api.ErrorBody, error) {
	c, err := client.New(base, &client.Options{Retries: -1})
	if err != nil {
		return 0, api.ErrorBody{}, err
	}
	_, err = c.Import(context.Background(), body)
	var ce *client.Error
	if !errors.As(err, &ce) {
		return 0, api.ErrorBody{}, fmt.Errorf("want the server's error answer: %v", err)
	}
	return ce.Status, api.ErrorBody{Error: api.Error{Code: ce.Code, Message: ce.Message}}, nil
}

// decodeAnswer returns the status and the error body of resp.
func decodeAnswer(resp *http.Response) (int, api.ErrorBody, error) {
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, api.ErrorBody{}, fmt.Errorf("read the answer: %w", err)
	}
	var e api.ErrorBody
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(b, &e); err != nil {
			return 0, api.ErrorBody{}, fmt.Errorf("%d %q: %w", resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, e, nil
}

// TestImportRefusalOverConnection: over a real connection, a client that
// posts a large export (32 MB) gets the server's refusal every time —
// of a database that is not empty, of an import while another runs
// (both refused before the import reads the body), and of a line longer
// than the server reads (413, once the bound is read) — not a connection
// reset or a broken pipe: the server reads the rest of the body before it
// answers (a client that sent Expect: 100-continue is asked for it: it
// may send it without waiting). Clients: one that writes its whole body
// before it reads (Python's urllib), Go's http.Client with and without
// Expect: 100-continue, and fpdb's client.
func TestImportRefusalOverConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("posts about 1 GB over loopback")
	}
	const size = 32 << 20
	serve := func(s *Server) string {
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(ts.Close)
		return ts.URL
	}

	full, d := newImportServer(t, &db.Options{NoSync: true}, nil)
	fill(t, d, 1, 1, 0, 40)
	fullURL := serve(full)
	busy, _ := newImportServer(t, &db.Options{NoSync: true}, nil)
	busy.importing.Store(true)
	busyURL := serve(busy)
	const maxText = 1 << 20
	dbOpts := &db.Options{NoSync: true, MaxTextSize: maxText}
	long, ld := newImportServer(t, dbOpts, nil)
	longURL := serve(long)
	header, _, _ := bytes.Cut(exportOf(t, dbOpts, 1), []byte("\n"))
	lim := httpapi.ImportLineLimits(maxText)
	if lim.Line >= size/2 {
		t.Fatalf("the line bound %d: want less than half the body", lim.Line)
	}

	cases := []struct {
		name       string
		url        string
		head, tail string
		status     int
		msg        string
	}{
		{"not empty", fullURL, string(header) + "\n", "", http.StatusBadRequest, "database is not empty"},
		{"import running", busyURL, string(header) + "\n", "", http.StatusServiceUnavailable, "import into the database is running"},
		{"line too long", longURL, string(header) + "\n" + `{"id":"x","text":"`, "\"}\n", http.StatusRequestEntityTooLarge,
			fmt.Sprintf("line 2 is longer than %d bytes", lim.Line)},
	}
	clients := []struct {
		name string
		post func(base string, body io.Reader, n int64) (int, api.ErrorBody, error)
	}{
		{"whole body, then the answer", postAllThenRead},
		{"http.Client", postGo},
		{"http.Client, Expect: 100-continue, sent at once", func(base string, body io.Reader, n int64) (int, api.ErrorBody, error) {
			return postGoExpect(base, body, n, true)
		}},
		{"fpdb client", postClient},
	}
	const runs = 5
	for _, c := range cases {
		for _, cl := range clients {
			failed := 0
			for run := range runs {
				body := importBody(c.head, size, c.tail)
				n := int64(len(c.head)) + size + int64(len(c.tail))
				st, e, err := cl.post(c.url, body, n)
				if err == nil && (st != c.status || !strings.Contains(e.Error.Message, c.msg)) {
					err = fmt.Errorf("%d %+v, want %d with %q", st, e.Error, c.status, c.msg)
				}
				if err != nil {
					failed++
					t.Errorf("%s, %s, run %d: %v", c.name, cl.name, run, err)
				}
			}
			if failed > 0 {
				t.Errorf("%s, %s: %d of %d runs without the server's answer", c.name, cl.name, failed, runs)
			}
		}
	}
	if ld.Len() != 0 || ld.Stats().ImportIncomplete {
		t.Errorf("after the refused imports: %d documents, %+v", ld.Len(), ld.Stats())
	}
}

// TestImportDrainIsNoImport: while the server reads what is left of a
// refused import's body (a line too long, a database that is not
// empty), no import is running: another is not refused as one.
func TestImportDrainIsNoImport(t *testing.T) {
	const maxText = 1 << 10
	dbOpts := &db.Options{NoSync: true, MaxTextSize: maxText}
	header, _, _ := bytes.Cut(exportOf(t, dbOpts, 1), []byte("\n"))
	empty, _ := newImportServer(t, dbOpts, nil)
	full, d := newImportServer(t, dbOpts, nil)
	fill(t, d, 1, 1, 0, 40)
	lim := httpapi.ImportLineLimits(maxText)
	for _, c := range []struct {
		name string
		s    *Server
		head string
		msg  string
	}{
		{"line too long", empty, string(header) + "\n" + `{"id":"x","text":"` + strings.Repeat("a", int(lim.Line)+1), "line 2 is longer than"},
		{"not empty", full, string(header) + "\n", "database is not empty"},
	} {
		ts := httptest.NewServer(c.s.Handler())
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			st, e, err := postGo(ts.URL, pr, -1)
			if err == nil && (st == http.StatusOK || !strings.Contains(e.Error.Message, c.msg)) {
				err = fmt.Errorf("%d %+v, want the refusal %q", st, e.Error, c.msg)
			}
			done <- err
		}()
		if _, err := io.WriteString(pw, c.head); err != nil {
			t.Fatal(err)
		}
		// Written through, beyond what the sockets' buffers hold: the
		// server reads on, refused, until the body ends.
		for range 512 {
			if _, err := pw.Write(bytes.Repeat([]byte("a"), 64<<10)); err != nil {
				t.Fatal(err)
			}
		}
		if c.s.importing.Load() {
			t.Errorf("%s: an import is running while the refused body is read", c.name)
		}
		pw.Close()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		ts.Close()
	}
}
