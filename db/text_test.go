package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/fpdb/fpdb/internal/fingerprint"
)

// frenchText returns a pseudo-random text of n words drawn from accented
// French words (written composed, NFC).
func frenchText(seed uint64, n int) string {
	vocab := []string{"été", "élève", "première", "français", "leçon", "déjà", "où", "très",
		"après", "château", "forêt", "noël", "maïs", "cœur", "naïve", "garçon", "hôpital",
		"fenêtre", "théâtre", "général", "société", "numéro", "problème", "système", "réseau",
		"fichier", "paramètre", "défaut", "entrée", "sortie", "clé", "valeur", "données", "résumé"}
	r := rand.New(rand.NewPCG(seed, 7))
	w := make([]string, n)
	for i := range w {
		w[i] = vocab[r.IntN(len(vocab))] + fmt.Sprint(r.IntN(50))
	}
	return strings.Join(w, " ")
}

// similarity adds a as "a" to a new database with the given options and
// returns the estimated resemblance of b with it.
func similarity(t *testing.T, opts *Options, a, b string) float64 {
	t.Helper()
	d := openTest(t, "", opts)
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte(a)}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := d.Query(ctx, []byte(b), QueryOptions{Threshold: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) == 0 {
		return 0
	}
	return res.Matches[0].Similarity
}

// TestPlainTextKeepsAngleBrackets is defect 2 of the CLI review: plain
// text was cut as if it were HTML, so "i<n; ... x>0" dropped every word in
// between. The newest normalization reads it as text; a database made with
// version 1 keeps the old rules (its stored fingerprints depend on them).
func TestPlainTextKeepsAngleBrackets(t *testing.T) {
	w := strings.Fields(text(11, 600))
	a := slices.Clone(w)
	a[100] = "for (i=0; i<n; i++)"
	a[400] = "while (x>0) x--;"
	b := slices.Clone(w)
	b[100] = "for (i=0; i < n; i++)"
	b[400] = "while (x > 0) x--;"
	withBrackets, spaced := strings.Join(a, " "), strings.Join(b, " ")
	s2 := similarity(t, nil, withBrackets, spaced)
	s1 := similarity(t, &Options{NormalizeVersion: 1}, withBrackets, spaced)
	t.Logf("similarity of the text with i<n … x>0 to the same text with spaces: version 2 %.3f, version 1 %.3f", s2, s1)
	if s2 < 0.95 {
		t.Errorf("version 2: similarity %.3f, want ≥ 0.95 (the words between < and > must be kept)", s2)
	}
	if s1 > 0.8 {
		t.Errorf("version 1: similarity %.3f; the old rules are expected to drop the words between < and >", s1)
	}
}

// TestUnicodeEvasions is defect 3: the same text written with decomposed
// accents, zero-width spaces in every word, ligatures, full-width letters
// or Cyrillic look-alike letters is the same document.
func TestUnicodeEvasions(t *testing.T) {
	french := frenchText(3, 600)
	english := text(4, 600)
	decompose := strings.NewReplacer("é", "e\u0301", "è", "e\u0300", "ê", "e\u0302", "ô", "o\u0302",
		"â", "a\u0302", "ï", "i\u0308", "ë", "e\u0308", "ç", "c\u0327", "ù", "u\u0300", "à", "a\u0300")
	zwsp := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			b.WriteRune(r)
			if unicode.IsLetter(r) {
				b.WriteRune('\u200b')
			}
		}
		return b.String()
	}
	cases := []struct {
		name       string
		orig, evil string
	}{
		{"NFD accents", french, decompose.Replace(french)},
		{"U+200B in every word", english, zwsp(english)},
		{"U+2060 and soft hyphens", english, strings.NewReplacer("w1", "w\u20601", "w2", "w\u00ad2").Replace(english)},
		{"ligatures", "the final office " + french, "the ﬁnal oﬃce " + french},
		{"full-width digits", english, strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r - '0' + '０'
			}
			return r
		}, english)},
		{"Cyrillic look-alikes", "paypal secure account " + english, "pаypаl sеcurе аccount " + english},
		{"upper case", french, strings.ToUpper(french)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.orig == tc.evil {
				t.Fatal("the evasion changed nothing")
			}
			d := openTest(t, "", nil)
			if _, err := d.Add(ctx, Input{ID: "orig", Text: []byte(tc.orig)}, nil); err != nil {
				t.Fatal(err)
			}
			res, err := d.Query(ctx, []byte(tc.evil), QueryOptions{Threshold: 0.7})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Matches) != 1 || res.Matches[0].Similarity != 1 || !res.Matches[0].Exact {
				t.Fatalf("matches %+v, want the original as an exact duplicate", res.Matches)
			}
		})
	}
}

