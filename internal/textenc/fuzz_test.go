package textenc

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
)

// fuzzEncodings are the values of Options.Encoding the fuzz targets try.
var fuzzEncodings = []string{"", "utf-8", "windows-1252", "utf-16le", "utf-16be", "shift_jis", "euc-jp", "iso-2022-jp", "gbk", "gb18030", "big5", "euc-kr", "koi8-r", "x-user-defined", "iso-8859-7"}

// FuzzNewReader: no panic, and valid UTF-8 out except for forced UTF-8;
// detection without markup follows the per-byte rule.
func FuzzNewReader(f *testing.F) {
	seeds := []string{
		"", "plain ASCII", "© café", "caf\xE9 \x81\x8D\x8F\x90\x9D", "\xE2\x82\xAC\xE2\x82",
		"\xEF\xBB\xBFbom", "\xFF\xFEa\x00b\x00\x00\xD8", "\xFE\xFF\x00a\xD8\x00",
		`<meta charset="iso-8859-1">caf` + "\xE9",
		`<meta http-equiv="content-type" content="text/html;charset=shift_jis">` + "\x93\xfa",
		`<?xml version="1.0" encoding="ISO-8859-1"?><a>` + "\xE9</a>",
		"\x00\x00\xF4\x90\x80\x80\xED\xA0\x80\xC0\xAF",
	}
	for i, s := range seeds {
		f.Add([]byte(s), i%2 == 0, uint8(i), uint8(i*3))
	}
	f.Fuzz(func(t *testing.T, in []byte, markup bool, enc, chunk uint8) {
		o := Options{Encoding: fuzzEncodings[int(enc)%len(fuzzEncodings)], Markup: markup}
		var r io.Reader = bytes.NewReader(in)
		if chunk%3 == 1 {
			r = iotest.OneByteReader(r)
		} else if chunk%3 == 2 {
			r = &chunkReader{data: in, sizes: []int{1 + int(chunk)%7, int(chunk) % 5}}
		}
		d, info, err := NewReader(r, o)
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		if chunk&4 != 0 {
			p := make([]byte, 1+int(chunk>>3)%4)
			for {
				n, err := d.Read(p)
				out = append(out, p[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		} else if out, err = io.ReadAll(d); err != nil {
			t.Fatal(err)
		}
		if Verbatim(in, o) && !bytes.Equal(out, in) {
			t.Fatalf("%+v %+v: Verbatim, but read %q from %q", o, info, out, in)
		}
		if o.Encoding == "utf-8" {
			want := in
			if bytes.HasPrefix(want, utf8BOM) {
				want = want[len(utf8BOM):]
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("forced utf-8: got %q, want %q", out, want)
			}
			return
		}
		if !utf8.Valid(out) {
			t.Fatalf("%+v %+v: invalid UTF-8 output %q", o, info, out)
		}
		if o.Encoding == "" && !markup {
			if _, name := sniffBOM(in); name == "" {
				if want := refFallback(in); string(out) != want {
					t.Fatalf("got %q, want %q", out, want)
				}
			}
		}
	})
}

// FuzzPrescan checks metaLabel against the prescan of
// golang.org/x/net/html/charset, as DetermineEncoding exposes it.
func FuzzPrescan(f *testing.F) {
	for _, s := range prescanCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		checkPrescan(t, head)
	})
}

var prescanCases = []string{
	"",
	"no markup at all \xE9",
	`<meta charset="iso-8859-1">`,
	`<meta charset=" ISO-8859-2 ">`,
	`<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">`,
	`<meta content="text/html; charset=koi8-r" http-equiv="Content-Type">`,
	`<meta content="text/html; charset=koi8-r">`,
	`<meta charset="bogus"><meta charset="gbk">`,
	`<meta charset="utf-16be">`,
	`<meta charset="x-user-defined">`,
	`<meta charset="iso-2022-kr">`,
	`<meta content="charset='euc-jp'" http-equiv=content-type>`,
	`<meta content="text/html; charset=koi8-r" charset="bogus" http-equiv="Content-Type">`,
	`<meta charset="big5" charset="euc-kr">`,
	`<!-- <meta charset="iso-8859-5"> --><meta charset="iso-8859-6">`,
	`<script>"<meta charset=iso-8859-7>"</script>`,
	`<?xml version="1.0" encoding="ISO-8859-1"?>`,
	`<meta charset="` + "\u212Aoi8-r" + `">`,
	"<meta charset=\"windows-1251\">\xC3\xA9",
	"\xE9<meta charset=us-ascii>",
}

func TestPrescan(t *testing.T) {
	for _, s := range prescanCases {
		checkPrescan(t, []byte(s))
	}
}

// checkPrescan: when metaLabel finds a label, DetermineEncoding returns its
// encoding (UTF-16 as UTF-8, as the prescan does); when not, DetermineEncoding
// returns one of its own guesses, not a declared encoding.
func checkPrescan(t *testing.T, head []byte) {
	t.Helper()
	if len(head) > sniffLen {
		head = head[:sniffLen]
	}
	if n, _ := sniffBOM(head); n > 0 {
		return
	}
	e, name, _ := charset.DetermineEncoding(head, "")
	label := metaLabel(head)
	if label == "" {
		if e != encoding.Nop && e != charmap.Windows1252 {
			t.Fatalf("%q: charset finds %q, metaLabel nothing", head, name)
		}
		return
	}
	want, _, ok := index(label)
	if !ok {
		t.Fatalf("%q: metaLabel returns unknown label %q", head, label)
	}
	if want == "utf-16le" || want == "utf-16be" {
		want = "utf-8"
	}
	if name != want {
		t.Fatalf("%q: charset finds %q, metaLabel %q (%s)", head, name, label, want)
	}
}
