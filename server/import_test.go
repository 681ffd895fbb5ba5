package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
)

// TestImport: an export posted to /v1/import fills the empty served
// database; posted again it is refused with 400 and nothing changes.
func TestImport(t *testing.T) {
	src, err := db.Open(t.TempDir(), &db.Options{KeepTexts: true, AuditLog: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for i := range 20 {
		if _, err := src.Add(context.Background(), db.Input{ID: "d" + strings.Repeat("x", i), Text: []byte(text(uint64(i), 100))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var exp bytes.Buffer
	if _, err := src.Export(context.Background(), &exp); err != nil {
		t.Fatal(err)
	}
	ts, d := testServer(t, nil)
	var res api.ImportResult
	if st := call(t, "POST", ts.URL+"/v1/import", "application/x-ndjson", bytes.NewReader(exp.Bytes()), &res); st != 200 || res.Imported != 20 || d.Len() != 20 {
		t.Fatalf("import: %d %+v, %d documents", st, res, d.Len())
	}
	var e api.ErrorBody
	if st := call(t, "POST", ts.URL+"/v1/import", "application/x-ndjson", bytes.NewReader(exp.Bytes()), &e); st != 400 || !strings.Contains(e.Error.Message, "not empty") || d.Len() != 20 {
		t.Fatalf("second import: %d %+v", st, e)
	}
	if st := call(t, "POST", ts.URL+"/v1/import", "application/x-ndjson", strings.NewReader("{\"fpdb_export\": 99}\n"), &e); st != 400 {
		t.Fatalf("bad export: %d %+v", st, e)
	}
}

// TestImportRunning: while an import fills the served database, another
// import and an add answer 503 (reason import_running, Retry-After) and
// write nothing; the import then ends whole.
func TestImportRunning(t *testing.T) {
	opts := &db.Options{KeepTexts: true, AuditLog: true, NoSync: true}
	full, empty := exportOf(t, opts, 20), exportOf(t, opts, 0)
	header, rest, _ := bytes.Cut(full, []byte("\n"))
	ts, d := testServer(t, nil)
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) }) // before the server closes: a failing test ends the import
	done := make(chan int, 1)
	var res api.ImportResult
	go func() { done <- call(t, "POST", ts.URL+"/v1/import", "application/x-ndjson", pr, &res) }()
	if _, err := pw.Write(append(header, '\n')); err != nil {
		t.Fatal(err)
	}
	// Until the first import has begun, an empty export imports nothing
	// (and changes nothing); then it is refused.
	var e api.ErrorBody
	st := 0
	for range 500 {
		e = api.ErrorBody{}
		if st = call(t, "POST", ts.URL+"/v1/import", "application/x-ndjson", bytes.NewReader(empty), &e); st != 200 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st != 503 || e.Error.Reason != "import_running" || strings.Contains(e.Error.Message, "posted again") {
		t.Fatalf("a second import: %d %+v, want 503 import_running (with no advice to post it again)", st, e)
	}
	req, _ := http.NewRequest("POST", ts.URL+"/v1/documents?id=live", strings.NewReader(text(99, 100)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("an add during the import: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if _, err := pw.Write(rest); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if st := <-done; st != 200 || res.Imported != 20 || d.Len() != 20 {
		t.Fatalf("the import: %d %+v, %d documents", st, res, d.Len())
	}
}

// TestImportUnfinished: an import cut short after a batch leaves the
// served database unfinished: the answer (503: documents were stored)
// says how to finish, /v1/stats says so, an add answers 403 with
// reason import_incomplete, and posting the same export again resumes and
// finishes it.
func TestImportUnfinished(t *testing.T) {
	src, err := db.Open(t.TempDir(), &db.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	docs := make([]db.Input, 10_003)
	for i := range docs {
		fp := make([]uint64, src.Params().K/64)
		for j := range fp {
			fp[j] = uint64(i+1) * 0x9E3779B97F4A7C15 * uint64(j+1)
		}
		docs[i] = db.Input{ID: fmt.Sprint("d", i), Fingerprint: fp}
	}
	if _, err := src.AddBatch(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	var exp bytes.Buffer
	if _, err := src.Export(context.Background(), &exp); err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(exp.Bytes(), []byte("\n"))
	cut := bytes.Join(lines[:10_002], nil) // the header and one batch and one document
	ts, d := testServer(t, nil)
	var e api.ErrorBody
	if st := call(t, "POST", ts.URL+"/v1/import", "application/x-ndjson", bytes.NewReader(cut), &e); st != 503 || d.Len() != 10_000 ||
		!strings.Contains(e.Error.Message, "until the same export, posted again, finishes the import") {
		t.Fatalf("a cut export: %d %+v, %d documents; want 503 saying how to finish, and the first batch", st, e, d.Len())
	}
	var stats api.Stats
	if st := call(t, "GET", ts.URL+"/v1/stats", "", nil, &stats); st != 200 || !stats.ImportIncomplete {
		t.Errorf("stats of an unfinished import: %d %+v", st, stats)
	}
	e = api.ErrorBody{}
	if st := call(t, "POST", ts.URL+"/v1/documents?id=live", "text/plain", strings.NewReader(text(99, 100)), &e); st != 403 || e.Error.Reason != "import_incomplete" {
		t.Errorf("an add into an unfinished import: %d %+v, want 403 import_incomplete", st, e)
	}
	// Another export: 403, as the database's other writes.
	e = api.ErrorBody{}
	if st := call(t, "POST", ts.URL+"/v1/import", "application/x-ndjson", bytes.NewReader(bytes.Replace(lines[0], []byte(`"docs":10003`), []byte(`"docs":0`), 1)), &e); st != 403 || e.Error.Reason != "import_incomplete" {
		t.Errorf("another export into an unfinished import: %d %+v, want 403 import_incomplete", st, e)
	}
	var res api.ImportResult
	if st := call(t, "POST", ts.URL+"/v1/import", "application/x-ndjson", bytes.NewReader(exp.Bytes()), &res); st != 200 || res.Imported != 10_003 || d.Len() != 10_003 {
		t.Fatalf("the export again: %d %+v, %d documents", st, res, d.Len())
	}
	if st := call(t, "POST", ts.URL+"/v1/documents?id=live", "text/plain", strings.NewReader(text(99, 100)), nil); st != 200 && st != 201 {
		t.Errorf("an add after the import: %d", st)
	}
}
