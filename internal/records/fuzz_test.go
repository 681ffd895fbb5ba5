package records

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzJSONLRecord checks the JSON Lines reader against encoding/json on one
// line, and that the Writer turns whatever it read into valid JSON.
func FuzzJSONLRecord(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","text":"hello","meta":{"url":"u"}}`,
		`{"id":12,"text":"\u00e9\ud83d\ude00 \"q\" \\ \/","meta":{"url":null,"x":[1,2.5e-3,true,false,null,{}]}}`,
		`{"id":"a","text":"\ud800 lone"}`,
		`{"id":"","text":5}`,
		`{"id":"a","text":"x"`,
		`[{"id":"a"}]`,
		"{\"id\":\"a\",\"text\":\"\xff\"}",
		`{"a":{"b":{"c":[[[[[]]]]]}},"text":"t","id":"i","id":"j"}`,
		`  { }  `,
		`{"id":-0.0e+1,"text":""}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.ContainsAny(line, "\n") || bytes.HasPrefix(line, []byte("\xef\xbb\xbf")) {
			return
		}
		r, err := NewReader(bytes.NewReader(line), "f.jsonl", CompressionNone, Options{IDField: "id", KeepFields: []string{"meta.url", "meta"}, Raw: true})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		w, err := Create("-", FormatJSONL, &out, []string{"fpdb_x"})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := r.Next()
		trimmed := bytes.TrimRight(line, "\r")
		if blank(trimmed) {
			if err != io.EOF {
				t.Fatalf("blank line gave %v, %v", rec, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		valid := json.Valid(trimmed)
		malformed := rec.Err != nil && bytes.Contains([]byte(rec.Err.Error()), []byte("malformed JSON"))
		if valid == malformed {
			t.Fatalf("json.Valid = %v but error %v", valid, rec.Err)
		}
		if rec.Err != nil && !errors.Is(rec.Err, ErrBadRecord) {
			t.Fatalf("error %v does not wrap ErrBadRecord", rec.Err)
		}
		var m map[string]json.RawMessage
		isObject := json.Unmarshal(trimmed, &m) == nil
		if rec.Err == nil {
			if !isObject {
				t.Fatalf("a good record from a line that is not an object: %q", line)
			}
			if !utf8.Valid(rec.Text) || !utf8.ValidString(rec.ID) || rec.ID == "" {
				t.Fatalf("bad id or text: %q %q", rec.ID, rec.Text)
			}
			var text string
			if err := json.Unmarshal(m["text"], &text); err != nil || text != string(rec.Text) {
				t.Fatalf("text %q, encoding/json says %q (%v)", rec.Text, text, err)
			}
			var id string
			if json.Unmarshal(m["id"], &id) == nil && id != rec.ID {
				t.Fatalf("id %q, encoding/json says %q", rec.ID, id)
			}
			if !json.Valid(rec.Meta) {
				t.Fatalf("Meta %q is not JSON", rec.Meta)
			}
			if len(rec.Fields) != countMembers(t, trimmed) {
				t.Fatalf("%d fields for %q", len(rec.Fields), line)
			}
			err = w.Write(rec, []Extra{{"fpdb_x", "v"}})
		} else {
			err = w.WriteBad(rec, []Extra{{"fpdb_x", int64(1)}})
		}
		if err != nil {
			t.Fatalf("write: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		written := bytes.TrimSuffix(out.Bytes(), []byte("\n"))
		var back map[string]json.RawMessage
		if bytes.Contains(written, []byte("\n")) || json.Unmarshal(written, &back) != nil || back["fpdb_x"] == nil {
			t.Fatalf("written %q from %q is not one JSON object with the extra", written, line)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("second Next: %v", err)
		}
	})
}

// countMembers counts the top-level members of a JSON object with
// encoding/json's tokenizer (duplicates included).
func countMembers(t *testing.T, b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// FuzzCSVRecord reads arbitrary CSV without panicking, and checks that good
// records survive a write and a read back.
func FuzzCSVRecord(f *testing.F) {
	for _, s := range []string{
		"id,text\na,hello\nb,\"multi\nline\"\n",
		"id,text,url\na,x,u\nb,y\nc,z,w,extra\n",
		"id,text\n\"a\"b,x\n,\n\"unterminated\n",
		"text,id\n\xff,1\n2,\xfe\n",
		"\ufeffid,text\r\na,b\r\n",
		"",
		"id\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), "f.csv", CompressionNone, Options{IDField: "id", KeepFields: []string{"url"}, Raw: true})
		if err != nil {
			return // no usable header
		}
		dir := t.TempDir()
		out := filepath.Join(dir, "out.csv")
		w, err := Create(out, FormatAuto, nil, []string{"n"})
		if err != nil {
			t.Fatal(err)
		}
		var badOut bytes.Buffer
		wb, err := Create("-", FormatJSONL, &badOut, []string{"n"})
		if err != nil {
			t.Fatal(err)
		}
		type idText struct{ id, text string }
		var good []idText
		var lastLine int64
		for i := int64(0); ; i++ {
			rec, err := r.Next()
			if err != nil {
				break
			}
			if rec.Pos.Index != i || rec.Pos.Line < lastLine || rec.Pos.Line < 2 {
				t.Fatalf("position %+v after line %d", rec.Pos, lastLine)
			}
			lastLine = rec.Pos.Line
			if rec.Err != nil {
				if !errors.Is(rec.Err, ErrBadRecord) {
					t.Fatal(rec.Err)
				}
				if err := wb.WriteBad(rec, []Extra{{"n", i}}); err != nil {
					t.Fatalf("WriteBad: %v", err)
				}
				continue
			}
			if !utf8.Valid(rec.Text) || rec.ID == "" || !json.Valid(rec.Meta) {
				t.Fatalf("record %+v", rec)
			}
			good = append(good, idText{rec.ID, string(rec.Text)})
			if err := w.Write(rec, []Extra{{"n", i}}); err != nil {
				t.Fatalf("Write: %v", err)
			}
		}
		r.Close()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := wb.Close(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(&badOut)
		for sc.Scan() {
			if !json.Valid(sc.Bytes()) {
				t.Fatalf("WriteBad wrote %q", sc.Bytes())
			}
		}
		back, err := Open(out, Options{IDField: "id"})
		if err != nil {
			if len(good) == 0 {
				return
			}
			t.Fatal(err)
		}
		defer back.Close()
		k := 0
		for {
			rec, err := back.Next()
			if err != nil {
				break
			}
			if rec.Err != nil {
				continue
			}
			if k >= len(good) || rec.ID != good[k].id || string(rec.Text) != good[k].text {
				t.Fatalf("read back record %d = %q %q, wrote %v", k, rec.ID, rec.Text, good)
			}
			k++
		}
		if k != len(good) {
			t.Fatalf("read back %d good records, wrote %d", k, len(good))
		}
	})
}

// TestParquetCorruptBytes flips bytes of a valid Parquet file: opening and
// reading must fail with errors, never panic.
func TestParquetCorruptBytes(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "ok.parquet")
	writeDocs(t, src, 50, 20)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// Every byte of the footer (the metadata), a sample of the pages.
	step := 13
	if testing.Short() {
		step = 61
	}
	p := filepath.Join(dir, "bad.parquet")
	for i := 0; i < len(data); i++ {
		if i < len(data)-600 && i%step != 0 {
			continue
		}
		for _, x := range []byte{0xff, 0x01} {
			bad := bytes.Clone(data)
			bad[i] ^= x
			if err := os.WriteFile(p, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Fatalf("flipping byte %d: panic %v", i, v)
					}
				}()
				r, err := Open(p, Options{IDField: "id", KeepFields: []string{"meta.url"}, Raw: true})
				if err != nil {
					return
				}
				defer r.Close()
				for {
					if _, err := r.Next(); err != nil {
						break
					}
				}
			}()
		}
	}
}
