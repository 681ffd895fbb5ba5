package db

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// TestInputLimits: inputs whose values a document record cannot hold (word
// and shingle counts beyond 2^62 or negative, a time added outside the
// years an int64 of nanoseconds holds), an Open that returns no reader and
// no error, and a memtable too small for Pebble are refused with a clear
// error: none is stored (a stored one made the next Open fail with
// ErrCorrupt), nothing panics, and the database opens again.
func TestInputLimits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := Open(dir, &Options{K: 64})
	if err != nil {
		t.Fatal(err)
	}
	fp := []uint64{0x123456789abcdef}
	nilOpen := func() (io.ReadCloser, error) { return nil, nil }
	bad := []Input{
		{ID: "words-negative", Fingerprint: fp, Words: -1},
		{ID: "words-huge", Fingerprint: fp, Words: 1<<62 + 1},
		{ID: "size-negative", Fingerprint: fp, Size: -5},
		{ID: "shingles-huge", Fingerprint: fp, Shingles: 1<<63 - 1},
		{ID: "added-2500", Fingerprint: fp, Added: time.Date(2500, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "added-1600", Text: []byte("a few words of text"), Added: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "open-nil", Open: nilOpen},
	}
	for _, in := range bad {
		if _, err := d.Add(ctx, in, nil); !errors.Is(err, ErrBadInput) {
			t.Errorf("Add %s: %v, want ErrBadInput", in.ID, err)
		}
	}
	// In a batch, each is skipped with that error (fingerprinted on
	// several goroutines, where a panic would end the process).
	res, err := d.AddBatch(ctx, append(bad, Input{ID: "open-nil-2", Open: nilOpen}, Input{ID: "ok", Fingerprint: fp, Words: 1 << 62}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored != 1 || len(res.Skipped) != len(bad)+1 {
		t.Fatalf("AddBatch: %+v", res)
	}
	for _, s := range res.Skipped {
		if !errors.Is(s.Err, ErrBadInput) {
			t.Errorf("AddBatch skipped %s: %v, want ErrBadInput", s.ID, s.Err)
		}
	}
	if d.Len() != 1 {
		t.Fatalf("%d documents stored, want 1", d.Len())
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = Open(dir, nil)
	if err != nil {
		t.Fatalf("Open after the refused inputs: %v", err)
	}
	if doc, err := d.Get(ctx, "ok"); err != nil || doc.Words != 1<<62 {
		t.Fatalf("Get ok: %+v, %v", doc, err)
	}
	closeChecked(t, d)

	for _, size := range []int64{1, 1000, 64<<10 - 1} {
		if _, err := Open(t.TempDir(), &Options{MemTableSize: size}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("MemTableSize %d: %v, want ErrInvalidOptions", size, err)
		}
	}
	openTest(t, "", &Options{MemTableSize: 64 << 10}) // the least accepted
}
