package db

import "testing"

// TestMaxTextSizeAccessor: DB.MaxTextSize is the Options.MaxTextSize the
// database was opened with, DefaultMaxTextSize when that was 0, and the
// same for a read-only open.
func TestMaxTextSizeAccessor(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, nil)
	if got := d.MaxTextSize(); got != DefaultMaxTextSize {
		t.Errorf("opened without MaxTextSize: %d, want %d", got, int64(DefaultMaxTextSize))
	}
	closeChecked(t, d)
	d = openTest(t, dir, &Options{MaxTextSize: 1 << 20})
	if got := d.MaxTextSize(); got != 1<<20 {
		t.Errorf("opened with MaxTextSize 1 MiB: %d", got)
	}
	closeChecked(t, d)
	d = openTest(t, dir, &Options{ReadOnly: true, MaxTextSize: 4096})
	if got := d.MaxTextSize(); got != 4096 {
		t.Errorf("opened read-only with MaxTextSize 4096: %d", got)
	}
}
