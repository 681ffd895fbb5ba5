package db

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/posting"
)

// postingTags counts the posting values of d's store by their first byte:
// 1 for roaring's format, 2 for the compact one.
func postingTags(t *testing.T, d *DB) map[byte]int {
	t.Helper()
	lo, hi := keys.Range(keys.PrefixPosting)
	it, err := d.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	tags := map[byte]int{}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil || len(v) == 0 {
			t.Fatalf("posting %x: %q, %v", it.Key(), v, err)
		}
		tags[v[0]]++
	}
	return tags
}

// writePostings adds documents to d one by one and in a bulk batch,
// deletes some, writes the deferred postings and compacts the store, so
// that posting values are written by every writer: a batch's operands, the
// deferred flush and Pebble's merges.
func writePostings(t *testing.T, d *DB, from int) {
	t.Helper()
	for i := range 20 {
		if _, err := d.Add(ctx, Input{ID: fmt.Sprint("one", from+i), Fingerprint: faultFP(uint64(from + i))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var batch []Input
	for i := range 300 {
		batch = append(batch, Input{ID: fmt.Sprint("bulk", from+i), Fingerprint: faultFP(uint64(1000 + from + i))})
	}
	if _, err := d.AddBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := d.Delete(ctx, fmt.Sprint("one", from+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Compact(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPostingEncodingByFormat: a new database (format 5) writes the sparse
// posting lists of random documents in the compact encoding; a format-4
// database keeps writing roaring's format only, so that the builds that
// made it still read it, and stays at format 4. Both answer queries as a
// scan does (Check, at Close).
func TestPostingEncodingByFormat(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, &Options{BulkLoad: true, NoSync: true})
	if v := d.Params().FormatVersion; v != formatV5 {
		t.Fatalf("a new database has format %d, want %d", v, formatV5)
	}
	writePostings(t, d, 0)
	if tags := postingTags(t, d); tags[2] == 0 || len(tags) > 2 || tags[1]+tags[2] == 0 {
		t.Errorf("format 5: posting tags %v, want compact values", tags)
	}
	checkQueries(t, d)

	old := t.TempDir()
	d = openTest(t, old, nil)
	p := d.params
	p.FormatVersion = formatV4
	pset(t, d, keys.Meta(), encodeMeta(p))
	if err := d.Close(); err != nil { // Check would see the meta record changed under it
		t.Fatal(err)
	}
	d = openTest(t, old, &Options{BulkLoad: true, NoSync: true})
	writePostings(t, d, 0)
	writePostings(t, d, 5000)
	if tags := postingTags(t, d); tags[1] == 0 || len(tags) != 1 {
		t.Errorf("format 4: posting tags %v, want roaring's format only", tags)
	}
	if v := d.Params().FormatVersion; v != formatV4 {
		t.Errorf("format %d after writes, want 4", v)
	}
	checkQueries(t, d)

	// A compact value in it is a problem for Check (builds of format 4
	// could not read it).
	lo, hi := keys.Range(keys.PrefixPosting)
	it, err := d.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	it.First()
	k, v := bytes.Clone(it.Key()), bytes.Clone(it.Value())
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	ids, err := posting.IDs(v)
	if err != nil {
		t.Fatal(err)
	}
	compact := posting.EncodeAddAs(ids, posting.Compact)
	if !posting.IsCompact(compact) {
		t.Fatalf("%d ids not compact", ids.GetCardinality())
	}
	pset(t, d, k, compact)
	if err := d.Check(ctx); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "compact encoding") {
		t.Errorf("Check of a compact value at format 4: %v", err)
	}
	pset(t, d, k, v)
}

// checkQueries checks that a query of each stored document's fingerprint
// finds it, at resemblance 1.
func checkQueries(t *testing.T, d *DB) {
	t.Helper()
	if err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 5; i < 20; i++ {
		res, err := d.QueryFingerprint(ctx, faultFP(uint64(i)), QueryOptions{Threshold: 1})
		if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != fmt.Sprint("one", i) {
			t.Fatalf("query of one%d: %+v, %v", i, res, err)
		}
	}
}
