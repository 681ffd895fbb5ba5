package records

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestReaderNames checks Options.Names: a JSON Lines reader adds the
// members of every line that is a JSON object (escaped names decoded, bad
// records' too), in order of first appearance; malformed lines and other
// values add none, nor do records passed over by Skip; a CSV reader adds
// its header.
func TestReaderNames(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "in.jsonl", []byte(`{"id":"a","text":"x"}
{"id":"b","text":"y","la\u006eg":"en","id":"b2"}
{"id":"c","note":"no text"}
{"id":"d","text":"z","broken":
[1,2]
{"text":"w","meta":{"inner":1},"id":"e"}
{"id":"f","text":"v","skipped":1}
`))
	var names Names
	r, err := Open(p, Options{IDField: "id", Names: &names})
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := r.Skip(1); n != 1 || err != nil {
		t.Fatalf("Skip: %d %v", n, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next at the end: %v", err)
	}
	r.Close()
	if got, want := names.List(), []string{"id", "text", "lang", "note", "meta"}; !equalStrings(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}

	c := writeFile(t, dir, "in.csv", []byte("id,text,url\na,x,u\n"))
	r, err = Open(c, Options{IDField: "id", Names: &names})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if got, want := names.List(), []string{"id", "text", "lang", "note", "meta", "url"}; !equalStrings(got, want) || names.Len() != 6 {
		t.Errorf("names after a CSV file %q, want %q", got, want)
	}

	// Past Max, the reader stops with ErrSchema (names known are no error).
	few := Names{Max: 2}
	r, err = Open(p, Options{IDField: "id", Names: &few})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), `more than 2 different fields ("lang" is one more)`) || !strings.Contains(err.Error(), p) {
		t.Errorf("past Max: %v", err)
	}
	if err := few.Add("id", "text"); err != nil || few.Len() != 2 {
		t.Errorf("Add of known names: %v, %d names", err, few.Len())
	}
	if _, err := Open(c, Options{IDField: "id", Names: &Names{Max: 2}}); !errors.Is(err, ErrSchema) {
		t.Errorf("a CSV header past Max: %v", err)
	}
}

