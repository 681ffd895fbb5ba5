package records

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstdBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCompressedRead(t *testing.T) {
	dir := t.TempDir()
	jsonl := []byte("{\"id\":\"a\",\"text\":\"one\"}\n{\"id\":\"b\",\"text\":\"two\"}\n")
	csvData := []byte("id,text\na,one\nb,two\n")
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"d.jsonl", jsonl},
		{"d.jsonl.gz", gzipBytes(t, jsonl)},
		{"d.jsonl.zst", zstdBytes(t, jsonl)},
		{"d.ndjson.zstd", zstdBytes(t, jsonl)},
		{"d.csv.gz", gzipBytes(t, csvData)},
		{"d.tsv.zst", zstdBytes(t, bytes.ReplaceAll(csvData, []byte(","), []byte("\t")))},
		// Concatenated gzip members are one stream.
		{"two.jsonl.gz", append(gzipBytes(t, jsonl[:24]), gzipBytes(t, jsonl[24:])...)},
		// A name that does not say the file is compressed: its first
		// bytes do (it used to be read as records of binary garbage).
		{"shard-0000.jsonl", gzipBytes(t, jsonl)},
		{"part.jsonl", zstdBytes(t, jsonl)},
		{"data.csv", gzipBytes(t, csvData)},
		{"two.jsonl", append(gzipBytes(t, jsonl[:24]), gzipBytes(t, jsonl[24:])...)},
	} {
		p := writeFile(t, dir, tc.name, tc.data)
		for _, ahead := range []bool{false, true} {
			testCompressedRead(t, p, tc.name, tc.data, ahead)
		}
	}
}

// testCompressedRead reads the two records of p (data), decompressed ahead
// or not.
func testCompressedRead(t *testing.T, p, name string, data []byte, ahead bool) {
	t.Helper()
	r, err := Open(p, Options{IDField: "id", DecodeAhead: ahead})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer r.Close()
	recs := drain(t, r)
	if got := ids(recs); !equalStrings(got, []string{"a", "b"}) {
		t.Errorf("%s (ahead %v): ids %q", name, ahead, got)
	}
	if got := texts(recs); !equalStrings(got, []string{"one", "two"}) {
		t.Errorf("%s (ahead %v): texts %q", name, ahead, got)
	}
	if recs[1].Pos.Line != 2 && recs[1].Pos.Line != 3 {
		t.Errorf("%s (ahead %v): position %v", name, ahead, recs[1].Pos)
	}
	if done, size := r.Progress(); done != int64(len(data)) || size != int64(len(data)) {
		t.Errorf("%s (ahead %v): Progress = %d, %d; want %d", name, ahead, done, size, len(data))
	}
}

func TestBzip2Fixture(t *testing.T) {
	p := filepath.Join("testdata", "small.jsonl.bz2")
	recs := readAll(t, p, Options{IDField: "id"})
	if got := ids(recs); !equalStrings(got, []string{"b1", "b2"}) {
		t.Errorf("ids %q", got)
	}
	if got := texts(recs); !equalStrings(got, []string{"first bzip2 record", "second bzip2 record"}) {
		t.Errorf("texts %q", got)
	}
	// The same stream through NewReader.
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := NewReader(f, "-", CompressionBzip2, Options{IDField: "id"})
	if err != nil {
		t.Fatal(err)
	}
	if recs := drain(t, r); len(recs) != 2 || recs[0].Pos.File != "-" {
		t.Errorf("NewReader bzip2: %+v", recs)
	}
	// Told by its first bytes: a file named as uncompressed, and a stream.
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if recs := readAll(t, writeFile(t, t.TempDir(), "plain.jsonl", data), Options{IDField: "id"}); !equalStrings(ids(recs), []string{"b1", "b2"}) {
		t.Errorf("bzip2 named .jsonl: %+v", recs)
	}
	for _, in := range [][]byte{data, gzipBytes(t, []byte("{\"id\":\"b1\",\"text\":\"x\"}\n{\"id\":\"b2\",\"text\":\"y\"}\n"))} {
		r, err := NewReader(bytes.NewReader(in), "-", CompressionNone, Options{IDField: "id"})
		if err != nil {
			t.Fatal(err)
		}
		if recs := drain(t, r); !equalStrings(ids(recs), []string{"b1", "b2"}) {
			t.Errorf("compressed standard input: %+v", recs)
		}
	}
	// Texts that begin like no magic number are read as they are, short
	// ones included.
	for _, text := range []string{"", "{", "BZh9 not bzip2\n", "{\"id\":\"a\",\"text\":\"BZh91AY&SY\"}\n"} {
		r, err := NewReader(strings.NewReader(text), "-", CompressionNone, Options{IDField: "id"})
		if err != nil {
			t.Fatal(err)
		}
		recs := drain(t, r)
		if text == "{\"id\":\"a\",\"text\":\"BZh91AY&SY\"}\n" && (len(recs) != 1 || recs[0].Err != "") {
			t.Errorf("%q: %+v", text, recs)
		}
	}
}

