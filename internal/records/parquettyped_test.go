package records

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// pqTypedDoc is a Parquet source of many column types, required ones
// among them.
type pqTypedDoc struct {
	ID    string   `parquet:"id"`
	Text  string   `parquet:"text"`
	N     *int64   `parquet:"n,optional"`
	Score float64  `parquet:"score"`
	Flag  bool     `parquet:"flag"`
	Small int32    `parquet:"small"`
	U8    uint8    `parquet:"u8"`
	F32   float32  `parquet:"f32"`
	Tags  []string `parquet:"tags,list"`
	Meta  pqMeta   `parquet:"meta"`
}

// typedInputs writes a Parquet file of pqTypedDoc rows and a JSON Lines
// file of records with members of the same names (and one more), and
// returns their paths and the names a first pass collects from them.
func typedInputs(t *testing.T, dir string, jsonl string) (pq, jl string, names *Names) {
	t.Helper()
	n := int64(7)
	docs := []pqTypedDoc{
		{ID: "p1", Text: "one", N: &n, Score: 0.5, Flag: true, Small: -3, U8: 250, F32: 1.5, Tags: []string{"a", "b"}, Meta: pqMeta{URL: "http://p1"}},
		{ID: "p2", Text: "two", Score: 2, Small: 4, Meta: pqMeta{URL: "http://p2"}},
	}
	pq = filepath.Join(dir, "a.parquet")
	if err := parquet.WriteFile(pq, docs); err != nil {
		t.Fatal(err)
	}
	jl = writeFile(t, dir, "b.jsonl", []byte(jsonl))
	names = &Names{}
	collectNames(t, names, pq, jl)
	return pq, jl, names
}

// writeTyped writes the records of srcs to dst, a Writer given names
// (SetNames); it returns the first Write error and Close's.
func writeTyped(t *testing.T, dst string, names *Names, srcs ...string) (error, error) {
	t.Helper()
	w, err := Create(dst, FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetNames(names, extrasFor(0)); err != nil {
		t.Fatal(err)
	}
	var werr error
	for _, src := range srcs {
		if werr = appendFile(t, w, src, Options{IDField: "id"}, 0); werr != nil {
			break
		}
	}
	return werr, w.Close()
}

// columnTypes returns the top-level columns of a Parquet file as
// "name type", optional or repeated ones marked so.
func columnTypes(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, c := range openParquetFile(t, path).Schema().Fields() {
		s := c.Name() + " " + typeName(c)
		if c.Optional() {
			s += " optional"
		}
		out = append(out, s)
	}
	return out
}

// TestWriteParquetTypedFromNames writes Parquet and JSON Lines records to
// a Parquet output given the names of both (SetNames): the Parquet
// source's columns keep their types (made optional), its rows are copied
// (nested columns too), the JSON members of those names are converted to
// their types (null where a record lacks one), and a member only the JSON
// Lines records have is a string column.
func TestWriteParquetTypedFromNames(t *testing.T) {
	dir := t.TempDir()
	pq, jl, names := typedInputs(t, dir, `{"id":"j1","text":"jay","n":12,"score":3,"flag":false,"small":-128,"u8":255,"f32":0.25,"tags":null,"meta":null,"lang":"en"}
{"text":"kay","id":"j2","n":1e3,"score":-1.5e-3,"lang":{"k":1}}
{"id":"j3","text":"el","n":-2.0,"u8":0}
`)
	dst := filepath.Join(dir, "out.parquet")
	if werr, cerr := writeTyped(t, dst, names, pq, jl); werr != nil || cerr != nil {
		t.Fatalf("write: %v, close: %v", werr, cerr)
	}
	want := []string{"id byte_array STRING optional", "text byte_array STRING optional", "n int64 INT(64,true) optional", "score double optional",
		"flag boolean optional", "small int32 INT(32,true) optional", "u8 int32 INT(8,false) optional", "f32 float optional",
		"tags a group optional", "meta a group optional", "lang byte_array STRING optional",
		"fpdb_cluster int64 INT(64,true)", "fpdb_kept byte_array STRING", "fpdb_similarity double"}
	if got := columnTypes(t, dst); !equalStrings(got, want) {
		t.Errorf("columns\n%q\nwant\n%q", got, want)
	}
	var got []string
	for _, r := range readAll(t, dst, Options{IDField: "id", Raw: true}) {
		b, _ := json.Marshal(fieldsObject(r.Fields))
		got = append(got, string(b))
	}
	wantRows := []string{
		`{"f32":1.5,"flag":true,"fpdb_cluster":0,"fpdb_kept":"k0","fpdb_similarity":0.25,"id":"p1","lang":null,"meta":{"url":"http://p1"},"n":7,"score":0.5,"small":-3,"tags":["a","b"],"text":"one","u8":250}`,
		`{"f32":0,"flag":false,"fpdb_cluster":1,"fpdb_kept":"k1","fpdb_similarity":1.25,"id":"p2","lang":null,"meta":{"url":"http://p2"},"n":null,"score":2,"small":4,"tags":[],"text":"two","u8":0}`,
		`{"f32":0.25,"flag":false,"fpdb_cluster":0,"fpdb_kept":"k0","fpdb_similarity":0.25,"id":"j1","lang":"en","meta":null,"n":12,"score":3,"small":-128,"tags":null,"text":"jay","u8":255}`,
		`{"f32":null,"flag":null,"fpdb_cluster":1,"fpdb_kept":"k1","fpdb_similarity":1.25,"id":"j2","lang":"{\"k\":1}","meta":null,"n":1000,"score":-0.0015,"small":null,"tags":null,"text":"kay","u8":null}`,
		`{"f32":null,"flag":null,"fpdb_cluster":2,"fpdb_kept":"k2","fpdb_similarity":2.25,"id":"j3","lang":null,"meta":null,"n":-2,"score":null,"small":null,"tags":null,"text":"el","u8":0}`,
	}
	if !equalStrings(got, wantRows) {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantRows, "\n"))
	}

	// An output that gets no record has the same columns.
	empty := filepath.Join(dir, "empty.parquet")
	if werr, cerr := writeTyped(t, empty, names); werr != nil || cerr != nil {
		t.Fatalf("empty: %v, %v", werr, cerr)
	}
	if got := columnTypes(t, empty); !equalStrings(got, want) {
		t.Errorf("empty output's columns\n%q\nwant\n%q", got, want)
	}
}

