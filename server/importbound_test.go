package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/httpapi"
)

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// repeatByte reads as an endless run of one byte.
type repeatByte byte

func (b repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// importBody returns a body of head, then n bytes 'a', then tail, which
// counts the bytes read from it.
func importBody(head string, n int64, tail string) *countingReader {
	return &countingReader{r: io.MultiReader(strings.NewReader(head), io.LimitReader(repeatByte('a'), n), strings.NewReader(tail))}
}

// postImport posts body to s's /v1/import (in this process, no
// connection: what the handler reads is what it asked for) and returns
// the status and the error answer.
func postImport(t *testing.T, s *Server, body io.Reader) (int, api.ErrorBody) {
	t.Helper()
	req := httptest.NewRequest("POST", "/v1/import", body)
	req.Header.Set("Content-Type", "application/x-ndjson")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	var e api.ErrorBody
	if rec.Code != http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
			t.Fatalf("import: %d %q: %v", rec.Code, rec.Body.Bytes(), err)
		}
	}
	return rec.Code, e
}

// newImportServer returns a server, with opts, of a new database opened
// with dbOpts, and registers their end.
func newImportServer(t *testing.T, dbOpts *db.Options, opts *Options) (*Server, *db.DB) {
	t.Helper()
	d, err := db.Open(t.TempDir(), dbOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	s, err := New(d, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, d
}

// exportOf returns the export of a database (options o) holding n
// documents.
func exportOf(t *testing.T, o *db.Options, n int) []byte {
	t.Helper()
	src, err := db.Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for i := range n {
		if _, err := src.Add(context.Background(), db.Input{ID: fmt.Sprint("d", i), Text: []byte(text(uint64(i), 100))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var exp bytes.Buffer
	if _, err := src.Export(context.Background(), &exp); err != nil {
		t.Fatal(err)
	}
	return exp.Bytes()
}

// TestImportLineBound: a body whose header line is longer than the bound
// the served database's MaxTextSize gives (a client sent one of 768 MB,
// which the server held whole before it answered) is answered 413 with a
// message that names the line and the bound, what it leaves room for and
// where a longer one is imported; so is a document line past its bound.
// The rest of the body is read (and discarded) before the answer. The
// database is unchanged; an export within the bounds then imports.
func TestImportLineBound(t *testing.T) {
	const maxText = 1 << 20
	dbOpts := &db.Options{KeepTexts: true, NoSync: true, MaxTextSize: maxText}
	s, d := newImportServer(t, dbOpts, nil) // the bound from the database's own MaxTextSize
	lim := httpapi.ImportLineLimits(maxText)
	if lim.Header < 6*db.MaxTemplateSize || lim.Line < 6*maxText || lim.Header > 32<<20 || lim.Line > 16<<20 {
		t.Fatalf("bounds %+v for texts of %d bytes", lim, maxText)
	}

	// A header line past its bound, and nothing after it.
	size := lim.Header + 8<<20
	head := `{"fpdb_export":1,"templates":[{"name":"t","text":"`
	body := importBody(head, size, "")
	st, e := postImport(t, s, body)
	for _, want := range []string{
		fmt.Sprintf("line 1 (the export's header) is longer than %d bytes", lim.Header),
		fmt.Sprintf("templates whose texts total at most %d bytes (the larger of the database's longest text and the longest template)", int64(db.MaxTemplateSize)),
		`an export whose templates hold more text must be imported with "fpdb import" on the server's machine`,
	} {
		if st != http.StatusRequestEntityTooLarge || e.Error.Code != api.CodeTooLarge || !strings.Contains(e.Error.Message, want) {
			t.Errorf("a header line past the bound: %d %+v, want 413 with %q", st, e.Error, want)
		}
	}
	if n := body.n.Load(); n != int64(len(head))+size {
		t.Errorf("a header line past the bound: %d bytes of %d read", n, int64(len(head))+size)
	}

	// A document line past its bound, after a good header.
	exp := exportOf(t, dbOpts, 1)
	header, _, _ := bytes.Cut(exp, []byte("\n"))
	body = importBody(string(header)+"\n"+`{"id":"x","text":"`, lim.Line+8<<20, "\"}\n")
	st, e = postImport(t, s, body)
	for _, want := range []string{
		fmt.Sprintf("line 2 is longer than %d bytes", lim.Line),
		fmt.Sprintf("room for a text of %d bytes (the database's longest), JSON-escaped, a source of %d bytes", maxText, httpapi.ImportSourceRoom),
		`must be imported with "fpdb import" on the server's machine`,
	} {
		if st != http.StatusRequestEntityTooLarge || e.Error.Code != api.CodeTooLarge || !strings.Contains(e.Error.Message, want) {
			t.Errorf("a document line past the bound: %d %+v, want 413 with %q", st, e.Error, want)
		}
	}
	if d.Len() != 0 || d.Stats().ImportIncomplete {
		t.Fatalf("after refused imports: %d documents, %+v", d.Len(), d.Stats())
	}

	// Within the bounds, an export imports.
	exp = exportOf(t, dbOpts, 5)
	if st, e := postImport(t, s, bytes.NewReader(exp)); st != http.StatusOK || d.Len() != 5 {
		t.Fatalf("an export within the bounds: %d %+v, %d documents", st, e, d.Len())
	}
}

// TestImportRefusedBeforeReading: an import into a database that is not
// empty, that is read-only, or while another import runs, is refused
// before the import reads its body; the whole body is then read (and
// discarded), so that a client that sends it all before it reads the
// answer gets it, one that sent Expect: 100-continue too.
func TestImportRefusedBeforeReading(t *testing.T) {
	dbOpts := &db.Options{KeepTexts: true, AuditLog: true, NoSync: true}
	exp := exportOf(t, dbOpts, 3)
	check := func(what string, s *Server, status int, msg string) {
		t.Helper()
		for _, expect := range []bool{true, false} {
			body := &countingReader{r: bytes.NewReader(exp)}
			req := httptest.NewRequest("POST", "/v1/import", body)
			req.Header.Set("Content-Type", "application/x-ndjson")
			if expect {
				req.Header.Set("Expect", "100-continue")
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			var e api.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != status || !strings.Contains(e.Error.Message, msg) {
				t.Errorf("%s (Expect %v): %d %q, want %d with %q", what, expect, rec.Code, rec.Body.Bytes(), status, msg)
			}
			if n, want := body.n.Load(), int64(len(exp)); n != want {
				t.Errorf("%s (Expect %v): %d bytes of the body read, want %d", what, expect, n, want)
			}
		}
	}

	s, d := newImportServer(t, dbOpts, nil)
	fill(t, d, 1, 2, 0, 50)
	check("a database that holds documents", s, http.StatusBadRequest, "database is not empty: "+d.Dir()+" holds 2 documents")
	if _, err := d.DeleteMany(context.Background(), []string{"g0-0", "g0-1"}); err != nil {
		t.Fatal(err)
	}
	check("a database whose documents were deleted", s, http.StatusBadRequest, "has held documents (deleted since)")

	s, d = newImportServer(t, dbOpts, nil)
	if _, err := d.AddTemplate(context.Background(), "t", []byte(text(7, 50)), db.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	check("a database with a template", s, http.StatusBadRequest, "has 1 templates")

	s, _ = newImportServer(t, dbOpts, nil)
	s.importing.Store(true)
	check("an import running", s, http.StatusServiceUnavailable, "import into the database is running")
	s.importing.Store(false)

	dir := filepath.Join(t.TempDir(), "ro")
	rw, err := db.Open(dir, dbOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := db.Open(dir, &db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	s, err = New(ro, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("a read-only database", s, http.StatusForbidden, "read-only")
}

// TestImportSourceRoom: a document whose source is long (768 KiB: the
// database bounds no source) and whose text, up to the database's
// longest, is written as escaped as JSON may write it (\u00XX per byte)
// is within the bound of its line, and imports.
func TestImportSourceRoom(t *testing.T) {
	const maxText = 64 << 10
	dbOpts := &db.Options{KeepTexts: true, NoSync: true, MaxTextSize: maxText}
	src, err := db.Open(t.TempDir(), dbOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	body := text(3, 9000)
	for len(body) > maxText-16 {
		body = body[:strings.LastIndexByte(body, ' ')]
	}
	source := strings.Repeat("s", 768<<10)
	if _, err := src.Add(context.Background(), db.Input{ID: "long-source", Text: []byte(body), Source: source}, nil); err != nil {
		t.Fatal(err)
	}
	var exp bytes.Buffer
	if _, err := src.Export(context.Background(), &exp); err != nil {
		t.Fatal(err)
	}
	header, line, _ := bytes.Cut(exp.Bytes(), []byte("\n"))
	line, _, _ = bytes.Cut(line, []byte("\n"))
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatal(err)
	}
	var txt string
	if err := json.Unmarshal(rec["text"], &txt); err != nil || txt != body {
		t.Fatalf("the export's text: %v", err)
	}
	var esc strings.Builder
	esc.WriteByte('"')
	for i := 0; i < len(txt); i++ {
		fmt.Fprintf(&esc, `\u%04x`, txt[i]) // ASCII: each byte a character
	}
	esc.WriteByte('"')
	rec["text"] = json.RawMessage(esc.String())
	line, err = json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(line, []byte(`\u0020`)) {
		t.Fatal("the text is not escaped")
	}
	if n := len(line); n < 6*len(body)+len(source) {
		t.Fatalf("a line of %d bytes, for a text of %d and a source of %d", n, len(body), len(source))
	}

	s, d := newImportServer(t, dbOpts, nil)
	st, e := postImport(t, s, bytes.NewReader(append(append(append(header, '\n'), line...), '\n')))
	if st != http.StatusOK || d.Len() != 1 {
		t.Fatalf("a line of %d bytes (a source of %d): %d %+v, %d documents", len(line), len(source), st, e.Error, d.Len())
	}
	if doc, err := d.Get(context.Background(), "long-source"); err != nil || doc.Source != source {
		t.Fatalf("the imported document: %v", err)
	}
}

// TestImportLineTooLongAfterBatch: a line past its bound after a batch
// was stored leaves the import unfinished, and the answer (a 503 that
// counts the documents stored) says that the same export, posted again,
// stops at the same line, and how to finish: "fpdb import" on the
// server's machine.
func TestImportLineTooLongAfterBatch(t *testing.T) {
	const maxText = 4 << 10
	dbOpts := &db.Options{NoSync: true, MaxTextSize: maxText}
	exp := exportOf(t, &db.Options{NoSync: true}, 1)
	header, rest, _ := bytes.Cut(exp, []byte("\n"))
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	var h, rec map[string]any
	if err := json.Unmarshal(header, &h); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatal(err)
	}
	const docs = 10_001 // a batch of 10 000, then one
	h["docs"] = docs + 1
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	if err := enc.Encode(h); err != nil {
		t.Fatal(err)
	}
	for i := range docs {
		rec["id"] = fmt.Sprintf("d%05d", i)
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
	}
	lim := httpapi.ImportLineLimits(maxText)
	b.WriteString(`{"id":"long","source":"`)
	b.Write(bytes.Repeat([]byte("s"), int(lim.Line)))
	b.WriteString("\"}\n")

	s, d := newImportServer(t, dbOpts, nil)
	st, e := postImport(t, s, &b)
	for _, want := range []string{
		fmt.Sprintf("line %d is longer than %d bytes", docs+2, lim.Line),
		"the same export, posted again, stops at the same line",
		fmt.Sprintf(`"fpdb --db %s import FILE" on the server's machine`, d.Dir()),
		"(10000 documents were imported before it)",
	} {
		if st != http.StatusServiceUnavailable || !strings.Contains(e.Error.Message, want) {
			t.Errorf("a line too long after a batch: %d %q, want 503 with %q", st, e.Error.Message, want)
		}
	}
	if strings.Contains(e.Error.Message, "posted again, finishes") {
		t.Errorf("the answer says to post the export again: %s", e.Error.Message)
	}
	if d.Len() != 10_000 || !d.Stats().ImportIncomplete {
		t.Errorf("after the import stopped: %d documents, %+v", d.Len(), d.Stats())
	}
}
