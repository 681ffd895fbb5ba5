package db

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// exportOf returns the export of d.
func exportOf(t *testing.T, d *DB) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := d.Export(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != d.Stats().Docs {
		t.Fatalf("exported %d documents, database has %d", n, d.Stats().Docs)
	}
	return buf.Bytes()
}

func TestExportImportRoundTrip(t *testing.T) {
	opts := &Options{K: 256, GroupWidths: EqualWidths(256, 12), ShingleWidth: 3, Seed: 1<<63 + 12345}
	src := openTest(t, "", opts)
	ids := plantedDB(t, src, 7)
	exp := exportOf(t, src)

	dir := filepath.Join(t.TempDir(), "imported")
	n, err := Import(ctx, dir, bytes.NewReader(exp), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != src.Stats().Docs {
		t.Fatalf("imported %d, want %d", n, src.Stats().Docs)
	}
	dst := openTest(t, dir, nil)
	p, q := src.Params(), dst.Params()
	if p.K != q.K || !slices.Equal(p.GroupWidths, q.GroupWidths) || p.ShingleWidth != q.ShingleWidth || p.Seed != q.Seed {
		t.Fatalf("params %+v, want %+v", q, p)
	}
	// Identical answers: text queries (with exact flags), fingerprint
	// queries, Get metadata, pairs.
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 6 {
		txt := []byte(edit(text(uint64(i), 300), 50))
		for _, thr := range []float64{0.5, 0.8} {
			a, err := src.Query(ctx, txt, QueryOptions{Threshold: thr})
			if err != nil {
				t.Fatal(err)
			}
			b, err := dst.Query(ctx, txt, QueryOptions{Threshold: thr})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Matches, b.Matches) || len(a.Matches) == 0 {
				t.Fatalf("text %d at %v: %v vs %v", i, thr, a.Matches, b.Matches)
			}
		}
	}
	var probes [][]uint64
	docs := allDocs(t, src, ids)
	for _, doc := range docs {
		probes = append(probes, nearFP(r, doc.Fingerprint, 15))
		got, err := dst.Get(ctx, doc.ID)
		if err != nil {
			t.Fatal(err)
		}
		got.iid = doc.iid
		if !slices.Equal(got.Fingerprint, doc.Fingerprint) || got.ContentHash != doc.ContentHash || got.Source != doc.Source ||
			got.Size != doc.Size || got.Words != doc.Words || !got.Added.Equal(doc.Added) {
			t.Fatalf("%q: imported %+v, original %+v", doc.ID, got, doc)
		}
	}
	sameAnswers(t, src, dst, probes, 0.7, 0.9)
	pairsOf := func(d *DB) []Pair {
		var ps []Pair
		if _, err := d.Pairs(ctx, PairsOptions{Threshold: 0.8}, func(p Pair) error { ps = append(ps, p); return nil }); err != nil {
			t.Fatal(err)
		}
		sortDBPairs(ps)
		return ps
	}
	if a, b := pairsOf(src), pairsOf(dst); !slices.Equal(a, b) {
		t.Fatalf("pairs differ: %d vs %d", len(a), len(b))
	}
	// The export of the import is the export, but for the creation time.
	body := func(b []byte) string { return string(b[bytes.IndexByte(b, '\n'):]) }
	if again := exportOf(t, dst); body(again) != body(exp) {
		t.Fatal("re-export differs")
	}
}

