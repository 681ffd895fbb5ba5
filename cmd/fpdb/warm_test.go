package main

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fpdb/fpdb/db"
)

// TestBackgroundWarm: a run warms the posting lists once, when its query
// count reaches the start count; never for the scan plan, without a local
// database, or where Warm would read the lists from storage.
func TestBackgroundWarm(t *testing.T) {
	ctx := context.Background()
	open := func(widths []int) *db.DB {
		t.Helper()
		d, err := db.Open(filepath.Join(t.TempDir(), "db"), &db.Options{K: 512, GroupWidths: widths})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		if _, err := d.Add(ctx, db.Input{ID: "a", Text: []byte("one two three four five six seven")}, nil); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := open(nil) // 32 groups of 16 bits
	if !d.WarmsInMemory() {
		t.Fatal("16-bit groups: Warm does not build in memory")
	}
	w := newBackgroundWarm(d, 3, db.PlanAuto)
	for n, want := range []bool{false, false, false, true, false, false} {
		if got := w.after(ctx, int64(n)); got != want {
			t.Errorf("after %d queries: started %v, want %v", n, got, want)
		}
	}
	if err := w.wait(); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]*backgroundWarm{
		"scan plan":           newBackgroundWarm(d, 0, db.PlanScan),
		"a server's database": newBackgroundWarm(nil, 0, db.PlanAuto),
		"groups of 24 bits":   newBackgroundWarm(open(append(slices.Repeat([]int{24}, 21), 8)), 0, db.PlanAuto),
	} {
		if w.after(ctx, 1000) {
			t.Errorf("%s: warmed", name)
		}
	}
}
