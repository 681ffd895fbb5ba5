package db

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDocsAfterPages pages through a database whose documents were
// replaced and deleted (internal ids out of id order): every document
// once, in id order, as Docs has them; then writes the pages with
// ExportWriter and imports that export.
func TestDocsAfterPages(t *testing.T) {
	d := openTest(t, "", &Options{K: 256, GroupWidths: EqualWidths(256, 12)})
	plantedDB(t, d, 3)
	want := timedDocsOf(t, d)
	slices.SortFunc(want, func(a, b Doc) int { return strings.Compare(a.ID, b.ID) })

	for _, limit := range []int{1, 7, 1000} {
		var got []Doc
		after := ""
		for {
			page, err := d.DocsAfter(ctx, after, limit)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page...)
			if len(page) < limit {
				break
			}
			after = page[len(page)-1].ID
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: %d documents, want %d", limit, len(got), len(want))
		}
		for i := range want {
			if !sameDoc(&got[i], &want[i]) {
				t.Fatalf("limit %d: document %d: %+v, want %+v", limit, i, got[i], want[i])
			}
		}
	}
	if _, err := d.DocsAfter(ctx, "", 0); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("limit 0: %v, want ErrInvalidOptions", err)
	}
	if page, err := d.DocsAfter(ctx, want[len(want)-1].ID, 5); err != nil || len(page) != 0 {
		t.Fatalf("after the last id: %d documents, %v", len(page), err)
	}

	// The pages as an export: Import stores the same documents.
	var buf bytes.Buffer
	ew, err := NewExportWriter(&buf, d.Params(), len(want))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if err := ew.Write(&want[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := ew.Flush(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "imported")
	if n, err := Import(ctx, dir, bytes.NewReader(buf.Bytes()), nil); err != nil || n != len(want) {
		t.Fatalf("import: %d, %v", n, err)
	}
	back := timedDocsOf(t, openTest(t, dir, nil))
	if len(back) != len(want) {
		t.Fatalf("imported %d documents, want %d", len(back), len(want))
	}
	for i := range want { // stored in the export's order: by id
		if !sameDoc(&back[i], &want[i]) {
			t.Fatalf("imported document %d: %+v, want %+v", i, back[i], want[i])
		}
	}

	// A fingerprint of another length is refused, not written.
	short := want[0]
	short.Fingerprint = short.Fingerprint[:1]
	if err := ew.Write(&short); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("short fingerprint: %v, want ErrInvalidOptions", err)
	}
}

// TestExportLines makes each document's line with Params.AppendExportLine and
// writes it with WriteLine: the bytes of the database's own export, a
// source with HTML's special characters and a quote included; a
// fingerprint of another length is refused, and WriteLine refuses what is
// not one line.
func TestExportLines(t *testing.T) {
	d := openTest(t, "", &Options{K: 256, GroupWidths: EqualWidths(256, 12)})
	plantedDB(t, d, 4)
	fp := make([]uint64, 4)
	fp[0] = 7
	if _, err := d.Add(ctx, Input{ID: "x<&>\"y", Fingerprint: fp, Source: "https://example.org/?a=1&b=<2>"}, nil); err != nil {
		t.Fatal(err)
	}
	var own bytes.Buffer
	if _, err := d.Export(ctx, &own); err != nil {
		t.Fatal(err)
	}
	docs := timedDocsOf(t, d)
	var made bytes.Buffer
	ew, err := NewExportWriter(&made, d.Params(), len(docs))
	if err != nil {
		t.Fatal(err)
	}
	var line []byte
	for i := range docs {
		if line, err = d.Params().AppendExportLine(line[:0], &docs[i]); err != nil {
			t.Fatal(err)
		}
		if err := ew.WriteLine(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := ew.Flush(); err != nil {
		t.Fatal(err)
	}
	// Docs and Export visit the documents in the same order.
	if !bytes.Equal(made.Bytes(), own.Bytes()) {
		t.Fatalf("lines made one by one differ from the export:\n%.300s\nwant\n%.300s", made.Bytes(), own.Bytes())
	}
	short := docs[0]
	short.Fingerprint = short.Fingerprint[:1]
	if _, err := d.Params().AppendExportLine(nil, &short); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("short fingerprint: %v, want ErrInvalidOptions", err)
	}
	for _, bad := range []string{"", "{}", "{\"id\":1}\n{}\n", "[]\n", "\n"} {
		if err := ew.WriteLine([]byte(bad)); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("WriteLine(%q): %v, want ErrInvalidOptions", bad, err)
		}
	}
}

