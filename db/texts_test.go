package db

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
)

// textKeys returns the internal ids that have a text key.
func textKeys(t *testing.T, d *DB) []uint32 {
	t.Helper()
	lo, hi := keys.Range(keys.PrefixText)
	it, err := d.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var ids []uint32
	for it.First(); it.Valid(); it.Next() {
		iid, err := keys.ParseText(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, iid)
	}
	return ids
}

// wantText checks that id's stored text is text, read as format f.
func wantText(t *testing.T, d *DB, id, text string, f Format) {
	t.Helper()
	st, err := d.Text(ctx, id)
	if err != nil {
		t.Fatalf("Text(%q): %v", id, err)
	}
	if string(st.Text) != text || st.Format != f {
		t.Fatalf("Text(%q) = %q as %v, want %q as %v", id, st.Text, st.Format, text, f)
	}
}

// wantNoText checks that Text(id) fails with want.
func wantNoText(t *testing.T, d *DB, id string, want error) {
	t.Helper()
	if st, err := d.Text(ctx, id); !errors.Is(err, want) {
		t.Fatalf("Text(%q) = %v, %v; want %v", id, st, err, want)
	}
}

// TestTextRoundTrip: every way of adding a text stores the text the words
// were read from (UTF-8 after decoding) with the format it was read as;
// a fingerprint has none; the texts survive a reopen.
func TestTextRoundTrip(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, &Options{KeepTexts: true})
	if p := d.Params(); !p.KeepTexts || p.FormatVersion != formatNewest {
		t.Fatalf("params %+v: want KeepTexts at format 3", p)
	}
	plain := text(1, 300)
	html := "<!DOCTYPE html><html><body><p>" + text(2, 200) + "</p><script>x = 1 < 2</script></body></html>"
	latin1 := []byte("caf\xe9 na\xefve r\xe9sum\xe9 " + text(3, 50)) // Latin-1: not UTF-8
	utf8Text := "café naïve résumé " + text(3, 50)
	file := filepath.Join(t.TempDir(), "page.txt")
	if err := os.WriteFile(file, []byte("<p>tags read as words here</p> "+text(4, 80)), 0o644); err != nil {
		t.Fatal(err)
	}
	ins := []Input{
		{ID: "plain", Text: []byte(plain)},
		{ID: "html", Reader: strings.NewReader(html)},
		{ID: "latin1", Text: latin1},
		{ID: "forced", Open: func() (io.ReadCloser, error) { return os.Open(file) }, TextOptions: TextOptions{Format: FormatText}},
		{ID: "named", Text: []byte("<b>bold</b> " + plain), Source: "x.html"},
		{ID: "bom", Text: append([]byte{0xef, 0xbb, 0xbf}, plain...)},
	}
	for _, in := range ins {
		if _, err := d.Add(ctx, in, nil); err != nil {
			t.Fatal(err)
		}
	}
	fp, err := d.Get(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, Input{ID: "by-fingerprint", Fingerprint: fp.Fingerprint}, nil); err != nil {
		t.Fatal(err)
	}
	check := func(d *DB) {
		t.Helper()
		wantText(t, d, "plain", plain, FormatText)
		wantText(t, d, "html", html, FormatHTML)
		wantText(t, d, "latin1", utf8Text, FormatText)
		wantText(t, d, "forced", "<p>tags read as words here</p> "+text(4, 80), FormatText)
		wantText(t, d, "named", "<b>bold</b> "+plain, FormatHTML)
		wantText(t, d, "bom", plain, FormatText) // the byte-order mark is decoding, not text
		wantNoText(t, d, "by-fingerprint", ErrNoText)
		wantNoText(t, d, "unknown", ErrNotFound)
		if n := len(textKeys(t, d)); n != len(ins) {
			t.Fatalf("%d text keys, want %d", n, len(ins))
		}
	}
	check(d)
	// The text's fingerprint is the document's: reading the stored text
	// with its format gives the same words.
	for _, in := range ins {
		st, err := d.Text(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := d.Get(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		res, _, err := d.build(bytes.NewReader(st.Text), nil, TextOptions{Format: st.Format, Encoding: "utf-8"}, "")
		if err != nil {
			t.Fatal(err)
		}
		if res.ContentHash != doc.ContentHash {
			t.Fatalf("%s: the stored text read as %v is not the document's text", in.ID, st.Format)
		}
	}
	closeChecked(t, d)
	ro := openTest(t, dir, &Options{ReadOnly: true})
	check(ro)
	if _, err := ro.Text(ctx, ""); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("Text(\"\"): %v, want ErrInvalidID", err)
	}
}

