package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestJSONLRead(t *testing.T) {
	dir := t.TempDir()
	content := "{\"id\":\"a\",\"text\":\"hello\",\"meta\":{\"url\":\"http://x\",\"n\":1}}\n" +
		"\n" +
		"{\"id\":2,\"text\":\"w\u00f6rld \\\"q\\\" \\u00e9 \\ud83d\\ude00\",\"meta\":{\"url\":null}}\r\n" +
		"   \n" +
		"{\"text\":\"last\" , \"id\" : \"c\" }"
	p := writeFile(t, dir, "d.jsonl", []byte(content))
	recs := readAll(t, p, Options{IDField: "id", KeepFields: []string{"meta.url", "missing", "meta"}})
	want := []got{
		{ID: "a", Text: "hello", Meta: `{"meta.url":"http://x","meta":{"url":"http://x","n":1}}`, Pos: Position{File: p, Line: 1, Index: 0}},
		{ID: "2", Text: "w\u00f6rld \"q\" \u00e9 \U0001F600", Meta: `{"meta.url":null,"meta":{"url":null}}`, Pos: Position{File: p, Line: 3, Index: 1}},
		{ID: "c", Text: "last", Meta: `{}`, Pos: Position{File: p, Line: 5, Index: 2}},
	}
	if len(recs) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i := range want {
		g := recs[i]
		g.Fields = nil
		if g.ID != want[i].ID || g.Text != want[i].Text || g.Meta != want[i].Meta || g.Pos != want[i].Pos || g.Err != "" {
			t.Errorf("record %d = %+v\nwant %+v", i, g, want[i])
		}
		if !json.Valid([]byte(g.Meta)) {
			t.Errorf("record %d: Meta %s is not valid JSON", i, g.Meta)
		}
	}
}

func TestJSONLNestedIDAndText(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "n.ndjson", []byte(`{"meta":{"id":"x1","other":[1,{"id":"no"}]},"body":{"text":"deep"}}
{"meta":{"id":7},"body":{"text":"seven"},"text":"top-level text is not the field"}
{"meta":"not an object","body":{"text":"t"}}
`))
	recs := readAll(t, p, Options{IDField: "meta.id", TextField: "body.text"})
	if got, want := ids(recs), []string{"x1", "7", ""}; !equalStrings(got, want) {
		t.Errorf("ids = %q, want %q", got, want)
	}
	if got, want := texts(recs), []string{"deep", "seven", ""}; !equalStrings(got, want) {
		t.Errorf("texts = %q, want %q", got, want)
	}
	if recs[2].Err != `bad record: missing field "meta.id"` {
		t.Errorf("record 3 error = %q", recs[2].Err)
	}
}

func TestJSONLNumberIDs(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "n.jsonl", []byte(`{"id":12345678901234567890,"text":"a"}
{"id":-3,"text":"b"}
{"id":1e3,"text":"c"}
{"id":2.0,"text":"d"}
{"id":2.5,"text":"e"}
`))
	recs := readAll(t, p, Options{IDField: "id"})
	if got, want := ids(recs), []string{"12345678901234567890", "-3", "1000", "2", "2.5"}; !equalStrings(got, want) {
		t.Errorf("ids = %q, want %q", got, want)
	}
}

func TestJSONLPositionIDs(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "sub/f.jsonl", []byte("{\"text\":\"a\"}\n\n{\"text\":\"b\",\"id\":\"ignored\"}\n"))
	recs := readAll(t, p, Options{})
	if got, want := ids(recs), []string{"f.jsonl:1", "f.jsonl:3"}; !equalStrings(got, want) {
		t.Errorf("ids = %q, want %q", got, want)
	}
}

