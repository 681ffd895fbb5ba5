package db

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// salvageSource builds a closed database of n documents added by
// fingerprint (document i has internal id i), flushed and compacted into
// sstables, and returns its directory and the documents.
func salvageSource(t *testing.T, n int) (string, []Doc) {
	t.Helper()
	dir := t.TempDir()
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 8))
	docs := make([]Doc, n)
	in := make([]Input, n)
	for i := range docs {
		fp := make([]uint64, DefaultK/64)
		for j := range fp {
			fp[j] = r.Uint64()
		}
		docs[i] = Doc{ID: fmt.Sprintf("doc%05d", i), Fingerprint: fp, Source: fmt.Sprintf("src/%d", i)}
		in[i] = Input{ID: docs[i].ID, Fingerprint: fp, Source: docs[i].Source}
	}
	if _, err := d.AddBatch(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	closeChecked(t, d)
	return dir, docs
}

// TestSalvage flips 3 random bytes in the sstables of a copy of a database,
// the damage that makes Repair fail and Export impossible, and checks that
// Salvage never fails for want of a readable block (only when the meta
// record itself is unreadable), that every document it writes is whole and
// imports into a new database that passes Check, and that every document
// it leaves out is accounted for: its internal id lies in a range the report
// lists as unreadable, or the report lists it as dropped.
func TestSalvage(t *testing.T) {
	const n = 3000
	trials := 24
	if testing.Short() {
		trials = 8
	}
	src, docs := salvageSource(t, n)
	var ssts []string
	ents, _ := os.ReadDir(src)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sst") {
			ssts = append(ssts, e.Name())
		}
	}
	if len(ssts) == 0 {
		t.Fatal("no sstable")
	}
	r := rand.New(rand.NewPCG(11, 3))
	var repairFailed, rescued, refused, total, unreadable int
	for trial := range trials {
		dir := copyDir(t, src)
		for range 3 {
			path := filepath.Join(dir, ssts[r.IntN(len(ssts))])
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var repErr error
		func() {
			// Repair is run on its own copy: it may change the store.
			if _, err := Repair(ctx, copyDir(t, dir), nil); err != nil {
				repErr = err
			}
		}()
		var out bytes.Buffer
		rep, err := Salvage(ctx, dir, &out, nil)
		if rep != nil {
			unreadable += len(rep.Unreadable)
			checkSalvageMessages(t, trial, rep)
		}
		if err != nil {
			if msg := err.Error(); redacted(msg) {
				t.Errorf("trial %d: Salvage error %q holds Pebble's carrier or redaction marks", trial, msg)
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), dir) {
				t.Errorf("trial %d: Salvage: %v, want ErrCorrupt naming the database", trial, err)
			}
			refused++
			t.Logf("trial %d: Salvage refused: %v", trial, err)
			continue
		}
		if rep.Docs != strings.Count(out.String(), "\n")-1 {
			t.Errorf("trial %d: report says %d documents, output has %d lines", trial, rep.Docs, strings.Count(out.String(), "\n"))
		}
		into := filepath.Join(t.TempDir(), "new")
		got, err := Import(ctx, into, &out, nil)
		if err != nil {
			t.Fatalf("trial %d: Import of the salvaged documents: %v", trial, err)
		}
		nd := openTest(t, into, nil) // Check at cleanup
		if err := nd.Check(ctx); err != nil {
			t.Fatalf("trial %d: Check of the new database: %v", trial, err)
		}
		for i, want := range docs {
			doc, err := nd.Get(ctx, want.ID)
			if err == nil {
				if !slices.Equal(doc.Fingerprint, want.Fingerprint) || doc.Source != want.Source {
					t.Errorf("trial %d: %s salvaged with a different fingerprint or source", trial, want.ID)
				}
				continue
			}
			if !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
			iid := uint32(i)
			covered := slices.ContainsFunc(rep.Unreadable, func(u UnreadableRange) bool { return u.From <= iid && iid <= u.To }) ||
				slices.ContainsFunc(rep.Dropped, func(s string) bool { return strings.HasPrefix(s, fmt.Sprintf("internal id %d: ", iid)) })
			if !covered {
				t.Errorf("trial %d: %s (internal id %d) left out silently; report %v", trial, want.ID, iid, rep)
			}
		}
		if err := nd.Close(); err != nil {
			t.Fatal(err)
		}
		total += got
		if repErr != nil {
			if repairFailed == 0 {
				t.Logf("trial %d: Repair: %v", trial, repErr)
			}
			repairFailed++
			if got >= n*9/10 {
				rescued++
			}
		}
	}
	t.Logf("%d trials of 3 flipped bytes in the sstables of %d documents: Repair failed %d times; Salvage refused %d times (meta record unreadable), salvaged %.1f%% of the documents on average; %d of the databases Repair failed on salvaged at ≥ 90%%",
		trials, n, repairFailed, refused, 100*float64(total)/float64(n*(trials-refused)), rescued)
	if repairFailed > 0 && rescued == 0 {
		t.Errorf("Salvage rescued ≥ 90%% of no database that Repair failed on")
	}
	if unreadable == 0 {
		t.Errorf("no trial had an unreadable range: the messages were not checked")
	}
}