// TestNoTexts: a database created without KeepTexts stores no text,
// answers ErrNoText (ErrNotFound for an unknown id), and cannot be asked
// to keep texts later; one created with texts keeps them when opened
// without the option.
func TestNoTexts(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, nil)
	if p := d.Params(); p.KeepTexts || p.FormatVersion != formatNewest {
		t.Fatalf("params %+v: want no texts at format 3", p)
	}
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte(text(1, 100))}, nil); err != nil {
		t.Fatal(err)
	}
	wantNoText(t, d, "a", ErrNoText)
	wantNoText(t, d, "b", ErrNotFound)
	if n := len(textKeys(t, d)); n != 0 {
		t.Fatalf("%d text keys in a database without texts", n)
	}
	closeChecked(t, d)
	var pe *ParamsError
	if _, err := Open(dir, &Options{KeepTexts: true}); !errors.As(err, &pe) || pe.Param != "KeepTexts" || !errors.Is(err, ErrParamsMismatch) {
		t.Fatalf("KeepTexts on a database without texts: %v, want a *ParamsError for KeepTexts", err)
	}

	dir2 := t.TempDir()
	d2, err := Open(dir2, &Options{KeepTexts: true})
	if err != nil {
		t.Fatal(err)
	}
	closeChecked(t, d2)
	d2 = openTest(t, dir2, nil)
	if !d2.Params().KeepTexts {
		t.Fatal("a database created with texts lost them when opened without the option")
	}
}

