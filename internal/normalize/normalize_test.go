package normalize

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// words tokenizes s read through r (or whole if r is nil).
func words(t testing.TB, tk *Tokenizer, r io.Reader) ([]string, error) {
	t.Helper()
	var ws []string
	err := tk.Words(r, func(w []byte) { ws = append(ws, string(w)) })
	return ws, err
}

// inPlace checks that WordsBytes on data gives what Words gave: the
// words ws and the error err.
func inPlace(t testing.TB, tk *Tokenizer, data []byte, ws []string, err error) {
	t.Helper()
	var got []string
	gerr := tk.WordsBytes(data, func(w []byte) { got = append(got, string(w)) })
	if !slices.Equal(got, ws) {
		t.Fatalf("WordsBytes(%q) = %q, Words gave %q", data, got, ws)
	}
	var a, b *InputError
	switch {
	case (err == nil) != (gerr == nil):
		t.Fatalf("WordsBytes(%q): error %v, Words: %v", data, gerr, err)
	case errors.As(err, &a) != errors.As(gerr, &b) || (a != nil && !sameInputError(a, b)):
		t.Fatalf("WordsBytes(%q): error %v, Words: %v", data, gerr, err)
	}
}

// sameInputError compares where and why; the Hint is a guess from the
// bytes at hand, which depend on how the input was read.
func sameInputError(a, b *InputError) bool { return a.Offset == b.Offset && a.Reason == b.Reason }

// TestUTF16Hint: a NUL byte of text that looks like UTF-16 without a
// byte-order mark says so, with the byte order; binary data does not.
func TestUTF16Hint(t *testing.T) {
	le := "h\x00e\x00l\x00l\x00o\x00 \x00w\x00o\x00r\x00l\x00d\x00"
	for _, c := range []struct{ in, want string }{
		{le, "utf-16le"},
		{"\x00" + le[:len(le)-1], "utf-16be"},
		{"abc\x00\x01\x02\x03\x00\x00\x00\x00xyzxyz", ""},
	} {
		_, err := words(t, newV1(), strings.NewReader(c.in))
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Fatalf("%q: %v", c.in, err)
		}
		if c.want == "" {
			if ie.Hint != "" {
				t.Errorf("%q: hint %q for binary data", c.in, ie.Hint)
			}
			continue
		}
		if !strings.Contains(ie.Hint, c.want) || !strings.Contains(err.Error(), ie.Hint) {
			t.Errorf("%q: hint %q (%v), want %q", c.in, ie.Hint, err, c.want)
		}
	}
}

func wordsOf(t testing.TB, s string) []string {
	t.Helper()
	ws, err := words(t, newV1(), strings.NewReader(s))
	if err != nil {
		t.Fatalf("Words(%q): %v", s, err)
	}
	inPlace(t, newV1(), []byte(s), ws, err)
	return ws
}