// fieldsObject returns the fields as a map, nested JSON decoded.
func fieldsObject(fields []Field) map[string]any {
	m := map[string]any{}
	for _, f := range fields {
		v := f.Value
		if raw, ok := v.(json.RawMessage); ok {
			json.Unmarshal(raw, &v)
		}
		m[f.Name] = v
	}
	return m
}

// TestWriteParquetTypedErrors: a JSON member that its Parquet-typed
// column cannot hold is an error wrapping ErrSchema naming the record's
// file and line, the member and the column's type; a bad record written
// with WriteBad gets null there instead.
func TestWriteParquetTypedErrors(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"id":"j","text":"t","n":"five"}`, `b.jsonl:2: field "n" is the string "five", which column "n" of the Parquet output cannot hold: it is int64 INT(64,true), as in `},
		{`{"id":"j","text":"t","n":1.5}`, `field "n" is the number 1.5, which column "n"`},
		{`{"id":"j","text":"t","n":9223372036854775808}`, `field "n" is the number 9223372036854775808, which`},
		{`{"id":"j","text":"t","u8":256}`, `field "u8" is the number 256, which column "u8" of the Parquet output cannot hold: it is int32 INT(8,false)`},
		{`{"id":"j","text":"t","u8":-1}`, `field "u8" is the number -1,`},
		{`{"id":"j","text":"t","small":2147483648}`, `field "small" is the number 2147483648,`},
		{`{"id":"j","text":"t","flag":1}`, `field "flag" is the number 1, which column "flag" of the Parquet output cannot hold: it is boolean`},
		{`{"id":"j","text":"t","score":"1.5"}`, `field "score" is the string "1.5",`},
		{`{"id":"j","text":"t","f32":1e39}`, `field "f32" is the number 1e39,`},
		{`{"id":"j","text":"t","meta":{"url":"u"}}`, `field "meta" is an object, which column "meta" of the Parquet output cannot hold: it is a group`},
		{`{"id":"j","text":"t","tags":["a"]}`, `field "tags" is an array,`},
		{`{"id":"j","text":"t","n":"` + strings.Repeat("y", 50) + `"}`, `field "n" is the string "` + strings.Repeat("y", 39) + `…, which`},
	} {
		dir := t.TempDir()
		pq, jl, names := typedInputs(t, dir, `{"id":"j0","text":"fine","n":1}`+"\n"+tc.line+"\n")
		werr, _ := writeTyped(t, filepath.Join(dir, "out.parquet"), names, pq, jl)
		if !errors.Is(werr, ErrSchema) || !strings.Contains(werr.Error(), tc.want) || !strings.Contains(werr.Error(), "b.jsonl:2") {
			t.Errorf("%s: %v\nwant an error holding %q", tc.line, werr, tc.want)
		}
	}

	// WriteBad: null where the value does not fit.
	dir := t.TempDir()
	pq, jl, names := typedInputs(t, dir, `{"id":"j","n":"five","lang":"en"}`+"\n")
	dst := filepath.Join(dir, "out.parquet")
	if werr, cerr := writeTyped(t, dst, names, pq, jl); werr != nil || cerr != nil {
		t.Fatalf("write: %v, close: %v", werr, cerr)
	}
	recs := readAll(t, dst, Options{IDField: "id", Raw: true})
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	if m := fieldsObject(recs[2].Fields); m["n"] != nil || m["lang"] != "en" || m["id"] != "j" {
		t.Errorf("bad record written as %v", m)
	}
}