// TestFormat checks the text formats: auto by name and by content, forced.
func TestFormat(t *testing.T) {
	d := openTest(t, "", nil)
	words := func(in Input) int {
		t.Helper()
		if _, err := d.Add(ctx, in, nil); err != nil {
			t.Fatalf("%s: %v", in.ID, err)
		}
		doc, err := d.Get(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		return doc.Words
	}
	const frag = "Hello <b>big</b> world"                   // 3 words as HTML, 5 as text
	const page = "<!DOCTYPE html><p>Hello <b>big</b> world" // sniffed as HTML
	for _, tc := range []struct {
		in   Input
		want int
	}{
		{Input{ID: "txt", Text: []byte(frag), Source: "a.txt"}, 5},
		{Input{ID: "html by name", Text: []byte(frag), Source: "dir/a.HTML"}, 3},
		{Input{ID: "html by content", Text: []byte(page)}, 3},
		{Input{ID: "forced text", Text: []byte(page), TextOptions: TextOptions{Format: FormatText}}, 8},
		{Input{ID: "forced html", Text: []byte(frag), TextOptions: TextOptions{Format: FormatHTML}}, 3},
	} {
		if got := words(tc.in); got != tc.want {
			t.Errorf("%s: %d words, want %d", tc.in.ID, got, tc.want)
		}
	}
	if _, err := d.Add(ctx, Input{ID: "bad", Text: []byte("x"), TextOptions: TextOptions{Format: 9}}, nil); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Format 9: %v, want ErrInvalidOptions", err)
	}
	if _, err := ParseFormat("pdf"); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ParseFormat(pdf): %v", err)
	}
}

// TestNormalizeVersion1Kept: a database created with normalization
// version 1 (every database before version 2 existed) keeps fingerprinting
// with it, so its stored fingerprints stay comparable with new texts.
func TestNormalizeVersion1Kept(t *testing.T) {
	dir := t.TempDir()
	doc := "Ann Lee <ann@example.org> wrote: for (i=0; i<n; i++) " + text(5, 200)
	d, err := Open(dir, &Options{NormalizeVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, Input{ID: "old", Text: []byte(doc)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openTest(t, dir, nil)
	if v := d.Params().NormalizeVersion; v != 1 {
		t.Fatalf("reopened with NormalizeVersion %d, want 1", v)
	}
	b, err := fingerprint.NewBuilder(fingerprint.Params{K: 512, ShingleWidth: 4, Seed: DefaultSeed, NormalizeVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	want, err := b.FromBytes([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Get(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Fingerprint, want.FP) || got.ContentHash != want.ContentHash {
		t.Fatal("the stored fingerprint is not version 1's")
	}
	res, err := d.Query(ctx, []byte(doc), QueryOptions{Threshold: 0.9})
	if err != nil || len(res.Matches) != 1 || !res.Matches[0].Exact {
		t.Fatalf("query of the same text: %+v, %v", res, err)
	}
	if _, err := Open(t.TempDir(), &Options{NormalizeVersion: NormalizeVersion + 1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("NormalizeVersion %d: %v, want ErrInvalidOptions", NormalizeVersion+1, err)
	}
	d2, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := d2.Params().NormalizeVersion; v != NormalizeVersion {
		t.Errorf("new database: NormalizeVersion %d, want %d", v, NormalizeVersion)
	}
	d2.Close()
}

// TestNormalizeVersionMismatch: asking for another version than the stored
// one is a *ParamsError naming both.
func TestNormalizeVersionMismatch(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{NormalizeVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	_, err = Open(dir, &Options{NormalizeVersion: 2})
	var pe *ParamsError
	if !errors.As(err, &pe) || pe.Param != "NormalizeVersion" || pe.Stored != "1" || pe.Given != "2" {
		t.Fatalf("Open with NormalizeVersion 2: %v, want a ParamsError 1 vs 2", err)
	}
}

// wordsReader reads n bytes of words, over and over the same few.
type wordsReader struct {
	chunk []byte
	n     int64
}

func (w *wordsReader) Read(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && w.n > 0 {
		c := copy(p[k:], w.chunk[:min(int64(len(w.chunk)), w.n)])
		k += c
		w.n -= int64(c)
	}
	return k, nil
}

// TestReaderContext: Fingerprint, QueryReader and Add stop reading a long
// text soon after their context's deadline, and fail with its error
// (Fingerprint does not return a fingerprint made after it).
func TestReaderContext(t *testing.T) {
	d := openTest(t, "", nil)
	chunk := []byte(text(1, 2000) + " ")
	// 1 GiB of words: read whole, one call takes several seconds, beyond
	// the loose bound below (a busy machine's).
	long := func() io.Reader { return &wordsReader{chunk: chunk, n: 1 << 30} }
	calls := map[string]func(ctx context.Context) error{
		"Fingerprint": func(ctx context.Context) error {
			_, err := d.Fingerprint(ctx, long(), TextOptions{})
			return err
		},
		"QueryReader": func(ctx context.Context) error {
			_, err := d.QueryReader(ctx, long(), QueryOptions{Threshold: 0.8})
			return err
		},
		"Add": func(ctx context.Context) error {
			_, err := d.Add(ctx, Input{ID: "long", Reader: long()}, nil)
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := call(cctx)
			if took := time.Since(start); took > 4*time.Second {
				t.Errorf("returned %v after the call, with a deadline of 50ms", took)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err %v, want context.DeadlineExceeded", err)
			}
		})
	}
	if st := d.Stats(); st.Docs != 0 {
		t.Errorf("%d documents stored", st.Docs)
	}
}