func TestCorruptCompressedStream(t *testing.T) {
	dir := t.TempDir()
	var big bytes.Buffer
	for i := range 2000 {
		big.WriteString(`{"id":"` + strings.Repeat("x", i%50) + `y","text":"some text to make the stream longer"}` + "\n")
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"c.jsonl.gz", gzipBytes(t, big.Bytes())},
		{"c.jsonl.zst", zstdBytes(t, big.Bytes())},
	} {
		data := bytes.Clone(tc.data)
		// Truncate the stream: the records before are read, then Next fails.
		data = data[:len(data)/2]
		p := writeFile(t, dir, tc.name, data)
		for _, ahead := range []bool{false, true} {
			testTruncatedStream(t, p, tc.name, ahead)
		}
	}
	// Not gzip at all: an error at Open.
	p := writeFile(t, dir, "plain.jsonl.gz", []byte(`{"id":"a","text":"b"}`))
	if _, err := Open(p, Options{}); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("Open of a non-gzip .gz = %v", err)
	}
}

// TestStreamCutBeforeFirstRecord: a compressed file cut before the end
// of its first block of text (no record comes out of a zstd stream cut
// so) is an error naming the file, as a later cut is, never a file read
// whole; the
// stream given by its name or told by its first bytes, read ahead or not,
// standard input too.
func TestStreamCutBeforeFirstRecord(t *testing.T) {
	dir := t.TempDir()
	var text bytes.Buffer
	for i := range 50 {
		fmt.Fprintf(&text, "{\"id\":\"r%d\",\"text\":\"a few words of record %d\"}\n", i, i)
	}
	streams := []struct {
		ext  string
		data []byte
	}{
		{".zst", zstdBytes(t, text.Bytes())},
		{".gz", gzipBytes(t, text.Bytes())},
	}
	for _, s := range streams {
		for _, cut := range []int{len(s.data) / 2, len(s.data) - 1, 12, 20} {
			for _, name := range []string{"cut.jsonl" + s.ext, "cut-unnamed.jsonl"} {
				p := writeFile(t, dir, name, s.data[:cut])
				for _, ahead := range []bool{false, true} {
					r, err := Open(p, Options{IDField: "id", DecodeAhead: ahead})
					if err == nil {
						_, err = countUntilError(r)
						r.Close()
						if err == io.EOF {
							err = nil
						}
					}
					if err == nil || !strings.Contains(err.Error(), p) {
						t.Errorf("%s cut at %d of %d (ahead %v): %v, want an error naming the file", name, cut, len(s.data), ahead, err)
					}
				}
			}
			r, err := NewReader(bytes.NewReader(s.data[:cut]), "-", CompressionNone, Options{IDField: "id"})
			if err == nil {
				if _, err = countUntilError(r); err == io.EOF {
					err = nil
				}
			}
			if err == nil {
				t.Errorf("standard input %s cut at %d: read as a whole text", s.ext, cut)
			}
		}
	}
}

// testTruncatedStream reads the truncated stream p, decompressed ahead or
// not: the records before the cut, then an error naming the file.
func testTruncatedStream(t *testing.T, p, name string, ahead bool) {
	t.Helper()
	r, err := Open(p, Options{IDField: "id", DecodeAhead: ahead})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer r.Close()
	// The last, cut line may be a bad record; corruption is the error.
	n, nextErr := countUntilError(r)
	if n == 0 || nextErr == nil || nextErr.Error() == "EOF" || !strings.Contains(nextErr.Error(), p) {
		t.Errorf("%s (ahead %v): Next error = %v after %d records, want records, then a stream error naming the file", name, ahead, nextErr, n)
	}
}

// countUntilError reads r to its error (io.EOF at its end) and returns how
// many good records it read before it.
func countUntilError(r *Reader) (int, error) {
	var n int
	for {
		rec, err := r.Next()
		if err != nil {
			return n, err
		}
		if rec.Err == nil {
			n++
		}
	}
}

// TestDecodeAheadCloseEarly: a Reader that decompresses ahead, closed after
// its first record of a long stream, stops its goroutine before closing
// the decompressor it reads (run under -race).
func TestDecodeAheadCloseEarly(t *testing.T) {
	var big bytes.Buffer
	for i := range 40000 {
		fmt.Fprintf(&big, `{"id":"r%d","text":"record %d of a stream long enough to fill every buffer"}`+"\n", i, i)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"long.jsonl.zst": zstdBytes(t, big.Bytes()), "long.jsonl.gz": gzipBytes(t, big.Bytes())} {
		p := writeFile(t, dir, name, data)
		r, err := Open(p, Options{IDField: "id", DecodeAhead: true})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := r.Next()
		if err != nil || rec.ID != "r0" {
			t.Fatalf("%s: first record %+v, %v", name, rec, err)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("%s: Close: %v", name, err)
		}
		if _, err := r.Next(); err == nil {
			t.Fatalf("%s: Next after Close returned a record", name)
		}
	}
}

