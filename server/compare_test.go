package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/fpdb/fpdb/server/httpapi"
)

func TestCompareEndpoint(t *testing.T) {
	ts, d := testServer(t, nil)
	ctx := context.Background()
	base := text(21, 400)
	if _, err := d.Add(ctx, db.Input{ID: "stored/a.txt", Text: []byte(base)}, nil); err != nil {
		t.Fatal(err)
	}
	edited := text(22, 30) + " " + base[:len(base)/2] + " " + text(23, 40) + " " + base[len(base)/2:]
	minWords := func(n int) *int { return &n }
	for _, c := range []struct {
		name string
		req  api.CompareRequest
		opts *db.CompareOptions
	}{
		{"id and text", api.CompareRequest{A: api.CompareText{ID: "stored/a.txt"}, B: api.CompareText{Text: edited, Name: "new.txt"}}, nil},
		{"every passage", api.CompareRequest{A: api.CompareText{Text: edited}, B: api.CompareText{ID: "stored/a.txt"}, MinWords: minWords(0), Gap: 3},
			&db.CompareOptions{MinWords: -1, MaxGap: 3}},
		{"longest", api.CompareRequest{A: api.CompareText{Text: "<p>" + edited + "</p>", TextInput: api.TextInput{Format: "html"}},
			B: api.CompareText{Text: base}, MinWords: minWords(20), Passages: 1}, &db.CompareOptions{MinWords: 20, MaxPassages: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.Post(ts.URL+"/v1/compare", "application/json", jsonBody(c.req))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			var got api.Comparison
			strictDecode(t, b, &got)
			in := func(ct api.CompareText) (db.CompareInput, apiconv.Named) {
				if ct.ID != "" {
					return db.CompareInput{ID: ct.ID}, apiconv.Named{Name: ct.ID, Stored: true}
				}
				to, _ := httpapi.TextOptions(ct.TextInput)
				return db.CompareInput{Text: []byte(ct.Text), Name: ct.Name, TextOptions: to}, apiconv.Named{Name: ct.Name}
			}
			a, na := in(c.req.A)
			bb, nb := in(c.req.B)
			cmp, err := d.Compare(ctx, a, bb, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			want := apiconv.Comparison(cmp, na, nb, d.Params().K)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("served\n%+v\ndb\n%+v", got, want)
			}
			// Field by field, as JSON: what "fpdb compare --json" prints.
			var gm, wm map[string]any
			wb, _ := json.Marshal(want)
			_ = json.Unmarshal(b, &gm)
			_ = json.Unmarshal(wb, &wm)
			for k, v := range wm {
				if !reflect.DeepEqual(gm[k], v) {
					t.Errorf("field %s: %v, want %v", k, gm[k], v)
				}
			}
			if len(gm) != len(wm) || len(got.Passages) == 0 || got.Jaccard <= 0 {
				t.Fatalf("fields %d, want %d; %d passages", len(gm), len(wm), len(got.Passages))
			}
		})
	}
	// The HTML page.
	resp, err := http.Post(ts.URL+"/v1/compare?html=true", "application/json",
		jsonBody(api.CompareRequest{A: api.CompareText{ID: "stored/a.txt"}, B: api.CompareText{Text: edited, Name: "new <draft>.txt"}}))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
		!bytes.HasPrefix(bytes.ToLower(page), []byte("<!doctype html")) || !bytes.Contains(page, []byte("stored stored/a.txt")) ||
		!bytes.Contains(page, []byte("new &lt;draft&gt;.txt")) || bytes.Contains(page, []byte("<draft>")) {
		t.Fatalf("html: %d %s\n%.300s", resp.StatusCode, resp.Header.Get("Content-Type"), page)
	}

	for _, c := range []struct {
		body   string
		status int
		msg    string
	}{
		{`{"a": {"id": "stored/a.txt", "text": "x y"}, "b": {"text": "a b"}}`, 400, "a: give"},
		{`{"a": {"id": "stored/a.txt"}, "b": {}}`, 400, "b: give"},
		{`{"a": {"id": "stored/a.txt", "format": "html"}, "b": {"text": "a b c d"}}`, 400, "format"},
		{`{"a": {"id": "nope"}, "b": {"text": "a b c d"}}`, 404, "nope"},
		{`{"a": {"text": "a b c d"}, "b": {"text": "a b c d", "format": "pdf"}}`, 400, "pdf"},
		{`{"a": {"text": "a b c d"}, "b": {"text": "a b c d"}, "gap": -1}`, 400, "negative"},
		{`{"a": {"text": "a b c d"}, "b": {"text": "a b c d"}, "colour": 1}`, 400, "colour"},
		{`{"a": {"text": "a b c d"}, "b": {"text": " ... "}}`, 400, "compare text b: fingerprint: document has no words"},
		{`{"a": {"text": " ... ", "name": "x.txt"}, "b": {"text": "a b c d"}}`, 400, "compare x.txt: fingerprint: document has no words"},
		{`{"a": {"text": ""}, "b": {"text": "a b c d"}}`, 400, "a: give the id of a stored document, a text or bytes that are not empty"},
		{`{"a": {"text": "a b c d", "bytes": "YSBiIGMgZA=="}, "b": {"text": "a b c d"}}`, 400, "a: give the id"},
	} {
		wantError(t, "POST", ts.URL+"/v1/compare", "application/json", c.body, c.status, c.msg)
	}
	wantError(t, "POST", ts.URL+"/v1/compare?html=maybe", "application/json", `{}`, 400, "html")
	if !strings.Contains(string(openapiDoc), `"/v1/compare"`) {
		t.Fatal("compare is not documented")
	}
}

// TestCompareBytes: a file that is not UTF-8, sent as bytes, compares as
// it queries (the server finds its encoding as for an upload): a Latin-1
// copy of a stored text is the same text; the same bytes as a JSON
// string are not (invalid UTF-8 becomes U+FFFD there).
func TestCompareBytes(t *testing.T) {
	ts, d := testServer(t, nil)
	words := "déjà vu naïve café crème brûlée à la carte garçon fiancée façade résumé über señor "
	utf8Text := strings.Repeat(words, 5)
	if _, err := d.Add(context.Background(), db.Input{ID: "fr", Text: []byte(utf8Text)}, nil); err != nil {
		t.Fatal(err)
	}
	var latin1 []byte
	for _, r := range utf8Text {
		latin1 = append(latin1, byte(r))
	}
	var q api.QueryResult
	if st := call(t, "POST", ts.URL+"/v1/query?threshold=1", "text/plain", bytes.NewReader(latin1), &q); st != 200 || len(q.Matches) != 1 {
		t.Fatalf("query of the Latin-1 copy: %d, %+v", st, q.Matches)
	}
	var c api.Comparison
	req := api.CompareRequest{A: api.CompareText{Bytes: latin1, Name: "fr-latin1.txt"}, B: api.CompareText{ID: "fr"}}
	if st := call(t, "POST", ts.URL+"/v1/compare", "application/json", jsonBody(req), &c); st != 200 || c.Jaccard != 1 || c.Estimated != 1 {
		t.Fatalf("compare of the Latin-1 copy as bytes: %d, Jaccard %v, estimated %v; want 1", st, c.Jaccard, c.Estimated)
	}
	req.A = api.CompareText{Text: string(latin1), Name: "fr-latin1.txt"}
	if st := call(t, "POST", ts.URL+"/v1/compare", "application/json", jsonBody(req), &c); st != 200 || c.Jaccard == 1 {
		t.Fatalf("compare of the Latin-1 copy as a JSON string: %d, Jaccard %v (want below 1)", st, c.Jaccard)
	}
}