func TestJSONLBadRecords(t *testing.T) {
	for _, tc := range []struct {
		name, line, want string
		maxText          int
	}{
		{"missing text", `{"id":"x"}`, `missing field "text"`, 0},
		{"missing id", `{"text":"t"}`, `missing field "id"`, 0},
		{"text number", `{"id":"x","text":5}`, `field "text" is not a string (number)`, 0},
		{"text null", `{"id":"x","text":null}`, `field "text" is not a string (null)`, 0},
		{"text object", `{"id":"x","text":{"a":1}}`, `field "text" is not a string (object)`, 0},
		{"text array", `{"id":"x","text":[1]}`, `field "text" is not a string (array)`, 0},
		{"id boolean", `{"id":true,"text":"t"}`, `field "id" is not a string (boolean)`, 0},
		{"id null", `{"id":null,"text":"t"}`, `field "id" is not a string (null)`, 0},
		{"empty id", `{"id":"","text":"t"}`, `field "id" is empty`, 0},
		{"text invalid UTF-8", "{\"id\":\"x\",\"text\":\"a\xffb\"}", `invalid UTF-8 in field "text"`, 0},
		{"id invalid UTF-8", "{\"id\":\"\xfe\",\"text\":\"t\"}", `invalid UTF-8 in field "id"`, 0},
		{"too long", `{"id":"x","text":"abcdefghijk"}`, `field "text" is too long (11 bytes > 5)`, 5},
		{"too long escaped", `{"id":"x","text":"\u00e9\u00e9\u00e9"}`, `field "text" is too long (6 bytes > 5)`, 5},
		{"unterminated", `{"id":"x","text":"t"`, `malformed JSON: unexpected end of line after object key:value pair at offset 20`, 0},
		{"trailing comma", `{"id":"x",}`, `malformed JSON: invalid character '}' looking for beginning of object key string at offset 10`, 0},
		{"trailing garbage", `{"id":"x","text":"t"} x`, `malformed JSON: invalid character 'x' after top-level value at offset 22`, 0},
		{"bad escape", `{"id":"x","text":"\q"}`, `malformed JSON: invalid character 'q' in string escape code`, 0},
		{"control char", "{\"id\":\"x\",\"text\":\"a\tb\"}", `malformed JSON: invalid character '\t' in string literal`, 0},
		{"bad number", `{"id":01,"text":"t"}`, `malformed JSON: invalid character '1' after object key:value pair`, 0},
		{"array", `[1,2]`, `not a JSON object (array)`, 0},
		{"string", `"str"`, `not a JSON object (string)`, 0},
		{"number", `42`, `not a JSON object (number)`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			content := `{"id":"first","text":"ok"}` + "\n" + tc.line + "\n" + `{"id":"last","text":"ok"}` + "\n"
			p := writeFile(t, dir, "b.jsonl", []byte(content))
			recs := readAll(t, p, Options{IDField: "id", MaxText: tc.maxText})
			if len(recs) != 3 {
				t.Fatalf("got %d records, want 3", len(recs))
			}
			if recs[0].Err != "" || recs[2].Err != "" || recs[2].ID != "last" || recs[2].Pos.Line != 3 || recs[2].Pos.Index != 2 {
				t.Errorf("good records around the bad one: %+v %+v", recs[0], recs[2])
			}
			b := recs[1]
			if !strings.HasPrefix(b.Err, "bad record: ") || !strings.Contains(b.Err, tc.want) {
				t.Errorf("error = %q, want it to contain %q", b.Err, tc.want)
			}
			if b.Pos.Line != 2 || b.Pos.Index != 1 || b.Pos.File != p {
				t.Errorf("position = %+v", b.Pos)
			}
		})
	}
}

func TestJSONLLongLines(t *testing.T) {
	dir := t.TempDir()
	// A text of 600 KiB (more than the read buffer) is read whole.
	big := strings.Repeat("0123456789abcdef", 600<<10/16)
	var buf bytes.Buffer
	buf.WriteString(`{"id":"big","text":"` + big + `"}` + "\n")
	// A line longer than the limit is a bad record, skipped.
	o := Options{IDField: "id", MaxText: 10}
	huge := strings.Repeat("x", o.normalize().maxLine()+10)
	buf.WriteString(`{"id":"huge","text":"` + huge + `"}` + "\n")
	buf.WriteString(`{"id":"after","text":"ok"}` + "\n")
	p := writeFile(t, dir, "l.jsonl", buf.Bytes())

	recs := readAll(t, p, Options{IDField: "id", MaxText: 1 << 20})
	if len(recs) != 3 || recs[0].Text != big || recs[0].Err != "" {
		t.Fatalf("big text not read whole: %d records, err %q", len(recs), recs[0].Err)
	}
	recs = readAll(t, p, o)
	if len(recs) != 3 {
		t.Fatalf("got %d records", len(recs))
	}
	if want := `field "text" is too long (614400 bytes > 10)`; !strings.Contains(recs[0].Err, want) {
		t.Errorf("record 1 error = %q, want %q", recs[0].Err, want)
	}
	if !strings.Contains(recs[1].Err, "line is too long (more than 1048591 bytes)") || recs[1].Pos.Line != 2 {
		t.Errorf("record 2 = %+v", recs[1])
	}
	if recs[2].ID != "after" || recs[2].Pos.Line != 3 || recs[2].Pos.Index != 2 {
		t.Errorf("record 3 = %+v", recs[2])
	}
}

