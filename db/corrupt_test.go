package db

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
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

// hugeAlloc is the heap allocation (runtime.MemStats.TotalAlloc) above which
// TestCorruptStore calls a damaged store's Open, use and Repair a huge
// allocation: the 60-document database needs a few MB.
const hugeAlloc = 256 << 20

// rawUpdate changes the Pebble store of the closed database in dir directly.
func rawUpdate(t *testing.T, dir string, fn func(p *pebble.DB) error) {
	t.Helper()
	p, err := pebble.Open(dir, &pebble.Options{Merger: posting.Merger(), FormatMajorVersion: pebbleFormat, Logger: slogLogger{discardLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(p); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// rawCopy sets key to the value stored under from.
func rawCopy(p *pebble.DB, from, key []byte) error {
	v, closer, err := p.Get(from)
	if err != nil {
		return err
	}
	defer closer.Close()
	return p.Set(key, v, pebble.Sync)
}

// storeDamage is one way of damaging the store of TestCorruptStore's
// database (documents "doc000".."doc059" at internal ids 0..59, of which
// doc050..doc054 are deleted; the next internal id is 60).
type storeDamage struct {
	name   string
	damage func(p *pebble.DB) error
	// atOpen: Open must fail (the damage would make a query or a later
	// write panic or allocate without bound); otherwise Open must succeed
	// and Check must find it.
	atOpen bool
	// want is what the error of Open (or Check) must say; found, what
	// Repair must list among the problems it found (default want).
	want, found string
	// lost are the documents Repair must drop, strays the keys of no
	// document it must drop; refused: Repair must fail.
	lost    []string
	strays  int
	refused bool
}

const strayID = 0xFFFFFFF0

var storeDamages = []storeDamage{
	{name: "stray fingerprint just beyond the id map", atOpen: true,
		damage: func(p *pebble.DB) error { return rawCopy(p, keys.Fingerprint(0), keys.Fingerprint(60)) },
		want:   "fingerprint 60 is at or beyond the next internal id 60", found: "fingerprint 60 has no document record", strays: 1},
	{name: "stray fingerprint at internal id 2^32-16", atOpen: true,
		damage: func(p *pebble.DB) error { return rawCopy(p, keys.Fingerprint(0), keys.Fingerprint(strayID)) },
		want:   "fingerprint 4294967280 is at or beyond the next internal id 60", found: "fingerprint 4294967280 has no document record", strays: 1},
	{name: "fingerprint of a deleted document", atOpen: true,
		damage: func(p *pebble.DB) error { return rawCopy(p, keys.Fingerprint(0), keys.Fingerprint(52)) },
		want:   "fingerprint 52 has no document record", strays: 1},
	{name: "document record beyond the next id", atOpen: true,
		damage: func(p *pebble.DB) error { return rawCopy(p, keys.Doc(0), keys.Doc(60)) },
		want:   "internal id 60 is at or beyond the next internal id 60", strays: 1},
	{name: "document record at internal id 2^32-16", atOpen: true,
		damage: func(p *pebble.DB) error { return rawCopy(p, keys.Doc(0), keys.Doc(strayID)) },
		want:   "internal id 4294967280 is at or beyond the next internal id 60", strays: 1},
	{name: "document record without fingerprint", atOpen: true,
		damage: func(p *pebble.DB) error { return p.Delete(keys.Fingerprint(7), pebble.Sync) },
		want:   `document 7 ("doc007") has no fingerprint`, lost: []string{"doc007"}},
	{name: "fingerprint without document record", atOpen: true,
		damage: func(p *pebble.DB) error { return p.Delete(keys.Doc(8), pebble.Sync) },
		want:   "fingerprint 8 has no document record", lost: []string{"doc008"}},
	{name: "fingerprint of 1 MiB", atOpen: true,
		damage: func(p *pebble.DB) error { return p.Set(keys.Fingerprint(9), make([]byte, 1<<20), pebble.Sync) },
		want:   "fingerprint 9", lost: []string{"doc009"}},
	{name: "next id 2^32-1", atOpen: true,
		damage: func(p *pebble.DB) error { return p.Set(keys.NextID(), encodeIID(math.MaxUint32), pebble.Sync) },
		want:   "next internal id 4294967295 is far beyond the largest stored internal id 59"},
	{name: "next id with a flipped high byte", atOpen: true,
		damage: func(p *pebble.DB) error { return p.Set(keys.NextID(), encodeIID(0x0100003c), pebble.Sync) },
		want:   "next internal id 16777276 is far beyond the largest stored internal id 59"},
	{name: "next id too small", atOpen: true,
		damage: func(p *pebble.DB) error { return p.Set(keys.NextID(), encodeIID(3), pebble.Sync) },
		want:   "internal id 59 is at or beyond the next internal id 3"},
	{name: "next id missing", atOpen: true,
		damage: func(p *pebble.DB) error { return p.Delete(keys.NextID(), pebble.Sync) },
		want:   "next-id record is missing"},
	{name: "next id of 3 bytes", atOpen: true,
		damage: func(p *pebble.DB) error { return p.Set(keys.NextID(), []byte{0, 0, 60}, pebble.Sync) },
		want:   "internal id is 3 bytes, want 4"},
	{name: "deferred mark 2^32-16", atOpen: true,
		damage: func(p *pebble.DB) error { return p.Set(keys.DeferredMark(), encodeIID(strayID), pebble.Sync) },
		want:   "deferred mark 4294967280 is at or beyond the next internal id 60"},
	{name: "deferred mark of 3 bytes", atOpen: true,
		damage: func(p *pebble.DB) error { return p.Set(keys.DeferredMark(), []byte{1, 2, 3}, pebble.Sync) },
		want:   "deferred mark 010203: want 4 bytes"},
	{name: "id map names internal id 2^32-16",
		damage: func(p *pebble.DB) error { return p.Set(keys.ExtID("doc000"), encodeIID(strayID), pebble.Sync) },
		want:   `ext-id "doc000" names internal id 4294967280, which has no document record`},
	{name: "posting names internal id 2^32-16",
		damage: func(p *pebble.DB) error {
			return p.Merge(keys.Posting(7), posting.EncodeAdd(roaring.BitmapOf(strayID)), pebble.Sync)
		},
		want: "posting key 7 (group 0) names internal id 4294967280, which has no fingerprint"},
	{name: "posting key beyond every group",
		damage: func(p *pebble.DB) error {
			return p.Merge(keys.Posting(strayID), posting.EncodeAdd(roaring.BitmapOf(1)), pebble.Sync)
		},
		want: "posting key 4294967280 is outside every group"},
	{name: "posting value garbled",
		damage: func(p *pebble.DB) error { return p.Set(keys.Posting(7), []byte{0xff, 0xff, 0xff}, pebble.Sync) },
		want:   "posting key 7"},
	{name: "meta record garbled", atOpen: true, refused: true,
		damage: func(p *pebble.DB) error {
			return p.Set(keys.Meta(), []byte(`{"format_version":2,"k":4096}XXXX`), pebble.Sync)
		},
		want: "meta record checksum mismatch"},
}

// TestCorruptStore damages the records of a closed database in each way of
// storeDamages (stray and missing keys, huge counters, garbled values) and
// checks that Open fails with ErrCorrupt naming the damage (or that Open
// succeeds and Check names it), that nothing panics and nothing allocates
// hugely (TotalAlloc around Open, a query, an add, Check and Repair), and
// that Repair either repairs the database (Check then passes and every
// document it keeps is whole) or refuses with ErrCorrupt.
func TestCorruptStore(t *testing.T) {
	src := t.TempDir()
	d, err := Open(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	fps := map[string][]uint64{}
	for i := range 60 {
		id := fmt.Sprintf("doc%03d", i)
		if _, err := d.Add(ctx, Input{ID: id, Text: []byte(crashText(uint64(1000 + i)))}, nil); err != nil {
			t.Fatal(err)
		}
		fps[id] = storedFP(t, d, id)
		if i == 39 {
			if err := d.pdb.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 50; i < 55; i++ {
		id := fmt.Sprintf("doc%03d", i)
		if err := d.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		delete(fps, id)
	}
	closeChecked(t, d)

	var tried, repaired, refused, panics, huge int
	var maxAlloc uint64
	for _, c := range storeDamages {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, src)
			rawUpdate(t, dir, c.damage)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			defer func() {
				if p := recover(); p != nil {
					panics++
					t.Errorf("panic: %v\n%s", p, debug.Stack())
				}
				runtime.ReadMemStats(&after)
				alloc := after.TotalAlloc - before.TotalAlloc
				maxAlloc = max(maxAlloc, alloc)
				if alloc > hugeAlloc {
					huge++
					t.Errorf("allocated %d MB", alloc>>20)
				}
			}()
			tried++
			added := useDamaged(t, dir, c)
			rep, err := Repair(ctx, dir, nil)
			if c.refused {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Repair: %v, want it refused with ErrCorrupt naming %q", err, c.want)
				}
				refused++
				return
			}
			if err != nil {
				t.Fatalf("Repair: %v", err)
			}
			found := cmp.Or(c.found, c.want)
			if !rep.Changed || !strings.Contains(strings.Join(rep.Problems, "\n"), found) {
				t.Errorf("Repair found %q, want %q", rep.Problems, found)
			}
			if len(rep.Dropped) != len(c.lost)+c.strays || rep.Kept != len(fps)-len(c.lost)+added {
				t.Errorf("Repair kept %d, dropped %q; want %d documents and %d stray keys dropped", rep.Kept, rep.Dropped, len(c.lost), c.strays)
			}
			d := openTest(t, dir, nil) // Check runs at cleanup
			if err := d.Check(ctx); err != nil {
				t.Fatalf("Check after Repair: %v", err)
			}
			for id, fp := range fps {
				doc, err := d.Get(ctx, id)
				switch {
				case slices.Contains(c.lost, id):
					if !errors.Is(err, ErrNotFound) {
						t.Errorf("%s: Get after Repair: %v, want ErrNotFound", id, err)
					}
				case err != nil:
					t.Errorf("%s: Get after Repair: %v", id, err)
				case !slices.Equal(doc.Fingerprint, fp):
					t.Errorf("%s: fingerprint changed by Repair", id)
				}
			}
			if _, err := d.Add(ctx, Input{ID: "after", Text: []byte(crashText(7))}, nil); err != nil {
				t.Fatal(err)
			}
			repaired++
		})
	}
	t.Logf("%d damaged stores: %d panics, %d huge allocations (largest %.1f MB for Open, use, Check and Repair), %d repaired, %d refused by Repair",
		tried, panics, huge, float64(maxAlloc)/(1<<20), repaired, refused)
}

// storedFP returns the stored fingerprint of id.
func storedFP(t *testing.T, d *DB, id string) []uint64 {
	t.Helper()
	doc, err := d.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return doc.Fingerprint
}

// useDamaged opens the damaged database in dir: Open must fail with
// ErrCorrupt naming the damage when c.atOpen, else succeed, answer a query
// and take an add without panicking, and Check must name the damage. It
// returns the number of documents it added.
func useDamaged(t *testing.T, dir string, c storeDamage) int {
	t.Helper()
	d, err := Open(dir, nil)
	if c.atOpen {
		if err == nil {
			_, qerr := d.Query(ctx, []byte(crashText(1003)), QueryOptions{Threshold: 0.5})
			_, aerr := d.Add(ctx, Input{ID: "new", Text: []byte(crashText(7))}, nil)
			_ = d.Close()
			t.Fatalf("Open succeeded (then Query: %v, Add: %v); want ErrCorrupt naming %q", qerr, aerr, c.want)
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
			t.Fatalf("Open: %v; want ErrCorrupt naming %s and %q", err, dir, c.want)
		}
		return 0
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer d.Close()
	if _, err := d.Query(ctx, []byte(crashText(1003)), QueryOptions{Threshold: 0.5}); err != nil && !errors.Is(err, ErrCorrupt) {
		t.Errorf("Query: %v", err)
	}
	if _, err := d.Add(ctx, Input{ID: "new", Text: []byte(crashText(7))}, nil); err != nil {
		t.Errorf("Add: %v", err)
	}
	err = d.Check(ctx)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
		t.Fatalf("Check: %v; want ErrCorrupt naming %q", err, c.want)
	}
	return 1
}

// TestOpenRejectsBadIDInRecord: a document record whose id is empty or
// longer than MaxIDLen fails Open with ErrCorrupt (the in-memory id table
// holds only valid ids).
func TestOpenRejectsBadIDInRecord(t *testing.T) {
	for _, id := range []string{"", strings.Repeat("x", MaxIDLen+1), strings.Repeat("y", 3000)} {
		dir := t.TempDir()
		d, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			fp := make([]uint64, 8)
			fp[0] = uint64(i + 1)
			if _, err := d.Add(context.Background(), Input{ID: fmt.Sprintf("doc%d", i), Fingerprint: fp}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		p, err := pebble.Open(dir, &pebble.Options{Merger: posting.Merger(), FormatMajorVersion: pebbleFormat})
		if err != nil {
			t.Fatal(err)
		}
		v, closer, err := p.Get(keys.Doc(2))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := decodeDocRecord(v)
		closer.Close()
		if err != nil {
			t.Fatal(err)
		}
		doc.ID = id
		if err := p.Set(keys.Doc(2), appendDocRecord(nil, &doc), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if d, err := Open(dir, nil); !errors.Is(err, ErrCorrupt) {
			if err == nil {
				d.Close()
			}
			t.Fatalf("id of %d bytes in a record: Open %v, want ErrCorrupt", len(id), err)
		}
	}
}