func TestWordsTable(t *testing.T) {
	long := strings.Repeat("a", MaxWordLen)
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", nil},
		{"spec example", "Don't STOP—the 3.14 <b>café</b>!", []string{"don", "t", "stop", "the", "3", "14", "café"}},
		{"spaces", "  hello \t\n world  ", []string{"hello", "world"}},
		{"punctuation only", "... --- !!! ?", nil},
		{"digits", "abc123 4,5 x9y", []string{"abc123", "4", "5", "x9y"}},
		{"underscore separates", "snake_case", []string{"snake", "case"}},
		{"tag separates", "foo<br>bar", []string{"foo", "bar"}},
		{"tag with attrs", `a<a href="x.html" title='t'>link</a>b`, []string{"a", "link", "b"}},
		{"end tag", "x</p>y", []string{"x", "y"}},
		{"processing instruction", `<?xml version="1.0"?>doc`, []string{"doc"}},
		{"doctype", "<!DOCTYPE html>page", []string{"page"}},
		{"lt punctuation", "a < b and 1<2", []string{"a", "b", "and", "1", "2"}},
		{"lt at end", "a <", []string{"a"}},
		{"lt before non-ascii letter", "<é", []string{"é"}},
		{"email in angle brackets", "John Doe <john@example.com> wrote", []string{"john", "doe", "wrote"}},
		{"comment", "<p>a<!-- hidden <b>x</b> -->b", []string{"a", "b"}},
		{"comment dashes", "a<!-- x --->b<!---->c", []string{"a", "b", "c"}},
		{"empty comments", "a<!-->b<!--->c", []string{"a", "b", "c"}},
		{"comment gt inside", "<p>a<!-- x > y -- > z -->b", []string{"a", "b"}},
		{"unterminated comment", "<p>a<!-- never closed", []string{"a"}},
		{"unterminated tag is text", "a<b c d", []string{"a", "b", "c", "d"}},
		{"lt cancels tag", "a <b <c> d", []string{"a", "b", "d"}},
		{"unterminated email", "Jérémy Lal <kapouer@melix.org\n 2017, Pirate Praveen <praveen@debian.org>\n",
			[]string{"jérémy", "lal", "kapouer", "melix", "org", "2017", "pirate", "praveen"}},
		{"digit after lt is no tag", "ZhouYL <81438567@qq.com>", []string{"zhouyl", "81438567", "qq", "com"}},
		{"tag spans lines", "a<p\nclass=x>b", []string{"a", "b"}},
		{"unterminated declaration", "<!DOCTYPE html", []string{"doctype", "html"}},
		{"cancelled tag keeps entities", "x <a &eacute;t&eacute; <b>", []string{"x", "a", "été"}},
		{"end tag of script without gt", "<script>x</script y", nil},
		{"script", "<p>a<script>var x = '<b>hi</b>'; if (a<b) {}</script>b", []string{"a", "b"}},
		{"script attrs upper", `<p>a<SCRIPT type="text/javascript">x()</ScRiPt >b`, []string{"a", "b"}},
		{"style", "<p>a<style>p { color: red }</style>b", []string{"a", "b"}},
		{"scripts is not script", "a<scripts>kept</scripts>b", []string{"a", "kept", "b"}},
		{"script not closed by scripts", "<p>a<script>x</scriptx>y</script>b", []string{"a", "b"}},
		{"self-closing script", `a<script src="x.js"/>b`, []string{"a", "b"}},
		{"unterminated script", "<p>a<script>x y z", []string{"a"}},
		{"plain text keeps style", "use [<style>] and <!-- x --> y z", []string{"use", "and", "y", "z"}},
		{"plain text unterminated comment", "a <!-- b c", []string{"a", "b", "c"}},
		{"entity joins word", "caf&eacute; cr&egrave;me", []string{"café", "crème"}},
		{"entity punctuation", "a&amp;b &lt;c&gt; d&nbsp;e", []string{"a", "b", "c", "d", "e"}},
		{"numeric entities", "don&#39;t don&#x27;t &#65;&#x42;C", []string{"don", "t", "don", "t", "abc"}},
		{"entity no semicolon", "a&ampb", []string{"a", "b"}},
		{"entity lt is not a tag", "&lt;b&gt;x&lt;/b&gt;", []string{"b", "x", "b"}},
		{"not an entity", "AT&T R&D &foo; & x &#; &", []string{"at", "t", "r", "d", "foo", "x"}},
		{"entity at end", "x &eacute", []string{"x", "é"}},
		{"long entity is text", "&" + strings.Repeat("b", 40) + ";", []string{strings.Repeat("b", 40)}},
		{"upper ascii", "HELLO World", []string{"hello", "world"}},
		{"dotted capital I", "İSTANBUL İ", []string{"istanbul", "i"}},
		{"greek sigma", "ΣΑΣ σας", []string{"σασ", "σας"}},
		{"german", "STRASSE Straße ÄÖÜ", []string{"strasse", "straße", "äöü"}},
		{"cyrillic", "Привет, МИР!", []string{"привет", "мир"}},
		{"combining marks", "cafe\u0301 \u0301x", []string{"cafe\u0301", "x"}},
		{"cjk", "日本語のテキスト", []string{"日", "本", "語", "の", "テ", "キ", "ス", "ト"}},
		{"cjk mixed", "abc中文def", []string{"abc", "中", "文", "def"}},
		{"katakana long mark", "ラーメン", []string{"ラ", "ー", "メ", "ン"}},
		{"hangul words", "한국어 텍스트", []string{"한국어", "텍스트"}},
		{"thai", "ภาษาไทย", []string{"ภ", "า", "ษ", "า", "ไ", "ท", "ย"}},
		{"thai marks attach", "กิน", []string{"กิ", "น"}},
		{"thai digits", "๑๒๓", []string{"๑๒๓"}},
		{"arabic digits", "٣١٤ abc", []string{"٣١٤", "abc"}},
		{"fullwidth", "ＡＢＣ１２３", []string{"ａｂｃ１２３"}},
		{"emoji dropped", "I ❤️ Go 😀👍🏽 1️⃣ 👨‍👩‍👧 🇫🇷!", []string{"i", "go", "1"}},
		{"symbols dropped", "© 2024 € 5 ±3 → ok", []string{"2024", "5", "3", "ok"}},
		{"superscript number", "x² ½", []string{"x²", "½"}},
		{"bom", "\ufeffHello", []string{"hello"}},
		{"soft hyphen and zwj ignored", "co\u00adop\u200dera\u200ction", []string{"cooperation"}},
		{"long word split", long + "bc", []string{long, "bc"}},
		{"nbsp and ideographic space", "a\u00a0b\u3000c", []string{"a", "b", "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := wordsOf(t, tc.in)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Words(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestTagTooLong(t *testing.T) {
	// "a " and MaxTagLen x's: the tag overflows, so all of it is text; the
	// x's form one run split into MaxWordLen pieces.
	got := wordsOf(t, "<a "+strings.Repeat("x", MaxTagLen)+">b")
	want := []string{"a"}
	for range MaxTagLen / MaxWordLen {
		want = append(want, strings.Repeat("x", MaxWordLen))
	}
	want = append(want, "b")
	if !slices.Equal(got, want) {
		t.Errorf("got %d words, want %d", len(got), len(want))
	}
	// A tag just under the limit is removed.
	if got := wordsOf(t, "<a "+strings.Repeat("x", MaxTagLen-3)+">b"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("got %d words, want [b]", len(got))
	}
}

func TestTokenizerReuse(t *testing.T) {
	tk := newV1()
	// Leave the tokenizer in odd states; the next call must start afresh.
	for _, s := range []string{"abc<scr", "x&amp", "<!-- open", "foo\u00e9", "日"} {
		if _, err := words(t, tk, strings.NewReader(s)); err != nil {
			t.Fatal(err)
		}
		got, err := words(t, tk, strings.NewReader("Hello world"))
		if err != nil || !slices.Equal(got, []string{"hello", "world"}) {
			t.Fatalf("after %q: got %q, %v", s, got, err)
		}
	}
	var zero Tokenizer
	got, err := words(t, &zero, strings.NewReader("Zero Value"))
	if err != nil || !slices.Equal(got, []string{"zero", "value"}) {
		t.Fatalf("zero Tokenizer: got %q, %v", got, err)
	}
}

// chunkReader returns the data in chunks of random sizes in [1, max].
type chunkReader struct {
	data []byte
	rng  *rand.Rand
	max  int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1 + c.rng.IntN(c.max)
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// mixedDoc is a document with every construct the tokenizer knows.
func mixedDoc(rng *rand.Rand, n int) []byte {
	parts := []string{
		"Hello", "WORLD", "café", "caf&eacute;", "&amp;", "&#39;", "&#x27;", "<b>", "</b>",
		"<!-- c -->", "<script>a<b</script>", "<style>x</style>", "日本語", "ภาษาไทย", "ΣΑΣ",
		"İ", "😀", "❤️", "a<b", " ", "\n", ".", "3.14", "e\u0301", "\u00ad", "<!DOCTYPE x>",
		"&nbsp", "R&D", "<", ">", "&", ";", "x", "Ωμέγα", "한국어",
	}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.Bytes()
}

func TestChunkBoundaries(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 30; trial++ {
		doc := mixedDoc(rng, 200+rng.IntN(3000))
		if trial == 0 {
			// Exercise the 64 KiB buffer refill too.
			doc = mixedDoc(rng, 3*bufSize+17)
		}
		whole, err := words(t, newV1(), bytes.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		if len(whole) == 0 {
			t.Fatal("no words in mixed document")
		}
		inPlace(t, newV1(), doc, whole, err)
		oneByte, err := words(t, newV1(), iotest.OneByteReader(bytes.NewReader(doc)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(whole, oneByte) {
			t.Fatalf("trial %d: one-byte reader differs:\n%q\n%q", trial, whole, oneByte)
		}
		chunked, err := words(t, newV1(), &chunkReader{data: doc, rng: rng, max: 1 + rng.IntN(100)})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(whole, chunked) {
			t.Fatalf("trial %d: chunked reader differs", trial)
		}
		dataErr, err := words(t, newV1(), iotest.DataErrReader(bytes.NewReader(doc)))
		if err != nil || !slices.Equal(whole, dataErr) {
			t.Fatalf("trial %d: data+EOF reader differs (%v)", trial, err)
		}
	}
}

func TestLargeInputBoundedMemory(t *testing.T) {
	// 8 MB through the 64 KiB buffer: the word count proves all was read.
	const line = "The quick brown fox jumps over the lazy dog. "
	n := 8 << 20 / len(line)
	r := io.LimitReader(&repeatReader{s: line}, int64(n*len(line)))
	count := 0
	if err := newV1().Words(r, func([]byte) { count++ }); err != nil {
		t.Fatal(err)
	}
	if count != 9*n {
		t.Fatalf("got %d words, want %d", count, 9*n)
	}
	// One word of 1 MB is split into MaxWordLen pieces.
	var pieces, maxLen int
	err := newV1().Words(io.LimitReader(&repeatReader{s: "ab"}, 1<<20), func(w []byte) {
		pieces++
		maxLen = max(maxLen, len(w))
	})
	if err != nil || maxLen != MaxWordLen || pieces != (1<<20)/MaxWordLen {
		t.Fatalf("long word: %d pieces, max %d, %v", pieces, maxLen, err)
	}
}

type repeatReader struct {
	s string
	i int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	for n := range p {
		p[n] = r.s[r.i]
		r.i = (r.i + 1) % len(r.s)
	}
	return len(p), nil
}

func TestBinaryInput(t *testing.T) {
	tests := []struct {
		name   string
		in     []byte
		offset int64
		reason string
		before []string
	}{
		{"nul", []byte("hello\x00world"), 5, "NUL byte", nil},
		{"nul first", []byte{0, 'a'}, 0, "NUL byte", nil},
		{"nul in tag", []byte("a <b \x00>"), 5, "NUL byte", []string{"a"}},
		{"nul in script", []byte("<script>\x00</script>"), 8, "NUL byte", nil},
		{"invalid byte", []byte("ok \xff no"), 3, "invalid UTF-8", []string{"ok"}},
		{"lone continuation", []byte("ab\x80"), 2, "invalid UTF-8", nil},
		{"truncated rune at EOF", []byte("abc \xe6\x97"), 4, "invalid UTF-8", []string{"abc"}},
		{"overlong", []byte("x\xc0\xafy"), 1, "invalid UTF-8", nil},
		{"surrogate", []byte("x\xed\xa0\x80"), 1, "invalid UTF-8", nil},
		{"in comment", []byte("<!-- \xfe -->"), 5, "invalid UTF-8", nil},
		{"late", append(bytes.Repeat([]byte("word "), 30000), 0xff), 150000, "invalid UTF-8", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{bytes.NewReader(tc.in), iotest.OneByteReader(bytes.NewReader(tc.in))} {
				got, err := words(t, newV1(), r)
				if !errors.Is(err, ErrBinary) {
					t.Fatalf("err = %v, want ErrBinary", err)
				}
				var ie *InputError
				if !errors.As(err, &ie) {
					t.Fatalf("err %T is not *InputError", err)
				}
				if ie.Offset != tc.offset || ie.Reason != tc.reason {
					t.Errorf("got offset %d reason %q, want %d %q", ie.Offset, ie.Reason, tc.offset, tc.reason)
				}
				if tc.before != nil && !slices.Equal(got, tc.before) {
					t.Errorf("words before error %q, want %q", got, tc.before)
				}
				if !strings.Contains(err.Error(), tc.reason) {
					t.Errorf("message %q lacks reason", err.Error())
				}
			}
		})
	}
}

type errReader struct{}

var errBoom = errors.New("boom")

func (errReader) Read([]byte) (int, error) { return 0, errBoom }

type stuckReader struct{}

func (stuckReader) Read([]byte) (int, error) { return 0, nil }

func TestReadErrors(t *testing.T) {
	err := newV1().Words(errReader{}, func([]byte) {})
	if !errors.Is(err, errBoom) || errors.Is(err, ErrBinary) {
		t.Fatalf("err = %v", err)
	}
	err = newV1().Words(stuckReader{}, func([]byte) {})
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v", err)
	}
}

// checkWords asserts the invariants every output satisfies.
func checkWords(t *testing.T, ws []string) {
	t.Helper()
	for _, w := range ws {
		if w == "" || len(w) > MaxWordLen || !utf8.ValidString(w) {
			t.Fatalf("bad word %q", w)
		}
		if strings.ContainsAny(w, "<>&; \t\r\n\f\v\x00") || strings.ContainsFunc(w, func(r rune) bool {
			return r >= 'A' && r <= 'Z' || r == '\u00a0' || r == '\u3000' || r == '\ufeff'
		}) {
			t.Fatalf("word %q holds markup, upper case or space", w)
		}
	}
}

func FuzzWords(f *testing.F) {
	for _, s := range []string{
		"Don't STOP—the 3.14 <b>café</b>!", "caf&eacute; &amp; &#39;", "<script>x</script>y",
		"<!-- c -->z", "日本語 ภาษาไทย ΣΑΣ İ", "a\xffb", "\ufeffx", "😀❤️1️⃣",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tk := newV1()
		whole, errWhole := words(t, tk, bytes.NewReader(data))
		again, errAgain := words(t, tk, bytes.NewReader(data))
		if !slices.Equal(whole, again) || (errWhole == nil) != (errAgain == nil) {
			t.Fatal("not deterministic")
		}
		oneByte, errOne := words(t, newV1(), iotest.OneByteReader(bytes.NewReader(data)))
		if !slices.Equal(whole, oneByte) {
			t.Fatalf("one-byte reader differs: %q vs %q", whole, oneByte)
		}
		inPlace(t, newV1(), data, whole, errWhole)
		if (errWhole == nil) != (errOne == nil) {
			t.Fatalf("errors differ: %v vs %v", errWhole, errOne)
		}
		if errWhole != nil {
			var a, b *InputError
			if !errors.As(errWhole, &a) || !errors.As(errOne, &b) || !sameInputError(a, b) {
				t.Fatalf("errors differ: %v vs %v", errWhole, errOne)
			}
			if a.Offset < 0 || a.Offset >= int64(len(data)) {
				t.Fatalf("offset %d out of range", a.Offset)
			}
			return
		}
		if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
			t.Fatal("binary input accepted")
		}
		checkWords(t, whole)
		// Normalization is idempotent: the words re-tokenize to themselves
		// (unless a word was split at MaxWordLen, which may leave a
		// leading combining mark that is then dropped).
		for _, w := range whole {
			if len(w) > MaxWordLen-utf8.UTFMax {
				return
			}
		}
		re, err := words(t, tk, strings.NewReader(strings.Join(whole, " ")))
		if err != nil || !slices.Equal(re, whole) {
			t.Fatalf("not idempotent: %q -> %q (%v)", whole, re, err)
		}
	})
}

func BenchmarkWordsASCII(b *testing.B) {
	const para = "Permission is hereby granted, free of charge, to any person obtaining a copy " +
		"of this software and associated documentation files (the \"Software\"), to deal " +
		"in the Software without restriction, including without limitation the rights " +
		"to use, copy, modify, merge, publish, distribute, sublicense, and/or sell.\n"
	data := []byte(strings.Repeat(para, (1<<20)/len(para)))
	tk := newV1()
	r := bytes.NewReader(data)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r.Reset(data)
		if err := tk.Words(r, func([]byte) {}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWordsUnicode(b *testing.B) {
	data := mixedDoc(rand.New(rand.NewPCG(3, 4)), 1<<20)
	tk := newV1()
	r := bytes.NewReader(data)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r.Reset(data)
		if err := tk.Words(r, func([]byte) {}); err != nil {
			b.Fatal(err)
		}
	}
}

// newV1 returns a Tokenizer with the version 1 rules, which the tests of
// this file pin (databases made with version 1 keep them).
func newV1() *Tokenizer { return &Tokenizer{Version: 1} }