// TestExportReaderLines reads an export line by line: documents, then
// log entries, then io.EOF; and refuses an export with a line more than
// its header announces, naming the line.
func TestExportReaderLines(t *testing.T) {
	d := openTest(t, "", &Options{K: 256, GroupWidths: EqualWidths(256, 12), AuditLog: true})
	plantedDB(t, d, 4)
	exp := exportOf(t, d)
	x, err := NewExportReader(bytes.NewReader(exp))
	if err != nil {
		t.Fatal(err)
	}
	h := x.Header()
	if h.Docs != d.Stats().Docs || !h.AuditLog || h.LogEntries == 0 {
		t.Fatalf("header %+v", h)
	}
	docs, logs := 0, 0
	for {
		doc, entry, err := x.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case doc != nil && entry == nil && logs == 0:
			docs++
		case entry != nil && doc == nil:
			logs++
		default:
			t.Fatalf("line %d: document %v, entry %v after %d entries", x.Line(), doc != nil, entry != nil, logs)
		}
	}
	if docs != h.Docs || logs != h.LogEntries || x.Line() != 1+docs+logs {
		t.Fatalf("read %d documents, %d entries to line %d; header %d and %d", docs, logs, x.Line(), h.Docs, h.LogEntries)
	}

	lines := bytes.SplitAfter(exp, []byte("\n"))
	more := append(slices.Clone(exp), lines[1]...)
	x, err = NewExportReader(bytes.NewReader(more))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, _, err = x.Next()
	}
	if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "more lines") {
		t.Fatalf("a line more: %v", err)
	}
}

// timedDocsOf lists the stored documents of d, in storing order, with
// their times added.
func timedDocsOf(t *testing.T, d *DB) []Doc {
	t.Helper()
	var out []Doc
	if err := d.Docs(ctx, func(doc Doc) error {
		out = append(out, doc)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameDoc reports whether a and b hold the same id, fingerprint, content
// hash, metadata and time added.
func sameDoc(a, b *Doc) bool {
	return a.ID == b.ID && slices.Equal(a.Fingerprint, b.Fingerprint) && a.ContentHash == b.ContentHash &&
		a.Source == b.Source && a.Size == b.Size && a.Words == b.Words && a.Shingles == b.Shingles && a.Added.Equal(b.Added)
}

// TestImportTruncatedDocs imports an export cut among its documents, at a
// line's end, within the first batch: nothing is written (the pending
// batch is dropped whole), so the same database can take the whole export
// afterwards.
func TestImportTruncatedDocs(t *testing.T) {
	d := openTest(t, "", &Options{K: 256, GroupWidths: EqualWidths(256, 12)})
	plantedDB(t, d, 4)
	exp := exportOf(t, d)
	lines := bytes.SplitAfter(exp, []byte("\n"))
	if d.Stats().Docs < 3 {
		t.Fatalf("%d documents", d.Stats().Docs)
	}
	cut := bytes.Join(lines[:1+2], nil) // the header and 2 documents
	to := openTest(t, "", &Options{K: 256, GroupWidths: EqualWidths(256, 12)})
	n, err := to.ImportInto(ctx, bytes.NewReader(cut))
	if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "cut short") || n != 0 {
		t.Fatalf("import of a cut export: %d, %v", n, err)
	}
	if docs := to.Stats().Docs; docs != 0 {
		t.Fatalf("a cut export stored %d documents", docs)
	}
	if n, err := to.ImportInto(ctx, bytes.NewReader(exp)); err != nil || n != d.Stats().Docs {
		t.Fatalf("import of the whole export after a cut one: %d, %v", n, err)
	}
}

// TestImportTruncatedLog imports an export cut inside its audit log, at a
// line's end: the documents and the entries read are stored, and the
// error says the export was cut short.
func TestImportTruncatedLog(t *testing.T) {
	d := openTest(t, "", &Options{K: 256, GroupWidths: EqualWidths(256, 12), AuditLog: true})
	plantedDB(t, d, 4)
	lines := bytes.SplitAfter(exportOf(t, d), []byte("\n"))
	docs := d.Stats().Docs
	cut := bytes.Join(lines[:1+docs+3], nil) // the header, the documents, 3 entries
	dir := filepath.Join(t.TempDir(), "imported")
	n, err := Import(ctx, dir, bytes.NewReader(cut), nil)
	if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "truncated") || n != docs {
		t.Fatalf("import of a cut export: %d, %v", n, err)
	}
	back := openTest(t, dir, nil)
	entries := 0
	if err := back.Log(ctx, LogOptions{}, func(LogEntry) error { entries++; return nil }); err != nil {
		t.Fatal(err)
	}
	if back.Stats().Docs != docs || entries != 3 {
		t.Fatalf("stored %d documents and %d entries, want %d and 3", back.Stats().Docs, entries, docs)
	}
}
