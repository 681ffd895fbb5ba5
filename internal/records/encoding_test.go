package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf16"
)

// utf16Bytes encodes s as UTF-16, big-endian or not, without a mark.
func utf16Bytes(s string, big bool) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		if big {
			b = binary.BigEndian.AppendUint16(b, u)
		} else {
			b = binary.LittleEndian.AppendUint16(b, u)
		}
	}
	return b
}

// utf32Bytes encodes s as UTF-32, big-endian or not, without a mark.
func utf32Bytes(s string, big bool) []byte {
	var b []byte
	for _, r := range s {
		if big {
			b = binary.BigEndian.AppendUint32(b, uint32(r))
		} else {
			b = binary.LittleEndian.AppendUint32(b, uint32(r))
		}
	}
	return b
}

var wideSamples = map[string]string{
	"csv":   "id,text\na,first text é\nb,second text\n",
	"tsv":   "id\ttext\na\tfirst text é\nb\tsecond text\n",
	"jsonl": "{\"id\":\"a\",\"text\":\"first text é\"}\n{\"id\":\"b\",\"text\":\"second text\"}\n",
}

// A UTF-16 or UTF-32 text, plain or compressed, is one error of Open (or
// NewReader) naming the file and the encoding, wrapping ErrNotUTF8.
func TestWideTextRefused(t *testing.T) {
	dir := t.TempDir()
	encodings := []struct {
		name string
		data func(string) []byte
		want string
	}{
		{"utf16le", func(s string) []byte { return append([]byte{0xff, 0xfe}, utf16Bytes(s, false)...) },
			"the text is UTF-16 (byte-order mark FF FE): records must be UTF-8; convert it first (iconv -f UTF-16 -t UTF-8)"},
		{"utf16be", func(s string) []byte { return append([]byte{0xfe, 0xff}, utf16Bytes(s, true)...) },
			"the text is UTF-16 (byte-order mark FE FF)"},
		{"utf32le", func(s string) []byte { return append([]byte{0xff, 0xfe, 0, 0}, utf32Bytes(s, false)...) },
			"the text is UTF-32 (byte-order mark FF FE 00 00): records must be UTF-8; convert it first (iconv -f UTF-32 -t UTF-8)"},
		{"utf32be", func(s string) []byte { return append([]byte{0, 0, 0xfe, 0xff}, utf32Bytes(s, true)...) },
			"the text is UTF-32 (byte-order mark 00 00 FE FF)"},
		{"nobom16le", func(s string) []byte { return utf16Bytes(s, false) },
			"the text is UTF-16LE (no byte-order mark; NUL bytes between its characters): records must be UTF-8; convert it first (iconv -f UTF-16LE -t UTF-8)"},
		{"nobom16be", func(s string) []byte { return utf16Bytes(s, true) }, "the text is UTF-16BE (no byte-order mark"},
		{"nobom32le", func(s string) []byte { return utf32Bytes(s, false) }, "the text is UTF-32LE (no byte-order mark"},
		{"nobom32be", func(s string) []byte { return utf32Bytes(s, true) }, "the text is UTF-32BE (no byte-order mark"},
	}
	for _, format := range []string{"csv", "tsv", "jsonl"} {
		for _, enc := range encodings {
			plain := enc.data(wideSamples[format])
			for _, c := range []struct {
				suffix string
				data   []byte
			}{
				{"", plain},
				{".gz", gzipBytes(t, plain)},
				{".zst", zstdBytes(t, plain)},
			} {
				p := writeFile(t, dir, enc.name+"."+format+c.suffix, c.data)
				for _, ahead := range []bool{false, true} {
					r, err := Open(p, Options{IDField: "id", DecodeAhead: ahead})
					if err == nil {
						recs := drain(t, r)
						r.Close()
						t.Errorf("%s (ahead %v): opened, read %d records: %+v", p, ahead, len(recs), recs)
						continue
					}
					if !errors.Is(err, ErrNotUTF8) || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), enc.want) {
						t.Errorf("%s (ahead %v): Open error %q, want one wrapping ErrNotUTF8 naming the file and holding %q", p, ahead, err, enc.want)
					}
				}
			}
			// Standard input, compressed or not.
			for _, data := range [][]byte{plain, gzipBytes(t, plain)} {
				_, err := NewReader(bytes.NewReader(data), "-", CompressionNone, Options{IDField: "id", Format: formatNamed(format)})
				if !errors.Is(err, ErrNotUTF8) || !strings.HasPrefix(err.Error(), "-: ") || !strings.Contains(err.Error(), enc.want) {
					t.Errorf("%s %s from a stream: error %v", enc.name, format, err)
				}
			}
		}
	}
}

func formatNamed(s string) Format {
	f, err := ParseFormat(s)
	if err != nil {
		panic(err)
	}
	return f
}

