package db

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"
)

// encode returns s in the encoding e.
func encode(t *testing.T, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b
}

// exactMatch adds utf8 as "a" to a new database with opts and queries with
// other read with to: it must be an exact duplicate of "a".
func exactMatch(t *testing.T, opts *Options, utf8 string, other []byte, to TextOptions) {
	t.Helper()
	d := openTest(t, "", opts)
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte(utf8)}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := d.Query(ctx, other, QueryOptions{Threshold: 0.5, TextOptions: to})
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	if len(res.Matches) != 1 || !res.Matches[0].Exact {
		t.Fatalf("matches %+v, want one exact match of the UTF-8 text", res.Matches)
	}
}

// TestEncodings: a Latin-1 or Windows-1252 file, a UTF-16 file with a
// byte-order mark and an HTML page that declares its charset are read as the
// text they encode, so each is an exact duplicate of its UTF-8 copy.
func TestEncodings(t *testing.T) {
	french := frenchText(5, 400) // has œ: Windows-1252, not ISO-8859-1 proper
	latin := strings.NewReplacer("œ", "oe").Replace(french)
	page := func(charset, body string) string {
		return "<!DOCTYPE html><html><head><meta charset=\"" + charset + "\"><title>t</title></head><body><p>" + body + "</p></body></html>"
	}
	utf16 := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM)
	utf16be := unicode.UTF16(unicode.BigEndian, unicode.UseBOM)
	for _, c := range []struct {
		name  string
		utf8  string
		other []byte
		to    TextOptions
	}{
		{"windows-1252 detected", french, encode(t, charmap.Windows1252, french), TextOptions{}},
		{"latin-1 detected", latin, encode(t, charmap.ISO8859_1, latin), TextOptions{}},
		{"latin-1 named", latin, encode(t, charmap.ISO8859_1, latin), TextOptions{Encoding: "latin1"}},
		{"utf-16le with byte-order mark", french, encode(t, utf16, french), TextOptions{}},
		{"utf-16be with byte-order mark", french, encode(t, utf16be, french), TextOptions{}},
		{"utf-8 with byte-order mark", french, append([]byte("\ufeff"), french...), TextOptions{}},
		{"html declaring iso-8859-15", page("utf-8", latin), encode(t, charmap.ISO8859_15, page("iso-8859-15", latin)), TextOptions{}},
		{"html declaring koi8-r", page("utf-8", "Съешь же ещё этих мягких французских булок да выпей чаю"),
			encode(t, charmap.KOI8R, page("koi8-r", "Съешь же ещё этих мягких французских булок да выпей чаю")), TextOptions{}},
		{"shift_jis named", "日本語 の 文書 は 名前 を 付けて 読む 必要 が あります", encode(t, japanese.ShiftJIS, "日本語 の 文書 は 名前 を 付けて 読む 必要 が あります"), TextOptions{Encoding: "Shift_JIS"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			exactMatch(t, nil, c.utf8, c.other, c.to)
		})
	}
}

// TestEncodingDeclaredInTextIgnored: a plain text that mentions a <meta
// charset> is not HTML, so its bytes are still read as UTF-8.
func TestEncodingDeclaredInTextIgnored(t *testing.T) {
	s := "to declare it write <meta charset=\"koi8-r\"> in the head: " + frenchText(6, 200)
	exactMatch(t, nil, s, []byte(s), TextOptions{Format: FormatText})
}

