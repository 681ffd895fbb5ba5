package db

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestImportResume: an import that stops midway (here: its export cut
// short, in the documents or in the audit log) leaves the database marked
// as unfinished, across a reopen: every write that would change it is
// refused with ErrImportIncomplete (reads, Warm and Compact go on), Stats
// says so, Check fails with ErrImportIncomplete (not as corruption), and
// another export is refused. Importing the same export again resumes: it
// skips the documents, templates and log entries stored, and the database
// then exports exactly as the source does, passes Check and takes writes.
// Before the mark, such a database opened as if whole, took writes, and
// refused the same export as not empty.
func TestImportResume(t *testing.T) {
	opts := &Options{KeepTexts: true, AuditLog: true, NoSync: true}
	src := openTest(t, "", opts)
	if _, err := src.AddTemplate(ctx, "boiler", []byte(text(70, 60)), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		if _, err := src.Add(ctx, Input{ID: fmt.Sprint("d", i), Text: []byte(text(uint64(i), 200))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Delete(ctx, "d3"); err != nil {
		t.Fatal(err)
	}
	exp := exportOf(t, src)
	lines := bytes.SplitAfter(exp, []byte("\n"))
	// The header, 8 documents, then the log's entries (10 adds, a delete).
	other := openTest(t, "", opts)
	if _, err := other.Add(ctx, Input{ID: "x", Text: []byte(text(99, 200))}, nil); err != nil {
		t.Fatal(err)
	}
	otherExp := exportOf(t, other)

	for _, tc := range []struct {
		name  string
		lines int // lines of the export read before it is cut
		docs  int // documents stored when it stops
	}{
		{"in the documents", 6, 4}, // batches of 2: d0 d1, d2 d4; d5 is dropped
		{"in the log", 13, 8},      // every document, 4 log entries
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dst := openTest(t, dir, opts)
			dst.testImportBatch = 2
			n, err := dst.ImportInto(ctx, bytes.NewReader(bytes.Join(lines[:tc.lines], nil)))
			if !errors.Is(err, ErrBadExport) || n != tc.docs {
				t.Fatalf("a cut export: %d, %v; want %d and ErrBadExport", n, err, tc.docs)
			}
			if err := dst.Close(); err != nil {
				t.Fatal(err)
			}
			dst = openTest(t, dir, opts)
			dst.testImportBatch = 2
			st := dst.Stats()
			if !st.ImportIncomplete || st.Docs != tc.docs {
				t.Fatalf("after reopening: %d docs, ImportIncomplete %v; want %d, true", st.Docs, st.ImportIncomplete, tc.docs)
			}
			was := dump(t, dst)
			writes := map[string]error{}
			_, writes["add"] = dst.Add(ctx, Input{ID: "new", Text: []byte(text(98, 200))}, nil)
			_, writes["batch"] = dst.AddBatch(ctx, []Input{{ID: "new2", Text: []byte(text(97, 200))}})
			writes["delete"] = dst.Delete(ctx, "d0")
			_, writes["delete prefix"] = dst.DeletePrefix(ctx, "d")
			_, writes["template"] = dst.AddTemplate(ctx, "t2", []byte(text(96, 60)), TextOptions{})
			for op, err := range writes {
				if !errors.Is(err, ErrImportIncomplete) {
					t.Errorf("%s into an unfinished import: %v, want ErrImportIncomplete", op, err)
				}
			}
			if _, err := dst.ImportInto(ctx, bytes.NewReader(otherExp)); !errors.Is(err, ErrNotEmpty) {
				t.Errorf("another export: %v, want ErrNotEmpty", err)
			}
			if err := dst.Check(ctx); !errors.Is(err, ErrImportIncomplete) || errors.Is(err, ErrCorrupt) {
				t.Errorf("Check: %v, want ErrImportIncomplete only", err)
			}
			// Exported, part of the export would import as a whole.
			var part bytes.Buffer
			if _, err := dst.Export(ctx, &part); !errors.Is(err, ErrImportIncomplete) || part.Len() > 0 {
				t.Errorf("Export: %v, %d bytes written; want ErrImportIncomplete and nothing", err, part.Len())
			}
			if err := dst.Warm(ctx); err != nil {
				t.Errorf("Warm: %v", err)
			}
			if res, err := dst.Query(ctx, []byte(text(1, 200)), QueryOptions{Threshold: 0.9}); err != nil || len(res.Matches) != 1 {
				t.Errorf("a query: %+v, %v; want d1", res, err)
			}
			if got := dump(t, dst); got != was {
				t.Error("refused writes changed the database")
			}

			n, err = dst.ImportInto(ctx, bytes.NewReader(exp))
			if err != nil || n != 8 {
				t.Fatalf("the same export again: %d, %v; want 8", n, err)
			}
			if dst.Stats().ImportIncomplete {
				t.Error("still unfinished after the import resumed")
			}
			if err := dst.Check(ctx); err != nil {
				t.Errorf("Check after resuming: %v", err)
			}
			_, want, _ := bytes.Cut(exp, []byte("\n"))
			_, got, _ := bytes.Cut(exportOf(t, dst), []byte("\n"))
			if !bytes.Equal(got, want) {
				t.Errorf("the resumed import exports otherwise than its source:\n%s\nwant\n%s", got, want)
			}
			if _, err := dst.Add(ctx, Input{ID: "new", Text: []byte(text(98, 200))}, nil); err != nil {
				t.Errorf("add after the import: %v", err)
			}
		})
	}
}

// TestImportResumeChecksDocuments: a resumed import refuses an export
// whose first documents are not those stored (the same header, other
// documents in another order, or the same ids with another fingerprint),
// and stays unfinished.
func TestImportResumeChecksDocuments(t *testing.T) {
	exp, lines, dst := cutImport(t, 4, 3)
	swapped := bytes.Join([][]byte{lines[0], lines[3], lines[4], lines[1], lines[2]}, nil)
	if _, err := dst.ImportInto(ctx, bytes.NewReader(swapped)); !errors.Is(err, ErrImportIncomplete) {
		t.Errorf("an export of other first documents: %v, want ErrImportIncomplete", err)
	}
	var rec map[string]any
	if err := json.Unmarshal(lines[2], &rec); err != nil {
		t.Fatal(err)
	}
	fp := []byte(rec["fingerprint"].(string))
	fp[0] ^= 1 // another hex digit
	rec["fingerprint"] = string(fp)
	changed, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Join([][]byte{lines[0], lines[1], append(changed, '\n'), lines[3], lines[4]}, nil)
	if _, err := dst.ImportInto(ctx, bytes.NewReader(other)); !errors.Is(err, ErrImportIncomplete) || !strings.Contains(err.Error(), "another fingerprint") {
		t.Errorf("an export whose stored document has another fingerprint: %v, want ErrImportIncomplete", err)
	}
	if !dst.Stats().ImportIncomplete {
		t.Error("no longer unfinished")
	}
	if n, err := dst.ImportInto(ctx, bytes.NewReader(exp)); n != 4 || err != nil {
		t.Fatalf("the export: %d, %v", n, err)
	}
}

// TestImportLogOnlyInterrupted: an export of no document whose audit log
// fills more than one batch, cut after a batch of entries was restored,
// leaves the database unfinished (the entries stay) and resumes; it used
// to drop its mark but keep the entries, so that the database looked
// whole and refused the export as not empty.
func TestImportLogOnlyInterrupted(t *testing.T) {
	exp := logOnlyExport(t)
	lines := bytes.SplitAfter(exp, []byte("\n"))
	dst := openTest(t, "", &Options{AuditLog: true, NoSync: true})
	dst.testImportBatch = 2
	if _, err := dst.ImportInto(ctx, bytes.NewReader(bytes.Join(lines[:4], nil))); !errors.Is(err, ErrBadExport) {
		t.Fatalf("a cut export: %v, want ErrBadExport", err)
	}
	if !dst.Stats().ImportIncomplete {
		t.Fatal("entries were restored, but the database is not marked unfinished")
	}
	if n, err := dst.ImportInto(ctx, bytes.NewReader(exp)); n != 0 || err != nil {
		t.Fatalf("the export again: %d, %v", n, err)
	}
	_, want, _ := bytes.Cut(exp, []byte("\n"))
	if _, got, _ := bytes.Cut(exportOf(t, dst), []byte("\n")); !bytes.Equal(got, want) {
		t.Errorf("the resumed import exports\n%s\nwant\n%s", got, want)
	}
}

// closingReader reads r, closing d once after `after` bytes were read.
type closingReader struct {
	r     io.Reader
	d     *DB
	after int
	read  int
}

func (c *closingReader) Read(p []byte) (int, error) {
	if c.read >= c.after && c.d != nil {
		_ = c.d.Close()
		c.d = nil
	}
	n, err := c.r.Read(p[:min(len(p), 64)])
	c.read += n
	return n, err
}

// TestImportResumeClosed: a DB closed while a resumed import checks the
// documents stored makes the import fail with ErrClosed; it read the
// closed store (a panic) before.
func TestImportResumeClosed(t *testing.T) {
	exp, lines, dst := cutImport(t, 6, 5)
	after := len(lines[0]) + len(lines[1])
	if _, err := dst.ImportInto(ctx, &closingReader{r: bytes.NewReader(exp), d: dst, after: after}); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed while resuming: %v, want ErrClosed", err)
	}
}

// cutImport exports a database of n texts and imports its header and
// first docs documents (cut there) in batches of 2 into a new database,
// which then holds the whole batches of them, marked unfinished. It
// returns the export, its lines and the new database.
func cutImport(t *testing.T, n, docs int) ([]byte, [][]byte, *DB) {
	t.Helper()
	src := openTest(t, "", &Options{NoSync: true})
	for i := range n {
		if _, err := src.Add(ctx, Input{ID: fmt.Sprint("d", i), Text: []byte(text(uint64(i), 200))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	exp := exportOf(t, src)
	lines := bytes.SplitAfter(exp, []byte("\n"))
	dst := openTest(t, "", &Options{NoSync: true})
	dst.testImportBatch = 2
	if got, err := dst.ImportInto(ctx, bytes.NewReader(bytes.Join(lines[:1+docs], nil))); got != docs/2*2 || !errors.Is(err, ErrBadExport) {
		t.Fatalf("a cut export: %d, %v", got, err)
	}
	return exp, lines, dst
}
