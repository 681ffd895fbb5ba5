package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
)

// ndjsonBody returns the lines of reqs, one JSON object per line.
func ndjsonBody(lines ...any) string {
	var b strings.Builder
	for _, l := range lines {
		if s, ok := l.(string); ok {
			b.WriteString(s + "\n")
			continue
		}
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestBatchEndpoint(t *testing.T) {
	ts, d := testServer(t, nil)
	ctx := context.Background()
	// 2 500 documents (three chunks), a binary one, an id given twice and
	// a blank line.
	var lines []any
	for i := range 2500 {
		lines = append(lines, api.AddRequest{ID: fmt.Sprintf("d%04d", i), Text: text(uint64(i), 30), Source: "batch"})
	}
	lines = slices.Insert(lines, 1200, any(api.AddRequest{ID: "bin", Text: "a\x00b c d"}))
	lines = slices.Insert(lines, 1500, any(""))
	// Lines without an id, or with an empty one: skipped as bad ids, as
	// "fpdb add --bulk" skips such records (they used to fail the batch).
	lines = slices.Insert(lines, 1700, any(`{"text": "a b c d e"}`), any(api.AddRequest{ID: "", Text: "f g h i"}))
	lines = append(lines, api.AddRequest{ID: "d0007", Text: text(99, 30)})
	var res api.BatchResult
	if st := call(t, "POST", ts.URL+"/v1/batch", "application/x-ndjson", strings.NewReader(ndjsonBody(lines...)), &res); st != 200 {
		t.Fatalf("batch: %d %+v", st, res)
	}
	// Each skipped line has its reason: an id given twice too.
	wantSkipped := []api.BatchSkip{{Line: 1201, ID: "bin", Reason: "binary"}, {Line: 1701, Reason: "invalid_id"}, {Line: 1702, Reason: "invalid_id"},
		{Line: 2505, ID: "d0007", Reason: "duplicate_in_batch"}}
	if res.Stored != 2500 || res.Replaced != 0 || res.Unchanged != 0 || len(res.Skipped) != len(wantSkipped) || d.Len() != 2500 {
		t.Fatalf("batch: %+v, %d stored", res, d.Len())
	}
	for i, s := range res.Skipped {
		if s.Line != wantSkipped[i].Line || s.ID != wantSkipped[i].ID || s.Reason != wantSkipped[i].Reason || s.Error == "" {
			t.Fatalf("skipped %+v, want lines, ids and reasons %+v", res.Skipped, wantSkipped)
		}
	}
	if doc, err := d.Get(ctx, "d1234"); err != nil || doc.Source != "batch" || doc.Words != 30 {
		t.Fatalf("stored d1234: %+v %v", doc, err)
	}
	// Again: unchanged; with replace: replaced; a new one: stored.
	body := ndjsonBody(api.AddRequest{ID: "d0001", Text: text(1, 30)},
		api.AddRequest{ID: "d0002", Text: text(2, 30), Replace: true},
		api.AddRequest{ID: "d0003", Text: "<p>changed " + text(77, 30) + "</p>", TextInput: api.TextInput{Format: "html"}},
		api.AddRequest{ID: "new", Text: text(3, 30)})
	if st := call(t, "POST", ts.URL+"/v1/batch", "", strings.NewReader(body), &res); st != 200 ||
		res.Stored != 3 || res.Replaced != 2 || res.Unchanged != 1 || len(res.Skipped) != 0 || d.Len() != 2501 {
		t.Fatalf("second batch: %d %+v", st, res)
	}

	// A bad line anywhere: 400 naming it, and nothing stored, not even the
	// good lines before it.
	good := api.AddRequest{ID: "good", Text: text(5, 30)}
	before := d.Stats()
	for _, c := range []struct {
		name, body, msg string
	}{
		{"malformed", ndjsonBody(good, good, `{"id": "x", "text": `), "line 3"},
		{"unknown field", ndjsonBody(good, `{"id": "x", "text": "a b", "colour": 1}`), "line 2"},
		{"threshold", ndjsonBody(good, `{"id": "x", "text": "a b c", "threshold": 0.8}`), "line 2"},
		{"reject", ndjsonBody(`{"id": "x", "text": "a b c", "reject": true}`), "line 1"},
		{"bad format", ndjsonBody(good, "", `{"id": "x", "text": "a b c", "format": "pdf"}`), "line 3"},
		{"two values", ndjsonBody(good, `{"id": "x", "text": "a"} {"id": "y"}`), "line 2"},
		{"not UTF-8", ndjsonBody(good, "{\"id\": \"x\", \"text\": \"\xff\"}"), "UTF-8"},
	} {
		wantError(t, "POST", ts.URL+"/v1/batch", "application/x-ndjson", c.body, 400, c.msg)
	}
	wantError(t, "POST", ts.URL+"/v1/batch", "image/png", ndjsonBody(good), 415, "Content-Type")
	for q, msg := range map[string]string{
		"threshold=":              "empty",
		"threshold=2":             "threshold",
		"threshold=abc":           "threshold",
		"reject=true":             "need threshold",
		"threshold=0.8&limit=-1":  "limit",
		"threshold=0.8&colour=re": "colour",
	} {
		wantError(t, "POST", ts.URL+"/v1/batch?"+q, "", ndjsonBody(good), 400, msg)
	}
	after := d.Stats()
	if has, _ := d.Has(ctx, "good"); has || after.Docs != before.Docs {
		t.Fatalf("a refused batch changed the database: %d documents, was %d", after.Docs, before.Docs)
	}
	var n int
	if err := d.Log(ctx, db.LogOptions{ID: "good"}, func(db.LogEntry) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("a refused batch was logged: %d entries, %v", n, err)
	}
}

// TestCheckedBatchEndpoint: POST /v1/batch?threshold=R checks each line
// as db.Add with the same options would, in line order — near and exact
// copies of earlier lines, an id given twice (the later line replaces the
// earlier), a binary line — and answers each line's outcome; the oracle
// is db.Add of each line on a twin database.
func TestCheckedBatchEndpoint(t *testing.T) {
	ts, d := testServer(t, nil)
	twin, err := db.Open(t.TempDir(), &db.Options{KeepTexts: true, AuditLog: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer twin.Close()
	ctx := context.Background()
	var lines []any
	var texts []string
	for i := range 1300 { // two chunks
		id, tx := fmt.Sprintf("d%04d", i), text(uint64(i), 60)
		switch {
		case i%7 == 3: // a near copy of an earlier line
			w := strings.Fields(texts[(i*31)%len(texts)])
			w[5], w[40] = "changed", "words"
			tx = strings.Join(w, " ")
		case i%11 == 5: // an exact copy
			tx = texts[(i*17)%len(texts)]
		case i%13 == 6: // an earlier line's id
			id = fmt.Sprintf("d%04d", (i*7)%i)
		case i == 600:
			tx = "a\x00b c d"
		}
		texts = append(texts, tx)
		lines = append(lines, api.AddRequest{ID: id, Text: tx})
	}
	opts := &db.AddOptions{Threshold: 0.8, Reject: true, Limit: 3}
	var res api.BatchResult
	if st := call(t, "POST", ts.URL+"/v1/batch?threshold=0.8&reject=true&limit=3", "application/x-ndjson", strings.NewReader(ndjsonBody(lines...)), &res); st != 200 {
		t.Fatalf("checked batch: %d %+v", st, res)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Line != 601 || res.Skipped[0].Reason != "binary" {
		t.Errorf("skipped %+v, want line 601, binary", res.Skipped)
	}
	if len(res.Results)+len(res.Skipped) != len(lines) {
		t.Fatalf("%d results and %d skipped for %d lines", len(res.Results), len(res.Skipped), len(lines))
	}
	var stored, rejected, replaced int
	for j, r := range res.Results {
		line := r.Line
		if j > 0 && line <= res.Results[j-1].Line {
			t.Fatalf("results out of line order: %d after %d", line, res.Results[j-1].Line)
		}
		in := lines[line-1].(api.AddRequest)
		want, err := twin.Add(ctx, db.Input{ID: in.ID, Text: []byte(in.Text)}, opts)
		if err != nil {
			t.Fatalf("line %d: twin add: %v", line, err)
		}
		var ids, wantIDs []string
		for _, m := range r.Matches {
			ids = append(ids, m.ID)
		}
		for _, m := range want.Matches {
			wantIDs = append(wantIDs, m.ID)
		}
		if r.ID != in.ID || r.Stored != want.Stored || r.Replaced != want.Replaced || r.Unchanged != want.Unchanged ||
			r.Rejected != (!want.Stored && !want.Unchanged) || !slices.Equal(ids, wantIDs) {
			t.Errorf("line %d (%s): %+v, db.Add: %+v", line, in.ID, r, want)
		}
		if r.Stored {
			stored++
		}
		if r.Rejected {
			rejected++
		}
		if r.Replaced {
			replaced++
		}
	}
	if res.Stored != stored || res.Rejected != rejected || res.Replaced != replaced || rejected == 0 || replaced == 0 {
		t.Errorf("counts %+v, results: %d stored, %d rejected, %d replaced", res, stored, rejected, replaced)
	}
	if d.Len() != twin.Len() {
		t.Errorf("%d documents stored, %d by db.Add", d.Len(), twin.Len())
	}
}

func TestDeleteEndpoint(t *testing.T) {
	ts, d := testServer(t, nil)
	ctx := context.Background()
	for _, id := range []string{"a/1", "a/2", "b/1", "c", "keep"} {
		if _, err := d.Add(ctx, db.Input{ID: id, Text: []byte(text(uint64(len(id))+uint64(id[0]), 40))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	del := func(body string) (int, api.DeleteResult) {
		var res api.DeleteResult
		st := call(t, "POST", ts.URL+"/v1/delete", "application/json", strings.NewReader(body), &res)
		return st, res
	}
	for body, msg := range map[string]string{
		`{}`:                                    "exactly one",
		`{"dry_run": true}`:                     "exactly one",
		`{"ids": ["c"], "prefix": "a/"}`:        "exactly one",
		`{"prefix": "a/", "older_than": "1h"}`:  "exactly one",
		`{"prefix": ""}`:                        "empty id prefix",
		`{"ids": []}`:                           "ids is empty",
		`{"prefix": "a/", "forget": true}`:      "forget goes with ids",
		`{"older_than": "soon"}`:                "older_than",
		`{"older_than": "-3d"}`:                 "older_than",
		`{"ids": ["c"], "colour": "red"}`:       "colour",
		`{"ids": ["ok", "bad\u0000id"]}`:        "id",
		`{"ids": ["c"], "dry_run": "yes"}`:      "malformed",
		`{"older_than": "0d", "dry_run": true}`: "older_than",
	} {
		wantError(t, "POST", ts.URL+"/v1/delete", "application/json", body, 400, msg)
	}
	if d.Len() != 5 {
		t.Fatalf("bad deletes deleted: %d documents", d.Len())
	}
	// Dry runs count and change nothing.
	for body, want := range map[string]api.DeleteResult{
		`{"prefix": "a/", "dry_run": true}`:              {Deleted: 2, DryRun: true},
		`{"ids": ["a/1", "zz", "a/1"], "dry_run": true}`: {Deleted: 1, NotFound: []string{"zz"}, DryRun: true},
		`{"older_than": "1h", "dry_run": true}`:          {Deleted: 0, DryRun: true},
	} {
		if st, res := del(body); st != 200 || res.Deleted != want.Deleted || !slices.Equal(res.NotFound, want.NotFound) || !res.DryRun {
			t.Fatalf("%s: %d %+v, want %+v", body, st, res, want)
		}
	}
	if d.Len() != 5 {
		t.Fatalf("a dry run deleted: %d documents", d.Len())
	}
	// Deletes.
	if st, res := del(`{"ids": ["b/1", "zz"]}`); st != 200 || res.Deleted != 1 || !slices.Equal(res.NotFound, []string{"zz"}) || res.DryRun {
		t.Fatalf("ids: %d %+v", st, res)
	}
	if st, res := del(`{"prefix": "a/"}`); st != 200 || res.Deleted != 2 {
		t.Fatalf("prefix: %d %+v", st, res)
	}
	if has, _ := d.Has(ctx, "a/2"); has || d.Len() != 2 {
		t.Fatalf("after the prefix delete: %d documents", d.Len())
	}
	// Forget: the document and its log entries.
	if st, res := del(`{"ids": ["c"], "forget": true}`); st != 200 || res.Deleted != 1 {
		t.Fatalf("forget: %d %+v", st, res)
	}
	n := 0
	if err := d.Log(ctx, db.LogOptions{ID: "c"}, func(db.LogEntry) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("forgotten c has %d log entries (%v)", n, err)
	}
	// By age: everything added more than a millisecond ago.
	time.Sleep(5 * time.Millisecond)
	if st, res := del(`{"older_than": "1ms", "dry_run": true}`); st != 200 || res.Deleted != 1 {
		t.Fatalf("older_than dry run: %d %+v", st, res)
	}
	if st, res := del(`{"older_than": "1ms"}`); st != 200 || res.Deleted != 1 || d.Len() != 0 {
		t.Fatalf("older_than: %d %+v, %d left", st, res, d.Len())
	}
}

// expiringCtx is a context whose deadline passes when the test says
// (expire): Done is then closed and Err is context.DeadlineExceeded, as
// for a request over its time.
type expiringCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newExpiringCtx() *expiringCtx {
	return &expiringCtx{Context: context.Background(), done: make(chan struct{})}
}

func (c *expiringCtx) Done() <-chan struct{} { return c.done }

func (c *expiringCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (c *expiringCtx) expire() { c.once.Do(func() { close(c.done) }) }

// TestDeleteCutShort: a bulk delete whose time runs out after some of its
// atomic batches is a 503 that says how many documents were deleted (a
// 4xx would say the database is unchanged); one whose time ran out before
// it deleted anything is a 408.
func TestDeleteCutShort(t *testing.T) {
	const n = 30_000 // 3 atomic batches of the db's 10 000
	for _, tc := range []struct{ by, body string }{
		{"prefix", `{"prefix": "m/"}`},
		{"older_than", `{"older_than": "1m"}`},
		{"ids", ""},
		{"forget", ""},
	} {
		t.Run(tc.by, func(t *testing.T) {
			d, err := db.Open(t.TempDir(), &db.Options{KeepTexts: true, AuditLog: true, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			s, err := New(d, nil)
			if err != nil {
				t.Fatal(err)
			}
			ins := make([]db.Input, n)
			ids := make([]string, n)
			for i := range ins {
				ids[i] = fmt.Sprintf("m/%05d", i)
				ins[i] = db.Input{ID: ids[i], Text: []byte(text(uint64(i), 12)), Added: time.Now().Add(-time.Hour)}
			}
			if _, err := d.AddBatch(context.Background(), ins); err != nil {
				t.Fatal(err)
			}
			body := tc.body
			if body == "" {
				b, _ := json.Marshal(api.DeleteRequest{IDs: ids, Forget: tc.by == "forget"})
				body = string(b)
			}
			del := func(ctx context.Context) (int, api.ErrorBody) {
				req := httptest.NewRequest("POST", "/v1/delete", strings.NewReader(body)).WithContext(ctx)
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				s.Handler().ServeHTTP(rec, req)
				var e api.ErrorBody
				_ = json.Unmarshal(rec.Body.Bytes(), &e)
				return rec.Code, e
			}
			// Out of time before the delete began: nothing deleted, a 408.
			ctx := newExpiringCtx()
			ctx.expire()
			if st, e := del(ctx); st != 408 || d.Len() != n {
				t.Fatalf("expired delete: %d %+v, %d documents left", st, e, d.Len())
			}
			// Out of time once the first batch is written.
			ctx = newExpiringCtx()
			stop := make(chan struct{})
			go func() {
				for d.Len() == n {
					select {
					case <-stop:
						return
					default:
					}
				}
				ctx.expire()
			}()
			st, e := del(ctx)
			close(stop)
			deleted := n - d.Len()
			if st != 503 || e.Error.Code != api.CodeUnavailable || deleted == 0 || deleted == n ||
				!strings.Contains(e.Error.Message, fmt.Sprintf("%d documents were deleted", deleted)) {
				t.Fatalf("delete cut short: %d %+v; %d of %d documents deleted", st, e, deleted, n)
			}
		})
	}
}
