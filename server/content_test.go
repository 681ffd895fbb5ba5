package server

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
)

// formType is what curl -d and --data-binary send when given no type.
const formType = "application/x-www-form-urlencoded"

// TestCurlDefaultContentType: requests as plain `curl -d` sends them (a
// body of type application/x-www-form-urlencoded). A JSON object to POST
// /v1/query or /v1/documents, with no query parameters, is the request's
// JSON when it names one of its fields (its errors then reported); any
// other body is the text, and a text/plain body always is; every endpoint
// that takes only JSON (JSON Lines) reads such a body as that.
func TestCurlDefaultContentType(t *testing.T) {
	ts, d := testServer(t, nil)
	ctx := context.Background()
	a := text(1, 80)

	// An add as JSON, and one as the text itself.
	var ar api.AddResult
	if st := call(t, "POST", ts.URL+"/v1/documents", formType, jsonBody(api.AddRequest{ID: "a", Text: a, Source: "x"}), &ar); st != 201 || !ar.Stored {
		t.Fatalf("form JSON add: %d %+v", st, ar)
	}
	if doc, err := d.Get(ctx, "a"); err != nil || doc.Source != "x" || doc.Words != 80 {
		t.Fatalf("a, added as form JSON: %+v %v", doc, err)
	}
	if st := call(t, "POST", ts.URL+"/v1/documents?id=t", formType, strings.NewReader(text(2, 80)), &ar); st != 201 || !ar.Stored {
		t.Fatalf("form text add: %d %+v", st, ar)
	}
	// text/plain: a JSON object is the text.
	js := fmt.Sprintf(`{"text": %q}`, text(3, 40))
	if st := call(t, "POST", ts.URL+"/v1/documents?id=p", "text/plain", strings.NewReader(js), &ar); st != 201 {
		t.Fatalf("text/plain JSON add: %d %+v", st, ar)
	}
	if st, err := d.Text(ctx, "p"); err != nil || string(st.Text) != js {
		t.Fatalf("p, sent as text/plain: %+v %v, want the JSON itself", st, err)
	}

	// A query as JSON finds a.
	var qr api.QueryResult
	if st := call(t, "POST", ts.URL+"/v1/query", formType, strings.NewReader(fmt.Sprintf(`{"text": %q, "threshold": 0.7}`, a)), &qr); st != 200 ||
		len(qr.Matches) != 1 || qr.Matches[0].ID != "a" {
		t.Fatalf("form JSON query: %d %+v", st, qr)
	}
	// A form-typed JSON object that is not the request, or sent with
	// query parameters, is the text, as it was before such bodies could
	// be requests: a record stored as a text stays one.
	rec := fmt.Sprintf(`{"title": "Q3", "body": %q}`, text(5, 60))
	if st := call(t, "POST", ts.URL+"/v1/documents?id=rec", formType, strings.NewReader(rec), &ar); st != 201 || !ar.Stored {
		t.Fatalf("form JSON record with ?id: %d %+v", st, ar)
	}
	if st, err := d.Text(ctx, "rec"); err != nil || string(st.Text) != rec {
		t.Fatalf("rec: %+v %v, want the JSON itself", st, err)
	}
	if st := call(t, "POST", ts.URL+"/v1/query", formType, strings.NewReader(rec), &qr); st != 200 ||
		len(qr.Matches) != 1 || qr.Matches[0].ID != "rec" || !qr.Matches[0].Exact {
		t.Fatalf("form JSON record queried: %d %+v, want rec, exact", st, qr)
	}
	// A form-typed JSON object that names the request's fields is the
	// request, its errors named (not read as the text, nor "needs an id").
	wantError(t, "POST", ts.URL+"/v1/documents", formType, `{"id": "j", "txt": "the rain in spain"}`, 400, `unknown field "txt"`)
	wantError(t, "POST", ts.URL+"/v1/documents", formType, fmt.Sprintf(`{"id": "fj1", "text": %q, "threshold": 0}`, a), 400, "field threshold 0")
	wantError(t, "POST", ts.URL+"/v1/query", formType, fmt.Sprintf(`{"text": %q, "threshold": 0}`, a), 400, "field threshold 0")
	if _, err := d.Get(ctx, "fj1"); err == nil {
		t.Fatal("fj1, sent with threshold 0, was stored")
	}

	// The endpoints that take only JSON read it alike.
	var br api.BatchResult
	if st := call(t, "POST", ts.URL+"/v1/batch", formType, strings.NewReader(ndjsonBody(api.AddRequest{ID: "b", Text: text(4, 80)})), &br); st != 200 || br.Stored != 1 {
		t.Fatalf("form batch: %d %+v", st, br)
	}
	var tr api.TemplateResult
	if st := call(t, "POST", ts.URL+"/v1/templates", formType, strings.NewReader(`{"name": "t", "text": "a footer of many words here"}`), &tr); st != 201 {
		t.Fatalf("form template: %d %+v", st, tr)
	}
	var cr api.Comparison
	if st := call(t, "POST", ts.URL+"/v1/compare", formType, strings.NewReader(`{"a": {"id": "a"}, "b": {"id": "b"}}`), &cr); st != 200 {
		t.Fatalf("form compare: %d %+v", st, cr)
	}
	var dr api.DeleteResult
	if st := call(t, "POST", ts.URL+"/v1/delete", formType, strings.NewReader(`{"ids": ["b"]}`), &dr); st != 200 || dr.Deleted != 1 {
		t.Fatalf("form delete: %d %+v", st, dr)
	}
	for _, path := range []string{"/v1/batch", "/v1/delete", "/v1/compare", "/v1/templates", "/v1/backup"} {
		wantError(t, "POST", ts.URL+path, "text/html", `{}`, 415, "Content-Type")
	}
}

// TestBodyOverLimit: a body over --max-body is a 413 that names the limit
// and the flag, on every endpoint that reads a body, and one over
// --max-import on an import.
func TestBodyOverLimit(t *testing.T) {
	ts, _ := testServer(t, &Options{MaxBodyBytes: 100, MaxImportBytes: 300})
	big := strings.Repeat("word ", 100)
	const want = "the request body is larger than this server's limit of 100 bytes (fpdb serve --max-body)"
	for _, c := range []struct{ path, ctype string }{
		{"/v1/documents?id=x", "text/plain"},
		{"/v1/documents?id=x", formType},
		{"/v1/query", "text/plain"},
		{"/v1/batch", "application/x-ndjson"},
		{"/v1/delete", "application/json"},
		{"/v1/compare", "application/json"},
		{"/v1/templates", "application/json"},
		{"/v1/backup", "application/json"},
	} {
		wantError(t, "POST", ts.URL+c.path, c.ctype, big, 413, want)
	}
	// An export past --max-import.
	src, err := db.Open(t.TempDir(), &db.Options{KeepTexts: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for i := range 5 {
		if _, err := src.Add(context.Background(), db.Input{ID: fmt.Sprint("d", i), Text: []byte(text(uint64(i), 100))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var exp bytes.Buffer
	if _, err := src.Export(context.Background(), &exp); err != nil {
		t.Fatal(err)
	}
	wantError(t, "POST", ts.URL+"/v1/import", "application/x-ndjson", exp.String(), 413,
		"the request body is larger than this server's limit of 300 bytes (fpdb serve --max-import)")
}
