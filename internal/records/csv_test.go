package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestCSVRead(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "d.csv", []byte("\ufeffid,text,url\n"+
		"a,hello,http://a\n"+
		"b,\"multi\nline, \"\"quoted\"\"\",http://b\n"+
		"\n"+
		"c,last,\n"))
	recs := readAll(t, p, Options{IDField: "id", KeepFields: []string{"url", "nope"}, Raw: true})
	want := []got{
		{ID: "a", Text: "hello", Meta: `{"url":"http://a"}`, Pos: Position{File: p, Line: 2, Index: 0}},
		{ID: "b", Text: "multi\nline, \"quoted\"", Meta: `{"url":"http://b"}`, Pos: Position{File: p, Line: 3, Index: 1}},
		{ID: "c", Text: "last", Meta: `{"url":""}`, Pos: Position{File: p, Line: 6, Index: 2}},
	}
	if len(recs) != len(want) {
		t.Fatalf("got %d records: %+v", len(recs), recs)
	}
	for i, w := range want {
		g := recs[i]
		if g.ID != w.ID || g.Text != w.Text || g.Meta != w.Meta || g.Pos != w.Pos || g.Err != "" || g.Raw != "" {
			t.Errorf("record %d = %+v\nwant %+v", i, g, w)
		}
		if got := fieldNames(g.Fields); !equalStrings(got, []string{"id", "text", "url"}) {
			t.Errorf("record %d field names %q", i, got)
		}
		if g.Fields[1].Value != w.Text {
			t.Errorf("record %d text field %#v", i, g.Fields[1].Value)
		}
	}
	r, err := Open(p, Options{IDField: "id"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Columns(); !equalStrings(got, []string{"id", "text", "url"}) || r.Format() != FormatCSV {
		t.Errorf("Columns = %q, Format = %v", got, r.Format())
	}
}

func TestTSVRead(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "d.tab", []byte("body\tkey\nfirst text\tk1\nsecond, with comma\tk2\n"))
	recs := readAll(t, p, Options{IDField: "key", TextField: "body"})
	if got, want := ids(recs), []string{"k1", "k2"}; !equalStrings(got, want) {
		t.Errorf("ids = %q", got)
	}
	if got, want := texts(recs), []string{"first text", "second, with comma"}; !equalStrings(got, want) {
		t.Errorf("texts = %q", got)
	}
	// No id field: the position is the id.
	recs = readAll(t, p, Options{TextField: "body"})
	if got, want := ids(recs), []string{"d.tab:2", "d.tab:3"}; !equalStrings(got, want) {
		t.Errorf("position ids = %q", got)
	}

	// A field that starts with a quote but is not quoted is a bad
	// record of its own: the rows after it are read, never merged into it.
	q := writeFile(t, dir, "q.tsv", []byte("id\ttext\na\t\"Hello\" she said\nb\tplain row\nc\tthird row\n"))
	recs = readAll(t, q, Options{IDField: "id"})
	var good []string
	for _, r := range recs {
		if r.Err == "" {
			good = append(good, r.ID+"="+r.Text)
		}
	}
	if want := []string{"b=plain row", "c=third row"}; !equalStrings(good, want) {
		t.Errorf("records after a quoted start = %q, want %q", good, want)
	}
}

func TestCSVBadRecords(t *testing.T) {
	for _, tc := range []struct {
		name, row, want string
		line            int64
	}{
		{"too few fields", "x", "wrong number of fields (1, the header has 2)", 2},
		{"too many fields", "x,y,z", "wrong number of fields (3, the header has 2)", 2},
		{"bare quote", `x,a "quoted" word`, `malformed CSV: bare " in non-quoted-field (line 2, column 5)`, 2},
		{"empty id", ",text", `field "id" is empty`, 2},
		{"invalid UTF-8", "x,a\xffb", `invalid UTF-8 in field "text"`, 2},
		{"invalid UTF-8 id", "\xff,t", `invalid UTF-8 in field "id"`, 2},
		{"too long", "x,abcdefghijk", `field "text" is too long (11 bytes > 10)`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeFile(t, dir, "b.csv", []byte("id,text\n"+tc.row+"\nlast,ok\n"))
			recs := readAll(t, p, Options{IDField: "id", MaxText: 10, Raw: true})
			if len(recs) != 2 {
				t.Fatalf("got %d records: %+v", len(recs), recs)
			}
			if !strings.Contains(recs[0].Err, tc.want) || recs[0].Pos.Line != tc.line || recs[0].Pos.Index != 0 {
				t.Errorf("bad record = %+v, want error %q at line %d", recs[0], tc.want, tc.line)
			}
			if recs[1].ID != "last" || recs[1].Err != "" || recs[1].Pos.Line != 3 || recs[1].Pos.Index != 1 {
				t.Errorf("next record = %+v", recs[1])
			}
		})
	}
}

func TestCSVSchemaErrors(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "h.csv", []byte("id,body\na,b\n"))
	if _, err := Open(p, Options{IDField: "id"}); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), `no text column "text"`) || !strings.Contains(err.Error(), p) {
		t.Errorf("missing text column: %v", err)
	}
	if _, err := Open(p, Options{IDField: "key", TextField: "body"}); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), `no id column "key"`) {
		t.Errorf("missing id column: %v", err)
	}
	// An empty file has no records and no header.
	e := writeFile(t, dir, "e.csv", nil)
	r, err := Open(e, Options{IDField: "id"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next on an empty CSV = %v", err)
	}
	r.Close()
}

