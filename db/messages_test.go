package db

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/normalize"
)

// TestImportVersionMessage: an export made with another hash or
// normalization version is refused with a message that puts each value on
// its side — the export's, this build's — not "in the database".
func TestImportVersionMessage(t *testing.T) {
	src := openTest(t, "", nil)
	plantedDB(t, src, 2)
	exp := string(exportOf(t, src))
	for _, c := range []struct {
		field, name string
		build       int
		uses        string // what the message says this build reads
	}{
		{"hash_version", "hash version", fingerprint.HashVersion, strconv.Itoa(fingerprint.HashVersion)},
		{"normalize_version", "normalization version", normalize.Version,
			strconv.Itoa(normalize.MinVersion) + " to " + strconv.Itoa(normalize.Version)},
	} {
		old := `"` + c.field + `":` + strconv.Itoa(c.build) + ","
		if !strings.Contains(exp, old) {
			t.Fatalf("export header lacks %s", old)
		}
		other := c.build + 7
		bad := strings.Replace(exp, old, `"`+c.field+`":`+strconv.Itoa(other)+",", 1)
		_, err := Import(ctx, filepath.Join(t.TempDir(), "db"), strings.NewReader(bad), nil)
		var pe *ParamsError
		if !errors.As(err, &pe) || !errors.Is(err, ErrParamsMismatch) || !pe.Export || !pe.Build {
			t.Fatalf("%s %d: %v, want a *ParamsError of the export", c.field, other, err)
		}
		want := "the export was made with " + c.name + " " + strconv.Itoa(other) + "; this build uses " + c.uses
		if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "database") {
			t.Errorf("message %q, want %q and no mention of the database", msg, want)
		}
	}
	// A creation parameter given in Options that differs from the export's.
	_, err := Import(ctx, filepath.Join(t.TempDir(), "db"), strings.NewReader(exp), &Options{ShingleWidth: 7})
	want := "creation parameter ShingleWidth is 4 in the export, but 7 was asked for"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Import with ShingleWidth 7: %v, want %q", err, want)
	}
	// An export that does not fit the database it is imported into: the
	// database's value, then the export's.
	into := openTest(t, "", &Options{ShingleWidth: 5})
	_, err = into.ImportInto(ctx, strings.NewReader(exp))
	want = "creation parameter ShingleWidth is 5 in the database, but 4 in the export"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ImportInto a database of ShingleWidth 5: %v, want %q", err, want)
	}
	// Opening a database: the stored side is the database.
	pe := &ParamsError{Param: "HashVersion", Stored: "3", Given: "1", Build: true}
	if got, want := pe.Error(), "fpdb: the database was created with hash version 3; this build uses 1"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestCorruptionDetail damages the sstables of a database: the ErrCorrupt
// error of Open names Pebble's detail and the file, never Pebble's
// "<corruption detail carrier>".
func TestCorruptionDetail(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, nil)
	plantedDB(t, d, 3)
	if _, err := d.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	closeChecked(t, d)
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no sstable")
	}
	for _, f := range ssts {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i := range len(b) / 2 {
			b[i] ^= 0x5a
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Open(dir, nil)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a damaged store: %v, want ErrCorrupt", err)
	}
	if msg := err.Error(); strings.Contains(msg, "carrier") || !strings.Contains(msg, "checksum mismatch") || !strings.Contains(msg, ".sst") {
		t.Errorf("message %q: want the checksum mismatch and the file, no carrier", msg)
	}
}