// TestGzipTrailingZeros: zero bytes after the last gzip member (the padding
// of tape and block devices) are read past, as gzip -d does, after one
// member or several, decompressed ahead or not.
func TestGzipTrailingZeros(t *testing.T) {
	dir := t.TempDir()
	jsonl := []byte("{\"id\":\"a\",\"text\":\"one\"}\n{\"id\":\"b\",\"text\":\"two\"}\n")
	two := append(gzipBytes(t, jsonl[:24]), gzipBytes(t, jsonl[24:])...)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"pad512.jsonl.gz", append(gzipBytes(t, jsonl), make([]byte, 512)...)},
		{"pad1.jsonl.gz", append(gzipBytes(t, jsonl), 0)},
		{"pad5.jsonl.gz", append(gzipBytes(t, jsonl), make([]byte, 5)...)},
		{"padlong.jsonl.gz", append(gzipBytes(t, jsonl), make([]byte, 100000)...)},
		{"twopad.jsonl.gz", append(bytes.Clone(two), make([]byte, 10240)...)},
		{"pad.csv.gz", append(gzipBytes(t, []byte("id,text\na,one\nb,two\n")), make([]byte, 512)...)},
	} {
		p := writeFile(t, dir, tc.name, tc.data)
		for _, ahead := range []bool{false, true} {
			testCompressedRead(t, p, tc.name, tc.data, ahead)
		}
	}
	// The same through NewReader (a stream).
	r, err := NewReader(bytes.NewReader(append(bytes.Clone(two), make([]byte, 512)...)), "-", CompressionGzip, Options{IDField: "id"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := ids(drain(t, r)); !equalStrings(got, []string{"a", "b"}) {
		t.Errorf("NewReader: ids %q", got)
	}
}

// flipCRC returns a copy of the gzip member m with its CRC-32 changed.
func flipCRC(m []byte) []byte {
	m = bytes.Clone(m)
	m[len(m)-8] ^= 0xff
	return m
}

// TestGzipTrailingGarbage: data after the last gzip member other than zero
// bytes is an error naming the file and the offset of the data, after the
// records before it.
func TestGzipTrailingGarbage(t *testing.T) {
	dir := t.TempDir()
	jsonl := []byte("{\"id\":\"a\",\"text\":\"one\"}\n{\"id\":\"b\",\"text\":\"two\"}\n")
	member := gzipBytes(t, jsonl)
	end := len(member)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"zerosgarbage.jsonl.gz", append(append(bytes.Clone(member), make([]byte, 512)...), 'x'),
			fmt.Sprintf("trailing garbage at offset %d", end+512)},
		{"zerosmember.jsonl.gz", append(append(bytes.Clone(member), make([]byte, 3)...), member...),
			fmt.Sprintf("trailing garbage at offset %d", end+3)},
		{"garbage.jsonl.gz", append(bytes.Clone(member), "garbage after it"...),
			fmt.Sprintf("gzip member ending at offset %d is not a gzip member", end)},
		{"cutheader.jsonl.gz", append(bytes.Clone(member), member[:4]...),
			fmt.Sprintf("gzip member ending at offset %d is not a gzip member", end)},
		// A second member cut in its trailer, or whose checksum is wrong:
		// its records are read (streamed) before the check fails.
		{"cutsecond.jsonl.gz", append(bytes.Clone(member), member[:len(member)-6]...),
			fmt.Sprintf("the gzip member at offset %d is cut off (the file ends at offset %d", end, 2*end-6)},
		{"badcrc.jsonl.gz", append(bytes.Clone(member), flipCRC(member)...),
			fmt.Sprintf("the gzip member at offset %d: gzip: invalid checksum", end)},
		{"cutbody.jsonl.gz", append(bytes.Clone(member), member[:12]...),
			fmt.Sprintf("the gzip member at offset %d is cut off (the file ends at offset %d", end, end+12)},
	} {
		p := writeFile(t, dir, tc.name, tc.data)
		for _, ahead := range []bool{false, true} {
			r, err := Open(p, Options{IDField: "id", DecodeAhead: ahead})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			n, nextErr := countUntilError(r)
			r.Close()
			want := 2
			if strings.HasPrefix(tc.name, "cutsecond") || strings.HasPrefix(tc.name, "badcrc") {
				want = 4
			}
			if n != want || nextErr == io.EOF || !strings.Contains(nextErr.Error(), p) || !strings.Contains(nextErr.Error(), tc.want) {
				t.Errorf("%s (ahead %v): %d records, then %v; want %d, then an error naming the file and %q", tc.name, ahead, n, nextErr, want, tc.want)
			}
		}
	}
}
