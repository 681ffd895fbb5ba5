package normalize

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unicode"
	"unicode/utf8"
)

// wordsV2 tokenizes s with the newest rules and format f.
func wordsV2(t testing.TB, f Format, s string) []string {
	t.Helper()
	return wordsVersion(t, Version, f, s)
}

// wordsVersion tokenizes s with the rules of version v and format f.
func wordsVersion(t testing.TB, v int, f Format, s string) []string {
	t.Helper()
	ws, err := words(t, &Tokenizer{Version: v, Format: f}, strings.NewReader(s))
	if err != nil {
		t.Fatalf("Words(%q): %v", s, err)
	}
	inPlace(t, &Tokenizer{Version: v, Format: f}, []byte(s), ws, err)
	return ws
}

// TestV2Table checks the rules of versions 2 and 3, which differ only in
// markup: want3, when set, is what version 3 gives.
func TestV2Table(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		in     string
		want   []string
		want3  []string
	}{
		// Plain text keeps what follows '<' (issue: i<n; ... x>0 dropped words).
		{"code keeps words", FormatAuto, "for (i=0; i<n; i++) if (x>0) y", []string{"for", "i", "0", "i", "n", "i", "if", "x", "0", "y"}, nil},
		{"c header", FormatAuto, "#include <stdio.h>\nint main(void);", []string{"include", "stdio", "h", "int", "main", "void"}, nil},
		{"text keeps entities as text", FormatText, "AT&amp;T caf&eacute;", []string{"at", "amp", "t", "caf", "eacute"}, nil},
		{"text keeps tags as words", FormatText, "<b>bold</b>", []string{"b", "bold", "b"}, nil},
		{"email address kept", FormatAuto, "Ann Lee <ann@example.org>", []string{"ann", "lee", "ann", "example", "org"}, nil},
		{"markdown is text", FormatAuto, "# Title\n\nSome *text* with <br> inline.", []string{"title", "some", "text", "with", "br", "inline"}, nil},
		// HTML is stripped when sniffed or forced.
		{"doctype sniffed", FormatAuto, "<!DOCTYPE html><p>a<script>x()</script>b &amp; caf&eacute;</p>", []string{"a", "b", "café"}, []string{"ab", "café"}},
		{"html tag later sniffed", FormatAuto, "\n\n<!-- generated -->\n<html><body>Hello <b>there</b></body></html>", []string{"hello", "there"}, nil},
		{"fragment sniffed", FormatAuto, "<p>One <em>two</em></p>", []string{"one", "two"}, nil},
		{"xml sniffed", FormatAuto, `<?xml version="1.0"?><doc><t>Word</t> &lt;x&gt;</doc>`, []string{"word", "x"}, nil},
		{"forced markup", FormatMarkup, "a<i>b</i>c", []string{"a", "b", "c"}, []string{"abc"}},
		{"markup comment", FormatMarkup, "x<!-- <b>y</b> -->z", []string{"x", "z"}, []string{"xz"}},
		// Unicode.
		{"nfd equals nfc", FormatText, "Ame\u0301lie cre\u0300me", []string{"amélie", "crème"}, nil},
		{"zero width space joins", FormatText, "w\u200bo\u200br\u200bd a\u2060b c\u180ed", []string{"word", "ab", "cd"}, nil},
		{"soft hyphen and bom", FormatText, "\ufeffhy\u00adphen", []string{"hyphen"}, nil},
		{"ligature", FormatText, "ﬁnal ﬂow", []string{"final", "flow"}, nil},
		{"fullwidth", FormatText, "ＡＢＣ１２３", []string{"abc123"}, nil},
		{"circled and fractions", FormatText, "① ⑴ ½ x²", []string{"1", "1", "1", "2", "x2"}, nil},
		{"case folding", FormatText, "STRASSE Straße ẞ", []string{"strasse", "strasse", "ss"}, nil},
		{"cyrillic lookalikes", FormatText, "pаypal Рау", []string{"paypal", "pay"}, nil},
		{"greek lookalikes", FormatText, "ΑΒΓ", []string{"abγ"}, nil},
		{"trademark", FormatText, "Acme™ Inc", []string{"acmetm", "inc"}, nil},
		{"kelvin and ohm", FormatText, "5\u212a \u2126", []string{"5k", "ω"}, nil},
		{"han one letter words", FormatText, "日本語", []string{"日", "本", "語"}, nil},
		{"halfwidth katakana", FormatText, "ｶﾀｶﾅ", []string{"カ", "タ", "カ", "ナ"}, nil},
		{"hangul nfd", FormatText, "\u1112\u1161\u11ab", []string{"한"}, nil},
		{"lone mark dropped", FormatText, "\u0301x", []string{"x"}, nil},
		{"variation selector", FormatText, "a\ufe0fb", []string{"ab"}, nil},
		{"nbsp separates", FormatText, "a\u00a0b\u3000c", []string{"a", "b", "c"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for v := 2; v <= 3; v++ {
				want := tc.want
				if v == 3 && tc.want3 != nil {
					want = tc.want3
				}
				if got := wordsVersion(t, v, tc.format, tc.in); !slices.Equal(got, want) {
					t.Errorf("version %d: Words(%q)\n got %q\nwant %q", v, tc.in, got, want)
				}
			}
		})
	}
}

