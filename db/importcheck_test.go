package db

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"

	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/normalize"
)

// variedDB returns a database that keeps texts, with a template and
// documents read from many encodings and formats (their stored texts are
// the decoded UTF-8, read again with the stored format), one added by
// fingerprint (no text) and one that is the template alone, and the ids
// in storing order.
func variedDB(t *testing.T, opts *Options) (*DB, []string) {
	t.Helper()
	d := openTest(t, "", opts)
	boiler := text(500, 40)
	if _, err := d.AddTemplate(ctx, "boiler", []byte(boiler), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	french := frenchText(5, 300)
	latin := strings.NewReplacer("œ", "oe").Replace(french)
	page := func(charset, body string) string {
		return "<!DOCTYPE html><html><head><meta charset=\"" + charset + "\"><title>t</title></head><body><p>" + body + "</p></body></html>"
	}
	utf16 := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM)
	docs := []Input{
		{ID: "plain", Text: []byte(text(1, 300) + " " + boiler)},
		{ID: "angle", Text: []byte("a < b & c > d, " + text(2, 200)), TextOptions: TextOptions{Format: FormatText}},
		{ID: "html-sniffed", Text: []byte(page("utf-8", text(3, 200)))},
		{ID: "windows-1252", Text: encode(t, charmap.Windows1252, french)},
		{ID: "latin1-named", Text: encode(t, charmap.ISO8859_1, latin), TextOptions: TextOptions{Encoding: "latin1"}},
		{ID: "utf-16le", Text: encode(t, utf16, french)},
		{ID: "utf-8 bom", Text: append([]byte("\ufeff"), french...)},
		{ID: "html iso-8859-15", Text: encode(t, charmap.ISO8859_15, page("iso-8859-15", latin))},
		{ID: "shift_jis", Text: encode(t, japanese.ShiftJIS, "日本語 の 文書 は 名前 を 付けて 読む 必要 が あります"), TextOptions: TextOptions{Encoding: "Shift_JIS"}},
		{ID: "page.html", Text: []byte("<p>" + text(4, 150) + "</p>"), Source: "page.html"},
		{ID: "template only", Text: []byte(boiler)},
		{ID: "by fingerprint", Fingerprint: faultFP(7), ContentHash: [16]byte{1}, Words: 9},
	}
	var ids []string
	for _, in := range docs {
		if _, err := d.Add(ctx, in, nil); err != nil {
			t.Fatalf("%s: %v", in.ID, err)
		}
		ids = append(ids, in.ID)
	}
	return d, ids
}

// damage returns exp with the record of the document id changed by edit
// (on its decoded JSON object), and the line number of that record.
func damage(t *testing.T, exp []byte, id string, edit func(rec map[string]any)) ([]byte, int) {
	t.Helper()
	lines := bytes.SplitAfter(exp, []byte("\n"))
	for i, line := range lines[1:] {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil || rec["id"] != id {
			continue
		}
		edit(rec)
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		lines[i+1] = append(b, '\n')
		return bytes.Join(lines, nil), i + 2
	}
	t.Fatalf("no record of %q", id)
	return nil, 0
}

// flipHex changes the hex digit at i of s.
func flipHex(s string, i int) string {
	c := byte('0')
	if s[i] == '0' {
		c = '1'
	}
	return s[:i] + string(c) + s[i+1:]
}

