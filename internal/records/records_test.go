package records

import (
	"errors"
	"testing"
)

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Format
	}{
		{"auto", FormatAuto}, {"jsonl", FormatJSONL}, {"ndjson", FormatJSONL}, {"json", FormatJSONL},
		{"JSONL", FormatJSONL}, {"csv", FormatCSV}, {"tsv", FormatTSV}, {"parquet", FormatParquet},
	} {
		f, err := ParseFormat(tc.in)
		if err != nil || f != tc.want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", tc.in, f, err, tc.want)
		}
	}
	for _, in := range []string{"xml", "parq", "tab2"} {
		if _, err := ParseFormat(in); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("ParseFormat(%q) error = %v, want ErrUnknownFormat", in, err)
		}
	}
}

func TestFormatAndCompressionString(t *testing.T) {
	for f, want := range map[Format]string{FormatAuto: "auto", FormatJSONL: "jsonl", FormatCSV: "csv", FormatTSV: "tsv", FormatParquet: "parquet"} {
		if f.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(f), f.String(), want)
		}
		if back, err := ParseFormat(want); err != nil || back != f {
			t.Errorf("ParseFormat(%q) = %v, %v", want, back, err)
		}
	}
	for c, want := range map[Compression]string{CompressionNone: "none", CompressionGzip: "gzip", CompressionZstd: "zstd", CompressionBzip2: "bzip2"} {
		if c.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(c), c.String(), want)
		}
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		path string
		f    Format
		c    Compression
		ok   bool
	}{
		{"a/b.jsonl.zst", FormatJSONL, CompressionZstd, true},
		{"x.parquet", FormatParquet, CompressionNone, true},
		{"x.pq", FormatParquet, CompressionNone, true},
		{"d.ndjson", FormatJSONL, CompressionNone, true},
		{"d.JSON.GZ", FormatJSONL, CompressionGzip, true},
		{"d.csv.bz2", FormatCSV, CompressionBzip2, true},
		{"d.tsv.zstd", FormatTSV, CompressionZstd, true},
		{"d.tab", FormatTSV, CompressionNone, true},
		{"dir.jsonl/file.txt", FormatAuto, CompressionNone, false},
		{"x.gz", FormatAuto, CompressionGzip, false},
		{"noext", FormatAuto, CompressionNone, false},
	} {
		f, c, err := Detect(tc.path)
		if f != tc.f || c != tc.c || (err == nil) != tc.ok {
			t.Errorf("Detect(%q) = %v, %v, %v; want %v, %v, ok=%v", tc.path, f, c, err, tc.f, tc.c, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("Detect(%q) error %v does not wrap ErrUnknownFormat", tc.path, err)
		}
	}
}

func TestPositionString(t *testing.T) {
	if s := (Position{File: "data.jsonl", Line: 12, Index: 3}).String(); s != "data.jsonl:12" {
		t.Errorf("got %q", s)
	}
	if s := (Position{File: "data.parquet", RowGroup: 3, Row: 17}).String(); s != "data.parquet: row group 3, row 17" {
		t.Errorf("got %q", s)
	}
}