// TestV2EvasionsMatch checks that the evasions of the issue give the same
// words as the plain text.
func TestV2EvasionsMatch(t *testing.T) {
	plain := "The final results of the office survey were filed in a café near the station"
	evasions := map[string]func(string) string{
		"nfd": func(s string) string { return strings.ReplaceAll(s, "é", "e\u0301") },
		"zwsp in every word": func(s string) string {
			var b strings.Builder
			for _, r := range s {
				b.WriteRune(r)
				if unicode.IsLetter(r) {
					b.WriteRune('\u200b')
				}
			}
			return b.String()
		},
		"ligatures": func(s string) string {
			return strings.NewReplacer("fi", "ﬁ", "ffi", "ﬃ", "fl", "ﬂ").Replace(s)
		},
		"cyrillic homoglyphs": func(s string) string {
			return strings.NewReplacer("a", "а", "e", "е", "o", "о", "c", "с", "p", "р").Replace(s)
		},
		"upper case": strings.ToUpper,
		"full width": func(s string) string {
			return strings.Map(func(r rune) rune {
				if r >= '!' && r <= '~' {
					return r - '!' + '！'
				}
				return r
			}, s)
		},
		"word joiner": func(s string) string { return strings.ReplaceAll(s, "e", "e\u2060") },
	}
	want := wordsV2(t, FormatAuto, plain)
	for name, f := range evasions {
		if got := wordsV2(t, FormatAuto, f(plain)); !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		in   string
		want Format
	}{
		{"plain words", FormatText},
		{"", FormatText},
		{"i<n; x>0", FormatText},
		{"#include <stdio.h>", FormatText},
		{"Ann <ann@example.org>", FormatText},
		{"# Markdown\n<div>inline</div>", FormatText},
		{"<!DOCTYPE html>", FormatMarkup},
		{"  \n<HTML lang=en>", FormatMarkup},
		{"\ufeff<?xml version='1.0'?><a/>", FormatMarkup},
		{"<!-- x -->text", FormatMarkup},
		{"<p>para", FormatMarkup},
		{"<pre>x</pre>", FormatMarkup},
		{"<param>", FormatText},
		{"<bogus>", FormatText},
		{"Some intro text\n<body>", FormatMarkup},
		{"a <bodyguard> b", FormatText},
		{"\xff\xfe<\x00h\x00t\x00m\x00l\x00>\x00", FormatMarkup},
		{strings.Repeat("x", SniffLen) + "<html>", FormatText},
	}
	for _, tc := range tests {
		if got := Sniff([]byte(tc.in)); got != tc.want {
			t.Errorf("Sniff(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for name, want := range map[string]Format{
		"a.html": FormatMarkup, "A.HTM": FormatMarkup, "x/y.xml": FormatMarkup, "page.xhtml": FormatMarkup,
		"a.txt": FormatAuto, "a.md": FormatAuto, "noext": FormatAuto, "a.html.txt": FormatAuto,
		"https://e.org/p.html?q=1": FormatMarkup,
	} {
		if got := FormatOfName(name); got != want {
			t.Errorf("FormatOfName(%q) = %v, want %v", name, got, want)
		}
	}
	for s, want := range map[string]Format{"auto": FormatAuto, "TEXT": FormatText, "html": FormatMarkup, "xml": FormatMarkup} {
		if got, err := ParseFormat(s); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseFormat("pdf"); !errors.Is(err, ErrRules) {
		t.Errorf("ParseFormat(pdf): %v", err)
	}
}

// TestSniffAfterShortReads checks that the sniff sees the first SniffLen
// bytes even when the reader returns them one at a time.
func TestSniffAfterShortReads(t *testing.T) {
	doc := strings.Repeat("intro ", 100) + "<body><script>hidden()</script>shown</body>"
	want := wordsV2(t, FormatAuto, doc)
	if slices.Contains(want, "hidden") || !slices.Contains(want, "shown") {
		t.Fatalf("sniff missed the body tag: %q", want)
	}
	got, err := words(t, &Tokenizer{}, iotest.OneByteReader(strings.NewReader(doc)))
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("one byte at a time: %q, %v", got, err)
	}
}

func TestRulesRefused(t *testing.T) {
	for _, tk := range []*Tokenizer{{Version: -1}, {Version: Version + 1}, {Format: FormatMarkup + 1}} {
		if _, err := words(t, tk, strings.NewReader("x")); !errors.Is(err, ErrRules) {
			t.Errorf("Version %d Format %d: %v, want ErrRules", tk.Version, tk.Format, err)
		}
	}
}

// TestV2ChunkBoundaries: the words do not depend on how the input is cut.
func TestV2ChunkBoundaries(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 40; trial++ {
		doc := mixedDoc(rng, 200+rng.IntN(3000))
		if trial == 0 {
			doc = mixedDoc(rng, 3*bufSize+17)
		}
		for _, f := range []Format{FormatAuto, FormatText, FormatMarkup} {
			whole, err := words(t, &Tokenizer{Format: f}, bytes.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			chunked, err := words(t, &Tokenizer{Format: f}, &chunkReader{data: doc, rng: rng, max: 1 + rng.IntN(100)})
			if err != nil || !slices.Equal(whole, chunked) {
				t.Fatalf("format %v: chunked read differs (%v)", f, err)
			}
			checkWords(t, whole)
		}
	}
}

// TestV2Idempotent: the words of the words are the words.
func TestV2Idempotent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 300; trial++ {
		var b strings.Builder
		for b.Len() < 300 {
			r := rune(rng.IntN(0x3000))
			if rng.IntN(3) == 0 {
				r = rune(0x10000 + rng.IntN(0x20000))
			}
			if utf8.ValidRune(r) && r != 0 {
				b.WriteRune(r)
			}
			if rng.IntN(5) == 0 {
				b.WriteByte(' ')
			}
		}
		first := wordsV2(t, FormatText, b.String())
		again := wordsV2(t, FormatText, strings.Join(first, " "))
		if !slices.Equal(first, again) {
			for i := range min(len(first), len(again)) {
				if first[i] != again[i] {
					t.Fatalf("not idempotent: word %d %+q -> %+q", i, first[i], again[i])
				}
			}
			t.Fatalf("not idempotent:\n%+q\n%+q", first, again)
		}
	}
}

func FuzzWordsV2(f *testing.F) {
	for _, s := range []string{
		"Don't STOP—the 3.14 <b>café</b>!", "<!DOCTYPE html><p>caf&eacute;", "i<n; x>0",
		"ﬁ Ｆ ① e\u0301 w\u200bx pаypal", "日本語 ภาษาไทย ΣΑΣ İ ﷺ", "a\xffb", "\ufeffx",
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		fm := Format(format % 3)
		whole, errWhole := words(t, &Tokenizer{Format: fm}, bytes.NewReader(data))
		oneByte, errOne := words(t, &Tokenizer{Format: fm}, iotest.OneByteReader(bytes.NewReader(data)))
		if !slices.Equal(whole, oneByte) || (errWhole == nil) != (errOne == nil) {
			t.Fatalf("one-byte reader differs: %q %v vs %q %v", whole, errWhole, oneByte, errOne)
		}
		inPlace(t, &Tokenizer{Format: fm}, data, whole, errWhole)
		if errWhole != nil {
			return
		}
		for _, w := range whole {
			if len(w) == 0 || len(w) > MaxWordLen || !utf8.ValidString(w) {
				t.Fatalf("bad word %q", w)
			}
			if w != strings.ToLower(w) && strings.ContainsFunc(w, func(r rune) bool { return r < utf8.RuneSelf && unicode.IsUpper(r) }) {
				t.Fatalf("upper-case ASCII in %q", w)
			}
			if strings.ContainsFunc(w, isDefaultIgnorable) {
				t.Fatalf("ignorable code point in %q", w)
			}
		}
	})
}

func BenchmarkWordsV2ASCII(b *testing.B) {
	const para = "Permission is hereby granted, free of charge, to any person obtaining a copy " +
		"of this software and associated documentation files (the \"Software\"), to deal " +
		"in the Software without restriction, including without limitation the rights " +
		"to use, copy, modify, merge, publish, distribute, sublicense, and/or sell.\n"
	benchWords(b, &Tokenizer{}, []byte(strings.Repeat(para, (1<<20)/len(para))))
}

func BenchmarkWordsV2Unicode(b *testing.B) {
	benchWords(b, &Tokenizer{}, mixedDoc(rand.New(rand.NewPCG(3, 4)), 1<<20))
}

func benchWords(b *testing.B, tk *Tokenizer, data []byte) {
	r := bytes.NewReader(data)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r.Reset(data)
		if err := tk.Words(r, func([]byte) {}); err != nil {
			b.Fatal(err)
		}
	}
}