func TestCSVUnterminatedQuote(t *testing.T) {
	dir := t.TempDir()
	o := Options{IDField: "id", MaxText: 10}
	tail := strings.Repeat("many lines\n", o.normalize().maxLine()/10)
	p := writeFile(t, dir, "q.csv", []byte("id,text\na,ok\nb,\"never closed\n"+tail))
	r, err := Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, err := r.Next()
	if err != nil || rec.ID != "a" {
		t.Fatalf("first record: %v, %v", rec, err)
	}
	_, err = r.Next()
	if !errors.Is(err, errRecordTooLong) || !strings.Contains(err.Error(), p) {
		t.Errorf("Next on an unterminated quote = %v", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Errorf("the error is not sticky: %v", err2)
	}
}

func TestCSVSkip(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "s.csv", []byte("id,text\na,1\nb,2\nc,3,extra\nd,4\n"))
	r, err := Open(p, Options{IDField: "id"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, err := r.Skip(3); n != 3 || err != nil {
		t.Fatalf("Skip(3) = %d, %v", n, err)
	}
	rec, err := r.Next()
	if err != nil || rec.ID != "d" || rec.Pos.Line != 5 || rec.Pos.Index != 3 {
		t.Fatalf("after Skip: %+v, %v", rec, err)
	}
	if n, err := r.Skip(2); n != 0 || err != nil {
		t.Errorf("Skip at the end = %d, %v", n, err)
	}
}

// A byte-order mark before a quoted header (as spreadsheets and
// pandas' utf-8-sig write it) is not part of the first column's name.
func TestCSVByteOrderMarkBeforeQuotedHeader(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"quoted.csv":   "\ufeff\"id\",\"text\"\r\n\"1\",\"first text\"\r\n",
		"bare.csv":     "\ufeffid,text\n1,first text\n",
		"quoted.tsv":   "\ufeff\"id\"\t\"text\"\n1\tfirst text\n",
		"markonly.csv": "\ufeff",
		"short.csv":    "id",
	} {
		p := writeFile(t, dir, name, []byte(content))
		r, err := Open(p, Options{IDField: "id"})
		if name == "short.csv" {
			if !errors.Is(err, ErrSchema) {
				t.Errorf("%s: Open = %v, want a missing text column", name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		recs := drain(t, r)
		r.Close()
		if name == "markonly.csv" {
			if len(recs) != 0 {
				t.Errorf("%s: %+v", name, recs)
			}
			continue
		}
		if got := r.Columns(); !equalStrings(got, []string{"id", "text"}) {
			t.Errorf("%s: columns %q", name, got)
		}
		if len(recs) != 1 || recs[0].ID != "1" || recs[0].Text != "first text" || recs[0].Err != "" || recs[0].Pos.Line != 2 {
			t.Errorf("%s: records %+v", name, recs)
		}
	}
}

// TestTSVQuotedTable checks that TSV follows CSV quoting, as Python's csv
// module (delimiter "\t") and pandas write it: a quoted field holding a
// small table (lines of tabs) is one text, not a bad record. (A stray
// quote merges the rows up to the next lone quote in the same way: the
// help says so; the two cannot be told apart.)
func TestTSVQuotedTable(t *testing.T) {
	dir := t.TempDir()
	table := "Prices for this week:\napple\t3 dollars each\npear\t4 dollars each"
	p := writeFile(t, dir, "x.tsv", []byte("id\ttext\na\t\""+table+"\"\nb\tSome ordinary prose text.\n"))
	recs := readAll(t, p, Options{IDField: "id"})
	if len(recs) != 2 || recs[0].Err != "" || recs[0].Text != table || recs[1].ID != "b" || recs[1].Pos.Line != 5 {
		t.Errorf("records %+v", recs)
	}
}

// TestTSVRoundTripNewlineTab checks that texts holding line breaks and
// tabs, which fpdb's TSV outputs quote over several lines, read back as
// they were written: an output's added columns make lines of a text unlike
// its rows, and an indented line (a tab first) is no row.
func TestTSVRoundTripNewlineTab(t *testing.T) {
	dir := t.TempDir()
	want := []string{
		"def f():\n\treturn 1",
		"a\nb\tc",
		"name\tvalue\nx\t1\ny\t2",
		"x\n\t\ty\tz\n",
		"said \"hi\"\nthen\ta\ttab\n",
		"one\ttwo\nthree\tfour\tfive\tsix\tseven\teight",
	}
	var in bytes.Buffer
	for i, s := range want {
		b, _ := json.Marshal(map[string]string{"id": fmt.Sprint(i), "text": s})
		in.Write(append(b, '\n'))
	}
	src := writeFile(t, dir, "in.jsonl", in.Bytes())
	for _, name := range []string{"out.tsv", "out.tsv.gz"} {
		dst := filepath.Join(dir, name)
		copyFile(t, src, dst, Options{IDField: "id"})
		recs := readAll(t, dst, Options{IDField: "id"})
		if got := texts(recs); !equalStrings(got, want) {
			t.Errorf("%s: texts %q, want %q (%+v)", name, got, want, recs)
		}
	}
	// A file of the id and text alone: indented code reads back.
	code := "func f() {\n\treturn 1\n}\n\ndef g():\n\tpass"
	p := writeFile(t, dir, "code.tsv", []byte("id\ttext\n1\t\"def g():\n\tpass\"\n2\t\""+code+"\"\n"))
	if got := texts(readAll(t, p, Options{IDField: "id"})); !equalStrings(got, []string{"def g():\n\tpass", code}) {
		t.Errorf("indented code: %q", got)
	}
}
