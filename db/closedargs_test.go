package db

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestClosedBeforeArguments checks that a call on a closed DB answers
// ErrClosed whatever its arguments: the package documents that every call
// after Close returns ErrClosed, so a caller can tell a closed database
// from its own mistake. The calls below have invalid or odd arguments
// (empty ids, thresholds out of range, fingerprints of the wrong length),
// and the methods checkAllClosed does not cover; a read-only DB's writes
// answer ErrClosed too, not ErrReadOnly.
func TestClosedBeforeArguments(t *testing.T) {
	for _, ro := range []bool{false, true} {
		dir := t.TempDir()
		d := openTest(t, dir, nil)
		if ro {
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			var err error
			if d, err = Open(dir, &Options{ReadOnly: true, Logger: discardLogger()}); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		short := make([]uint64, 3)
		bad := QueryOptions{Threshold: 2}
		errs := map[string]error{}
		_, errs["Add no id"] = d.Add(ctx, Input{Text: []byte("some words")}, nil)
		_, errs["Add short fingerprint"] = d.Add(ctx, Input{ID: "x", Fingerprint: short}, nil)
		_, errs["Prepare no id"] = d.Prepare(ctx, Input{})
		_, _, errs["PrepareBatch"] = d.PrepareBatch(ctx, []Input{{}})
		_, errs["AddBatch bad"] = d.AddBatch(ctx, []Input{{ID: "", Fingerprint: short}})
		_, errs["AddEach bad"] = d.AddEach(ctx, []Input{{}}, nil)
		_, errs["AddBatchMarked bad mark"] = d.AddBatchMarked(ctx, nil, Mark{})
		_, errs["AddBatchMarkedBy"] = d.AddBatchMarkedBy(ctx, nil, nil)
		errs["SetMark no name"] = d.SetMark(ctx, Mark{})
		_, errs["Mark no name"] = d.Mark(ctx, "")
		_, errs["Marks"] = d.Marks(ctx, "")
		errs["Delete no id"] = d.Delete(ctx, "")
		_, errs["DeleteMany no ids"] = d.DeleteMany(ctx, []string{""})
		_, errs["DeletePrefix empty"] = d.DeletePrefix(ctx, "")
		_, errs["Forget no ids"] = d.Forget(ctx, []string{""})
		errs["Log"] = d.Log(ctx, LogOptions{Limit: -1}, nil)
		_, errs["Query bad threshold"] = d.Query(ctx, nil, bad)
		_, errs["QueryReader bad threshold"] = d.QueryReader(ctx, strings.NewReader("a b"), bad)
		_, errs["QueryFingerprint short"] = d.QueryFingerprint(ctx, short, QueryOptions{Threshold: 0.8})
		_, errs["QueryMany bad threshold"] = d.QueryMany(ctx, [][]byte{nil}, bad)
		_, errs["Get no id"] = d.Get(ctx, "")
		_, errs["Has no id"] = d.Has(ctx, "")
		_, errs["Text no id"] = d.Text(ctx, "")
		_, errs["DocsAfter bad limit"] = d.DocsAfter(ctx, "", -1)
		_, errs["Pairs bad threshold"] = d.Pairs(ctx, PairsOptions{Threshold: 2}, nil)
		_, _, errs["Clusters bad threshold"] = d.Clusters(ctx, ClusterOptions{PairsOptions: PairsOptions{Threshold: 2}})
		_, _, errs["Clusters bad keep"] = d.Clusters(ctx, ClusterOptions{PairsOptions: PairsOptions{Threshold: 0.9}, Keep: 99})
		_, _, errs["Clusters bad max size"] = d.Clusters(ctx, ClusterOptions{PairsOptions: PairsOptions{Threshold: 0.9}, MaxSize: 1})
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		for name, call := range map[string]func(context.Context) error{
			"Mark":      func(c context.Context) error { _, err := d.Mark(c, "m"); return err },
			"Marks":     func(c context.Context) error { _, err := d.Marks(c, ""); return err },
			"Templates": func(c context.Context) error { _, err := d.Templates(c); return err },
			"Sync":      func(c context.Context) error { return d.Sync(c) },
			"Get":       func(c context.Context) error { _, err := d.Get(c, "x"); return err },
			"Fingerprint": func(c context.Context) error {
				_, err := d.Fingerprint(c, strings.NewReader("a b c d e"), TextOptions{})
				return err
			},
		} {
			errs[name+" cancelled context"] = call(cancelled)
		}
		_, errs["Backup no dir"] = d.Backup(ctx, "")
		errs["Checkpoint"] = d.Checkpoint(ctx, filepath.Join(t.TempDir(), "cp"))
		_, errs["ImportInto"] = d.ImportInto(ctx, strings.NewReader("not an export"))
		_, errs["Compare nothing"] = d.Compare(ctx, CompareInput{}, CompareInput{}, nil)
		_, errs["SuggestTemplate bad share"] = d.SuggestTemplate(ctx, &BoilerplateOptions{MinShare: 5})
		_, errs["Templates"] = d.Templates(ctx)
		_, errs["AddTemplate no name"] = d.AddTemplate(ctx, "", nil, TextOptions{})
		_, errs["RemoveTemplate no name"] = d.RemoveTemplate(ctx, "")
		_, errs["Fingerprint nil"] = d.Fingerprint(ctx, strings.NewReader(""), TextOptions{})
		_, errs["EstimateQuery bad threshold"] = d.EstimateQuery(ctx, 2)
		errs["CloseContext"] = d.CloseContext(ctx)
		errs["CloseUnflushed"] = d.CloseUnflushed()
		for name, err := range errs {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("read-only %v: %s after Close: %v, want ErrClosed", ro, name, err)
			}
		}
	}
}
