package db

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/internal/keys"
)

// logOf returns the entries o selects.
func logOf(t testing.TB, d *DB, o LogOptions) []LogEntry {
	t.Helper()
	var out []LogEntry
	if err := d.Log(ctx, o, func(e LogEntry) error { out = append(out, e); return nil }); err != nil {
		t.Fatalf("Log(%+v): %v", o, err)
	}
	return out
}

// wantEntry checks the decision, id, op and matched ids of e.
func wantEntry(t *testing.T, e LogEntry, x Decision, id string, op LogOp, matches ...string) {
	t.Helper()
	var got []string
	for _, m := range e.Matches {
		got = append(got, m.ID)
	}
	if e.Decision != x || e.ID != id || e.Op != op || !slices.Equal(got, matches) {
		t.Fatalf("entry %d: %s %q via %s matches %q, want %s %q via %s matches %q", e.Seq, e.Decision, e.ID, e.Op, got, x, id, op, matches)
	}
}

// TestAuditDecisions: every kind of decision of every path that adds or
// deletes is recorded, in order, with its parameters, its content hash
// and the matches the add returned (similarity, Hamming distance, exact).
func TestAuditDecisions(t *testing.T) {
	d := openTest(t, "", &Options{AuditLog: true})
	a := text(1, 300)
	add := func(id, txt string, o *AddOptions, replace bool) *AddResult {
		t.Helper()
		res, err := d.Add(ctx, Input{ID: id, Text: []byte(txt), Source: id + ".txt", ReplaceUnchanged: replace}, o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	add("a", a, nil, false)
	rb := add("b", edit(a, 30), &AddOptions{Threshold: 0.5}, false)
	rc := add("c", a, &AddOptions{Threshold: 0.5, Reject: true, Limit: 1}, false)
	if rc.Stored || len(rb.Matches) != 1 {
		t.Fatalf("setup: c stored %v, b matches %v", rc.Stored, rb.Matches)
	}
	add("a", a, nil, false)            // unchanged
	add("a", a, nil, true)             // replaced, though unchanged
	add("a", text(2, 300), nil, false) // replaced
	if err := d.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.AddBatch(ctx, []Input{{ID: "d", Text: []byte(text(3, 50))}, {ID: "a", Text: []byte(text(2, 300))}, {ID: "", Text: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DeletePrefix(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	es := logOf(t, d, LogOptions{})
	if len(es) != 10 {
		t.Fatalf("%d entries, want 10: %v", len(es), es)
	}
	wantEntry(t, es[0], DecisionStored, "a", OpAdd)
	wantEntry(t, es[1], DecisionStored, "b", OpAdd, "a")
	wantEntry(t, es[2], DecisionRejected, "c", OpAdd, "a", "b") // all matches, not Limit's one
	wantEntry(t, es[3], DecisionUnchanged, "a", OpAdd)
	wantEntry(t, es[4], DecisionReplaced, "a", OpAdd)
	wantEntry(t, es[5], DecisionReplaced, "a", OpAdd)
	wantEntry(t, es[6], DecisionDeleted, "b", OpDelete)
	wantEntry(t, es[7], DecisionStored, "d", OpAddBatch)
	wantEntry(t, es[8], DecisionUnchanged, "a", OpAddBatch)
	wantEntry(t, es[9], DecisionDeleted, "d", OpDelete)
	for i, e := range es {
		if e.Seq != uint64(i+1) || i > 0 && e.Time.Before(es[i-1].Time) || time.Since(e.Time) > time.Minute {
			t.Fatalf("entry %d: seq %d time %v", i, e.Seq, e.Time)
		}
	}
	if m := es[1].Matches[0]; m.Similarity != rb.Matches[0].Similarity || m.Hamming != rb.Matches[0].Hamming || m.Exact ||
		math.Abs(m.Similarity-(1-2*float64(m.Hamming)/512)) > 1e-12 {
		t.Fatalf("b's match %+v, Add returned %+v", m, rb.Matches[0])
	}
	if e := es[2]; !e.Matches[0].Exact || e.Matches[0].Similarity != 1 || e.Threshold != 0.5 || !e.Reject || e.ReplaceUnchanged || e.Source != "c.txt" {
		t.Fatalf("rejection entry %+v", e)
	}
	if !es[4].ReplaceUnchanged || es[0].Threshold != 0 || es[0].ContentHash != rc.Doc.ContentHash {
		t.Fatalf("entries %+v / %+v: parameters or hash wrong", es[0], es[4])
	}
	if es[6].ContentHash != rb.Doc.ContentHash || es[6].Source != "" {
		t.Fatalf("deletion of b: %+v, want its hash", es[6])
	}
	if d.Stats().Docs != 1 {
		t.Fatalf("%d documents", d.Stats().Docs)
	}
	ss, err := d.StorageStats(ctx)
	if err != nil || ss.LogEntries != 10 || ss.LogBytes <= 0 {
		t.Fatalf("storage stats: %+v %v", ss, err)
	}
}

// TestAuditMatchCap: an add that finds more than MaxLogMatches near
// duplicates lists the most similar MaxLogMatches and counts the rest.
func TestAuditMatchCap(t *testing.T) {
	d := openTest(t, "", &Options{AuditLog: true})
	base := text(7, 400)
	var batch []Input
	for i := range MaxLogMatches + 4 {
		batch = append(batch, Input{ID: fmt.Sprintf("v%02d", i), Text: []byte(edit(base, 20+3*i))})
	}
	if _, err := d.AddBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	res, err := d.Add(ctx, Input{ID: "q", Text: []byte(base)}, &AddOptions{Threshold: 0.3})
	if err != nil || len(res.Matches) != MaxLogMatches+4 {
		t.Fatalf("add: %d matches, %v", len(res.Matches), err)
	}
	es := logOf(t, d, LogOptions{ID: "q"})
	if len(es) != 1 || len(es[0].Matches) != MaxLogMatches || es[0].MoreMatches != 4 {
		t.Fatalf("entry %+v", es)
	}
	for i, m := range es[0].Matches {
		if m.ID != res.Matches[i].ID || m.Similarity != res.Matches[i].Similarity {
			t.Fatalf("match %d: %+v, Add returned %+v", i, m, res.Matches[i])
		}
	}
}

// TestAuditFilters: ID, Since, After and Limit select exactly what
// filtering the whole log selects, Since found by bisection.
func TestAuditFilters(t *testing.T) {
	d := openTest(t, "", &Options{AuditLog: true, NoSync: true})
	for i := range 200 {
		id := fmt.Sprintf("doc%d", i%7)
		if _, err := d.Add(ctx, Input{ID: id, Text: []byte(text(uint64(i), 40))}, nil); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			time.Sleep(3 * time.Millisecond)
		}
	}
	all := logOf(t, d, LogOptions{})
	if len(all) != 200 {
		t.Fatalf("%d entries", len(all))
	}
	since := []time.Time{all[0].Time.Add(-time.Hour), all[0].Time, all[77].Time, all[150].Time.Add(time.Nanosecond),
		all[199].Time, all[199].Time.Add(time.Second)}
	for _, id := range []string{"", "doc3", "doc9"} {
		for _, s := range since {
			for _, after := range []uint64{0, 60, 199, 200, math.MaxUint64} {
				for _, limit := range []int{0, 5} {
					o := LogOptions{ID: id, Since: s, After: after, Limit: limit}
					var want []LogEntry
					for _, e := range all {
						if (id == "" || e.ID == id) && !e.Time.Before(s) && e.Seq > after && (limit == 0 || len(want) < limit) {
							want = append(want, e)
						}
					}
					got := logOf(t, d, o)
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("%+v: %d entries, want %d", o, len(got), len(want))
					}
				}
			}
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := d.Log(ctx, LogOptions{}, func(LogEntry) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("an error from fn: %v after %d", err, n)
	}
	if err := d.Log(ctx, LogOptions{ID: "a\x00b"}, func(LogEntry) error { return nil }); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("bad id: %v", err)
	}
}

// TestAuditForget: Delete keeps a document's entries and records the
// deletion; Forget erases them, redacts the forgotten id from the matches
// of other entries, reuses no sequence number, and leaves the other
// documents' entries as they were.
func TestAuditForget(t *testing.T) {
	d := openTest(t, "", &Options{AuditLog: true})
	a := text(11, 300)
	for _, in := range []Input{{ID: "x", Text: []byte(a)}, {ID: "y", Text: []byte(edit(a, 30))}, {ID: "z", Text: []byte(text(12, 100))}} {
		if _, err := d.Add(ctx, in, &AddOptions{Threshold: 0.5}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Delete(ctx, "z"); err != nil {
		t.Fatal(err)
	}
	if es := logOf(t, d, LogOptions{ID: "z"}); len(es) != 2 || es[1].Decision != DecisionDeleted {
		t.Fatalf("z after Delete: %v", es)
	}
	res, err := d.Forget(ctx, []string{"x", "z", "nobody", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 1 || res.Erased != 3 || res.Redacted != 1 || !slices.Equal(res.NotFound, []string{"nobody"}) {
		t.Fatalf("forget: %+v", res)
	}
	if ok, _ := d.Has(ctx, "x"); ok {
		t.Fatal("x still stored")
	}
	es := logOf(t, d, LogOptions{})
	if len(es) != 1 || es[0].ID != "y" || es[0].Seq != 2 || len(es[0].Matches) != 1 || es[0].Matches[0].ID != "" {
		t.Fatalf("log after forget: %v", es)
	}
	for _, id := range []string{"x", "z"} {
		if got := logOf(t, d, LogOptions{ID: id}); len(got) != 0 {
			t.Fatalf("entries of %s left: %v", id, got)
		}
	}
	if bytes.Contains([]byte(dump(t, d)), []byte(fmt.Sprintf("%x", "x\x00"))) {
		t.Fatal("an index key of x is left")
	}
	if _, err := d.Add(ctx, Input{ID: "w", Text: []byte("new words here again")}, nil); err != nil {
		t.Fatal(err)
	}
	if es := logOf(t, d, LogOptions{ID: "w"}); len(es) != 1 || es[0].Seq != 5 {
		t.Fatalf("next entry %v, want seq 5 (1 to 4 used)", es)
	}
	// Reopened, the counter is still beyond the erased entries.
	dir := d.Dir()
	closeChecked(t, d)
	d = openTest(t, dir, nil)
	if _, err := d.Forget(ctx, []string{"w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, Input{ID: "v", Text: []byte("other words here again")}, nil); err != nil {
		t.Fatal(err)
	}
	if es := logOf(t, d, LogOptions{ID: "v"}); len(es) != 1 || es[0].Seq != 6 {
		t.Fatalf("after reopen: %v, want seq 6 (5 was erased, not reused)", es)
	}
}

// TestAuditNoLog: a database created without the log records nothing,
// Log says so, and asking for the log on it is a ParamsError.
func TestAuditNoLog(t *testing.T) {
	dir := t.TempDir()
	d := openTest(t, dir, nil)
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte("some words to store")}, &AddOptions{Threshold: 0.5}); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := d.Log(ctx, LogOptions{}, func(LogEntry) error { return nil }); !errors.Is(err, ErrNoLog) {
		t.Fatalf("Log: %v", err)
	}
	if strings.Contains(dump(t, d), "\n6c") || strings.HasPrefix(dump(t, d), "6c") {
		t.Fatal("log keys written without the log")
	}
	closeChecked(t, d)
	if _, err := Open(dir, &Options{AuditLog: true}); !errors.Is(err, ErrParamsMismatch) {
		t.Fatalf("AuditLog on a database without it: %v", err)
	}
	d = openTest(t, filepath.Join(dir, "new"), &Options{AuditLog: true})
	if p := d.Params(); !p.AuditLog || p.FormatVersion != formatNewest {
		t.Fatalf("params %+v", p)
	}
}

// TestAuditExportImport: an export carries the log and Import restores it
// entry for entry (sequence numbers and times included), then goes on
// numbering; an export without a log imported with Options.AuditLog
// records each document; a damaged log section is refused.
func TestAuditExportImport(t *testing.T) {
	src := openTest(t, "", &Options{AuditLog: true})
	a := text(21, 200)
	for i, in := range []Input{{ID: "a", Text: []byte(a), Source: "s"}, {ID: "b", Text: []byte(edit(a, 30))}, {ID: "c", Text: []byte(a)}} {
		if _, err := src.Add(ctx, in, &AddOptions{Threshold: 0.5, Reject: i == 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Forget(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	exp := exportOf(t, src)
	if !bytes.HasPrefix(exp, []byte(`{"fpdb_export":2,`)) || !bytes.Contains(exp, []byte(`"audit_log":true,"log_entries":2`)) {
		t.Fatalf("header: %s", bytes.SplitN(exp, []byte("\n"), 2)[0])
	}
	want, _ := json.Marshal(logOf(t, src, LogOptions{}))
	dir := filepath.Join(t.TempDir(), "db")
	if _, err := Import(ctx, dir, bytes.NewReader(exp), nil); err != nil {
		t.Fatal(err)
	}
	d := openTest(t, dir, nil)
	if got, _ := json.Marshal(logOf(t, d, LogOptions{})); string(got) != string(want) {
		t.Fatalf("imported log\n%s\nwant\n%s", got, want)
	}
	if _, err := d.Add(ctx, Input{ID: "n", Text: []byte("a new document")}, nil); err != nil {
		t.Fatal(err)
	}
	if es := logOf(t, d, LogOptions{ID: "n"}); len(es) != 1 || es[0].Seq != 4 {
		t.Fatalf("first entry after import: %v", es)
	}

	// An export without a log (version 1), into a database with one.
	plain := openTest(t, "", nil)
	if _, err := plain.Add(ctx, Input{ID: "p", Text: []byte(a)}, nil); err != nil {
		t.Fatal(err)
	}
	exp1 := exportOf(t, plain)
	if !bytes.HasPrefix(exp1, []byte(`{"fpdb_export":1,`)) || bytes.Contains(exp1, []byte("audit_log")) {
		t.Fatalf("export without a log: %s", exp1)
	}
	dir1 := filepath.Join(t.TempDir(), "db")
	if _, err := Import(ctx, dir1, bytes.NewReader(exp1), &Options{AuditLog: true}); err != nil {
		t.Fatal(err)
	}
	d1 := openTest(t, dir1, nil)
	if es := logOf(t, d1, LogOptions{}); len(es) != 1 {
		t.Fatalf("import without a log: %v", es)
	} else {
		wantEntry(t, es[0], DecisionStored, "p", OpImport)
	}

	header, rest, _ := strings.Cut(string(exp), "\n")
	lines := strings.Split(strings.TrimSpace(rest), "\n")
	docs, logs := lines[:len(lines)-2], lines[len(lines)-2:]
	join := func(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
	bad := map[string]string{
		"truncated":        join(append(append([]string{header}, docs...), logs[0])...),
		"order":            join(append(append([]string{header}, docs...), logs[1], logs[0])...),
		"bad decision":     join(append(append([]string{header}, docs...), logs[0], strings.Replace(logs[1], `"decision":"`, `"decision":"x`, 1))...),
		"bad similarity":   join(append(append([]string{header}, docs...), logs[0], strings.Replace(logs[1], `"similarity":`, `"similarity":0.1`, 1))...),
		"log in version 1": join(append(append([]string{strings.Replace(header, `"fpdb_export":2`, `"fpdb_export":1`, 1)}, docs...), logs...)...),
	}
	for name, in := range bad {
		if _, err := Import(ctx, filepath.Join(t.TempDir(), "db"), strings.NewReader(in), nil); !errors.Is(err, ErrBadExport) {
			t.Errorf("%s: %v, want ErrBadExport", name, err)
		}
	}
}

// TestAuditCheckRepair: Check reports an undecodable entry and an index key
// naming no entry; Repair deletes them, and Check then passes.
func TestAuditCheckRepair(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{AuditLog: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := d.Add(ctx, Input{ID: id, Text: []byte("words of " + id + " to store")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	_ = d.pdb.Set(keys.Log(1), []byte{1, 9, 9}, nil)
	_ = d.pdb.Set(keys.LogByID("ghost", 40), nil, nil)
	var ce *CheckError
	if err := d.Check(ctx); !errors.As(err, &ce) || len(ce.Problems) != 3 {
		t.Fatalf("Check: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	d = openTest(t, dir, nil)
	if err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if es := logOf(t, d, LogOptions{}); len(es) != 1 || es[0].ID != "b" {
		t.Fatalf("after repair: %v", es)
	}
}

// verifyTrail checks that the audit log agrees with the documents d holds:
// for every id, the last entry that is not a rejection is a deletion (or
// there is none) when the id is absent, and a store, replace or unchanged
// of the stored content hash when it is present.
func verifyTrail(d *DB, ids []string) error {
	for _, id := range ids {
		var last *LogEntry
		err := d.Log(ctx, LogOptions{ID: id}, func(e LogEntry) error {
			if e.Decision != DecisionRejected {
				last = &e
			}
			return nil
		})
		if err != nil {
			return err
		}
		doc, err := d.Get(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			if last != nil && last.Decision != DecisionDeleted {
				return fmt.Errorf("log entry %d says %s %q, which is absent", last.Seq, last.Decision, id)
			}
		case err != nil:
			return err
		case last == nil:
			return fmt.Errorf("%q is stored but has no log entry", id)
		case last.Decision == DecisionDeleted || last.ContentHash != doc.ContentHash:
			return fmt.Errorf("%q is stored (hash %x) but its last entry %d is %s of hash %x", id, doc.ContentHash, last.Seq, last.Decision, last.ContentHash)
		}
	}
	return nil
}

// FuzzDecodeLogEntry: any bytes decode to an entry or to an error
// wrapping ErrCorrupt, never a panic; a decoded entry re-encodes to the
// same bytes.
func FuzzDecodeLogEntry(f *testing.F) {
	e := LogEntry{ID: "proposals/17.txt", Decision: DecisionRejected, Op: OpAdd, Threshold: 0.7, Reject: true,
		Time: time.Unix(0, 1700000000123456789), ContentHash: [16]byte{1, 2}, Source: "17.txt", MoreMatches: 3,
		Matches: []LogMatch{{ID: "a", Hamming: 20}, {ID: "", Hamming: 0, Exact: true}}}
	good := appendLogEntry(nil, &e)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(appendLogEntry(nil, &LogEntry{ID: "b", Decision: DecisionDeleted, Op: OpDelete}))
	f.Add([]byte{1, 1, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeLogEntry(b, 512)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if got := appendLogEntry(nil, &e); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %x, decoded from %x", got, b)
		}
	})
}

// TestVerifyTrail: the crash tests' trail check fails on an entry that
// claims an absent document and on a document without its entry.
func TestVerifyTrail(t *testing.T) {
	d := openTest(t, "", &Options{AuditLog: true})
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte("words of a document")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := verifyTrail(d, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	d.writeMu.Lock()
	err := d.writeLog([]LogEntry{{ID: "b", Decision: DecisionStored, Op: OpAdd}}, nil)
	d.writeMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyTrail(d, []string{"b"}); err == nil {
		t.Fatal("an entry claiming an absent document passed")
	}
	if _, err := d.Forget(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.AddBatch(ctx, []Input{{ID: "c", Text: []byte("more words here")}}); err != nil {
		t.Fatal(err)
	}
	_ = d.pdb.Delete(keys.Log(3), nil)
	_ = d.pdb.Delete(keys.LogByID("c", 3), nil)
	if err := verifyTrail(d, []string{"c"}); err == nil {
		t.Fatal("a document without its entry passed")
	}
}

// BenchmarkAuditAdd measures what the audit log costs: Add with a check
// at 0.7 one document at a time, and AddBatch of 1 000 documents, each
// with and without the log (NoSync: the cost of the writes, not of the
// disk's syncs), and the log's bytes per entry, raw and on disk after
// compaction (the difference of the two databases' sizes).
//
//	go test ./db -run '^$' -bench BenchmarkAuditAdd -benchtime 3000x
func BenchmarkAuditAdd(b *testing.B) {
	for _, mode := range []string{"add", "batch"} {
		disk := map[bool]int64{}
		for _, log := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/log=%v", mode, log), func(b *testing.B) {
				texts := make([][]byte, b.N)
				for i := range texts {
					texts[i] = []byte(text(uint64(i%500), 330)) // near duplicates recur
				}
				d, err := Open(b.TempDir(), &Options{AuditLog: log, NoSync: true})
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				b.ResetTimer()
				if mode == "add" {
					for i := range b.N {
						if _, err := d.Add(ctx, Input{ID: fmt.Sprintf("doc%d", i), Text: texts[i], Source: "bench"}, &AddOptions{Threshold: 0.7}); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					for lo := 0; lo < b.N; lo += 1000 {
						batch := make([]Input, 0, 1000)
						for i := lo; i < min(lo+1000, b.N); i++ {
							batch = append(batch, Input{ID: fmt.Sprintf("doc%d", i), Text: texts[i], Source: "bench"})
						}
						if _, err := d.AddBatch(ctx, batch); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				if _, err := d.Compact(ctx); err != nil {
					b.Fatal(err)
				}
				ss, err := d.StorageStats(ctx)
				if err != nil {
					b.Fatal(err)
				}
				disk[log] = ss.DiskBytes
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
				if log && ss.LogEntries > 0 {
					b.ReportMetric(float64(ss.LogBytes)/float64(ss.LogEntries), "raw-B/entry")
					b.ReportMetric(float64(disk[true]-disk[false])/float64(ss.LogEntries), "disk-B/entry")
				}
			})
		}
	}
}
