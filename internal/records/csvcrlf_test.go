package records

import (
	"path/filepath"
	"strings"
	"testing"
)

// A CRLF inside a quoted CSV/TSV field (encoding/csv reads it as LF) is
// kept in Record.Fields and so in a rewritten record.
func TestCSVQuotedCRLFKept(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "in.csv", []byte("id,text,note\r\n"+
		"a,\"one\r\ntwo\",\"x \"\"q\"\"\r\n\r\ny\"\r\n"+
		"\r\n"+ // an empty line, skipped
		"b,\"lf\nonly\",\"cr\r\r\nlf\"\r\n"+
		"c,plain,\"tail\r\n\"\r\n"+
		"d,\"short\r\nrow\"\r\n")) // one field too few: a bad record
	recs := readAll(t, src, Options{IDField: "id", Raw: true})
	want := [][]string{
		{"a", "one\r\ntwo", "x \"q\"\r\n\r\ny"},
		{"b", "lf\nonly", "cr\r\r\nlf"},
		{"c", "plain", "tail\r\n"},
		{"d", "short\r\nrow"},
	}
	if len(recs) != len(want) {
		t.Fatalf("got %d records: %+v", len(recs), recs)
	}
	for i, w := range want {
		var vals []string
		for _, f := range recs[i].Fields {
			vals = append(vals, f.Value.(string))
		}
		if !equalStrings(vals, w) {
			t.Errorf("record %d fields %q, want %q", i, vals, w)
		}
	}
	// The text given to fingerprinting is encoding/csv's, as without
	// Raw (line endings do not matter to fingerprints).
	if recs[0].Text != "one\ntwo" {
		t.Errorf("text %q", recs[0].Text)
	}

	dst := filepath.Join(dir, "out.csv")
	copyFile(t, src, dst, Options{IDField: "id"})
	wantOut := "id,text,note,fpdb_cluster,fpdb_kept,fpdb_similarity\n" +
		"a,\"one\r\ntwo\",\"x \"\"q\"\"\r\n\r\ny\",0,k0,0.25\n" +
		"b,\"lf\nonly\",\"cr\r\r\nlf\",1,k1,1.25\n" +
		"c,plain,\"tail\r\n\",2,k2,2.25\n" +
		"d,\"short\r\nrow\",,3,k3,3.25\n"
	if got := readText(t, dst); got != wantOut {
		t.Errorf("output:\n%q\nwant:\n%q", got, wantOut)
	}

	// To JSON Lines, the same values.
	jdst := filepath.Join(dir, "out.jsonl")
	copyFile(t, src, jdst, Options{IDField: "id"})
	out := readText(t, jdst)
	for _, w := range []string{`"text":"one\r\ntwo","note":"x \"q\"\r\n\r\ny"`, `"note":"tail\r\n"`} {
		if !strings.Contains(out, w) {
			t.Errorf("JSON Lines output lacks %s:\n%s", w, out)
		}
	}
}

func TestTSVQuotedCRLFKept(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "in.tsv", []byte("id\ttext\r\na\t\"one\r\ntwo\"\r\nb\t\"tab\there\r\n\"\r\n"))
	dst := filepath.Join(dir, "out.tsv")
	copyFile(t, src, dst, Options{IDField: "id"})
	want := "id\ttext\tfpdb_cluster\tfpdb_kept\tfpdb_similarity\n" +
		"a\t\"one\r\ntwo\"\t0\tk0\t0.25\n" +
		"b\t\"tab\there\r\n\"\t1\tk1\t1.25\n"
	if got := readText(t, dst); got != want {
		t.Errorf("output:\n%q\nwant:\n%q", got, want)
	}
}

func TestExactFields(t *testing.T) {
	for _, c := range []struct {
		row  []string
		raw  string
		want []string // nil: row kept
	}{
		{[]string{"a", "b\nc"}, "a,\"b\r\nc\"", []string{"a", "b\r\nc"}},
		{[]string{"a", "b\nc", ""}, "\r\n\na,\"b\r\nc\",", []string{"a", "b\r\nc", ""}},
		{[]string{"", "b\nc"}, ",\"b\r\nc\"", []string{"", "b\r\nc"}},
		{[]string{"a", "b\"\nc"}, "a,\"b\"\"\r\nc\"", []string{"a", "b\"\r\nc"}},
		{[]string{"a", "X\nc"}, "a,\"b\r\nc\"", nil},        // another value
		{[]string{"a"}, "a,\"b\r\nc\"", nil},                // more fields
		{[]string{"a", "b", "c"}, "a,\"b\r\nc\"", nil},      // fewer fields
		{[]string{"a", "b\nc"}, "a,\"b\r\nc", nil},          // no closing quote
		{[]string{"a", "b\nc"}, "a,\"b\r\nc\"x", nil},       // text after it
		{[]string{"a", "b\nc"}, "a,b\r\nc", nil},            // not quoted
		{[]string{"a", "b\nc"}, "a;\"b\r\nc\"", nil},        // another separator
		{[]string{"a;\"b\nc\""}, "a;\"b\r\nc\"", nil},       // a bare quote
		{[]string{"a", "b\nc"}, "a,\"b\r\nc\"\r\nz,y", nil}, // two records
	} {
		got := exactFields(c.row, []byte(c.raw), ',')
		if c.want == nil && got != nil || c.want != nil && !equalStrings(got, c.want) {
			t.Errorf("exactFields(%q, %q) = %q, want %q", c.row, c.raw, got, c.want)
		}
	}
}
