package db

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

var corruptTrials = flag.Int("corrupt.trials", 0, "byte flips of TestCorruptFiles (default 120; 40 with -short)")

// TestCorruptMetaBytes flips every bit of the meta record, and truncates it
// to every length: Open must fail with ErrCorrupt naming the meta record.
func TestCorruptMetaBytes(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	good := encodeMeta(d.params)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	var bad [][]byte
	for i := range good {
		for bit := range 8 {
			b := slices.Clone(good)
			b[i] ^= 1 << bit
			bad = append(bad, b)
		}
	}
	for n := range len(good) {
		bad = append(bad, good[:n])
	}
	for _, b := range bad {
		if _, err := decodeMeta(b); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeMeta(%q): %v, want ErrCorrupt", b, err)
		}
	}
	// Through Open, for a sample (each Open costs a Pebble open).
	r := rand.New(rand.NewPCG(1, 2))
	for range 30 {
		b := bad[r.IntN(len(bad))]
		p, err := pebble.Open(dir, &pebble.Options{Merger: posting.Merger(), FormatMajorVersion: pebbleFormat})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Set(keys.Meta(), b, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir, nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "meta record") {
			t.Fatalf("Open with meta %q: %v, want ErrCorrupt naming the meta record", b, err)
		}
	}
	t.Logf("meta record: %d corrupt variants rejected by the decoder, 30 through Open", len(bad))
}

// copyDir copies the regular files of src into a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// fileKind names the kind of a Pebble file for the report.
func fileKind(name string) string {
	switch {
	case strings.HasSuffix(name, ".sst"):
		return "sstable"
	case strings.HasSuffix(name, ".blob"):
		return "blob"
	case strings.HasSuffix(name, ".log"):
		return "WAL"
	case strings.HasPrefix(name, "MANIFEST"):
		return "MANIFEST"
	case strings.HasPrefix(name, "OPTIONS"):
		return "OPTIONS"
	case strings.HasPrefix(name, "marker"):
		return "marker"
	}
	return ""
}

// TestCorruptFiles flips random bytes in Pebble's files (sstables,
// MANIFEST, WAL, OPTIONS, markers) of a copy of a database. Open or Check
// must return an error, or every document must be answered right: never a
// panic, never a wrong fingerprint or a wrong query answer for a document
// that is returned. A document may be missing only when the flipped byte is
// in the WAL tail that holds it (Pebble drops a torn tail).
func TestCorruptFiles(t *testing.T) {
	trials := *corruptTrials
	if trials == 0 {
		trials = 120
		if testing.Short() {
			trials = 40
		}
	}
	src := t.TempDir()
	d, err := Open(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]uint64{}
	var ids []string
	for i := range 60 {
		id := fmt.Sprintf("doc%03d", i)
		ids = append(ids, id)
		model[id] = uint64(1000 + i)
		if _, err := d.Add(ctx, Input{ID: id, Text: []byte(crashText(uint64(1000 + i)))}, nil); err != nil {
			t.Fatal(err)
		}
		if i == 39 {
			if err := d.pdb.Flush(); err != nil { // the first 40 in sstables, the rest in the WAL
				t.Fatal(err)
			}
		}
	}
	closeChecked(t, d)
	var files []string
	ents, _ := os.ReadDir(src)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Size() > 0 && fileKind(e.Name()) != "" { // markers are empty: their name is their content
			files = append(files, e.Name())
		}
	}
	sort.Strings(files)
	t.Logf("files: %v", files)

	r := rand.New(rand.NewPCG(testSeed(t), 3))
	outcomes := map[string]int{}
	example := map[string]string{} // an error message per outcome
	flips := 0
	var v verifier
	for trial := range trials {
		dir := copyDir(t, src)
		name := files[trial%len(files)]
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil || len(b) == 0 {
			continue
		}
		flips++
		off := r.IntN(len(b))
		b[off] ^= byte(1 + r.IntN(255))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		kind := fileKind(name)
		what := fmt.Sprintf("trial %d: %s byte %d of %d", trial, name, off, len(b))
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic: %v", what, p)
				}
			}()
			d, err := Open(dir, nil)
			if err != nil {
				outcomes[kind+": Open error"]++
				example[kind+": Open error"] = err.Error()
				if !strings.Contains(err.Error(), dir) {
					t.Errorf("%s: the error does not name the database: %v", what, err)
				}
				return
			}
			defer d.Close()
			checkErr := d.Check(ctx)
			missing, wrong := 0, 0
			for _, id := range ids {
				got, found, err := v.state(d, id, model[id])
				switch {
				case err != nil && strings.Contains(err.Error(), "matches none"):
					wrong++
					t.Errorf("%s: wrong answer for %s: %v", what, id, err)
				case err != nil:
					// An error is an answer: the damage was detected.
				case !found:
					missing++
				case got != model[id]:
					wrong++
				}
			}
			switch {
			case checkErr != nil:
				outcomes[kind+": Check error"]++
				example[kind+": Check error"] = checkErr.Error()
			case missing > 0 && kind == "WAL":
				outcomes[kind+": torn WAL tail dropped"]++
			case missing > 0:
				t.Errorf("%s: Check passed but %d documents are missing", what, missing)
			default:
				outcomes[kind+": no effect, every answer right"]++
			}
		}()
	}
	keys := make([]string, 0, len(outcomes))
	for k := range outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "\n  %s: %d", k, outcomes[k])
		if e := example[k]; e != "" {
			fmt.Fprintf(&sb, " (e.g. %.300s)", e)
		}
	}
	t.Logf("%d byte flips in Pebble files, 0 panics, 0 wrong answers:%s", flips, sb.String())
}