// checkSalvageMessages fails t when a message of rep (as "fpdb export
// --salvage" prints it) holds Pebble's "<corruption detail carrier>" or
// the redaction marks ‹ › of its errors, or an unreadable range's message
// does not say what is wrong.
func checkSalvageMessages(t *testing.T, trial int, rep *SalvageReport) {
	t.Helper()
	for _, u := range rep.Unreadable {
		for _, msg := range []string{u.String(), fmt.Sprintf("%v", u), u.Err.Error()} {
			if redacted(msg) {
				t.Errorf("trial %d: unreadable range message %q holds Pebble's carrier or redaction marks", trial, msg)
			}
		}
		if msg := u.Err.Error(); strings.TrimSpace(msg) == "" {
			t.Errorf("trial %d: unreadable range %d-%d without a cause", trial, u.From, u.To)
		}
	}
	for _, msg := range rep.Dropped {
		if redacted(msg) {
			t.Errorf("trial %d: dropped message %q holds Pebble's carrier or redaction marks", trial, msg)
		}
	}
}

// redacted reports whether msg holds Pebble's corruption detail carrier or
// a redaction mark.
func redacted(msg string) bool {
	return strings.Contains(msg, "<corruption detail carrier>") || strings.ContainsAny(msg, "‹›")
}

// TestSalvageIntact: on an undamaged database Salvage writes what Export
// writes.
func TestSalvageIntact(t *testing.T) {
	src, _ := salvageSource(t, 500)
	var a, b bytes.Buffer
	rep, err := Salvage(ctx, src, &a, nil)
	if err != nil || rep.Docs != 500 || len(rep.Unreadable)+len(rep.Dropped) != 0 {
		t.Fatalf("Salvage: %v %+v", err, rep)
	}
	d := openTest(t, src, &Options{ReadOnly: true})
	if _, err := d.Export(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatal("Salvage and Export differ on an intact database")
	}
}

// TestSalvageSaysWhatItLeaves: Salvage names the audit log it does not
// carry (Left), and the mark of an import that did not finish, whose
// documents are only part of an export; Export does not export such a
// database at all.
func TestSalvageSaysWhatItLeaves(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, &Options{AuditLog: true, NoSync: true})
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte(text(1, 200))}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := Salvage(ctx, dir, &out, nil)
	if err != nil || len(rep.Left) != 1 || !strings.Contains(rep.Left[0], "audit log") {
		t.Fatalf("Salvage of a database with a log: %v %+v", err, rep)
	}

	src := openTest(t, "", &Options{NoSync: true})
	for i := range 3 {
		if _, err := src.Add(ctx, Input{ID: fmt.Sprint("d", i), Text: []byte(text(uint64(i), 200))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	lines := bytes.SplitAfter(exportOf(t, src), []byte("\n"))
	dir = t.TempDir()
	dst := openTest(t, dir, &Options{NoSync: true})
	dst.testImportBatch = 2
	if _, err := dst.ImportInto(ctx, bytes.NewReader(bytes.Join(lines[:3], nil))); !errors.Is(err, ErrBadExport) {
		t.Fatalf("a cut export: %v", err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	rep, err = Salvage(ctx, dir, &out, nil)
	if err != nil || rep.Docs != 2 || len(rep.Left) != 1 || !strings.Contains(rep.Left[0], "import that did not finish") {
		t.Fatalf("Salvage of an unfinished import: %v %+v", err, rep)
	}
}