// TestEncodingErrors: an unknown label is refused up front, naming it; a
// version 1 database reads UTF-8 only and refuses another named encoding;
// a strict "utf-8" refuses bytes that are not UTF-8.
func TestEncodingErrors(t *testing.T) {
	if _, err := ParseEncoding("klingon-8"); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), `"klingon-8"`) {
		t.Errorf("ParseEncoding(klingon-8): %v", err)
	}
	for label, want := range map[string]string{"": "auto", "AUTO": "auto", "latin1": "windows-1252", "UTF8": "utf-8", "sjis": "shift_jis"} {
		if got, err := ParseEncoding(label); err != nil || got != want {
			t.Errorf("ParseEncoding(%q) = %q, %v; want %q", label, got, err, want)
		}
	}
	d := openTest(t, "", nil)
	if _, err := d.Query(ctx, []byte("some words here"), QueryOptions{Threshold: 0.5, TextOptions: TextOptions{Encoding: "nope"}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("query with an unknown encoding: %v", err)
	}
	if _, err := d.Add(ctx, Input{ID: "x", Text: []byte("caf\xe9 ok"), TextOptions: TextOptions{Encoding: "utf8"}}, nil); !errors.Is(err, ErrBinary) {
		t.Errorf("strict utf-8 on Latin-1 bytes: %v, want ErrBinary", err)
	}
	v1 := openTest(t, "", &Options{NormalizeVersion: 1})
	if _, err := v1.Add(ctx, Input{ID: "x", Text: []byte("caf\xe9 ok"), TextOptions: TextOptions{Encoding: "latin1"}}, nil); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("version 1 with latin1: %v, want ErrInvalidOptions", err)
	}
	if _, err := v1.Add(ctx, Input{ID: "x", Text: []byte("caf\xe9 ok")}, nil); !errors.Is(err, ErrBinary) {
		t.Errorf("version 1 with Latin-1 bytes: %v, want ErrBinary as before", err)
	}
	if _, err := v1.Add(ctx, Input{ID: "y", Text: []byte("café ok"), TextOptions: TextOptions{Encoding: "utf-8"}}, nil); err != nil {
		t.Errorf("version 1 with utf-8 named: %v", err)
	}
}

// TestTextInPlaceSameAsReader: a text given in memory (Input.Text, read in
// place when decoding would not change it) makes the same document, or the
// same error, as the same bytes given as a reader, whatever the encoding,
// format, normalization version and text keeping.
func TestTextInPlaceSameAsReader(t *testing.T) {
	page := func(charset, body string) string {
		return `<!DOCTYPE html><html><head><meta charset="` + charset + `"></head><body><p>` + body + "</p></body></html>"
	}
	texts := []string{
		"plain ascii words for a test of the fast path",
		"café naïve œuvre 日本語のテキスト",
		"caf\xe9 au lait \x81 bytes that are not UTF-8",
		"\xef\xbb\xbfwith a byte-order mark",
		string(encode(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), "utf-16 text here")),
		page("iso-8859-1", "plain ascii body"),
		page("utf-8", "café body"),
		page("windows-1252", "caf\xe9"),
		"<p>Markup &amp; entities</p>",
		"a NUL \x00 byte",
		"",
		"... ---",
		strings.Repeat("long text over the tokenizer's buffer ", 3000),
		"a\x00" + strings.Repeat("binary, and over MaxTextSize ", 5000),
		strings.Repeat("over MaxTextSize ", 8000) + "\x00",
	}
	for _, version := range []int{1, 2} {
		for _, keep := range []bool{false, true} {
			d := openTest(t, "", &Options{NormalizeVersion: version, KeepTexts: keep, MaxTextSize: 100 << 10})
			for _, to := range []TextOptions{{}, {Format: FormatText}, {Format: FormatHTML}, {Encoding: "utf-8"}, {Encoding: "latin1"}} {
				for i, text := range texts {
					inPlace, err1 := d.prepare(ctx, &Input{ID: "a", Text: []byte(text), TextOptions: to})
					read, err2 := d.prepare(ctx, &Input{ID: "a", Reader: strings.NewReader(text), TextOptions: to})
					if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
						t.Fatalf("v%d keep=%v %+v text %d: in place: %v; reader: %v", version, keep, to, i, err1, err2)
					}
					if !reflect.DeepEqual(inPlace, read) {
						t.Fatalf("v%d keep=%v %+v text %d: in place %+v\nreader %+v", version, keep, to, i, inPlace, read)
					}
				}
			}
		}
	}
}