func TestJSONLRaw(t *testing.T) {
	dir := t.TempDir()
	line1 := `{"id":"a", "k\u0065y":[1, 2],"text":"x","n":null}`
	p := writeFile(t, dir, "r.jsonl", []byte("\xef\xbb\xbf"+line1+"\r\n{}\n"))
	recs := readAll(t, p, Options{IDField: "id", Raw: true})
	if len(recs) != 2 {
		t.Fatalf("got %d records", len(recs))
	}
	if recs[0].Raw != line1 {
		t.Errorf("Raw = %q, want %q", recs[0].Raw, line1)
	}
	if got, want := fieldNames(recs[0].Fields), []string{"id", "key", "text", "n"}; !equalStrings(got, want) {
		t.Errorf("field names = %q, want %q", got, want)
	}
	for i, want := range []string{`"a"`, `[1, 2]`, `"x"`, `null`} {
		if v, ok := recs[0].Fields[i].Value.(json.RawMessage); !ok || string(v) != want {
			t.Errorf("field %d = %#v, want %s", i, recs[0].Fields[i].Value, want)
		}
	}
	if recs[1].Raw != "{}" || len(recs[1].Fields) != 0 || recs[1].Err == "" {
		t.Errorf("record 2 = %+v", recs[1])
	}
}