// TestImportRefusesDamagedRecords: Import fingerprints the text of every
// record that has one with the export's parameters and templates, and
// refuses (ErrBadExport, naming the line, the id and what differs) a
// record whose text does not give its content hash, fingerprint or word
// count: an edited text, one flipped digit of the fingerprint or of the
// content hash. As on any bad line, the batch it is in is not stored: a
// refused first batch leaves no database; a later one leaves the batches
// before it, marked unfinished, and the mended export resumes. Before, an
// edited text was imported with the old fingerprint (its query answered
// "similarity 1.000, exact" for the old text) and Check passed. Exports
// of texts read in many encodings and formats, with a template, import
// without a false alarm.
func TestImportRefusesDamagedRecords(t *testing.T) {
	src, ids := variedDB(t, &Options{KeepTexts: true})
	exp := exportOf(t, src)
	dir := filepath.Join(t.TempDir(), "clean")
	if n, err := Import(ctx, dir, bytes.NewReader(exp), nil); err != nil || n != len(ids) {
		t.Fatalf("the export as made: %d, %v; want %d imported", n, err, len(ids))
	}
	closeChecked(t, openTest(t, dir, nil))

	cases := []struct {
		name string
		id   string
		edit func(rec map[string]any)
		want []string
	}{
		{"text edited", "plain", func(rec map[string]any) { rec["text"] = text(99, 300) },
			[]string{"content_hash", "fingerprint differs from the text's in", "words 340 is not the text's (300)"}},
		{"fingerprint digit", "windows-1252", func(rec map[string]any) { rec["fingerprint"] = flipHex(rec["fingerprint"].(string), 7) },
			[]string{"fingerprint differs from the text's in"}},
		{"content hash digit", "html iso-8859-15", func(rec map[string]any) { rec["content_hash"] = flipHex(rec["content_hash"].(string), 0) },
			[]string{"content_hash"}},
		{"words", "shift_jis", func(rec map[string]any) { rec["words"] = rec["words"].(float64) + 1 }, []string{"words"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad, line := damage(t, exp, c.id, c.edit)
			dir := filepath.Join(t.TempDir(), "db")
			n, err := Import(ctx, dir, bytes.NewReader(bad), nil)
			if !errors.Is(err, ErrBadExport) || n != 0 {
				t.Fatalf("Import of a damaged record: %d, %v; want 0 and ErrBadExport", n, err)
			}
			msg := err.Error()
			for _, w := range append([]string{fmt.Sprintf("line %d: %q: ", line, c.id), "does not match its text"}, c.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
			for _, w := range []string{"content_hash", "fingerprint", "words"} {
				if !strings.Contains(strings.Join(c.want, " "), w) && strings.Contains(msg, w+" ") {
					t.Errorf("the error names %s, which matches: %v", w, err)
				}
			}
			// Refused in its first batch: no database is left.
			if _, err := Open(dir, &Options{ErrorIfNotExist: true}); !errors.Is(err, ErrNotExist) {
				t.Errorf("Open after the refused import: %v, want ErrNotExist", err)
			}
		})
	}

	t.Run("later batch, then mended", func(t *testing.T) {
		bad, line := damage(t, exp, "utf-16le", func(rec map[string]any) { rec["text"] = frenchText(6, 300) })
		dst := openTest(t, "", &Options{KeepTexts: true})
		dst.testImportBatch = 2
		n, err := dst.ImportInto(ctx, bytes.NewReader(bad))
		if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), fmt.Sprintf("line %d: ", line)) || n != 4 {
			t.Fatalf("ImportInto: %d, %v; want the first 2 batches (4) and ErrBadExport naming line %d", n, err, line)
		}
		if st := dst.Stats(); st.Docs != 4 || !st.ImportIncomplete {
			t.Fatalf("after the refused batch: %d documents, unfinished %v; want 4, true", st.Docs, st.ImportIncomplete)
		}
		if n, err := dst.ImportInto(ctx, bytes.NewReader(exp)); err != nil || n != len(ids) {
			t.Fatalf("the mended export: %d, %v; want %d", n, err, len(ids))
		}
	})

	t.Run("first bad line named", func(t *testing.T) {
		// A later line of the same batch does not even parse: the
		// earlier damaged record is named.
		bad, line := damage(t, exp, "angle", func(rec map[string]any) { rec["text"] = text(98, 200) })
		bad, _ = damage(t, bad, "shift_jis", func(rec map[string]any) { rec["colour"] = "red" })
		_, err := Import(ctx, filepath.Join(t.TempDir(), "db"), bytes.NewReader(bad), nil)
		if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), fmt.Sprintf("line %d: \"angle\": the record does not match its text", line)) {
			t.Fatalf("Import: %v, want ErrBadExport naming line %d", err, line)
		}
	})
}

