package fingerprint

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/fpdb/fpdb/internal/normalize"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.txt")

func mustBuilder(t testing.TB, p Params) *Builder {
	t.Helper()
	b, err := NewBuilder(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hamming(a, b []uint64) int {
	h := 0
	for i := range a {
		h += bits.OnesCount64(a[i] ^ b[i])
	}
	return h
}

// english is a public-domain-style paragraph used to build test documents.
const english = `It is a truth universally acknowledged, that a single man in possession
of a good fortune, must be in want of a wife. However little known the feelings or views
of such a man may be on his first entering a neighbourhood, this truth is so well fixed in
the minds of the surrounding families, that he is considered the rightful property of some
one or other of their daughters. "My dear Mr. Bennet," said his lady to him one day, "have
you heard that Netherfield Park is let at last?" Mr. Bennet replied that he had not. "But
it is," returned she; "for Mrs. Long has just been here, and she told me all about it."
Mr. Bennet made no answer. "Do you not want to know who has taken it?" cried his wife
impatiently. "You want to tell me, and I have no objection to hearing it." This was
invitation enough. `

const unrelated = `The Permission is hereby granted, free of charge, to any person obtaining
a copy of this software and associated documentation files, to deal in the Software without
restriction, including without limitation the rights to use, copy, modify, merge, publish,
distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom
the Software is furnished to do so, subject to the following conditions: the above
copyright notice and this permission notice shall be included in all copies or substantial
portions of the Software. THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND,
EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY.`

func TestParams(t *testing.T) {
	p := DefaultParams()
	if p.K != 512 || p.ShingleWidth != 4 || p.Seed != DefaultSeed || p.Validate() != nil {
		t.Fatalf("DefaultParams = %+v, %v", p, p.Validate())
	}
	err := Params{K: 100, ShingleWidth: 0}.Validate()
	if !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), "K = 100") || !strings.Contains(err.Error(), "ShingleWidth = 0") {
		t.Fatalf("Validate did not report both problems: %v", err)
	}
	for _, bad := range []Params{{K: 0, ShingleWidth: 4}, {K: -64, ShingleWidth: 4}, {K: 512, ShingleWidth: 65}, {K: 1 << 20, ShingleWidth: 4}} {
		if _, err := NewBuilder(bad); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("NewBuilder(%+v) = %v", bad, err)
		}
	}
}

func TestResultShape(t *testing.T) {
	b := mustBuilder(t, DefaultParams())
	res, err := b.FromBytes([]byte("One two three four five six."))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FP) != 8 || res.Words != 6 || res.Shingles != 3 {
		t.Fatalf("got %d words, %d shingles, %d FP words", res.Words, res.Shingles, len(res.FP))
	}
	// ContentHash is SHA-256 of the normalized words, each followed by a space.
	want := sha256.Sum256([]byte("one two three four five six "))
	if !bytes.Equal(res.ContentHash[:], want[:16]) {
		t.Fatalf("ContentHash %x, want %x", res.ContentHash, want[:16])
	}
	// FP is a fresh slice each call.
	res2, _ := b.FromBytes([]byte("One two three four five six."))
	res.FP[0] ^= 1
	if res2.FP[0] == res.FP[0] {
		t.Fatal("FP slices are shared")
	}
}

