package db

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestCheckImport: CheckImport answers what ImportInto of an export of
// one document would end with, before anything is read: nil for an empty
// database and for one holding an unfinished import of that export, the
// same sentinel error otherwise.
func TestCheckImport(t *testing.T) {
	_, lines, unfinished := cutImport(t, 4, 2)
	exp := bytes.Join(lines, nil)
	readOnly := func() *DB {
		dir := t.TempDir()
		closeChecked(t, openTest(t, dir, nil))
		return openTest(t, dir, &Options{ReadOnly: true})
	}
	closed := func() *DB {
		d, err := Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		closeChecked(t, d)
		return d
	}
	withDoc := func(del bool) *DB {
		d := openTest(t, "", &Options{NoSync: true})
		if _, err := d.Add(ctx, Input{ID: "x", Text: []byte(text(99, 100))}, nil); err != nil {
			t.Fatal(err)
		}
		if del {
			if err := d.Delete(ctx, "x"); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	withTemplate := func() *DB {
		d := openTest(t, "", &Options{NoSync: true})
		if _, err := d.AddTemplate(ctx, "t", []byte(text(98, 100)), TextOptions{}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, c := range []struct {
		name string
		d    *DB
		want error
	}{
		{"empty", openTest(t, "", &Options{NoSync: true}), nil},
		{"unfinished import of the same export", unfinished, nil},
		{"a document", withDoc(false), ErrNotEmpty},
		{"a deleted document", withDoc(true), ErrNotEmpty},
		{"a template", withTemplate(), ErrNotEmpty},
		{"read-only", readOnly(), ErrReadOnly},
		{"closed", closed(), ErrClosed},
	} {
		err := c.d.CheckImport(ctx)
		if c.want == nil && err != nil || !errors.Is(err, c.want) {
			t.Errorf("%s: CheckImport: %v, want %v", c.name, err, c.want)
		}
		_, ierr := c.d.ImportInto(ctx, bytes.NewReader(exp))
		if c.want == nil && ierr != nil || !errors.Is(ierr, c.want) {
			t.Errorf("%s: ImportInto: %v, want %v", c.name, ierr, c.want)
		}
	}

	// While an import runs, another is refused before it reads.
	d := openTest(t, "", &Options{NoSync: true})
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := d.ImportInto(ctx, pr)
		done <- err
	}()
	if _, err := pw.Write(lines[0]); err != nil { // the header: the import has begun once it is read
		t.Fatal(err)
	}
	if _, err := pw.Write(lines[1]); err != nil { // read once the header was taken
		t.Fatal(err)
	}
	if err := d.CheckImport(ctx); !errors.Is(err, ErrImportRunning) {
		t.Errorf("while an import runs: %v, want ErrImportRunning", err)
	}
	if _, err := pw.Write(bytes.Join(lines[2:], nil)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := d.CheckImport(ctx); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("after the import: %v, want ErrNotEmpty", err)
	}
}
