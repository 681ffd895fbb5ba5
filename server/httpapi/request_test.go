package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
)

// post returns a POST request of target with body, of Content-Type ctype
// (none when "").
func post(target, ctype, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	return r
}

// status returns the HTTP status of err (0 for nil), the db's input
// errors 400s as in both servers.
func status(err error) int {
	if err == nil {
		return 0
	}
	st, _ := Classify(err, []Class{{Status: http.StatusBadRequest, Code: api.CodeBadRequest, Errs: InputErrors}})
	return st
}

// TestFormJSON: a body sent as application/x-www-form-urlencoded (curl
// -d's default: a client that declared no real type) to an add or a query
// is its JSON when it is a JSON object that names a field of the
// endpoint's request and there are no query parameters, its errors then
// those of the JSON (an unknown field, a threshold of 0), and the text
// otherwise (a text that is another JSON object stays a text); a
// text/plain body is always the text.
func TestFormJSON(t *testing.T) {
	for _, c := range []struct {
		name, target, ctype, body string
		id, text                  string // the add read, when no error
		err                       string // a part of the error, when one
	}{
		{"form JSON", "/v1/documents", FormType, `{"id": "j1", "text": "the rain in spain", "source": "x"}`, "j1", "the rain in spain", ""},
		{"form JSON with a charset", "/v1/documents", FormType + "; charset=utf-8", `{"id": "j1", "text": "the rain"}`, "j1", "the rain", ""},
		{"form JSON after spaces", "/v1/documents", FormType, " \n\t{\"id\": \"j1\", \"text\": \"the rain\"}\n", "j1", "the rain", ""},
		{"form text", "/v1/documents?id=t1", FormType, "the rain in spain", "t1", "the rain in spain", ""},
		{"form, not a JSON object", "/v1/documents?id=t1", FormType, `{"id": "j1", "text": `, "t1", `{"id": "j1", "text": `, ""},
		{"form, a JSON array", "/v1/documents?id=t1", FormType, `["the rain"]`, "t1", `["the rain"]`, ""},
		{"form, a JSON object and more", "/v1/documents?id=t1", FormType, `{"id": "j1"} and more`, "t1", `{"id": "j1"} and more`, ""},
		{"text/plain JSON is the text", "/v1/documents?id=t1", "text/plain", `{"id": "j1", "text": "the rain"}`, "t1", `{"id": "j1", "text": "the rain"}`, ""},
		{"form JSON with an unknown field", "/v1/documents", FormType, `{"id": "j1", "txt": "the rain"}`, "", "", `unknown field "txt"`},
		{"form JSON with threshold 0", "/v1/documents", FormType, `{"id": "fj1", "text": "the rain", "threshold": 0}`, "", "", "field threshold 0"},
		{"form JSON with a name in another case", "/v1/documents", FormType, `{"ID": "fj1", "text": "the rain"}`, "", "", `"ID"`},
		{"form JSON document naming a field: the request, told why", "/v1/documents", FormType, `{"title": "x", "text": "the rain", "author": "me"}`, "", "", `unknown field "title" (the body came as application/x-www-form-urlencoded, curl -d's default, and is a JSON object naming a field of an add request, so it was read as one; send a text that is JSON as text/plain)`},
		{"form JSON record, not an add: the text", "/v1/documents", FormType, `{"title": "A", "body": "the rain"}`, "", "", "needs an id"},
		{"form JSON with parameters: the text", "/v1/documents?id=t1", FormType, `{"text": "the rain", "source": "x"}`, "t1", `{"text": "the rain", "source": "x"}`, ""},
		{"form JSON record with parameters: the text", "/v1/documents?id=t1", FormType, `{"title": "A", "body": "the rain"}`, "t1", `{"title": "A", "body": "the rain"}`, ""},
	} {
		req, in, err := ReadAdd(post(c.target, c.ctype, c.body))
		if c.err != "" {
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if status(err) != http.StatusBadRequest || !strings.Contains(msg, c.err) {
				t.Errorf("%s: %v, want a 400 with %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || req.ID != c.id || in.ID != c.id || string(in.Text) != c.text {
			t.Errorf("%s: %+v %q %v, want id %q and text %q", c.name, req, in.Text, err, c.id, c.text)
		}
	}
	// An explicit application/json body is refused without the hint.
	if _, _, err := ReadAdd(post("/v1/documents", "application/json", `{"id": "j1", "txt": "x"}`)); err == nil || strings.Contains(err.Error(), "text/plain") {
		t.Errorf("application/json with an unknown field: %v, want no text/plain hint", err)
	}

	for _, c := range []struct {
		name, target, ctype, body string
		text                      string
		threshold                 float64
		err                       string
	}{
		{"form JSON", "/v1/query", FormType, `{"text": "some words about a thing", "threshold": 0.7}`, "some words about a thing", 0.7, ""},
		{"form text", "/v1/query?threshold=0.8", FormType, "some words about a thing", "some words about a thing", 0.8, ""},
		{"text/plain JSON is the text", "/v1/query", "text/plain", `{"text": "x"}`, `{"text": "x"}`, 0, ""},
		{"form JSON with an unknown field", "/v1/query", FormType, `{"text": "x", "treshold": 0.7}`, "", 0, `unknown field "treshold" (the body came as application/x-www-form-urlencoded, curl -d's default, and is a JSON object naming a field of a query request`},
		{"form JSON with threshold 0", "/v1/query", FormType, `{"text": "alpha beta gamma", "threshold": 0}`, "", 0, "field threshold 0"},
		{"form JSON with containment 0", "/v1/query", FormType, `{"fingerprint": "x", "containment": 0}`, "", 0, "field containment 0"},
		{"form JSON record, not a query: the text", "/v1/query", FormType, `{"title": "A", "body": "x"}`, `{"title": "A", "body": "x"}`, 0, ""},
		{"form JSON with parameters: the text", "/v1/query?threshold=0.8", FormType, `{"text": "x"}`, `{"text": "x"}`, 0.8, ""},
	} {
		req, err := ReadQuery(post(c.target, c.ctype, c.body))
		if c.err != "" {
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if status(err) != http.StatusBadRequest || !strings.Contains(msg, c.err) {
				t.Errorf("query, %s: %v, want a 400 with %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || req.Text != c.text || req.Threshold != c.threshold {
			t.Errorf("query, %s: %+v %v, want text %q, threshold %v", c.name, req, err, c.text, c.threshold)
		}
	}
}

// TestJSONOnlyTypes: every endpoint that takes only JSON (JSON Lines for
// a batch) reads a body of no type, a JSON type, text/plain or curl -d's
// application/x-www-form-urlencoded, and refuses one of another type with
// a 415 — the same rule for each.
func TestJSONOnlyTypes(t *testing.T) {
	readers := map[string]func(ctype string) error{
		"delete": func(ctype string) error {
			_, _, err := ReadDelete(post("/v1/delete", ctype, `{"ids": ["a"]}`))
			return err
		},
		"batch": func(ctype string) error {
			lines, _, err := ReadBatch(post("/v1/batch", ctype, `{"id": "a", "text": "x"}`+"\n"), nil)
			if err == nil && len(lines) != 1 {
				return errors.New("not one line")
			}
			return err
		},
		"ReadJSON (compare, templates, backup)": func(ctype string) error {
			var req api.TemplateRequest
			err := ReadJSON(post("/v1/templates", ctype, `{"name": "t", "text": "x"}`), &req)
			if err == nil && req.Name != "t" {
				return errors.New("no name")
			}
			return err
		},
	}
	for name, read := range readers {
		for _, ct := range []string{"", "application/json", "application/json; charset=utf-8", "application/x-ndjson",
			"application/jsonl", "text/plain", FormType} {
			if err := read(ct); err != nil {
				t.Errorf("%s, Content-Type %q: %v", name, ct, err)
			}
		}
		for _, ct := range []string{"text/html", "multipart/form-data; boundary=x", "application/octet-stream", "image/png"} {
			if err := read(ct); status(err) != http.StatusUnsupportedMediaType {
				t.Errorf("%s, Content-Type %q: %v, want a 415", name, ct, err)
			}
		}
	}
}

// TestBodyTooLarge: a body over the limit is a 413 whose message names
// the limit in bytes and the flag that sets it, whichever endpoint read
// it and however (whole, by lines, a form, an export).
func TestBodyTooLarge(t *testing.T) {
	h := Handlers{
		Add:        func(w http.ResponseWriter, r *http.Request) error { _, _, err := ReadAdd(r); return err },
		Query:      func(w http.ResponseWriter, r *http.Request) error { _, err := ReadQuery(r); return err },
		Batch:      func(w http.ResponseWriter, r *http.Request) error { _, _, err := ReadBatch(r, nil); return err },
		DeleteMany: func(w http.ResponseWriter, r *http.Request) error { _, _, err := ReadDelete(r); return err },
		Compare: func(w http.ResponseWriter, r *http.Request) error {
			var v api.CompareRequest
			return ReadJSON(r, &v)
		},
		Import: func(w http.ResponseWriter, r *http.Request) error {
			_, err := io.Copy(io.Discard, r.Body)
			return err
		},
	}
	routes := h.Routes(nil)
	const body = `{"ids": ["a text longer than the limit of this test's server"]}`
	for _, c := range []struct{ target, ctype, want string }{
		{"/v1/documents?id=a", "text/plain", "--max-body"},
		{"/v1/documents", "application/json", "--max-body"},
		{"/v1/documents?id=a", "multipart/form-data; boundary=x", "--max-body"},
		{"/v1/query", "", "--max-body"},
		{"/v1/batch", "application/x-ndjson", "--max-body"},
		{"/v1/delete", FormType, "--max-body"},
		{"/v1/compare", "application/json", "--max-body"},
		{"/v1/import", "application/x-ndjson", "--max-import"},
	} {
		w, eb := serve(t, routes, Options{MaxBodyBytes: 10, MaxImportBytes: 20}, post(c.target, c.ctype, body))
		want := "the request body is larger than this server's limit of " + map[string]string{"--max-body": "10", "--max-import": "20"}[c.want] +
			" bytes (fpdb serve " + c.want + ")"
		if w.Code != http.StatusRequestEntityTooLarge || eb.Error.Code != api.CodeTooLarge || eb.Error.Message != want {
			t.Errorf("POST %s (%s): %d %+v, want 413 %q", c.target, c.ctype, w.Code, eb, want)
		}
	}
}

// TestSkipDuplicates: a line of a batch whose id an earlier line has is
// skipped with the reason duplicate_in_batch.
func TestSkipDuplicates(t *testing.T) {
	lines, _, err := ReadBatch(post("/v1/batch", "", `{"id": "a", "text": "x"}`+"\n"+`{"id": "b", "text": "y"}`+"\n"+`{"id": "a", "text": "z"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	kept, skipped := SkipDuplicates(lines)
	if len(kept) != 2 || kept[0].Input.ID != "a" || string(kept[0].Input.Text) != "x" || kept[1].Input.ID != "b" {
		t.Fatalf("kept %+v", kept)
	}
	if len(skipped) != 1 || skipped[0].Line != 3 || skipped[0].ID != "a" || skipped[0].Reason != "duplicate_in_batch" || skipped[0].Error == "" {
		t.Fatalf("skipped %+v, want line 3 with reason duplicate_in_batch", skipped)
	}
}

// multipartBody returns a multipart form of fields (name, value pairs) and
// file parts (name, content pairs), and its Content-Type.
func multipartBody(t *testing.T, fields, files []string) (string, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := mw.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i+1 < len(files); i += 2 {
		fw, err := mw.CreateFormFile(files[i], "f.txt")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(fw, files[i+1])
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String(), mw.FormDataContentType()
}

// TestRepeatedParameters: a query parameter, form field or file part
// given twice is a 400 that names it, not one of its values silently used.
func TestRepeatedParameters(t *testing.T) {
	check := func(what string, err error, want string) {
		t.Helper()
		if status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a 400 with %q", what, err, want)
		}
	}
	del := httptest.NewRequest(http.MethodDelete, "/v1/documents/dup1?dry_run=false&dry_run=true", nil)
	dry, _, err := ReadDeleteOne(del)
	check("dry_run twice", err, "parameter dry_run is given 2 times")
	if err == nil && !dry {
		t.Error("dry_run twice: read as false")
	}
	_, _, err = ReadAdd(post("/v1/documents?id=dup2&id=dup3", "text/plain", "some words"))
	check("id twice", err, "parameter id is given 2 times")
	_, err = ReadQuery(post("/v1/query?threshold=0.9&threshold=abc", "text/plain", "some words"))
	check("threshold twice", err, "parameter threshold is given 2 times")
	_, err = ReadClusters(httptest.NewRequest(http.MethodGet, "/v1/clusters?threshold=0.9&threshold=0.5", nil), nil)
	check("clusters threshold twice", err, "parameter threshold is given 2 times")

	body, ct := multipartBody(t, []string{"id", "mp3", "id", "mp4"}, []string{"file", "some words"})
	_, _, err = ReadAdd(post("/v1/documents", ct, body))
	check("form field id twice", err, "parameter id is given 2 times")
	body, ct = multipartBody(t, []string{"id", "mp5"}, []string{"file", "some words", "file", "other words"})
	_, _, err = ReadAdd(post("/v1/documents", ct, body))
	check("two file parts", err, `2 "file" parts`)
	body, ct = multipartBody(t, []string{"id", "mp6"}, []string{"file", "some words", "attachment", "other words"})
	_, _, err = ReadAdd(post("/v1/documents", ct, body))
	check("another file part", err, `unknown file part "attachment"`)
	// Once each is still read.
	body, ct = multipartBody(t, []string{"id", "mp7", "threshold", "0.8"}, []string{"file", "some words"})
	if req, in, err := ReadAdd(post("/v1/documents", ct, body)); err != nil || req.ID != "mp7" || req.Threshold != 0.8 || string(in.Text) != "some words" {
		t.Errorf("a valid form: %+v %q %v", req, in.Text, err)
	}
}

// slowRequest sends the head of a request to addr and the first half of
// its body, then waits, and returns the answer (status line, headers and
// body) the server gave.
func slowRequest(t *testing.T, addr, target, ctype, body string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		target, ctype, len(body), body[:len(body)/2])
	b, _ := io.ReadAll(conn)
	return string(b)
}

// TestSlowBody: a body that does not arrive within the request's time is
// a 408 (code timeout) whatever reads it — a plain body, a multipart form,
// a batch's lines — and its message names the limit and its flag, not the
// connection's addresses.
func TestSlowBody(t *testing.T) {
	h := Handlers{
		Add:   func(w http.ResponseWriter, r *http.Request) error { _, _, err := ReadAdd(r); return err },
		Query: func(w http.ResponseWriter, r *http.Request) error { _, err := ReadQuery(r); return err },
		Batch: func(w http.ResponseWriter, r *http.Request) error { _, _, err := ReadBatch(r, nil); return err },
	}
	ts := httptest.NewServer(NewMux(h.Routes(nil), Options{MaxBodyBytes: 1 << 20, RequestTimeout: 300 * time.Millisecond,
		StreamTimeout: time.Minute, MaxConcurrent: 4}))
	defer ts.Close()
	form, formType := multipartBody(t, []string{"id", "slow"}, []string{"file", strings.Repeat("slow words ", 200)})
	const want = "the request body did not arrive within this server's limit of 300ms for a request (fpdb serve --timeout)"
	for _, c := range []struct{ target, ctype, body string }{
		{"/v1/documents?id=slow", "text/plain", strings.Repeat("slow words ", 200)},
		{"/v1/documents", formType, form},
		{"/v1/query", "text/plain", strings.Repeat("slow words ", 200)},
		{"/v1/batch", "application/x-ndjson", strings.Repeat(`{"id": "a", "text": "slow words"}`+"\n", 50)},
	} {
		resp := slowRequest(t, ts.Listener.Addr().String(), c.target, c.ctype, c.body)
		head, body, _ := strings.Cut(resp, "\r\n\r\n")
		var eb api.ErrorBody
		_ = json.Unmarshal([]byte(body), &eb)
		if !strings.HasPrefix(head, "HTTP/1.1 408") || eb.Error.Code != api.CodeTimeout || eb.Error.Message != want {
			t.Errorf("%s (%s): %q, want 408 %q", c.target, c.ctype, resp, want)
		}
		if strings.Contains(body, "127.0.0.1") || strings.Contains(body, "tcp") {
			t.Errorf("%s: the answer names the connection: %s", c.target, body)
		}
	}
}

// TestNotAnObject: a batch line, or a JSON body, that is valid JSON but
// not an object is refused as such, not named by the Go type it would
// fill.
func TestNotAnObject(t *testing.T) {
	for body, want := range map[string]string{
		"[1,2]": "line 1: each line must be a JSON object of one document's fields, not an array",
		`{"id": "a", "text": "x"}` + "\n" + `"text"`: "line 2: each line must be a JSON object of one document's fields, not a string",
		"\n\n 5 \n": "line 3: each line must be a JSON object of one document's fields, not a number",
		"null":      "line 1: each line must be a JSON object of one document's fields, not null",
	} {
		_, _, err := ReadBatch(post("/v1/batch", "application/x-ndjson", body), nil)
		if status(err) != http.StatusBadRequest || err.Error() != want {
			t.Errorf("batch %q: %v, want a 400 %q", body, err, want)
		}
	}
	for body, want := range map[string]string{
		`[1, 2]`:            "malformed JSON body: it must be a JSON object, not an array",
		`{"ids": {"a": 1}}`: `malformed JSON body: "ids" must be an array, not an object`,
		`{"ids": [1]}`:      `malformed JSON body: "ids" must be a string, not a number`,
	} {
		_, _, err := ReadDelete(post("/v1/delete", "application/json", body))
		if status(err) != http.StatusBadRequest || err.Error() != want || strings.Contains(err.Error(), "Go") {
			t.Errorf("delete %q: %v, want a 400 %q", body, err, want)
		}
	}
}

// TestRefusedBodyUnread: a request refused before its body is read (a
// content encoding, another site's page, another host) is answered at
// once, its connection then closed, though the client announced a body it
// does not send: net/http would otherwise wait for the rest of the body,
// with no deadline, before it answers.
func TestRefusedBodyUnread(t *testing.T) {
	h := Handlers{Add: func(w http.ResponseWriter, r *http.Request) error { _, _, err := ReadAdd(r); return err }}
	ts := httptest.NewServer(LoopbackHosts(NewMux(h.Routes(nil), Options{MaxBodyBytes: 1 << 20, RequestTimeout: time.Minute,
		StreamTimeout: time.Minute, MaxConcurrent: 4}), nil, nil))
	defer ts.Close()
	for _, c := range []struct{ headers, want string }{
		{"Host: localhost\r\nContent-Encoding: gzip\r\n", "HTTP/1.1 415"},
		{"Host: localhost\r\nSec-Fetch-Site: cross-site\r\n", "HTTP/1.1 403"},
		{"Host: evil.example\r\n", "HTTP/1.1 421"},
	} {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(conn, "POST /v1/documents?id=z HTTP/1.1\r\n%sContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nabc", c.headers)
		b, err := io.ReadAll(conn) // to the connection's end: the server closes it
		conn.Close()
		if resp := string(b); !strings.HasPrefix(resp, c.want) || !strings.Contains(resp, "Connection: close") || err != nil {
			t.Errorf("%q: %q, %v; want %s at once, then the connection closed", c.headers, resp, err, c.want)
		}
	}
}