// A UTF-8 byte-order mark is skipped, as it was, plain or compressed, and
// from a stream; text without a mark reads as ever.
func TestUTF8MarkAccepted(t *testing.T) {
	dir := t.TempDir()
	for _, format := range []string{"csv", "tsv", "jsonl"} {
		for _, mark := range []string{"\ufeff", ""} {
			plain := []byte(mark + wideSamples[format])
			for _, c := range []struct {
				suffix string
				data   []byte
			}{
				{"", plain},
				{".gz", gzipBytes(t, plain)},
			} {
				p := writeFile(t, dir, "m"+strings.Repeat("b", len(mark))+"."+format+c.suffix, c.data)
				recs := readAll(t, p, Options{IDField: "id"})
				if got := ids(recs); !equalStrings(got, []string{"a", "b"}) {
					t.Errorf("%s: ids %q", p, got)
				}
				if got := texts(recs); !equalStrings(got, []string{"first text é", "second text"}) {
					t.Errorf("%s: texts %q", p, got)
				}
				r, err := NewReader(bytes.NewReader(c.data), "-", CompressionNone, Options{IDField: "id", Format: formatNamed(format)})
				if err != nil {
					t.Fatalf("%s from a stream: %v", p, err)
				}
				if got := ids(drain(t, r)); !equalStrings(got, []string{"a", "b"}) {
					t.Errorf("%s from a stream: ids %q", p, got)
				}
				r.Close()
			}
		}
	}
}

// Files shorter than the bytes looked at read as before: empty, one
// record of a few bytes, a header alone.
func TestShortTextsRead(t *testing.T) {
	dir := t.TempDir()
	for name, want := range map[string][]string{
		"empty.jsonl":  nil,
		"empty.csv":    nil,
		"tiny.jsonl":   nil, // "{}": a bad record (no text)
		"header.csv":   nil,
		"one.jsonl":    {"x"},
		"one.csv":      {"x"},
		"one.jsonl.gz": {"x"},
	} {
		var data []byte
		switch name {
		case "tiny.jsonl":
			data = []byte("{}")
		case "header.csv":
			data = []byte("text")
		case "one.jsonl":
			data = []byte(`{"text":"x"}`)
		case "one.csv":
			data = []byte("text\nx")
		case "one.jsonl.gz":
			data = gzipBytes(t, []byte(`{"text":"x"}`))
		}
		p := writeFile(t, dir, name, data)
		var good []string
		for _, r := range readAll(t, p, Options{}) {
			if r.Err == "" {
				good = append(good, r.Text)
			}
		}
		if !equalStrings(good, want) {
			t.Errorf("%s: texts %q, want %q", name, good, want)
		}
	}
}

// A compressed stream cut within its first bytes still opens, and its
// error comes from Next, naming the file, as before the first bytes were
// looked at.
func TestCutStreamErrorAtNext(t *testing.T) {
	dir := t.TempDir()
	data := gzipBytes(t, []byte(strings.Repeat(`{"id":"a","text":"some text"}`+"\n", 100)))
	p := writeFile(t, dir, "cut.jsonl.gz", data[:14])
	r, err := Open(p, Options{IDField: "id"})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	_, err = r.Next()
	if err == nil || err == io.EOF || errors.Is(err, ErrNotUTF8) || !strings.Contains(err.Error(), p) {
		t.Errorf("Next = %v, want the stream's error naming the file", err)
	}
}

func TestWideNoBOM(t *testing.T) {
	for _, c := range []struct {
		head []byte
		want string
	}{
		{[]byte(`{"id":"a","text":"plain UTF-8 text, é and 中文"}`), ""},
		{make([]byte, 64), ""}, // NULs everywhere: not text at all
		{[]byte{'{', 0}, ""},   // too short to tell
		{utf16Bytes("id,text\n1,中文中文中文中文中文中文中文中文中文", false), "UTF-16LE"},
		{utf16Bytes("id,text\n1,中文中文中文中文中文中文中文中文中文", true), "UTF-16BE"},
		{utf16Bytes("中文中文中文中文中文中文中文中文中文中文中文中文", false), ""}, // no ASCII: not told
		{utf32Bytes("中文中文中文中文中文中文中文中文", false), "UTF-32LE"},
		{utf32Bytes("id", true), "UTF-32BE"},
		{append([]byte("ab"), make([]byte, 62)...), ""},
	} {
		head := c.head
		if len(head) > wideHead {
			head = head[:wideHead]
		}
		if got := wideNoBOM(head); got != c.want {
			t.Errorf("wideNoBOM(% x) = %q, want %q", head, got, c.want)
		}
	}
	// Where the check reads: an input with no NUL in its first four
	// bytes is not read further (a pipe's first record is not held
	// back), and it reads whole.
	in := &countReads{r: strings.NewReader("abcd" + strings.Repeat("x", 100))}
	rd, err := checkUTF8(in)
	if err != nil || in.n != 4 {
		t.Fatalf("checkUTF8 read %d bytes, error %v; want 4, nil", in.n, err)
	}
	if b, _ := io.ReadAll(rd); string(b) != "abcd"+strings.Repeat("x", 100) {
		t.Errorf("read through checkUTF8: %q", b)
	}
}

type countReads struct {
	r io.Reader
	n int
}

func (c *countReads) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