func TestContentHashLongText(t *testing.T) {
	// Longer than the internal 8 KiB hash buffer.
	text := strings.Repeat(english, 30)
	res, err := mustBuilder(t, DefaultParams()).FromBytes([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	var norm bytes.Buffer
	if err := normalize.NewTokenizer().Words(strings.NewReader(text), func(w []byte) {
		norm.Write(w)
		norm.WriteByte(' ')
	}); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(norm.Bytes())
	if !bytes.Equal(res.ContentHash[:], want[:16]) {
		t.Fatal("ContentHash differs from SHA-256 of the normalized text")
	}
	// Same normalized text, different markup and case: same content hash.
	other, err := mustBuilder(t, DefaultParams()).FromBytes([]byte("<p>" + strings.ToUpper(text) + "</p>"))
	if err != nil || other.ContentHash != res.ContentHash || hamming(other.FP, res.FP) != 0 {
		t.Fatalf("normalized-equal texts differ: %v", err)
	}
}

func TestShortDocument(t *testing.T) {
	b := mustBuilder(t, DefaultParams())
	for n := 1; n < 4; n++ {
		res, err := b.FromBytes([]byte(strings.Repeat("word ", n)))
		if err != nil || res.Words != n || res.Shingles != 1 {
			t.Fatalf("%d words: %+v %v", n, res, err)
		}
	}
	one, _ := b.FromBytes([]byte("hello"))
	two, _ := b.FromBytes([]byte("hello world"))
	if hamming(one.FP, two.FP) == 0 {
		t.Fatal("different short documents, same fingerprint")
	}
}

func TestErrors(t *testing.T) {
	b := mustBuilder(t, DefaultParams())
	for _, s := range []string{"", "   \n\t", "!!! ... --- ???", "<p></p><!-- x -->", "😀 ❤️", "<script>words here</script>"} {
		if _, err := b.FromBytes([]byte(s)); !errors.Is(err, ErrNoWords) {
			t.Errorf("FromBytes(%q) = %v, want ErrNoWords", s, err)
		}
	}
	for _, s := range []string{"abc\x00def", "abc \xff", "\xc0\xaf"} {
		_, err := b.FromBytes([]byte(s))
		var ie *normalize.InputError
		if !errors.Is(err, normalize.ErrBinary) || !errors.As(err, &ie) {
			t.Errorf("FromBytes(%q) = %v, want ErrBinary", s, err)
		}
	}
	readErr := errors.New("disk on fire")
	if _, err := b.FromReader(iotest.ErrReader(readErr)); !errors.Is(err, readErr) {
		t.Errorf("reader error lost: %v", err)
	}
	// The builder still works after errors.
	if _, err := b.FromBytes([]byte("still working fine here")); err != nil {
		t.Fatal(err)
	}
}

func TestFromReaderEqualsFromBytes(t *testing.T) {
	b := mustBuilder(t, DefaultParams())
	for _, text := range []string{english, unrelated, "caf&eacute; <b>x</b> y z", strings.Repeat(english, 200)} {
		want, err := b.FromBytes([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []func() *strings.Reader{func() *strings.Reader { return strings.NewReader(text) }} {
			got, err := b.FromReader(iotest.OneByteReader(r()))
			if err != nil || !slices.Equal(got.FP, want.FP) || got.ContentHash != want.ContentHash ||
				got.Words != want.Words || got.Shingles != want.Shingles {
				t.Fatalf("FromReader differs from FromBytes (%v)", err)
			}
		}
	}
}

func TestSimilarity(t *testing.T) {
	p := DefaultParams()
	b := mustBuilder(t, p)
	doc := strings.Repeat(english, 3)
	base, err := b.FromBytes([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	// A near duplicate: two words changed and some punctuation and case.
	near := strings.Replace(doc, "fortune", "fortunes", 1)
	near = strings.Replace(near, "daughters", "sons", 1)
	near = strings.ToUpper(near[:200]) + near[200:]
	nd, err := b.FromBytes([]byte(near))
	if err != nil {
		t.Fatal(err)
	}
	// 8 of ~540 distinct shingles change: R ≈ 0.985, E[H] ≈ 4; allow 30.
	if h := hamming(base.FP, nd.FP); h > 30 {
		t.Errorf("near duplicate at Hamming distance %d", h)
	}
	other, err := b.FromBytes([]byte(unrelated))
	if err != nil {
		t.Fatal(err)
	}
	// Unrelated: Binomial(512, 1/2), sd ≈ 11.3; allow 5 sd.
	if h := hamming(base.FP, other.FP); h < 200 || h > 312 {
		t.Errorf("unrelated documents at Hamming distance %d", h)
	}
	// Another seed gives a different fingerprint but the same content hash.
	p.Seed++
	s2, err := mustBuilder(t, p).FromBytes([]byte(doc))
	if err != nil || s2.ContentHash != base.ContentHash {
		t.Fatal("content hash depends on the seed")
	}
	if h := hamming(base.FP, s2.FP); h < 200 || h > 312 {
		t.Errorf("other seed at Hamming distance %d", h)
	}
}

// goldenTexts are pinned by testdata/golden.txt.
var goldenTexts = []struct{ name, text string }{
	{"english", english},
	{"license", unrelated},
	{"html", `<html><head><style>p{}</style><script>x()</script></head><body><p>Caf&eacute; &amp; cr&egrave;me, don&#39;t STOP&mdash;the 3.14 <b>best</b>!</p></body></html>`},
	{"unicode", "ΣΑΣ İstanbul straße Привет 日本語のテキスト ภาษาไทย 한국어 café\u0301 ½"},
	{"short", "just three words"},
	{"one", "word"},
	{"code", "for (i = 0; i<n; i++) if (x>0) y = a<b ? a : b; /* <stdio.h> &amp; */"},
	{"evasive", "ﬁnal Ｆｕｌｌ w\u200bo\u200br\u200bd pаypal Cafe\u0301 STRASSE ⑴"},
	// Pinned from version 3 on (markup inside words).
	{"inline", `<p>P<span></span>layful re<b>sub</b>mit pla<!-- x -->yful super<wbr>cali <span class="d">T</span>he end</p>`},
}

func goldenLine(t *testing.T, version, k int, name, text string) string {
	t.Helper()
	res, err := mustBuilder(t, Params{K: k, ShingleWidth: 4, Seed: DefaultSeed, NormalizeVersion: version}).FromBytes([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	var fp strings.Builder
	for _, w := range res.FP {
		fmt.Fprintf(&fp, "%016x", w)
	}
	return fmt.Sprintf("%d\t%s\t%d\t%d\t%s\t%s", k, name, res.Words, res.Shingles,
		hex.EncodeToString(res.ContentHash[:]), fp.String())
}

// TestGolden pins the output for fixed texts under every normalization
// version (testdata/golden.txt for version 1, golden-vN.txt for the
// others). A failure means stored fingerprints would change: bump
// HashVersion or normalize.Version (keeping the old rules), then regenerate
// the new version's file with go test -run TestGolden -update.
func TestGolden(t *testing.T) {
	for v := normalize.MinVersion; v <= normalize.Version; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) { testGolden(t, v) })
	}
}

func testGolden(t *testing.T, version int) {
	path := filepath.Join("testdata", "golden.txt")
	if version > 1 {
		path = filepath.Join("testdata", fmt.Sprintf("golden-v%d.txt", version))
	}
	texts := goldenTexts
	switch version {
	case 1:
		texts = texts[:6] // the texts pinned when version 1 was current
	case 2:
		texts = texts[:8] // and when version 2 was
	}
	var lines []string
	for _, k := range []int{512, 64} {
		for _, g := range texts {
			lines = append(lines, goldenLine(t, version, k, g.name, g.text))
		}
	}
	if *update {
		if _, err := os.Stat(path); err == nil && version < normalize.Version {
			t.Skipf("%s pins a released version: not rewritten", path)
		}
		header := fmt.Sprintf("# fingerprint golden vectors: HashVersion %d, normalize.Version %d, ShingleWidth 4, Seed %#x\n"+
			"# k\tname\twords\tshingles\tcontent hash\tfingerprint (FP[0] FP[1] ... as 16 hex digits each)\n",
			HashVersion, version, uint64(DefaultSeed))
		if err := os.WriteFile(path, []byte(header+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			want = append(want, line)
		}
	}
	if len(want) != len(lines) {
		t.Fatalf("golden file has %d vectors, want %d", len(want), len(lines))
	}
	for i := range lines {
		if lines[i] != want[i] {
			f := strings.SplitN(want[i], "\t", 3)
			t.Errorf("golden vector k=%s %s changed:\n got %s\nwant %s", f[0], f[1], lines[i], want[i])
		}
	}
	// The 64-bit vectors are 16 hex digits, the 512-bit ones 128.
	for _, l := range want {
		f := strings.Split(l, "\t")
		k, _ := strconv.Atoi(f[0])
		if len(f) != 6 || len(f[5]) != k/4 || len(f[4]) != 32 {
			t.Errorf("malformed golden line %q", l)
		}
	}
}

// benchDoc is about 2 KB of English text.
func benchDoc() []byte {
	doc := strings.Repeat(english, 3)
	return []byte(doc[:2048])
}

func BenchmarkFromBytes2KB(b *testing.B) {
	bld := mustBuilder(b, DefaultParams())
	doc := benchDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bld.FromBytes(doc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkFromBytes2KBDocs fingerprints 64 different documents of about
// 2 KB in turn (words of the English sample in random order), so that the
// branch predictor cannot learn one document.
func BenchmarkFromBytes2KBDocs(b *testing.B) {
	bld := mustBuilder(b, DefaultParams())
	words := strings.Fields(english)
	rng := rand.New(rand.NewPCG(1, 2))
	docs := make([][]byte, 64)
	size := 0
	for i := range docs {
		var d []byte
		for len(d) < 2048 {
			d = append(d, words[rng.IntN(len(words))]...)
			d = append(d, ' ')
		}
		docs[i] = d
		size += len(d)
	}
	b.SetBytes(int64(size / len(docs)))
	i := 0
	for b.Loop() {
		if _, err := bld.FromBytes(docs[i%len(docs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}
