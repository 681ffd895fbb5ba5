package httpapi

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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

// status returns the HTTP status of err (0 for nil).
func status(err error) int {
	if err == nil {
		return 0
	}
	st, _ := Classify(err, nil)
	return st
}

// TestFormJSON: a body sent as application/x-www-form-urlencoded (curl
// -d's default: a client that declared no real type) to an add or a query
// is its JSON when it is a JSON object that is the endpoint's request and
// there are no query parameters, and the text otherwise (a text that is a
// JSON object stays a text); a text/plain body is always the text.
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
		{"form JSON, not an add: the text", "/v1/documents", FormType, `{"id": "j1", "txt": "the rain"}`, "", "", "needs an id"},
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
		{"form JSON, not a query: the text", "/v1/query", FormType, `{"text": "x", "treshold": 0.7}`, `{"text": "x", "treshold": 0.7}`, 0, ""},
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
