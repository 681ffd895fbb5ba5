package db

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// corruption is one way of damaging a database through Pebble directly.
type corruption struct {
	name string
	// damage breaks the store of d, which holds docs "doc0".."doc9".
	damage func(t *testing.T, d *DB)
	// want are substrings Check (or Repair) must report; when Open fails,
	// its error must contain the first.
	want []string
	// lost are the ids Repair must drop (their record or fingerprint is gone).
	lost []string
}

func seqOf(t *testing.T, d *DB, id string) uint32 {
	t.Helper()
	doc, err := d.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return doc.iid
}

func pset(t *testing.T, d *DB, k, v []byte) {
	t.Helper()
	if err := d.pdb.Set(k, v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

func pdel(t *testing.T, d *DB, k []byte) {
	t.Helper()
	if err := d.pdb.Delete(k, pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

var corruptions = []corruption{
	{
		name: "posting key deleted",
		damage: func(t *testing.T, d *DB) {
			fp := d.ix.Fingerprint(seqOf(t, d, "doc3"))
			pdel(t, d, keys.Posting(d.ix.Layout().Value(fp, 5)))
		},
		want: []string{`(“doc3”) is missing from posting key`, "(group 5)"},
	},
	{
		name:   "ext-id entry deleted",
		damage: func(t *testing.T, d *DB) { pdel(t, d, keys.ExtID("doc4")) },
		want:   []string{`document 4 ("doc4") has no ext-id entry`},
	},
	{
		name:   "ext-id entry names another document",
		damage: func(t *testing.T, d *DB) { pset(t, d, keys.ExtID("doc5"), encodeIID(6)) },
		want:   []string{`document 5 ("doc5"): its ext-id entry names internal id 6`, `ext-id "doc5" names internal id 6, which is document "doc6"`},
	},
	{
		name: "posting names an unknown document",
		damage: func(t *testing.T, d *DB) {
			if err := d.pdb.Merge(keys.Posting(7), posting.EncodeAdd(roaring.BitmapOf(999)), pebble.Sync); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{"posting key 7 (group 0) names internal id 999, which has no fingerprint"},
	},
	{
		name:   "a content-hash key (format 1) in a newer database",
		damage: func(t *testing.T, d *DB) { pset(t, d, keys.Hash([16]byte{1, 2, 3}, 77), nil) },
		want:   []string{"content-hash key 68010203000000000000000000000000000000004d: format 5 has no content-hash index"},
	},
	{
		name:   "next id too small",
		damage: func(t *testing.T, d *DB) { pset(t, d, keys.NextID(), encodeIID(3)) },
		want:   []string{"internal id 9 is at or beyond the next internal id 3"},
	},
	{
		name:   "fingerprint deleted",
		damage: func(t *testing.T, d *DB) { pdel(t, d, keys.Fingerprint(8)) },
		want:   []string{`document 8 ("doc8") has no fingerprint`, "names internal id 8, which has no fingerprint"},
		lost:   []string{"doc8"},
	},
	{
		name:   "document record deleted",
		damage: func(t *testing.T, d *DB) { pdel(t, d, keys.Doc(1)) },
		want:   []string{"fingerprint 1 has no document record", `ext-id "doc1" names internal id 1, which has no document record`},
		lost:   []string{"doc1"},
	},
	{
		name:   "document record garbled",
		damage: func(t *testing.T, d *DB) { pset(t, d, keys.Doc(0), []byte{1, 200, 1, 'x'}) },
		want:   []string{"document 0: fpdb: corrupt record: document record: bad id"},
		lost:   []string{"doc0"},
	},
	{
		name:   "fingerprint truncated",
		damage: func(t *testing.T, d *DB) { pset(t, d, keys.Fingerprint(9), []byte{1, 2, 3}) },
		want:   []string{"fingerprint 9:"},
		lost:   []string{"doc9"},
	},
}

// TestCheckAndRepair damages a database in each way of corruptions through
// Pebble, and checks that Check (or Open) names the problem, that Repair
// fixes it, that Check then passes and that every intact document is whole.
func TestCheckAndRepair(t *testing.T) {
	for _, c := range corruptions {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			d, err := Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			texts := map[string]string{}
			for i := range 10 {
				id := fmt.Sprint("doc", i)
				texts[id] = text(uint64(300+i), 120)
				if _, err := d.Add(ctx, Input{ID: id, Text: []byte(texts[id])}, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Check(ctx); err != nil {
				t.Fatalf("Check before damage: %v", err)
			}
			c.damage(t, d)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			// Open loads document records and fingerprints and checks that
			// each has the other: such damage fails Open (which names the
			// first problem of want, and Repair all of them); anything else
			// is found by Check.
			want := strings.NewReplacer("“", `"`, "”", `"`).Replace(strings.Join(c.want, "\n"))
			wants := strings.Split(want, "\n")
			var report string
			d, err = Open(dir, nil)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open: %v, want ErrCorrupt", err)
				}
				report = err.Error()
				wants = wants[:1]
			} else {
				err := d.Check(ctx)
				var ce *CheckError
				if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Check after damage: %v, want a *CheckError", err)
				}
				report = strings.Join(ce.Problems, "\n")
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
			}
			for _, w := range wants {
				if !strings.Contains(report, w) {
					t.Errorf("report lacks %q:\n%s", w, report)
				}
			}

			rep, err := Repair(ctx, dir, nil)
			if err != nil {
				t.Fatalf("Repair: %v", err)
			}
			if !rep.Changed || len(rep.Problems) == 0 {
				t.Fatalf("Repair changed nothing: %+v", rep)
			}
			for _, w := range strings.Split(want, "\n") {
				if !slices.ContainsFunc(rep.Problems, func(p string) bool { return strings.Contains(p, w) }) {
					t.Errorf("Repair's problems lack %q: %q", w, rep.Problems)
				}
			}
			if len(rep.Dropped) != len(c.lost) || rep.Kept != 10-len(c.lost) {
				t.Errorf("Repair kept %d, dropped %q; want %d lost", rep.Kept, rep.Dropped, len(c.lost))
			}
			d = openTest(t, dir, nil) // Check runs at cleanup
			if err := d.Check(ctx); err != nil {
				t.Fatalf("Check after Repair: %v", err)
			}
			for id, s := range texts {
				doc, err := d.Get(ctx, id)
				if slices.Contains(c.lost, id) {
					if !errors.Is(err, ErrNotFound) {
						t.Errorf("%s: Get after Repair: %v, want ErrNotFound", id, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: Get after Repair: %v", id, err)
				}
				q, err := d.Query(ctx, []byte(s), QueryOptions{Threshold: 1})
				if err != nil {
					t.Fatal(err)
				}
				if len(q.Matches) != 1 || q.Matches[0].ID != id || !q.Matches[0].Exact {
					t.Errorf("%s: query of its own text after Repair: %+v", id, q.Matches)
				}
				fp, _, _ := d.build(strings.NewReader(s), nil, TextOptions{}, "")
				if !slices.Equal(doc.Fingerprint, fp.FP) {
					t.Errorf("%s: fingerprint changed", id)
				}
			}
			// Adds keep working and a second Repair has nothing to do.
			if _, err := d.Add(ctx, Input{ID: "after", Text: []byte(text(399, 80))}, nil); err != nil {
				t.Fatal(err)
			}
			closeChecked(t, d)
			rep, err = Repair(ctx, dir, nil)
			if err != nil || rep.Changed || len(rep.Problems) != 0 {
				t.Fatalf("second Repair: %+v %v", rep, err)
			}
		})
	}
}

func TestRepairRefuses(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, nil)
	if _, err := Repair(ctx, dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("Repair of an open DB: %v", err)
	}
	raw := encodeMeta(d.params)
	raw[5] ^= 1
	pset(t, d, keys.Meta(), raw)
	if err := d.Check(ctx); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "meta record checksum mismatch") {
		t.Fatalf("Check with a damaged meta record: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(ctx, dir, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Repair with a damaged meta record: %v", err)
	}
	if _, err := Repair(ctx, t.TempDir(), nil); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Repair of an empty dir: %v", err)
	}
}

// TestUpgradeFromFormat1 makes a format-1 database (meta version 1 and a
// content-hash key per document) and checks that a read-only Open serves
// it as it is, and that a writable Open upgrades it to format 2 in place:
// the content-hash index gone, every document and answer unchanged.
func TestUpgradeFromFormat1(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.ix.SetPostingEncoding(posting.Roaring) // as a build of format 1 writes them
	var queries []string
	for i := range 20 {
		txt := text(uint64(i), 100)
		if _, err := d.Add(ctx, Input{ID: fmt.Sprint("doc", i), Text: []byte(txt)}, nil); err != nil {
			t.Fatal(err)
		}
		queries = append(queries, edit(txt, 40))
	}
	p := d.Params()
	p.FormatVersion = formatV1
	pset(t, d, keys.Meta(), encodeMeta(p))
	for i := range 20 {
		doc, err := d.Get(ctx, fmt.Sprint("doc", i))
		if err != nil {
			t.Fatal(err)
		}
		pset(t, d, keys.Hash(doc.ContentHash, doc.iid), nil)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	answers := func(d *DB) string {
		var b strings.Builder
		for _, q := range queries {
			res, err := d.Query(ctx, []byte(q), QueryOptions{Threshold: 0.5})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, res.Matches)
		}
		return b.String()
	}
	hashKeys := func(d *DB) int {
		n := 0
		lo, hi := keys.Range(keys.PrefixHash)
		it, _ := d.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		for it.First(); it.Valid(); it.Next() {
			n++
		}
		_ = it.Close()
		return n
	}

	ro := openTest(t, dir, &Options{ReadOnly: true})
	if v := ro.Params().FormatVersion; v != formatV1 || hashKeys(ro) != 20 {
		t.Fatalf("read-only: format %d with %d content-hash keys, want 1 and 20", v, hashKeys(ro))
	}
	before := answers(ro)
	if !strings.Contains(before, "doc") {
		t.Fatal("no query matched: the test proves nothing")
	}
	closeChecked(t, ro)

	rw := openTest(t, dir, nil)
	if v := rw.Params().FormatVersion; v != formatV2 || hashKeys(rw) != 0 {
		t.Fatalf("after a writable open: format %d with %d content-hash keys, want 2 and 0", v, hashKeys(rw))
	}
	if after := answers(rw); after != before {
		t.Fatalf("answers changed by the upgrade:\n%s\nvs\n%s", before, after)
	}
}