func TestImportRejects(t *testing.T) {
	src := openTest(t, "", nil)
	addBatch(t, src, []Input{
		{ID: "a", Text: []byte("one two three four five six")},
		{ID: "b", Text: []byte("seven eight nine ten eleven")},
	})
	exp := string(exportOf(t, src))
	header, rest, _ := strings.Cut(exp, "\n")
	lines := strings.Split(strings.TrimSpace(rest), "\n")
	cases := map[string]struct {
		in   string
		want error
	}{
		"empty":           {"", ErrBadExport},
		"not json":        {"hello\n", ErrBadExport},
		"unknown field":   {strings.Replace(header, `"k":`, `"x":1,"k":`, 1) + "\n", ErrBadExport},
		"export version":  {strings.Replace(header, `"fpdb_export":1`, `"fpdb_export":9`, 1) + "\n", ErrBadExport},
		"hash version":    {strings.Replace(header, `"hash_version":1`, `"hash_version":99`, 1) + "\n", ErrParamsMismatch},
		"truncated":       {header + "\n" + lines[0] + "\n", ErrBadExport},
		"bad fingerprint": {header + "\n" + strings.Replace(lines[0], `"fingerprint":"`, `"fingerprint":"zz`, 1) + "\n" + lines[1] + "\n", ErrBadFingerprint},
		"duplicate id":    {header + "\n" + lines[0] + "\n" + lines[0] + "\n", ErrDuplicateInBatch},
		"bad line":        {header + "\n" + lines[0] + "\n{\n", ErrBadExport},
		// A header no database could have made is a bad export, not the
		// caller's invalid options.
		"k mismatch":   {strings.Replace(header, `"k":512`, `"k":256`, 1) + "\n", ErrBadExport},
		"k zero":       {strings.Replace(header, `"k":512`, `"k":0`, 1) + "\n", ErrBadExport},
		"shingle zero": {strings.Replace(header, `"shingle_width":4`, `"shingle_width":0`, 1) + "\n", ErrBadExport},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			_, err := Import(ctx, dir, strings.NewReader(c.in), nil)
			if !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			if c.want == ErrBadExport && errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("err %v: the export's fault reported as invalid options", err)
			}
			// Whatever a failed import left is consistent.
			if d, err := Open(dir, &Options{ErrorIfNotExist: true}); err == nil {
				closeChecked(t, d)
			}
		})
	}
	// A database with documents is not a target; Options must agree.
	dir := t.TempDir()
	d := openTest(t, dir, nil)
	addBatch(t, d, []Input{{ID: "x", Text: []byte("some words here")}})
	closeChecked(t, d)
	if _, err := Import(ctx, dir, strings.NewReader(exp), nil); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("non-empty target: %v", err)
	}
	if _, err := Import(ctx, filepath.Join(t.TempDir(), "db"), strings.NewReader(exp), &Options{K: 1024}); !errors.Is(err, ErrParamsMismatch) {
		t.Fatalf("K mismatch: %v", err)
	}
}

// TestImportInto: an export imported into an open, empty database with
// the same parameters answers as the exported one; a non-empty one and
// other parameters are refused, unchanged.
func TestImportInto(t *testing.T) {
	src := openTest(t, "", &Options{KeepTexts: true, AuditLog: true, NoSync: true})
	for i := range 30 {
		if _, err := src.Add(ctx, Input{ID: fmt.Sprint("d", i), Text: []byte(text(uint64(i%10), 200))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var exp bytes.Buffer
	if _, err := src.Export(ctx, &exp); err != nil {
		t.Fatal(err)
	}
	dst := openTest(t, "", &Options{KeepTexts: true, AuditLog: true, NoSync: true})
	n, err := dst.ImportInto(ctx, bytes.NewReader(exp.Bytes()))
	if err != nil || n != 30 {
		t.Fatalf("ImportInto: %d, %v", n, err)
	}
	var again bytes.Buffer
	if _, err := dst.Export(ctx, &again); err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(exp.String(), "\n") // the header holds the creation time
	_, body2, _ := strings.Cut(again.String(), "\n")
	if body2 != body || body == "" {
		t.Fatal("the imported database exports otherwise")
	}
	was := dump(t, dst)
	if _, err := dst.ImportInto(ctx, bytes.NewReader(exp.Bytes())); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("into a non-empty database: %v", err)
	}
	if dump(t, dst) != was {
		t.Fatal("a refused import changed the database")
	}
	other := openTest(t, "", &Options{K: 256, AuditLog: true, NoSync: true})
	var pe *ParamsError
	if _, err := other.ImportInto(ctx, bytes.NewReader(exp.Bytes())); !errors.As(err, &pe) {
		t.Fatalf("other parameters: %v", err)
	}
}

// TestImportBadBatchWritesNothing: an export whose second batch holds an
// id of the first batch, or a bad id, imports the first batch whole and
// nothing of the second (no document of it overwrites or adds to the
// first), and says how many it imported.
func TestImportBadBatchWritesNothing(t *testing.T) {
	src := openTest(t, "", &Options{AuditLog: true})
	rng := rand.New(rand.NewPCG(3, 3))
	docs := make([]Input, importBatchDocs+3)
	for i := range docs {
		docs[i] = Input{ID: fmt.Sprintf("d%05d", i), Fingerprint: randFP(rng, src.Params().K)}
	}
	addBatch(t, src, docs)
	exp := string(exportOf(t, src))
	last := fmt.Sprintf(`"id":"d%05d"`, importBatchDocs+1)
	if !strings.Contains(exp, last) {
		t.Fatalf("no %s in the export", last)
	}
	for _, tc := range []struct{ name, id string }{
		{"repeated id", "d00000"},
		{"bad id", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(exp, last, fmt.Sprintf(`"id":%q`, tc.id), 1)
			dir := filepath.Join(t.TempDir(), "db")
			n, err := Import(ctx, dir, strings.NewReader(bad), nil)
			if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "line ") {
				t.Fatalf("%s in the second batch: %v, want ErrBadExport naming the line", tc.name, err)
			}
			if n != importBatchDocs {
				t.Errorf("Import says %d imported, want the first batch, %d", n, importBatchDocs)
			}
			d := openTest(t, dir, nil)
			if st := d.Stats(); st.Docs != importBatchDocs {
				t.Errorf("the target holds %d documents, want the first batch, %d", st.Docs, importBatchDocs)
			}
			got, err := d.Get(ctx, "d00000")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Fingerprint, docs[0].Fingerprint) {
				t.Error("d00000 was overwritten by the second batch")
			}
			if _, err := d.Get(ctx, fmt.Sprintf("d%05d", importBatchDocs)); !errors.Is(err, ErrNotFound) {
				t.Errorf("a valid document of the bad batch: Get = %v, want ErrNotFound", err)
			}
		})
	}
}

