package textenc

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"
)

// refFallback is the whole-buffer reference for rule 3: each valid UTF-8
// sequence is kept, each other byte is its Windows-1252 character (the
// undefined bytes as C1 controls).
func refFallback(b []byte) string {
	var out []byte
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			c := charmap.Windows1252.DecodeByte(b[i])
			if c == utf8.RuneError {
				c = rune(b[i])
			}
			out = utf8.AppendRune(out, c)
			i++
			continue
		}
		out = append(out, b[i:i+size]...)
		i += size
	}
	return string(out)
}

// chunkReader returns its data in the chunk sizes it is given, cycling.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := c.sizes[c.i%len(c.sizes)]
	c.i++
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// randomSizes returns chunk sizes between 0 and 9.
func randomSizes(rng *rand.Rand) []int {
	s := make([]int, 1+rng.IntN(8))
	for i := range s {
		s[i] = rng.IntN(10)
	}
	s[0] = 1 + rng.IntN(9) // progress
	return s
}

// decode reads all of r's decoded text, through reads of p of size bufLen
// (0: io.ReadAll).
func decode(t testing.TB, r io.Reader, o Options, bufLen int) (string, Info) {
	t.Helper()
	d, info, err := NewReader(r, o)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	if bufLen == 0 {
		out, err := io.ReadAll(d)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return string(out), info
	}
	var out []byte
	p := make([]byte, bufLen)
	for {
		n, err := d.Read(p)
		out = append(out, p[:n]...)
		if err == io.EOF {
			return string(out), info
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
}

func latin1(s string) []byte {
	b, err := charmap.Windows1252.NewEncoder().Bytes([]byte(s))
	if err != nil {
		panic(err)
	}
	return b
}

func TestNewReader(t *testing.T) {
	sjis, err := japanese.ShiftJIS.NewEncoder().Bytes([]byte("日本語のテキスト"))
	if err != nil {
		t.Fatal(err)
	}
	u16le, _ := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder().Bytes([]byte("© café 日本"))
	u16be, _ := unicode.UTF16(unicode.BigEndian, unicode.UseBOM).NewEncoder().Bytes([]byte("© café 日本"))
	u16leNoBOM, _ := unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM).NewEncoder().Bytes([]byte("hé"))
	const mojibake = "\xC3\xA9" // "é" in UTF-8, "Ã©" in Windows-1252
	tests := []struct {
		name   string
		in     []byte
		o      Options
		want   string
		enc    string
		how    string
		errStr string
	}{
		{name: "latin1", in: latin1("© café"), want: "© café", enc: "utf-8", how: HowFallback},
		{name: "utf-8", in: []byte("© café 日本 🙂"), want: "© café 日本 🙂", enc: "utf-8", how: HowFallback},
		{name: "empty", in: nil, want: "", enc: "utf-8", how: HowFallback},
		{name: "empty markup", in: nil, o: Options{Markup: true}, want: "", enc: "utf-8", how: HowFallback},
		{name: "mixed", in: []byte("caf\xE9 \xE2\x82\xAC \x80 na\xEFve"), want: "café € € naïve", enc: "utf-8", how: HowFallback},
		{name: "undefined cp1252", in: []byte("\x81\x8D\x8F\x90\x9D"), want: "\u0081\u008D\u008F\u0090\u009D", enc: "utf-8", how: HowFallback},
		{name: "truncated at EOF", in: []byte("ab\xE2\x82"), want: "abâ‚", enc: "utf-8", how: HowFallback},
		{name: "surrogate", in: []byte("\xED\xA0\x80"), want: "í\u00A0€", enc: "utf-8", how: HowFallback},
		{name: "NUL", in: []byte("a\x00b\xE9"), want: "a\x00bé", enc: "utf-8", how: HowFallback},
		{name: "utf-8 BOM", in: []byte("\xEF\xBB\xBFcaf\xC3\xA9 \xE9"), want: "café é", enc: "utf-8", how: HowBOM},
		{name: "utf-16le BOM", in: u16le, want: "© café 日本", enc: "utf-16le", how: HowBOM},
		{name: "utf-16be BOM", in: u16be, want: "© café 日本", enc: "utf-16be", how: HowBOM},
		{name: "utf-16le BOM markup", in: u16le, o: Options{Markup: true}, want: "© café 日本", enc: "utf-16le", how: HowBOM},
		{name: "utf-16 odd length", in: []byte("\xFF\xFEa\x00b"), want: "a\uFFFD", enc: "utf-16le", how: HowBOM},
		{name: "BOM beats meta", in: append([]byte("\xEF\xBB\xBF"), `<meta charset="iso-8859-1">`+mojibake...), o: Options{Markup: true}, want: `<meta charset="iso-8859-1">é`, enc: "utf-8", how: HowBOM},
		{
			name: "meta charset", o: Options{Markup: true},
			in:   []byte(`<html><head><meta charset="iso-8859-1"></head><body>caf` + "\xE9 " + mojibake),
			want: `<html><head><meta charset="iso-8859-1"></head><body>café Ã©`, enc: "windows-1252", how: HowDeclared,
		},
		{
			name: "meta charset ignored without Markup",
			in:   []byte(`<meta charset="iso-8859-1">` + mojibake),
			want: `<meta charset="iso-8859-1">é`, enc: "utf-8", how: HowFallback,
		},
		{
			name: "meta http-equiv", o: Options{Markup: true},
			in:   []byte(`<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=ISO-8859-1">` + mojibake),
			want: `<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=ISO-8859-1">Ã©`, enc: "windows-1252", how: HowDeclared,
		},
		{
			name: "meta content without http-equiv", o: Options{Markup: true},
			in:   []byte(`<meta content="text/html; charset=iso-8859-1">` + mojibake),
			want: `<meta content="text/html; charset=iso-8859-1">é`, enc: "utf-8", how: HowFallback,
		},
		{
			name: "meta shift_jis", o: Options{Markup: true},
			in:   append([]byte(`<meta charset=shift_jis>`), sjis...),
			want: `<meta charset=shift_jis>日本語のテキスト`, enc: "shift_jis", how: HowDeclared,
		},
		{
			name: "meta unknown then known", o: Options{Markup: true},
			in:   []byte(`<meta charset="nonsense"><meta charset="windows-1252">` + mojibake),
			want: `<meta charset="nonsense"><meta charset="windows-1252">Ã©`, enc: "windows-1252", how: HowDeclared,
		},
		{
			name: "meta utf-8", o: Options{Markup: true},
			in:   []byte(`<meta charset="utf-8">` + mojibake + "\xE9"),
			want: `<meta charset="utf-8">éé`, enc: "utf-8", how: HowDeclared,
		},
		{
			name: "meta us-ascii", o: Options{Markup: true},
			in:   []byte(`<meta charset="US-ASCII">` + mojibake + "\xE9"),
			want: `<meta charset="US-ASCII">éé`, enc: "utf-8", how: HowDeclared,
		},
		{
			name: "meta utf-16 ignored", o: Options{Markup: true},
			in:   []byte(`<meta charset="utf-16"><meta charset="iso-8859-1">` + mojibake + "\xE9"),
			want: `<meta charset="utf-16"><meta charset="iso-8859-1">éé`, enc: "utf-8", how: HowFallback,
		},
		{
			name: "meta replacement ignored", o: Options{Markup: true},
			in:   []byte(`<meta charset="iso-2022-kr">` + mojibake),
			want: `<meta charset="iso-2022-kr">é`, enc: "utf-8", how: HowFallback,
		},
		{
			name: "meta x-user-defined", o: Options{Markup: true},
			in:   []byte(`<meta charset="x-user-defined">` + mojibake),
			want: `<meta charset="x-user-defined">Ã©`, enc: "windows-1252", how: HowDeclared,
		},
		{
			name: "meta after 1024 bytes", o: Options{Markup: true},
			in:   []byte(strings.Repeat("x", 1024) + `<meta charset="iso-8859-1">` + mojibake),
			want: strings.Repeat("x", 1024) + `<meta charset="iso-8859-1">é`, enc: "utf-8", how: HowFallback,
		},
		{
			name: "xml declaration", o: Options{Markup: true},
			in:   []byte(`<?xml version="1.0" encoding="ISO-8859-1"?><doc>` + mojibake + "</doc>"),
			want: `<?xml version="1.0" encoding="ISO-8859-1"?><doc>Ã©</doc>`, enc: "windows-1252", how: HowDeclared,
		},
		{
			name: "xml declaration single quotes", o: Options{Markup: true},
			in:   append([]byte("\n<?xml version='1.0' encoding = 'Shift_JIS' standalone='yes'?>"), sjis...),
			want: "\n<?xml version='1.0' encoding = 'Shift_JIS' standalone='yes'?>日本語のテキスト", enc: "shift_jis", how: HowDeclared,
		},
		{
			name: "xml declaration without encoding", o: Options{Markup: true},
			in:   []byte(`<?xml version="1.0"?><doc>` + mojibake + "</doc>"),
			want: `<?xml version="1.0"?><doc>é</doc>`, enc: "utf-8", how: HowFallback,
		},
		{
			name: "xml declaration utf-16 ignored", o: Options{Markup: true},
			in:   []byte(`<?xml version="1.0" encoding="UTF-16"?><meta charset="koi8-r"><a>` + "\xC1"),
			want: `<?xml version="1.0" encoding="UTF-16"?><meta charset="koi8-r"><a>а`, enc: "koi8-r", how: HowDeclared,
		},
		{name: "forced shift_jis", in: sjis, o: Options{Encoding: "Shift_JIS"}, want: "日本語のテキスト", enc: "shift_jis", how: HowForced},
		{name: "forced shift_jis beats markup", in: append([]byte(`<meta charset="utf-8">`), sjis...), o: Options{Encoding: "sjis", Markup: true}, want: `<meta charset="utf-8">日本語のテキスト`, enc: "shift_jis", how: HowForced},
		{name: "forced latin1", in: []byte("\xEF\xBB\xBF" + mojibake + "\x81"), o: Options{Encoding: "latin1"}, want: "ï»¿Ã©\u0081", enc: "windows-1252", how: HowForced},
		{name: "forced utf-8 strict", in: []byte("\xEF\xBB\xBFcaf\xE9\xC3\xA9\x00"), o: Options{Encoding: "UTF8"}, want: "caf\xE9é\x00", enc: "utf-8", how: HowForced},
		{name: "forced utf-16le strips its BOM", in: u16le, o: Options{Encoding: "utf-16le"}, want: "© café 日本", enc: "utf-16le", how: HowForced},
		{name: "forced utf-16le without BOM", in: u16leNoBOM, o: Options{Encoding: "utf-16"}, want: "hé", enc: "utf-16le", how: HowForced},
		{name: "forced utf-16be keeps other BOM", in: []byte("\xFF\xFE\x00a"), o: Options{Encoding: "utf-16be"}, want: "\uFFFEa", enc: "utf-16be", how: HowForced},
		{name: "forced auto", in: latin1("café"), o: Options{Encoding: " AUTO "}, want: "café", enc: "utf-8", how: HowFallback},
		{name: "unknown label", in: []byte("x"), o: Options{Encoding: "klingon-8"}, errStr: `"klingon-8"`},
		{name: "replacement label", in: []byte("x"), o: Options{Encoding: "iso-2022-kr"}, errStr: `"iso-2022-kr"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"all", "onebyte", "half", "dataerr", "p1", "p3"} {
				var r io.Reader = bytes.NewReader(tc.in)
				bufLen := 0
				switch mode {
				case "onebyte":
					r = iotest.OneByteReader(r)
				case "half":
					r = iotest.HalfReader(r)
				case "dataerr":
					r = iotest.DataErrReader(r)
				case "p1":
					bufLen = 1
				case "p3":
					bufLen = 3
				}
				if tc.errStr != "" {
					_, _, err := NewReader(r, tc.o)
					if !errors.Is(err, ErrUnknownEncoding) || !strings.Contains(err.Error(), tc.errStr) {
						t.Fatalf("error %v, want ErrUnknownEncoding naming %s", err, tc.errStr)
					}
					return
				}
				got, info := decode(t, r, tc.o, bufLen)
				if got != tc.want {
					t.Errorf("%s: got %q, want %q", mode, got, tc.want)
				}
				if info.Encoding != tc.enc || info.How != tc.how {
					t.Errorf("%s: info %+v, want {%s %s}", mode, info, tc.enc, tc.how)
				}
				if tc.how != HowForced || tc.enc != "utf-8" {
					if !utf8.ValidString(got) {
						t.Errorf("%s: invalid UTF-8 output %q", mode, got)
					}
				}
			}
		})
	}
}

func TestLookup(t *testing.T) {
	tests := []struct{ label, want string }{
		{"", "auto"},
		{"auto", "auto"},
		{" Auto\t", "auto"},
		{"utf-8", "utf-8"},
		{"UTF8", "utf-8"},
		{"latin1", "windows-1252"},
		{"ISO-8859-1", "windows-1252"},
		{"us-ascii", "windows-1252"},
		{"windows-1252", "windows-1252"},
		{"Shift_JIS", "shift_jis"},
		{"utf-16", "utf-16le"},
		{"UTF-16BE", "utf-16be"},
		{"koi8-r", "koi8-r"},
		{"gb2312", "gbk"},
	}
	for _, tc := range tests {
		got, err := Lookup(tc.label)
		if err != nil || got != tc.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tc.label, got, err, tc.want)
		}
	}
	for _, label := range []string{"klingon-8", "utf-9", "replacement", "hz-gb-2312", "auto-detect"} {
		got, err := Lookup(label)
		if !errors.Is(err, ErrUnknownEncoding) || !strings.Contains(err.Error(), `"`+label+`"`) {
			t.Errorf("Lookup(%q) = %q, %v; want ErrUnknownEncoding naming it", label, got, err)
		}
	}
}

// TestCP1252Table checks the package's Windows-1252 table against
// golang.org/x/text's.
func TestCP1252Table(t *testing.T) {
	undefined := map[byte]bool{0x81: true, 0x8D: true, 0x8F: true, 0x90: true, 0x9D: true}
	for b := 0; b < 256; b++ {
		want := charmap.Windows1252.DecodeByte(byte(b))
		if undefined[byte(b)] {
			if want != utf8.RuneError {
				t.Errorf("x/text maps undefined %#x to %U", b, want)
			}
			want = rune(b)
		}
		if got := cp1252Rune(byte(b)); got != want {
			t.Errorf("cp1252Rune(%#x) = %U, want %U", b, got, want)
		}
	}
}

// TestUTF8Unchanged: valid UTF-8 comes out byte for byte, whatever the
// chunking of the input and the size of the reads.
func TestUTF8Unchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		s := randomUTF8(rng, rng.IntN(300))
		sizes := randomSizes(rng)
		bufLen := []int{0, 1, 2, 3, 4, 7, 4096}[rng.IntN(7)]
		got, info := decode(t, &chunkReader{data: []byte(s), sizes: sizes}, Options{Markup: rng.IntN(2) == 0}, bufLen)
		if got != s {
			t.Fatalf("sizes %v buf %d: got %q, want %q", sizes, bufLen, got, s)
		}
		if info.Encoding != "utf-8" {
			t.Fatalf("info %+v", info)
		}
	}
	// Long input, past every internal buffer.
	s := randomUTF8(rng, 100000)
	if got, _ := decode(t, &chunkReader{data: []byte(s), sizes: []int{4093, 1, 7}}, Options{}, 0); got != s {
		t.Fatal("long UTF-8 input changed")
	}
}

// randomUTF8 returns n random runes of all lengths, with no byte-order mark
// at the start.
func randomUTF8(rng *rand.Rand, n int) string {
	var b []byte
	for i := 0; i < n; i++ {
		var r rune
		switch rng.IntN(5) {
		case 0:
			r = rune(rng.IntN(0x80))
		case 1:
			r = rune(0x80 + rng.IntN(0x800-0x80))
		case 2:
			r = rune(0x800 + rng.IntN(0x10000-0x800))
		case 3:
			r = rune(0x10000 + rng.IntN(utf8.MaxRune+1-0x10000))
		default:
			r = []rune("aé€😀 ")[rng.IntN(5)]
		}
		if !utf8.ValidRune(r) || (i == 0 && r == 0xFEFF) {
			r = 'x'
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}

// TestRandomBytes: any input decodes to valid UTF-8 equal to the per-byte
// rule, whatever the chunking.
func TestRandomBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := [][]byte{{0xE2, 0x82, 0xAC}, {0xF0, 0x9F, 0x98, 0x80}, {0xC3, 0xA9}, {0xE2, 0x82}, {0xF0, 0x9F}, {0xED, 0xA0, 0x80}, {0xC0, 0xAF}, {0xF4, 0x90, 0x80, 0x80}}
	for i := 0; i < 3000; i++ {
		var in []byte
		for n := rng.IntN(200); len(in) < n; {
			if rng.IntN(4) == 0 {
				in = append(in, pieces[rng.IntN(len(pieces))]...)
			} else {
				in = append(in, byte(rng.IntN(256)))
			}
		}
		if _, n := sniffBOM(in); n != "" {
			in[0] = 'x'
		}
		sizes := randomSizes(rng)
		bufLen := []int{0, 1, 2, 3, 5, 4096}[rng.IntN(6)]
		got, _ := decode(t, &chunkReader{data: in, sizes: sizes}, Options{}, bufLen)
		if want := refFallback(in); got != want {
			t.Fatalf("input %q sizes %v buf %d: got %q, want %q", in, sizes, bufLen, got, want)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("input %q: invalid output %q", in, got)
		}
	}
}

// TestEverySplit splits a short mixed input at every pair of positions.
func TestEverySplit(t *testing.T) {
	in := []byte("a\xC3\xA9\xE9\xE2\x82\xAC\xE2\x82x\xF0\x9F\x98\x80\xF0\x9F\x98\x80\x81\xC3")
	want := refFallback(in)
	if want != "aéé€â‚x😀😀\u0081Ã" {
		t.Fatalf("reference gives %q", want)
	}
	for i := 0; i <= len(in); i++ {
		for j := i; j <= len(in); j++ {
			r := io.MultiReader(bytes.NewReader(in[:i]), bytes.NewReader(in[i:j]), bytes.NewReader(in[j:]))
			got, _ := decode(t, iotest.HalfReader(r), Options{}, 0)
			if got != want {
				t.Fatalf("split at %d, %d: got %q, want %q", i, j, got, want)
			}
		}
	}
}

// TestLong: memory stays bounded and output right for a large input.
func TestLong(t *testing.T) {
	unit := []byte("caf\xE9 \xE2\x82\xAC na\xC3\xAFve \x81 ")
	in := bytes.Repeat(unit, 200000) // 3.6 MB
	d, _, err := NewReader(bytes.NewReader(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := refFallback(unit)
	buf := make([]byte, len(want))
	for i := 0; i < 200000; i++ {
		if _, err := io.ReadFull(d, buf); err != nil {
			t.Fatalf("unit %d: %v", i, err)
		}
		if string(buf) != want {
			t.Fatalf("unit %d: %q", i, buf)
		}
	}
	if n, err := d.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("after the end: %d, %v", n, err)
	}
}

// TestReadError: an error while reading the start is returned, wrapped.
func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	for _, o := range []Options{{}, {Markup: true}, {Encoding: "utf-16le"}} {
		_, _, err := NewReader(iotest.ErrReader(boom), o)
		if !errors.Is(err, boom) {
			t.Errorf("%+v: error %v, want boom", o, err)
		}
	}
	// An error later on comes from the reader, after the text before it.
	r := io.MultiReader(strings.NewReader("caf\xE9 "), iotest.ErrReader(boom))
	d, _, err := NewReader(iotest.OneByteReader(r), Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(d)
	if string(out) != "café " || !errors.Is(err, boom) {
		t.Errorf("got %q, %v", out, err)
	}
}

func TestVerbatim(t *testing.T) {
	for _, tc := range []struct {
		in     string
		o      Options
		verbat bool
	}{
		{"plain café", Options{}, true},
		{"plain café", Options{Encoding: "utf-8"}, true},
		{"plain", Options{Encoding: "windows-1252"}, false},
		{"caf\xe9", Options{}, false},
		{"\xef\xbb\xbfbom", Options{}, false},
		{`<meta charset="utf-8"><p>café`, Options{Markup: true}, true},
		{`<meta charset="iso-8859-1"><p>cafe`, Options{Markup: true}, false},
		{`<meta charset="iso-8859-1"><p>cafe`, Options{}, true},
		{"x", Options{Encoding: "no-such-encoding"}, false},
	} {
		if got := Verbatim([]byte(tc.in), tc.o); got != tc.verbat {
			t.Errorf("Verbatim(%q, %+v) = %v, want %v", tc.in, tc.o, got, tc.verbat)
		}
		if !tc.verbat {
			continue
		}
		d, _, err := NewReader(strings.NewReader(tc.in), tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := io.ReadAll(d); err != nil || string(out) != tc.in {
			t.Errorf("%q %+v: read %q, %v", tc.in, tc.o, out, err)
		}
	}
}