// TestWriteParquetTypedSources: records of a second Parquet source of the
// same schema are copied; those of another schema are written from their
// fields, converted to the columns' types (or strings, in the columns not
// the first source's).
func TestWriteParquetTypedSources(t *testing.T) {
	dir := t.TempDir()
	pq, jl, names := typedInputs(t, dir, `{"id":"j","text":"t","n":3}`+"\n")
	same := filepath.Join(dir, "same.parquet")
	n := int64(9)
	if err := parquet.WriteFile(same, []pqTypedDoc{{ID: "s", Text: "same", N: &n, Tags: []string{"x"}}}); err != nil {
		t.Fatal(err)
	}
	type otherDoc struct {
		ID    string  `parquet:"id"`
		Text  string  `parquet:"text"`
		N     int32   `parquet:"n"`
		Score float32 `parquet:"score"`
		Other float64 `parquet:"other"`
	}
	other := filepath.Join(dir, "other.parquet")
	if err := parquet.WriteFile(other, []otherDoc{{ID: "o", Text: "other", N: 5, Score: 0.5, Other: 2.5}}); err != nil {
		t.Fatal(err)
	}
	collectNames(t, names, same, other)
	dst := filepath.Join(dir, "out.parquet")
	if werr, cerr := writeTyped(t, dst, names, pq, jl, same, other); werr != nil || cerr != nil {
		t.Fatalf("write: %v, close: %v", werr, cerr)
	}
	var got []string
	for _, r := range readAll(t, dst, Options{IDField: "id", Raw: true}) {
		m := fieldsObject(r.Fields)
		b, _ := json.Marshal([]any{m["id"], m["n"], m["score"], m["tags"], m["other"]})
		got = append(got, string(b))
	}
	want := []string{`["p1",7,0.5,["a","b"],null]`, `["p2",null,2,[],null]`, `["j",3,null,null,null]`, `["s",9,0,["x"],null]`, `["o",5,0.5,null,"2.5"]`}
	if !equalStrings(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
}

// TestConvertField converts field values (JSON, and Go values of Parquet
// fields) for columns of each kind.
func TestConvertField(t *testing.T) {
	i64 := pqConv{kind: convInt, phys: parquet.Int64, bits: 64, signed: true}
	u64 := pqConv{kind: convInt, phys: parquet.Int64, bits: 64}
	i16 := pqConv{kind: convInt, phys: parquet.Int32, bits: 16, signed: true}
	str := pqConv{kind: convString}
	js := pqConv{kind: convJSON}
	dbl := pqConv{kind: convFloat64}
	raw := func(s string) any { return json.RawMessage(s) }
	for _, tc := range []struct {
		v    any
		c    pqConv
		want string // the value as parquet.Value's String, "null", or the error
	}{
		{raw(`-9223372036854775808`), i64, "-9223372036854775808"},
		{raw(`9223372036854775807`), i64, "9223372036854775807"},
		{raw(`9223372036854775808`), i64, "error: the number 9223372036854775808"},
		{raw(`1e18`), i64, "1000000000000000000"},
		{raw(`1e19`), i64, "error: the number 1e19"},
		{raw(`18446744073709551615`), u64, "-1"}, // the bits of 2^64-1
		{raw(`-1`), u64, "error: the number -1"},
		{raw(`32767`), i16, "32767"},
		{raw(`-32769`), i16, "error: the number -32769"},
		{raw(`2.5`), i16, "error: the number 2.5"},
		{int64(40000), i16, "error: the number 40000"},
		{float64(12), i16, "12"},
		{raw(`"x"`), i16, `error: the string "x"`},
		{raw(`true`), i16, "error: true"},
		{raw(`null`), i16, "null"},
		{nil, str, "null"},
		{raw(`"a\"b\u00e9"`), str, `a"bé`},
		{"plain", str, "plain"},
		{[]byte{0xff}, str, "\xff"},
		{raw(`12`), str, "error: the number 12"},
		{int64(12), str, "error: the number 12"},
		{raw(`{"a":[1]}`), js, `{"a":[1]}`},
		{raw(`"s"`), js, `"s"`},
		{raw(`5`), js, `5`},
		{"go string", js, `"go string"`},
		{int64(3), dbl, "3"},
		{raw(`-0.5e-3`), dbl, "-0.0005"},
		{raw(`[1]`), dbl, "error: an array"},
		{raw(`1`), pqConv{}, "error: the number 1"},
		{raw(`false`), pqConv{kind: convBool}, "false"},
		{true, pqConv{kind: convBool}, "true"},
	} {
		dst, v, isBytes, null, err := convertField([]byte("keep"), tc.v, tc.c)
		var got string
		switch {
		case err != nil:
			got = "error: " + err.Error()
		case null:
			got = "null"
		case isBytes:
			got = string(dst[4:])
		default:
			got = v.String()
		}
		if got != tc.want || string(dst[:4]) != "keep" {
			t.Errorf("convertField(%v, %+v) = %q, want %q", tc.v, tc.c, got, tc.want)
		}
	}
}
