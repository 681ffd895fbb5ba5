package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// got is a copy of a record read, for comparisons.
type got struct {
	ID, Text, Meta string
	Pos            Position
	Err            string
	Raw            string
	Fields         []Field
}

// copyRecord copies what rec holds (its slices are reused by the reader).
func copyRecord(rec *Record) got {
	g := got{ID: rec.ID, Text: string(rec.Text), Meta: string(rec.Meta), Pos: rec.Pos, Raw: string(rec.Raw)}
	if rec.Err != nil {
		g.Err = rec.Err.Error()
		if !errors.Is(rec.Err, ErrBadRecord) {
			panic("a record error does not wrap ErrBadRecord: " + g.Err)
		}
	}
	rec.LoadFields()
	for _, f := range rec.Fields {
		v := f.Value
		switch x := v.(type) {
		case json.RawMessage:
			v = json.RawMessage(bytes.Clone(x))
		case []byte:
			v = bytes.Clone(x)
		}
		g.Fields = append(g.Fields, Field{Name: f.Name, Value: v})
	}
	return g
}

// drain reads every record of r.
func drain(t *testing.T, r *Reader) []got {
	t.Helper()
	var out []got
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, copyRecord(rec))
	}
}

// readAll opens path and reads every record.
func readAll(t *testing.T, path string, o Options) []got {
	t.Helper()
	r, err := Open(path, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	defer r.Close()
	return drain(t, r)
}

// writeFile writes content to name in dir and returns the path.
func writeFile(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ids returns the ids of records.
func ids(recs []got) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

// texts returns the texts of records.
func texts(recs []got) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Text)
	}
	return out
}

// fieldNames returns the names of fields.
func fieldNames(fs []Field) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

func equalStrings(a, b []string) bool { return slices.Equal(a, b) }