// TestWriteSetColumns writes JSON Lines records of differing members to
// CSV and Parquet outputs given every member by SetColumns: each record
// fills the columns it has, in any order (nested values as JSON text, a
// repeated member: the last one), and an output that gets no record still
// has the columns.
func TestWriteSetColumns(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "in.jsonl", []byte(`{"id":"a","text":"x"}
{"text":"y","lang":"en","id":"b"}
{"id":"c","text":"z","meta":{"k":[1,2]},"lang":"fr","lang":"de"}
{"id":"d","other":1}
`))
	cols := collectNames(t, &Names{}, src)

	dst := filepath.Join(dir, "out.csv")
	writeWithColumns(t, dst, src, cols)
	want := "id,text,lang,meta,other,fpdb_cluster,fpdb_kept,fpdb_similarity\n" +
		"a,x,,,,0,k0,0.25\n" +
		"b,y,en,,,1,k1,1.25\n" +
		"c,z,de,\"{\"\"k\"\":[1,2]}\",,2,k2,2.25\n" +
		"d,,,,1,3,k3,3.25\n"
	if got := readText(t, dst); got != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", got, want)
	}

	// Parquet: optional strings, null where a record lacks the member.
	pdst := filepath.Join(dir, "out.parquet")
	writeWithColumns(t, pdst, src, cols)
	type row struct {
		ID    *string `parquet:"id,optional"`
		Text  *string `parquet:"text,optional"`
		Lang  *string `parquet:"lang,optional"`
		Meta  *string `parquet:"meta,optional"`
		Other *string `parquet:"other,optional"`
	}
	rows, err := parquet.ReadFile[row](pdst)
	if err != nil {
		t.Fatal(err)
	}
	str := func(p *string) string {
		if p == nil {
			return "<null>"
		}
		return *p
	}
	var got []string
	for _, r := range rows {
		got = append(got, strings.Join([]string{str(r.ID), str(r.Text), str(r.Lang), str(r.Meta), str(r.Other)}, "|"))
	}
	if want := []string{"a|x|<null>|<null>|<null>", "b|y|en|<null>|<null>", `c|z|de|{"k":[1,2]}|<null>`, "d|<null>|<null>|<null>|1"}; !equalStrings(got, want) {
		t.Errorf("Parquet rows %q, want %q", got, want)
	}

	// Outputs closed without a record have the columns.
	for _, name := range []string{"empty.csv", "empty.parquet"} {
		p := filepath.Join(dir, name)
		w, err := Create(p, FormatAuto, nil, extraNames)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.SetColumns(cols, []Extra{{"fpdb_cluster", int64(0)}}); err == nil {
			t.Errorf("%s: SetColumns with one extra of three: no error", name)
		}
		if err := w.SetColumns(cols, extrasFor(0)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Open(p, Options{IDField: "id"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.Columns(), append(cols, extraNames...); !equalStrings(got, want) {
			t.Errorf("%s: columns %q, want %q", name, got, want)
		}
		r.Close()
	}

	// A JSON Lines output ignores the columns.
	jdst := filepath.Join(dir, "out.jsonl")
	writeWithColumns(t, jdst, src, cols)
	if got := readText(t, jdst); !strings.HasPrefix(got, `{"id":"a","text":"x","fpdb_cluster":0,`) {
		t.Errorf("JSON Lines output:\n%s", got)
	}

	// A record with a member not among the columns is refused.
	w, err := Create(filepath.Join(dir, "few.csv"), FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetColumns([]string{"id", "text"}, extrasFor(0)); err != nil {
		t.Fatal(err)
	}
	if err := appendFile(t, w, src, Options{IDField: "id"}, 0); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "[text, lang, id]") {
		t.Errorf("a member not among the columns: %v", err)
	}
	w.Close()
}

// collectNames reads every record of the files at paths, adding their
// names to names (Options.Names), and returns the names.
func collectNames(t *testing.T, names *Names, paths ...string) []string {
	t.Helper()
	for _, p := range paths {
		r, err := Open(p, Options{IDField: "id", Names: names})
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
	}
	return names.List()
}

// writeWithColumns writes the records of src to dst, a Writer given cols
// (SetColumns), and checks that SetColumns after a Write is an error.
func writeWithColumns(t *testing.T, dst, src string, cols []string) {
	t.Helper()
	w, err := Create(dst, FormatAuto, nil, extraNames)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.SetColumns(cols, extrasFor(0)); err != nil {
		t.Fatal(err)
	}
	if err := appendFile(t, w, src, Options{IDField: "id"}, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.SetColumns(cols, extrasFor(0)); err == nil && w.format != FormatJSONL {
		t.Error("SetColumns after a Write: no error")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWriteSetColumnsLastMember: a member named twice is written as its
// last value in every columnar output, null included (a Parquet output
// wrote the first non-null one).
func TestWriteSetColumnsLastMember(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "in.jsonl", []byte(`{"id":"a","text":"x","lang":"fr","lang":null}
{"id":"b","text":"y","lang":null,"lang":"de"}
`))
	cols := collectNames(t, &Names{}, src)
	dst := filepath.Join(dir, "out.csv")
	writeWithColumns(t, dst, src, cols)
	if got, want := readText(t, dst), "id,text,lang,fpdb_cluster,fpdb_kept,fpdb_similarity\na,x,,0,k0,0.25\nb,y,de,1,k1,1.25\n"; got != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", got, want)
	}
	pdst := filepath.Join(dir, "out.parquet")
	writeWithColumns(t, pdst, src, cols)
	var got []any
	for _, r := range readAll(t, pdst, Options{IDField: "id", Raw: true}) {
		got = append(got, r.Fields[2].Value)
	}
	if len(got) != 2 || got[0] != nil || got[1] != "de" {
		t.Errorf("Parquet lang values %q, want [<nil> de]", got)
	}
}

// TestSetColumnsChecks: SetColumns refuses a column named twice and
// extras that Write would refuse, rather than fail at every Write or
// make the empty output's columns of a type no record could have.
func TestSetColumnsChecks(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"c.csv", "c.parquet"} {
		w, err := Create(filepath.Join(dir, name), FormatAuto, nil, extraNames)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.SetColumns([]string{"id", "text", "id"}, extrasFor(0)); err == nil || !strings.Contains(err.Error(), `"id" given twice`) {
			t.Errorf("%s: a column given twice: %v", name, err)
		}
		bad := extrasFor(0)
		bad[1].Value = uint32(1)
		if err := w.SetColumns([]string{"id", "text"}, bad); err == nil || !strings.Contains(err.Error(), `extra "fpdb_kept" is a uint32`) {
			t.Errorf("%s: an extra of another type: %v", name, err)
		}
		bad = extrasFor(0)
		bad[0].Name = "other"
		if err := w.SetColumns([]string{"id", "text"}, bad); err == nil || !strings.Contains(err.Error(), `extra 0 is named "other"`) {
			t.Errorf("%s: an extra of another name: %v", name, err)
		}
		w.Close()
	}
}
