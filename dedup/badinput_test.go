package dedup

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/db"
)

// badInputs writes, in a new directory, a gzip-compressed JSON Lines file
// cut in the middle of its stream (trunc.jsonl.gz), and a small file of
// three good records (small.jsonl); it returns their paths and the path of
// a file that does not exist.
func badInputs(t *testing.T) (trunc, missing, small string) {
	t.Helper()
	dir := t.TempDir()
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	for _, r := range dataset(7, 2000) {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(plain.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	trunc = filepath.Join(dir, "trunc.jsonl.gz")
	if err := os.WriteFile(trunc, gz.Bytes()[:gz.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	small = filepath.Join(dir, "small.jsonl")
	writeJSONL(t, small, []rec{
		{ID: "s1", Text: "a small file of good records about the weather in spring"},
		{ID: "s2", Text: "another good record about rivers lakes and the open sea"},
		{ID: "s3", Text: "the last good record tells of mountains forests and snow"},
	})
	return trunc, filepath.Join(dir, "missing.jsonl"), small
}

// TestLoadBadInputGoesOn checks that Load with BadInput reports an input
// that cannot be read (truncated, missing) and goes on with the next, the
// records read before the failure stored and counted; and that without it
// Load stops there, the records read before the failure stored all the
// same.
func TestLoadBadInputGoesOn(t *testing.T) {
	trunc, missing, small := badInputs(t)
	d := openDB(t, t.TempDir())
	var reported []FailedInput
	sum, err := Load(ctx, d, LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{trunc, missing, small}, Batch: 5000,
		BadInput: func(f FailedInput) { reported = append(reported, f) }})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if sum.Inputs != 3 || sum.InputsFailed != 2 || len(sum.FailedInputs) != 2 || len(reported) != 2 {
		t.Fatalf("summary %+v, reported %+v: want 3 inputs, 2 failed", sum, reported)
	}
	f := reported[0]
	if f.Path != trunc || !errors.Is(f.Err, ErrBadInput) || !strings.Contains(f.Error, "trunc.jsonl.gz") || f.Records == 0 || f.Stored != f.Records {
		t.Errorf("truncated input reported as %+v: want its path, an ErrBadInput naming it, its records read and stored", f)
	}
	if reported[1].Path != missing || !errors.Is(reported[1].Err, ErrBadInput) || reported[1].Records != 0 {
		t.Errorf("missing input reported as %+v", reported[1])
	}
	for _, id := range []string{"s1", "s2", "s3"} {
		if _, err := d.Get(ctx, id); err != nil {
			t.Errorf("record %s of the input after the bad ones: %v", id, err)
		}
	}
	if want := int(f.Stored) + 3; d.Len() != want || sum.Stored != int64(want) || sum.Records != int64(want) {
		t.Errorf("%d documents, summary %+v: want %d", d.Len(), sum, want)
	}

	// Without BadInput: stopped at the truncated input, whose records
	// read before the failure are stored.
	d2 := openDB(t, t.TempDir())
	_, err = Load(ctx, d2, LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{trunc, small}, Batch: 5000})
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "trunc.jsonl.gz") {
		t.Fatalf("Load without BadInput: %v, want an ErrBadInput naming trunc.jsonl.gz", err)
	}
	if d2.Len() != int(f.Stored) {
		t.Errorf("without BadInput: %d documents stored, want the %d records read before the failure", d2.Len(), f.Stored)
	}
	if _, err := d2.Get(ctx, "s1"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("without BadInput the next input is read: %v", err)
	}
}

// TestEachBadInputGoesOn checks that Each passes an input that cannot be
// read to fn, with its path and an ErrBadInput, after the records read
// from it, and goes on with the next input; and that fn returning that
// error stops Each with it.
func TestEachBadInputGoesOn(t *testing.T) {
	trunc, missing, small := badInputs(t)
	var good int
	var seq []string // bad inputs and the ids of small.jsonl, in order
	err := Each(ctx, []string{trunc, missing, small}, nil, RecordOptions{IDField: "id"}, func(doc db.Input, pos string, bad error, p Progress) error {
		switch {
		case errors.Is(bad, ErrBadInput):
			if !strings.Contains(bad.Error(), filepath.Base(pos)) {
				t.Errorf("bad input %s: %v does not name it", pos, bad)
			}
			seq = append(seq, "bad:"+filepath.Base(pos))
		case bad != nil:
			t.Errorf("%s: %v", pos, bad)
		case strings.HasPrefix(doc.ID, "s"):
			seq = append(seq, doc.ID)
		default:
			good++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Each: %v", err)
	}
	if want := "bad:trunc.jsonl.gz bad:missing.jsonl s1 s2 s3"; strings.Join(seq, " ") != want || good == 0 {
		t.Fatalf("Each saw %q and %d records of the truncated file, want %q after some", seq, good, want)
	}
	err = Each(ctx, []string{trunc, small}, nil, RecordOptions{IDField: "id"}, func(doc db.Input, pos string, bad error, p Progress) error {
		if doc.ID == "s1" {
			t.Error("read on after fn returned the bad input's error")
		}
		if errors.Is(bad, ErrBadInput) {
			return bad
		}
		return nil
	})
	if !errors.Is(err, ErrBadInput) {
		t.Fatalf("Each with fn returning the bad input's error: %v", err)
	}
}

// TestRunStopsAtBadInput checks that Run stops at an input that cannot be
// read, even with BadInput set: its outputs must hold every record.
func TestRunStopsAtBadInput(t *testing.T) {
	trunc, _, small := badInputs(t)
	dir := t.TempDir()
	d := openDB(t, filepath.Join(dir, "db"))
	called := false
	o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{trunc, small},
		BadInput: func(FailedInput) { called = true }}, Threshold: 0.8, Out: filepath.Join(dir, "kept.jsonl")}
	if _, err := Run(ctx, d, o); !errors.Is(err, ErrBadInput) || called {
		t.Fatalf("Run: %v (BadInput called: %v), want it stopped at the truncated input", err, called)
	}
	if _, err := os.Stat(o.Out); !os.IsNotExist(err) {
		t.Errorf("Run stopped at a bad input left an output: %v", err)
	}
}