func TestJSONLSkip(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 10 {
		b.WriteString(`{"id":"r` + string(rune('0'+i)) + `","text":"t"}` + "\n")
		if i%3 == 0 {
			b.WriteString("\n")
		}
	}
	p := writeFile(t, dir, "s.jsonl", []byte(b.String()))
	all := readAll(t, p, Options{IDField: "id"})
	r, err := Open(p, Options{IDField: "id"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, err := r.Skip(4); n != 4 || err != nil {
		t.Fatalf("Skip(4) = %d, %v", n, err)
	}
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if g := copyRecord(rec); g.ID != "r4" || g.Pos != all[4].Pos {
		t.Errorf("after Skip(4): %+v, want %+v", g, all[4])
	}
	if n, err := r.Skip(100); n != 5 || err != nil {
		t.Errorf("Skip(100) = %d, %v; want 5, nil", n, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next after the end = %v", err)
	}
	if n, err := r.Skip(1); n != 0 || err != nil {
		t.Errorf("Skip at EOF = %d, %v", n, err)
	}
}

func TestNewReaderStdin(t *testing.T) {
	in := strings.NewReader("{\"text\":\"one\"}\n{\"text\":\"two\"}\n")
	r, err := NewReader(in, "-", CompressionNone, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Format() != FormatJSONL || r.Columns() != nil {
		t.Errorf("Format = %v, Columns = %v", r.Format(), r.Columns())
	}
	recs := drain(t, r)
	if got, want := ids(recs), []string{"-:1", "-:2"}; !equalStrings(got, want) {
		t.Errorf("ids = %q, want %q", got, want)
	}
	if recs[1].Pos.String() != "-:2" {
		t.Errorf("position = %q", recs[1].Pos)
	}
	done, size := r.Progress()
	if done != int64(len("{\"text\":\"one\"}\n{\"text\":\"two\"}\n")) || size != -1 {
		t.Errorf("Progress = %d, %d", done, size)
	}
	if _, err := Open("-", Options{}); err == nil {
		t.Error(`Open("-") succeeded`)
	}
}

// TestJSONLLongLineNotHeld checks that a line past the limit is skipped
// without being held whole in memory.
func TestJSONLLongLineNotHeld(t *testing.T) {
	dir := t.TempDir()
	o := Options{IDField: "id", MaxText: 10}
	limit := o.normalize().maxLine()
	huge := `{"id":"h","text":"` + strings.Repeat("y", 16*limit) + `"}` + "\n" + `{"id":"next","text":"ok"}` + "\n"
	p := writeFile(t, dir, "h.jsonl", []byte(huge))
	huge = ""
	r, err := Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec, err := r.Next()
	if err != nil || !strings.Contains(rec.Err.Error(), "line is too long") {
		t.Fatalf("huge line: %v, %v", rec, err)
	}
	rec, err = r.Next()
	if err != nil || rec.ID != "next" || rec.Pos.Line != 2 {
		t.Fatalf("after the huge line: %v, %v", rec, err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(4*limit) {
		t.Errorf("allocated %d bytes for a %d-byte line (limit %d)", alloc, 16*limit, limit)
	}
}

// TestJSONLSkipText: with SkipText the text is neither decoded nor checked
// (a second pass), while ids, raw lines and malformed JSON are as without.
func TestJSONLSkipText(t *testing.T) {
	lines := []string{
		`{"id":"a","text":"caf\u00e9 au lait"}`,
		`{"id":"b"}`,
		`{"id":"c","text":5}`,
		"{\"id\":\"d\",\"text\":\"a\xffb\"}",
		`{"id":"e","text":"t"`,
	}
	p := writeFile(t, t.TempDir(), "s.jsonl", []byte(strings.Join(lines, "\n")+"\n"))
	recs := readAll(t, p, Options{IDField: "id", Raw: true, SkipText: true})
	if len(recs) != len(lines) {
		t.Fatalf("%d records, want %d", len(recs), len(lines))
	}
	for i, r := range recs[:4] {
		if r.Err != "" || r.Text != "" || r.ID != string(rune('a'+i)) || r.Raw != lines[i] {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	if !strings.Contains(recs[4].Err, "malformed JSON") {
		t.Errorf("malformed line: %+v", recs[4])
	}
	if full := readAll(t, p, Options{IDField: "id"}); full[0].Text != "café au lait" || full[1].Err == "" || full[2].Err == "" || full[3].Err == "" {
		t.Errorf("without SkipText: %+v", full)
	}
}

// TestJSONLMisspelledField: when none of the first fieldCheck objects has
// the id (or text) field, the file is refused as a whole (ErrSchema,
// naming the first object's fields); fewer lacking it are bad records.
func TestJSONLMisspelledField(t *testing.T) {
	dir := t.TempDir()
	lines := func(n, withField int) []byte {
		var b strings.Builder
		for i := range n {
			if i == withField {
				fmt.Fprintf(&b, `{"key":"k%d","body":"some words","meta":{"id":"m%d"}}`+"\n", i, i)
				continue
			}
			fmt.Fprintf(&b, `{"id":"r%d","text":"some words","url":"u"}`+"\n", i)
		}
		return []byte(b.String())
	}
	for _, tc := range []struct {
		name          string
		n, withField  int
		o             Options
		schema        string // the error, "" for none
		bad, wantRecs int
	}{
		{"id", 30, -1, Options{IDField: "nope"}, `none of the first 10 records has the field "nope" (the first one's fields: id, text, url)`, 0, 0},
		{"text", 30, -1, Options{IDField: "id", TextField: "body"}, `none of the first 10 records has the field "body"`, 0, 0},
		{"nested", 12, -1, Options{IDField: "meta.id"}, `the field "meta.id"`, 0, 0},
		// A whole file of fewer records, none with the field, is refused
		// too; one record without it is a bad record.
		{"short", 9, -1, Options{IDField: "nope"}, `none of the 9 records has the field "nope" (the first one's fields: id, text, url)`, 0, 0},
		{"two", 2, -1, Options{IDField: "id", TextField: "body"}, `none of the 2 records has the field "body"`, 0, 0},
		{"one", 1, -1, Options{IDField: "nope"}, "", 1, 1},
		{"short, one has it", 5, 4, Options{IDField: "key", TextField: "body"}, "", 4, 5},
		{"short, the last unended has it", 5, 4, Options{IDField: "key", TextField: "body"}, "", 4, 5},
		{"one has it", 30, 9, Options{IDField: "key", TextField: "body"}, "", 29, 30},
		{"right", 30, -1, Options{IDField: "id"}, "", 0, 30},
		{"long lines", 0, -1, Options{IDField: "nope"}, `none of the first 10 records has the field "nope"`, 0, 0},
	} {
		content := lines(tc.n, tc.withField)
		if strings.Contains(tc.name, "unended") {
			content = bytes.TrimSuffix(content, []byte("\n"))
		}
		if tc.name == "long lines" {
			// Lines longer than the read buffer: the fields are counted as
			// the records are read, and the error comes at the 10th.
			long := strings.Repeat("x", jsonlBufferSize)
			var b strings.Builder
			for i := range 12 {
				fmt.Fprintf(&b, `{"id":"r%d","text":"%s"}`+"\n", i, long)
			}
			content = []byte(b.String())
		}
		p := writeFile(t, dir, tc.name+".jsonl", content)
		r, err := Open(p, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		recs, bad := 0, 0
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if tc.schema == "" || !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), tc.schema) || !strings.Contains(err.Error(), p) {
					t.Errorf("%s: %v", tc.name, err)
				}
				if want := map[bool]int{true: 9, false: 0}[tc.name == "long lines"]; recs != want {
					t.Errorf("%s: the schema error came after %d records, want %d", tc.name, recs, want)
				}
				tc.schema = ""
				break
			}
			recs++
			if rec.Err != nil {
				bad++
			}
		}
		r.Close()
		if tc.schema != "" {
			t.Errorf("%s: no schema error", tc.name)
		}
		if tc.wantRecs > 0 && (recs != tc.wantRecs || bad != tc.bad) {
			t.Errorf("%s: %d records, %d bad; want %d, %d bad", tc.name, recs, bad, tc.wantRecs, tc.bad)
		}
	}
}

// TestJSONLPipeNotHeldBack: the field check does not wait for more input
// than the first read brought: a record written into a pipe that stays
// open is returned at once.
func TestJSONLPipeNotHeldBack(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = pw.Write([]byte(`{"id":"a","text":"one two three"}` + "\n")) }()
	r, err := NewReader(pr, "-", CompressionNone, Options{IDField: "id", Format: FormatJSONL})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		rec, err := r.Next()
		if err == nil && rec.ID != "a" {
			err = fmt.Errorf("record %q", rec.ID)
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first record of an open pipe was held back")
	}
}