// startImport starts dst.ImportInto on a pipe, writes the header line of
// exp into it and returns once the import has begun (it then waits for
// the documents): the rest of exp, the pipe's writer, and the channel of
// the import's error (an error too when want ≥ 0 documents were not
// imported).
func startImport(t *testing.T, dst *DB, exp []byte, want int) ([]byte, *io.PipeWriter, chan error) {
	t.Helper()
	header, rest, _ := bytes.Cut(exp, []byte("\n"))
	began := make(chan struct{})
	dst.hook = func(p string) {
		if p == "import" {
			close(began)
		}
	}
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) }) // a failing test ends the import
	done := make(chan error, 1)
	go func() {
		n, err := dst.ImportInto(ctx, pr)
		if err == nil && want >= 0 && n != want {
			err = fmt.Errorf("imported %d, want %d", n, want)
		}
		done <- err
	}()
	if _, err := pw.Write(append(header, '\n')); err != nil {
		t.Fatal(err)
	}
	<-began
	return rest, pw, done
}

// TestImportExcludesWriters: while ImportInto fills a database, every
// other write (an add, a delete, a template, a second import) fails with
// ErrImportRunning and writes nothing; the import then ends as if alone:
// its documents and audit log are the export's, and Check passes. Writes
// made during an import used to be mixed into it, and the export's log
// entries overwrote theirs.
func TestImportExcludesWriters(t *testing.T) {
	src := openTest(t, "", &Options{KeepTexts: true, AuditLog: true, NoSync: true})
	for i := range 20 {
		if _, err := src.Add(ctx, Input{ID: fmt.Sprint("d", i), Text: []byte(text(uint64(i), 200))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	exp := exportOf(t, src)
	dst := openTest(t, "", &Options{KeepTexts: true, AuditLog: true, NoSync: true})
	// The import has read its header and waits for documents: each write
	// is refused, whole.
	rest, pw, done := startImport(t, dst, exp, 20)
	if _, err := dst.Add(ctx, Input{ID: "live", Text: []byte(text(99, 200))}, nil); !errors.Is(err, ErrImportRunning) {
		t.Fatalf("add during an import: %v, want ErrImportRunning", err)
	}
	if _, err := dst.AddBatch(ctx, []Input{{ID: "live2", Text: []byte(text(98, 200))}}); !errors.Is(err, ErrImportRunning) {
		t.Errorf("batch during an import: %v, want ErrImportRunning", err)
	}
	if err := dst.Delete(ctx, "d1"); !errors.Is(err, ErrImportRunning) {
		t.Errorf("delete during an import: %v, want ErrImportRunning", err)
	}
	if _, err := dst.AddTemplate(ctx, "t", []byte(text(97, 50)), TextOptions{}); !errors.Is(err, ErrImportRunning) {
		t.Errorf("template during an import: %v, want ErrImportRunning", err)
	}
	if _, err := dst.ImportInto(ctx, bytes.NewReader(exp)); !errors.Is(err, ErrImportRunning) {
		t.Errorf("a second import: %v, want ErrImportRunning", err)
	}
	if _, err := pw.Write(rest); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatalf("ImportInto: %v", err)
	}
	_, body, _ := bytes.Cut(exportOf(t, dst), []byte("\n"))
	if !bytes.Equal(body, rest) {
		t.Error("the database exports otherwise than the export it imported")
	}
	if _, err := dst.Add(ctx, Input{ID: "live", Text: []byte(text(99, 200))}, nil); err != nil {
		t.Errorf("add after the import: %v", err)
	}
}

// TestImportRefusedLeavesNoTemplate: an export whose first document is
// bad is refused with nothing left behind, not even its templates (which
// made the database refuse the good export next).
func TestImportRefusedLeavesNoTemplate(t *testing.T) {
	src := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	if _, err := src.AddTemplate(ctx, "boiler", []byte(text(7, 60)), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := src.Add(ctx, Input{ID: fmt.Sprint("d", i), Text: []byte(text(uint64(i), 200))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	exp := string(exportOf(t, src))
	bad := strings.Replace(exp, `"id":"d3"`, `"id":""`, 1)
	if bad == exp {
		t.Fatal("no d3 in the export")
	}
	dst := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	was := dump(t, dst)
	if _, err := dst.ImportInto(ctx, strings.NewReader(bad)); !errors.Is(err, ErrBadExport) {
		t.Fatalf("a bad document: %v, want ErrBadExport", err)
	}
	if ts, err := dst.Templates(ctx); err != nil || len(ts) != 0 {
		t.Errorf("after a refused import: templates %v, %v; want none", ts, err)
	}
	if dump(t, dst) != was {
		t.Error("a refused import changed the database")
	}
	if n, err := dst.ImportInto(ctx, strings.NewReader(exp)); err != nil || n != 5 {
		t.Fatalf("the good export after a refused one: %d, %v", n, err)
	}
}

// TestImportClosedMidway: a DB closed while ImportInto waits for its input
// makes the import fail with ErrClosed, without a panic (its clean-up read
// the closed store).
func TestImportClosedMidway(t *testing.T) {
	src := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	if _, err := src.AddTemplate(ctx, "boiler", []byte(text(7, 60)), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Add(ctx, Input{ID: "d", Text: []byte(text(1, 200))}, nil); err != nil {
		t.Fatal(err)
	}
	dst := openTest(t, "", &Options{KeepTexts: true, NoSync: true})
	rest, pw, done := startImport(t, dst, exportOf(t, src), -1)
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = pw.Write(rest); pw.Close() }()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("ImportInto into a DB closed midway: %v, want ErrClosed", err)
	}
}

// TestImportLogOnlyCutShort: an export of no document whose audit log is
// cut short is refused with nothing written: the whole export imports
// next.
func TestImportLogOnlyCutShort(t *testing.T) {
	exp := logOnlyExport(t)
	lines := bytes.SplitAfter(exp, []byte("\n"))
	if len(lines) < 5 {
		t.Fatalf("the export has %d lines, want a header and 6 log entries", len(lines))
	}
	cut := bytes.Join(lines[:3], nil) // the header and two entries
	dst := openTest(t, "", &Options{AuditLog: true, NoSync: true})
	was := dump(t, dst)
	if _, err := dst.ImportInto(ctx, bytes.NewReader(cut)); !errors.Is(err, ErrBadExport) {
		t.Fatalf("a cut export: %v, want ErrBadExport", err)
	}
	if dump(t, dst) != was {
		t.Error("a refused import of no document changed the database")
	}
	if _, err := dst.ImportInto(ctx, bytes.NewReader(exp)); err != nil {
		t.Fatalf("the whole export after the cut one: %v", err)
	}
}

// logOnlyExport returns the export of a database with an audit log whose
// 3 documents were added and deleted: no document, 6 log entries.
func logOnlyExport(t *testing.T) []byte {
	t.Helper()
	src := openTest(t, "", &Options{AuditLog: true, NoSync: true})
	for i := range 3 {
		id := fmt.Sprint("d", i)
		if _, err := src.Add(ctx, Input{ID: id, Text: []byte(text(uint64(i), 200))}, nil); err != nil {
			t.Fatal(err)
		}
		if err := src.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	exp := exportOf(t, src)
	return exp
}

// TestImportCutInFirstBatch imports an export cut short inside its first
// batch: nothing is stored, so the database the import created is removed
// (as an export refused at its header leaves none), while an existing empty
// database stays as it was; the whole export then imports into either.
func TestImportCutInFirstBatch(t *testing.T) {
	src := openTest(t, "", &Options{K: 256, GroupWidths: EqualWidths(256, 12)})
	plantedDB(t, src, 4)
	exp := exportOf(t, src)
	cut := exp[:bytes.IndexByte(exp, '\n')+40] // the header and part of a document
	dir := filepath.Join(t.TempDir(), "new")
	if n, err := Import(ctx, dir, bytes.NewReader(cut), nil); !errors.Is(err, ErrBadExport) || n != 0 {
		t.Fatalf("import of a cut export: %d, %v", n, err)
	}
	// The lock file alone stays (removed, it could be another process's
	// once the lock is released): no database.
	if names, _ := os.ReadDir(dir); len(names) != 1 || names[0].Name() != lockFileName {
		t.Fatalf("a cut export left %v in the directory it created", names)
	}
	if _, err := Open(dir, &Options{ErrorIfNotExist: true}); !errors.Is(err, ErrNotExist) {
		t.Fatalf("a cut export left a database: %v", err)
	}
	// An empty database that was there stays.
	empty := filepath.Join(t.TempDir(), "empty")
	openTest(t, empty, &Options{K: 256, GroupWidths: EqualWidths(256, 12)}).Close()
	if _, err := Import(ctx, empty, bytes.NewReader(cut), nil); !errors.Is(err, ErrBadExport) {
		t.Fatalf("import of a cut export into an empty database: %v", err)
	}
	for _, to := range []string{dir, empty} {
		if n, err := Import(ctx, to, bytes.NewReader(exp), nil); err != nil || n != src.Stats().Docs {
			t.Fatalf("import of the whole export into %s: %d, %v", filepath.Base(to), n, err)
		}
		d := openTest(t, to, nil)
		if err := d.Check(ctx); err != nil {
			t.Error(err)
		}
		d.Close()
	}
}

// failingReader gives its data, then fails with err.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestImportReadError: a read of the export that fails mid-line is the
// error Import returns, not a line "cut short" (a bad export).
func TestImportReadError(t *testing.T) {
	src := openTest(t, "", &Options{K: 256, GroupWidths: EqualWidths(256, 12)})
	plantedDB(t, src, 4)
	exp := exportOf(t, src)
	broken := errors.New("the connection broke")
	for _, cut := range []int{bytes.IndexByte(exp, '\n') / 2, bytes.IndexByte(exp, '\n') + 40} {
		_, err := Import(ctx, filepath.Join(t.TempDir(), "db"), &failingReader{data: exp[:cut], err: broken}, nil)
		if !errors.Is(err, broken) || errors.Is(err, ErrBadExport) {
			t.Errorf("read failing after %d bytes: %v, want the read's error", cut, err)
		}
	}
}

// TestImportCutWhileAnotherWaits: an import that stored nothing removes
// its database before it releases the lock, so an import waiting for the
// lock then creates the database whole.
func TestImportCutWhileAnotherWaits(t *testing.T) {
	src := openTest(t, "", &Options{K: 256, GroupWidths: EqualWidths(256, 12)})
	plantedDB(t, src, 4)
	exp := exportOf(t, src)
	dir := filepath.Join(t.TempDir(), "db")
	pr, pw := io.Pipe()
	first := make(chan error, 1)
	go func() {
		_, err := Import(ctx, dir, pr, nil)
		first <- err
	}()
	pw.Write(exp[:bytes.IndexByte(exp, '\n')+40])
	// The first import has opened the database once its store exists.
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*")); len(m) > 0 {
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatal("the first import did not open the database")
		}
	}
	time.Sleep(50 * time.Millisecond)
	second := make(chan error, 1)
	go func() {
		n, err := Import(ctx, dir, bytes.NewReader(exp), &Options{LockWait: time.Minute})
		if err == nil && n != src.Stats().Docs {
			err = fmt.Errorf("imported %d documents, want %d", n, src.Stats().Docs)
		}
		second <- err
	}()
	time.Sleep(200 * time.Millisecond) // the second waits for the lock
	pw.Close()
	if err := <-first; !errors.Is(err, ErrBadExport) {
		t.Fatalf("the cut import: %v", err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the import that waited: %v", err)
	}
	d := openTest(t, dir, nil)
	if err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestExportSourceNotUTF8: a source that is not UTF-8 (a file's path in
// another encoding) survives an export and an import byte for byte, in
// source_base64; a UTF-8 source has none.
func TestExportSourceNotUTF8(t *testing.T) {
	src := openTest(t, "", nil)
	bad := "/tmp/\xff\xfe caf\xe9.txt"
	if _, err := src.AddBatch(ctx, []Input{
		{ID: "bad", Text: []byte(text(1, 50)), Source: bad},
		{ID: "good", Text: []byte(text(2, 50)), Source: "/tmp/café.txt"},
	}); err != nil {
		t.Fatal(err)
	}
	exp := exportOf(t, src)
	if n := bytes.Count(exp, []byte(`"source_base64"`)); n != 1 {
		t.Fatalf("%d source_base64 members, want 1 (the bad source's): %s", n, exp)
	}
	dir := filepath.Join(t.TempDir(), "imported")
	if _, err := Import(ctx, dir, bytes.NewReader(exp), nil); err != nil {
		t.Fatal(err)
	}
	dst := openTest(t, dir, nil)
	for id, want := range map[string]string{"bad": bad, "good": "/tmp/café.txt"} {
		doc, err := dst.Get(ctx, id)
		if err != nil || doc.Source != want {
			t.Fatalf("%s: source %q (%v), want %q", id, doc.Source, err, want)
		}
	}
	// A malformed source_base64 is a bad export, naming the member.
	broken := bytes.Replace(exp, []byte(`"source_base64":"`), []byte(`"source_base64":"!`), 1)
	if _, err := Import(ctx, filepath.Join(t.TempDir(), "broken"), bytes.NewReader(broken), nil); !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "source_base64") {
		t.Fatalf("malformed source_base64: %v", err)
	}
}

// TestCloseDiscardEmpty: a database without documents is closed and its
// files deleted, all but the lock file, before the lock is released (Open
// then finds no database); one with a document is closed and kept whole.
func TestCloseDiscardEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	d, err := Open(dir, &Options{K: 256, GroupWidths: EqualWidths(256, 12)})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Created() {
		t.Error("a new database: Created false")
	}
	// A document added and deleted leaves none.
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte("a few words of text to store")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	var names []string
	d.beforeUnlock = func() { // the lock still held
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			names = append(names, e.Name())
		}
	}
	if removed, err := d.CloseDiscardEmpty(); err != nil || !removed {
		t.Fatalf("CloseDiscardEmpty of an empty database: %v, %v", removed, err)
	}
	if len(names) != 1 || names[0] != lockFileName {
		t.Fatalf("before the unlock, the directory held %v", names)
	}
	if _, err := Open(dir, &Options{ErrorIfNotExist: true}); !errors.Is(err, ErrNotExist) {
		t.Fatalf("the discarded database opens: %v", err)
	}
	if _, err := d.CloseDiscardEmpty(); !errors.Is(err, ErrClosed) {
		t.Fatalf("a second close: %v", err)
	}

	// With a document: kept. (The directory's lock file alone is no
	// database: Open creates one.)
	d = openTest(t, dir, &Options{K: 256, GroupWidths: EqualWidths(256, 12)})
	if !d.Created() {
		t.Error("a database made where one was discarded: Created false")
	}
	if _, err := d.Add(ctx, Input{ID: "b", Text: []byte("other words of a text that stays")}, nil); err != nil {
		t.Fatal(err)
	}
	if removed, err := d.CloseDiscardEmpty(); err != nil || removed {
		t.Fatalf("CloseDiscardEmpty of a database with a document: %v, %v", removed, err)
	}
	d = openTest(t, dir, &Options{ErrorIfNotExist: true})
	if d.Created() {
		t.Error("an existing database: Created true")
	}
	if st := d.Stats(); st.Docs != 1 {
		t.Fatalf("the kept database holds %d documents", st.Docs)
	}
}

// TestCloseDiscardEmptyKeepsExisting: a database that existed before
// Open (Created false) survives CloseDiscardEmpty even when every document
// was deleted: its audit log, marks and parameters stay, and removed is
// false.
func TestCloseDiscardEmptyKeepsExisting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "old")
	d, err := Open(dir, &Options{K: 256, GroupWidths: EqualWidths(256, 12), AuditLog: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte("a few words of text to store")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.SetMark(ctx, Mark{Name: "m", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d, err = Open(dir, &Options{ErrorIfNotExist: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.Created() {
		t.Fatal("an existing database: Created true")
	}
	if err := d.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.Docs != 0 {
		t.Fatalf("after the delete, %d documents", st.Docs)
	}
	if removed, err := d.CloseDiscardEmpty(); err != nil || removed {
		t.Fatalf("CloseDiscardEmpty of an existing database without documents: %v, %v", removed, err)
	}

	d = openTest(t, dir, &Options{ErrorIfNotExist: true})
	if p := d.Params(); p.K != 256 {
		t.Errorf("the kept database has K %d, want 256", p.K)
	}
	if v, err := d.Mark(ctx, "m"); err != nil || string(v) != "v" {
		t.Errorf("mark m: %q, %v", v, err)
	}
	var entries int
	if err := d.Log(ctx, LogOptions{}, func(LogEntry) error { entries++; return nil }); err != nil {
		t.Fatalf("Log: %v", err)
	}
	if entries < 2 { // the add and the delete
		t.Errorf("the audit log holds %d entries, want the add and the delete", entries)
	}
}

// opened is what an Open in a goroutine returned.
type opened struct {
	d   *DB
	err error
}

// openWaiting starts Open(dir, o) in a goroutine and returns, once that
// Open has had 100 ms to start waiting for the lock another holds, the
// channel that receives its result.
func openWaiting(dir string, o *Options) <-chan opened {
	done := make(chan opened, 1)
	go func() {
		d, err := Open(dir, o)
		done <- opened{d, err}
	}()
	time.Sleep(100 * time.Millisecond)
	return done
}

// TestOpenWaitingForADiscardedDB: an Open that waits for the lock of a
// database whose maker discards it (CloseDiscardEmpty) finds no database
// (ErrNotExist) when it must exist, rather than creating an empty one or
// failing with the store's own error; one that may create makes a new one.
func TestOpenWaitingForADiscardedDB(t *testing.T) {
	for _, mayCreate := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "new")
		d, err := Open(dir, &Options{K: 256, GroupWidths: EqualWidths(256, 12)})
		if err != nil {
			t.Fatal(err)
		}
		done := openWaiting(dir, &Options{ErrorIfNotExist: !mayCreate, LockWait: 20 * time.Second})
		if removed, err := d.CloseDiscardEmpty(); err != nil || !removed {
			t.Fatalf("CloseDiscardEmpty: %v %v", removed, err)
		}
		r := <-done
		if !mayCreate {
			if !errors.Is(r.err, ErrNotExist) {
				t.Errorf("the waiting Open: %v, want ErrNotExist", r.err)
			}
			if r.d != nil {
				r.d.Close()
			}
			continue
		}
		if r.err != nil {
			t.Fatalf("the waiting Open that may create: %v", r.err)
		}
		if p := r.d.Params(); p.K != DefaultK {
			t.Errorf("the new database has K %d, want the default %d", p.K, DefaultK)
		}
		closeChecked(t, r.d)
	}
}

// TestOpenWaitingForAMadeDB: an Open that waits for the lock while the
// holder makes a database there opens that database, and does not count
// it as made by itself (Created false: an Import that then fails must not
// delete it).
func TestOpenWaitingForAMadeDB(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	s := openTest(t, src, &Options{K: 256, GroupWidths: EqualWidths(256, 12)})
	plantedDB(t, s, 3)
	want := s.Stats().Docs
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "new")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := lockDir(vfs.Default, dir, false, 0) // another maker's
	if err != nil {
		t.Fatal(err)
	}
	done := openWaiting(dir, &Options{LockWait: 20 * time.Second})
	// The maker writes its database, then releases the lock.
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == lockFileName {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lock.Close()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer closeChecked(t, r.d)
	if r.d.Created() || r.d.Stats().Docs != want {
		t.Errorf("Created %v, %d documents; want false, %d", r.d.Created(), r.d.Stats().Docs, want)
	}
}