// TestCheckFindsDamagedText: Check reads every stored text again and
// reports one that does not give its document's content hash (here: an
// import of a damaged export before Import checked, or a damaged text);
// Repair removes that text, keeping the document, and Check passes.
// Before, Check found nothing.
func TestCheckFindsDamagedText(t *testing.T) {
	dir := t.TempDir()
	// No false alarm on texts read in many encodings and formats.
	d, _ := variedDB(t, &Options{KeepTexts: true})
	if err := d.Check(ctx); err != nil {
		t.Fatalf("Check of the intact database: %v", err)
	}
	d2 := openTest(t, dir, &Options{KeepTexts: true})
	for i := range 5 {
		if _, err := d2.Add(ctx, Input{ID: fmt.Sprint("doc", i), Text: []byte(text(uint64(i), 150))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	other, err := d2.texts.encode([]byte(text(77, 150)), normalize.FormatText)
	if err != nil {
		t.Fatal(err)
	}
	iid := seqOf(t, d2, "doc2")
	pset(t, d2, keys.Text(iid), other)
	err = d2.Check(ctx)
	var ce *CheckError
	want := fmt.Sprintf(`text of document %d ("doc2") does not give the document's content hash`, iid)
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || !strings.Contains(ce.Problems[0], want) {
		t.Fatalf("Check: %v, want one problem: %s", err, want)
	}
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Repair(ctx, dir, nil)
	if err != nil || !rep.Changed || rep.Kept != 5 || len(rep.Dropped) != 0 {
		t.Fatalf("Repair: %+v, %v; want the 5 documents kept", rep, err)
	}
	d2 = openTest(t, dir, nil)
	if err := d2.Check(ctx); err != nil {
		t.Fatalf("Check after Repair: %v", err)
	}
	if _, err := d2.Text(ctx, "doc2"); !errors.Is(err, ErrNoText) {
		t.Errorf("the damaged text after Repair: %v, want ErrNoText", err)
	}
	if st, err := d2.Text(ctx, "doc3"); err != nil || string(st.Text) != text(3, 150) {
		t.Errorf("an intact text after Repair: %v", err)
	}
}

// TestTextHasherMatchesBuilder: Check's content hash of a stored text is
// the fingerprint builder's, for every normalization version and format.
func TestTextHasherMatchesBuilder(t *testing.T) {
	texts := []string{
		text(1, 500), frenchText(3, 300), "a < b & c > d; x<y", "<p>Hello <b>wor</b>ld &amp; all</p><script>x()</script>",
		strings.Repeat("long", 5000) + " " + text(2, 3000), "日本語 の 文書", "ÉCOLE Straße ﬁne İstanbul",
	}
	for v := normalize.MinVersion; v <= normalize.Version; v++ {
		p := fingerprint.DefaultParams()
		p.NormalizeVersion = v
		b, err := fingerprint.NewBuilder(p)
		if err != nil {
			t.Fatal(err)
		}
		h := fingerprint.NewHasher(v)
		for _, f := range []normalize.Format{normalize.FormatText, normalize.FormatMarkup} {
			for i, s := range texts {
				want, err := b.ReadBytes([]byte(s), f)
				if err != nil {
					t.Fatal(err)
				}
				got, words, err := h.Hash([]byte(s), f)
				if err != nil || got != want.ContentHash || words != want.Words {
					t.Errorf("version %d, %v, text %d: %x %d words (%v), want %x %d", v, f, i, got, words, err, want.ContentHash, want.Words)
				}
			}
		}
	}
}