// TestTextReplaceDelete: replacing a document replaces its text, and
// every delete path deletes it in the same batch (Check, run at the end,
// finds no text without its document).
func TestTextReplaceDelete(t *testing.T) {
	d := openTest(t, "", &Options{KeepTexts: true})
	for i := range 30 {
		id := fmt.Sprintf("doc%02d", i)
		if i >= 20 {
			id = fmt.Sprintf("old%02d", i)
		}
		if _, err := d.Add(ctx, Input{ID: id, Text: []byte(text(uint64(i), 60))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Add(ctx, Input{ID: "doc00", Text: []byte(text(100, 60))}, nil); err != nil {
		t.Fatal(err)
	}
	wantText(t, d, "doc00", text(100, 60), FormatText)
	// The same words in other case are unchanged: the first text stays.
	res, err := d.Add(ctx, Input{ID: "doc00", Text: []byte(strings.ToUpper(text(100, 60)))}, nil)
	if err != nil || !res.Unchanged {
		t.Fatalf("re-add in upper case: %+v %v, want unchanged", res, err)
	}
	wantText(t, d, "doc00", text(100, 60), FormatText)
	doc, err := d.Get(ctx, "doc05")
	if err != nil {
		t.Fatal(err)
	}
	fpIn := Input{ID: "doc01", Fingerprint: doc.Fingerprint, ContentHash: doc.ContentHash}
	if _, err := d.Add(ctx, fpIn, nil); err != nil {
		t.Fatal(err)
	}
	wantNoText(t, d, "doc01", ErrNoText) // replaced by a fingerprint: the old text went with it
	// doc05's content again, from a text: not unchanged, as the stored
	// version has no text; stored anew, with it.
	res, err = d.Add(ctx, Input{ID: "doc01", Text: []byte(text(5, 60))}, nil)
	if err != nil || res.Unchanged || !res.Stored {
		t.Fatalf("text for a document stored without one: %+v %v, want stored", res, err)
	}
	wantText(t, d, "doc01", text(5, 60), FormatText)
	// And the fingerprint again is unchanged: the text stays.
	if res, err := d.Add(ctx, fpIn, nil); err != nil || !res.Unchanged {
		t.Fatalf("fingerprint of a stored text: %+v %v, want unchanged", res, err)
	}
	wantText(t, d, "doc01", text(5, 60), FormatText)

	if err := d.Delete(ctx, "doc02"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DeleteMany(ctx, []string{"doc03", "doc04"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DeletePrefix(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	if _, err := d.Add(ctx, Input{ID: "new", Text: []byte(text(200, 60))}, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := d.DeleteOlderThan(ctx, cut); err != nil || n != 17 {
		t.Fatalf("DeleteOlderThan: %d, %v; want 17", n, err)
	}
	ids := textKeys(t, d)
	if len(ids) != 1 || d.Len() != 1 {
		t.Fatalf("text keys %v for %d documents, want one", ids, d.Len())
	}
	wantText(t, d, "new", text(200, 60), FormatText)
	wantNoText(t, d, "doc00", ErrNotFound)
	if err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTextAddBatch: AddBatch stores the texts in both write modes, and
// skips a text over MaxTextSize; the texts survive Close and reopen.
func TestTextAddBatch(t *testing.T) {
	for _, bulk := range []bool{false, true} {
		t.Run(fmt.Sprintf("bulk=%v", bulk), func(t *testing.T) {
			dir := t.TempDir()
			d, err := Open(dir, &Options{KeepTexts: true, BulkLoad: bulk, MaxTextSize: 4000})
			if err != nil {
				t.Fatal(err)
			}
			var docs []Input
			for i := range 200 {
				docs = append(docs, Input{ID: fmt.Sprint("b", i), Text: []byte(text(uint64(i), 100+i%50))})
			}
			docs = append(docs, Input{ID: "too-long", Text: []byte(text(7, 2000))}, Input{ID: "fp", Fingerprint: make([]uint64, 8)})
			res, err := d.AddBatch(ctx, docs)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stored != 201 || len(res.Skipped) != 1 || res.Skipped[0].ID != "too-long" || !errors.Is(res.Skipped[0].Err, ErrTextTooLarge) {
				t.Fatalf("AddBatch: %+v", res)
			}
			// A replacing batch replaces the texts.
			res, err = d.AddBatch(ctx, []Input{{ID: "b0", Text: []byte(text(1000, 40))}, {ID: "b1", Text: []byte(text(1001, 40))}})
			if err != nil || res.Replaced != 2 {
				t.Fatalf("replacing batch: %+v %v", res, err)
			}
			if err := d.Check(ctx); err != nil {
				t.Fatal(err)
			}
			closeChecked(t, d)
			d = openTest(t, dir, nil)
			for i := range 200 {
				want := text(uint64(i), 100+i%50)
				if i < 2 {
					want = text(uint64(1000+i), 40)
				}
				wantText(t, d, fmt.Sprint("b", i), want, FormatText)
			}
			wantNoText(t, d, "fp", ErrNoText)
			wantNoText(t, d, "too-long", ErrNotFound)
			st, err := d.StorageStats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Texts != 200 || st.TextBytes <= 0 || st.TextRawBytes <= st.TextBytes {
				t.Fatalf("storage stats: %d texts, %d bytes stored, %d raw", st.Texts, st.TextBytes, st.TextRawBytes)
			}
		})
	}
}

// TestTextTooLarge: a text longer than MaxTextSize (counted after
// decoding: Latin-1 grows as UTF-8) fails with ErrTextTooLarge naming the
// document, and leaves the database unchanged; a database without texts
// has no such limit.
func TestTextTooLarge(t *testing.T) {
	const limit = 1000
	d := openTest(t, "", &Options{KeepTexts: true, MaxTextSize: limit})
	if _, err := d.Add(ctx, Input{ID: "keep", Text: []byte(text(1, 50))}, nil); err != nil {
		t.Fatal(err)
	}
	before := dump(t, d)
	long := text(2, 400)
	latin := bytes.Repeat([]byte("\xe9t\xe9 "), 200) // 800 bytes, 1 200 as UTF-8
	for _, in := range []Input{
		{ID: "text", Text: []byte(long)},
		{ID: "reader", Reader: strings.NewReader(long)},
		{ID: "open", Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(long)), nil }},
		{ID: "latin1", Text: latin},
		{ID: "keep", Text: []byte(long)}, // a replacement leaves the stored version
	} {
		_, err := d.Add(ctx, in, nil)
		if !errors.Is(err, ErrTextTooLarge) || !strings.Contains(err.Error(), fmt.Sprintf("%q", in.ID)) || !strings.Contains(err.Error(), "MaxTextSize") {
			t.Fatalf("%s: %v, want ErrTextTooLarge naming the document and MaxTextSize", in.ID, err)
		}
	}
	if after := dump(t, d); after != before {
		t.Fatal("a refused text changed the database")
	}
	wantText(t, d, "keep", text(1, 50), FormatText)
	// Exactly at the limit is accepted.
	at := text(3, 500)[:limit]
	if _, err := d.Add(ctx, Input{ID: "at", Text: []byte(at)}, nil); err != nil {
		t.Fatalf("a text of exactly MaxTextSize: %v", err)
	}
	nt := openTest(t, "", &Options{MaxTextSize: limit})
	if _, err := nt.Add(ctx, Input{ID: "long", Reader: strings.NewReader(long)}, nil); err != nil {
		t.Fatalf("a database without texts refused a long text: %v", err)
	}
	if _, err := Open(t.TempDir(), &Options{MaxTextSize: MaxMaxTextSize + 1}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("MaxTextSize beyond MaxMaxTextSize: %v", err)
	}
}

// oldMetaRecord is the meta record as builds before texts wrote it.
type oldMetaRecord struct {
	FormatVersion    int       `json:"format_version"`
	K                int       `json:"k"`
	GroupWidths      []int     `json:"group_widths"`
	ShingleWidth     int       `json:"shingle_width"`
	Seed             uint64    `json:"seed"`
	HashVersion      int       `json:"hash_version"`
	NormalizeVersion int       `json:"normalize_version"`
	Merger           string    `json:"merger"`
	Created          time.Time `json:"created"`
}

// TestOldMetaRecord: a meta record written before texts (no keep_texts
// field) opens as a database without texts, and a database without texts
// writes exactly that record (with its format version).
func TestOldMetaRecord(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte(text(1, 100))}, nil); err != nil {
		t.Fatal(err)
	}
	p := d.params
	b, err := json.Marshal(oldMetaRecord{p.FormatVersion, p.K, p.GroupWidths, p.ShingleWidth, p.Seed, p.HashVersion, p.NormalizeVersion, p.Merger, p.Created})
	if err != nil {
		t.Fatal(err)
	}
	old := binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if !bytes.Equal(old, encodeMeta(p)) {
		t.Fatalf("a database without texts writes\n%s\nnot the old record\n%s", encodeMeta(p), old)
	}
	pset(t, d, keys.Meta(), old)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openTest(t, dir, nil)
	if q := d.Params(); q.KeepTexts || q.FormatVersion != p.FormatVersion {
		t.Fatalf("old meta opens as %+v", q)
	}
	wantNoText(t, d, "a", ErrNoText)

	// keep_texts below format 3 is a damaged record.
	b2 := []byte(strings.Replace(string(b), fmt.Sprintf(`"format_version":%d`, p.FormatVersion), `"format_version":2`, 1))
	bad := []byte(strings.Replace(string(b2), `"format_version":2`, `"format_version":2,"keep_texts":true`, 1))
	bad = binary.LittleEndian.AppendUint32(bad, crc32.Checksum(bad, castagnoli))
	if _, err := decodeMeta(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("keep_texts at format 2: %v, want ErrCorrupt", err)
	}
	good := encodeMeta(Params{FormatVersion: formatV3, K: 512, KeepTexts: true})
	if q, err := decodeMeta(good); err != nil || !q.KeepTexts {
		t.Fatalf("format 3 with texts: %+v %v", q, err)
	}
}

// TestCheckRepairTexts: Check reports a text without a document, a text
// that does not decode and a text in a database without texts; Repair
// removes them, keeping the documents.
func TestCheckRepairTexts(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{KeepTexts: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := d.Add(ctx, Input{ID: fmt.Sprint("d", i), Text: []byte(text(uint64(i), 80))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	v, closer, err := d.pdb.Get(keys.Text(seqOf(t, d, "d1")))
	if err != nil {
		t.Fatal(err)
	}
	damaged := bytes.Clone(v)
	_ = closer.Close()
	damaged[len(damaged)/2] ^= 0x55
	pset(t, d, keys.Text(seqOf(t, d, "d1")), damaged)
	pset(t, d, keys.Text(seqOf(t, d, "d2")), []byte{textValueVersion, 9, 1, 2})
	pset(t, d, keys.Text(999), v)
	err = d.Check(ctx)
	var ce *CheckError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || len(ce.Problems) != 3 {
		t.Fatalf("Check: %v, want 3 problems", err)
	}
	for _, want := range []string{`text of document 1 ("d1")`, "text format byte 9", "text 999 has no document record"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check does not report %q: %v", want, err)
		}
	}
	if _, err := d.Text(ctx, "d1"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Text of a damaged text: %v, want ErrCorrupt", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Repair(ctx, dir, nil)
	if err != nil || !rep.Changed || rep.Kept != 5 {
		t.Fatalf("Repair: %+v %v", rep, err)
	}
	d = openTest(t, dir, nil)
	wantNoText(t, d, "d1", ErrNoText)
	wantNoText(t, d, "d2", ErrNoText)
	wantText(t, d, "d3", text(3, 80), FormatText)
	if err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}

	nt := openTest(t, "", nil)
	if _, err := nt.Add(ctx, Input{ID: "x", Text: []byte(text(1, 80))}, nil); err != nil {
		t.Fatal(err)
	}
	pset(t, nt, keys.Text(seqOf(t, nt, "x")), v)
	if err := nt.Check(ctx); err == nil || !strings.Contains(err.Error(), "does not keep texts") {
		t.Fatalf("Check of a text in a database without texts: %v", err)
	}
	pdel(t, nt, keys.Text(seqOf(t, nt, "x")))
}

// TestExportImportTexts: texts go through export and import; an export
// made before texts (no keep_texts, no text fields) still imports, as a
// database without texts unless the caller asks for them.
func TestExportImportTexts(t *testing.T) {
	src := openTest(t, "", &Options{KeepTexts: true})
	html := "<html><body><p>" + text(5, 120) + " &amp; caf\u00e9</p></body></html>"
	if _, err := src.Add(ctx, Input{ID: "html", Text: []byte(html)}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := src.Add(ctx, Input{ID: fmt.Sprint("t", i), Text: []byte(text(uint64(i), 90) + "\n\"quoted\"\ttab\n")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := src.Get(ctx, "t3")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Add(ctx, Input{ID: "fp", Fingerprint: doc.Fingerprint}, nil); err != nil {
		t.Fatal(err)
	}
	exp := exportOf(t, src)
	if !bytes.Contains(exp, []byte(`"keep_texts":true`)) || !bytes.Contains(exp, []byte(`"text_format":"html"`)) {
		t.Fatalf("export lacks keep_texts or text_format:\n%.400s", exp)
	}
	dir := filepath.Join(t.TempDir(), "imported")
	if _, err := Import(ctx, dir, bytes.NewReader(exp), nil); err != nil {
		t.Fatal(err)
	}
	dst := openTest(t, dir, nil)
	if !dst.Params().KeepTexts {
		t.Fatal("import of an export with texts made a database without texts")
	}
	wantText(t, dst, "html", html, FormatHTML)
	for i := range 20 {
		wantText(t, dst, fmt.Sprint("t", i), text(uint64(i), 90)+"\n\"quoted\"\ttab\n", FormatText)
	}
	wantNoText(t, dst, "fp", ErrNoText)
	body := func(b []byte) string { return string(b[bytes.IndexByte(b, '\n'):]) }
	if again := exportOf(t, dst); body(again) != body(exp) {
		t.Fatal("re-export differs")
	}

	// An export without texts, as builds before texts wrote it.
	var old bytes.Buffer
	for i, line := range strings.Split(strings.TrimSpace(string(exp)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "keep_texts")
		delete(m, "text")
		delete(m, "text_format")
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && bytes.Contains(b, []byte("text")) {
			t.Fatalf("old-style line still mentions texts: %s", b)
		}
		old.Write(append(b, '\n'))
	}
	odir := filepath.Join(t.TempDir(), "old")
	if n, err := Import(ctx, odir, bytes.NewReader(old.Bytes()), nil); err != nil || n != 22 {
		t.Fatalf("import of an export without texts: %d, %v", n, err)
	}
	od := openTest(t, odir, nil)
	if od.Params().KeepTexts {
		t.Fatal("an export without texts imported as a database that keeps texts")
	}
	wantNoText(t, od, "html", ErrNoText)
	kdir := filepath.Join(t.TempDir(), "keep")
	if _, err := Import(ctx, kdir, bytes.NewReader(old.Bytes()), &Options{KeepTexts: true}); err != nil {
		t.Fatal(err)
	}
	kd := openTest(t, kdir, nil)
	if !kd.Params().KeepTexts {
		t.Fatal("Import with KeepTexts made a database without texts")
	}
	wantNoText(t, kd, "html", ErrNoText)

	// Bad text fields are refused.
	lines := strings.SplitN(string(exp), "\n", 3)
	hdr := strings.Replace(lines[0], `"docs":22`, `"docs":1`, 1)
	for _, edit := range []func(m map[string]any){
		func(m map[string]any) { delete(m, "text") },
		func(m map[string]any) { delete(m, "text_format") },
		func(m map[string]any) { m["text_format"] = "auto" },
		func(m map[string]any) { m["text_format"] = "pdf" },
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		rec, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Import(ctx, filepath.Join(t.TempDir(), "bad"), strings.NewReader(hdr+"\n"+string(rec)+"\n"), nil)
		if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "text") {
			t.Errorf("record %s: %v, want ErrBadExport", rec, err)
		}
	}
}

// TestSalvageTexts: Salvage writes the texts as Export does, and a text it
// cannot decode is listed while its document is written without it.
func TestSalvageTexts(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{KeepTexts: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := d.Add(ctx, Input{ID: fmt.Sprint("s", i), Text: []byte(text(uint64(i), 70))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	exp := exportOf(t, d)
	closeChecked(t, d)
	var out bytes.Buffer
	rep, err := Salvage(ctx, dir, &out, nil)
	if err != nil || rep.Docs != 30 || len(rep.Dropped) != 0 {
		t.Fatalf("Salvage: %+v %v", rep, err)
	}
	if out.String() != string(exp) {
		t.Fatal("Salvage and Export differ on an intact database with texts")
	}

	d = openTest(t, dir, nil)
	pset(t, d, keys.Text(seqOf(t, d, "s7")), []byte{textValueVersion, textFormatPlain, 0xde, 0xad})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	rep, err = Salvage(ctx, dir, &out, nil)
	if err != nil || rep.Docs != 30 || len(rep.Dropped) != 1 || !strings.Contains(rep.Dropped[0], `"s7"`) {
		t.Fatalf("Salvage of a damaged text: %+v %v", rep, err)
	}
	if n := strings.Count(out.String(), `"text":`); n != 29 {
		t.Fatalf("%d texts salvaged, want 29", n)
	}
}
