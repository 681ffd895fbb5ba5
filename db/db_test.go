package db

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fpdb/fpdb/internal/bitvec"
)

var ctx = context.Background()

// openTest opens a DB in dir (a new temp dir when empty) and registers a
// Check and a Close for the end of the test.
func openTest(t *testing.T, dir string, opts *Options) *DB {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	d, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { closeChecked(t, d) })
	return d
}

// closeChecked runs Check and closes d unless it is already closed.
func closeChecked(t *testing.T, d *DB) {
	t.Helper()
	// An unfinished import is Check's answer once the store is sound.
	if err := d.Check(ctx); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrImportIncomplete) {
		t.Errorf("Check: %v", err)
	}
	if err := d.Close(); err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("Close: %v", err)
	}
}

// dump returns every key and value of the store, to prove it unchanged.
func dump(t *testing.T, d *DB) string {
	t.Helper()
	it, err := d.pdb.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var b strings.Builder
	for it.First(); it.Valid(); it.Next() {
		fmt.Fprintf(&b, "%x=%x\n", it.Key(), it.Value())
	}
	return b.String()
}

// text returns a pseudo-random English-like text of n words.
func text(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", r.IntN(5000))
	}
	return strings.Join(words, " ")
}

// edit replaces every `every`-th word of s with a new word.
func edit(s string, every int) string {
	w := strings.Fields(s)
	for i := 0; i < len(w); i += every {
		w[i] = "edited" + w[i]
	}
	return strings.Join(w, " ")
}

func TestAddQueryGetDelete(t *testing.T) {
	d := openTest(t, "", nil)
	orig := text(1, 400)
	if _, err := d.Add(ctx, Input{ID: "orig", Text: []byte(orig), Source: "orig.txt"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, Input{ID: "other", Text: []byte(text(2, 400))}, nil); err != nil {
		t.Fatal(err)
	}
	// A near duplicate: 1 word in 40 changed (Jaccard about 0.82).
	res, err := d.Add(ctx, Input{ID: "near", Text: []byte(edit(orig, 40))}, &AddOptions{Threshold: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stored || len(res.Matches) != 1 || res.Matches[0].ID != "orig" || res.Matches[0].Exact {
		t.Fatalf("add near: %+v", res)
	}
	// Same text, other case and spacing: an exact duplicate.
	q, err := d.Query(ctx, []byte("  "+strings.ToUpper(orig)+"\n"), QueryOptions{Threshold: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Matches) != 2 || q.Matches[0].ID != "orig" || !q.Matches[0].Exact || q.Matches[0].Hamming != 0 ||
		q.Matches[0].Similarity != 1 || q.Matches[1].ID != "near" || q.Matches[1].Exact {
		t.Fatalf("query: %+v", q.Matches)
	}
	doc, err := d.Get(ctx, "orig")
	if err != nil {
		t.Fatal(err)
	}
	if doc.ID != "orig" || doc.Source != "orig.txt" || doc.Size != int64(len(orig)) || doc.Words != 400 || len(doc.Fingerprint) != 8 || doc.Added.IsZero() {
		t.Fatalf("get: %+v", doc)
	}
	if err := d.Delete(ctx, "orig"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, "orig"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := d.Delete(ctx, "orig"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	q, err = d.Query(ctx, []byte(orig), QueryOptions{Threshold: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Matches) != 1 || q.Matches[0].ID != "near" {
		t.Fatalf("query after delete: %+v", q.Matches)
	}
	if s := d.Stats(); s.Docs != 2 || s.Params.K != 512 || len(s.Params.GroupWidths) != 32 {
		t.Fatalf("stats: %+v", s)
	}
}

func TestCheckThenAddReject(t *testing.T) {
	d := openTest(t, "", nil)
	orig := text(3, 300)
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte(orig)}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := d.Add(ctx, Input{ID: "b", Text: []byte(orig)}, &AddOptions{Threshold: 0.9, Reject: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored || len(res.Matches) != 1 || !res.Matches[0].Exact {
		t.Fatalf("reject: %+v", res)
	}
	if _, err := d.Get(ctx, "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rejected document was stored: %v", err)
	}
	res, err = d.Add(ctx, Input{ID: "c", Text: []byte(text(4, 300))}, &AddOptions{Threshold: 0.9, Reject: true})
	if err != nil || !res.Stored || len(res.Matches) != 0 {
		t.Fatalf("unique document: %+v %v", res, err)
	}
}

func TestReplace(t *testing.T) {
	d := openTest(t, "", nil)
	a, b := text(5, 300), text(6, 300)
	if _, err := d.Add(ctx, Input{ID: "x", Text: []byte(a)}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := d.Add(ctx, Input{ID: "x", Text: []byte(b)}, &AddOptions{Threshold: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Replaced || len(res.Matches) != 0 {
		t.Fatalf("replace: %+v", res)
	}
	if q, _ := d.Query(ctx, []byte(a), QueryOptions{Threshold: 0.5}); len(q.Matches) != 0 {
		t.Fatalf("old version still found: %+v", q.Matches)
	}
	if q, _ := d.Query(ctx, []byte(b), QueryOptions{Threshold: 0.5}); len(q.Matches) != 1 || q.Matches[0].ID != "x" {
		t.Fatalf("new version not found: %+v", q.Matches)
	}
	if d.Stats().Docs != 1 {
		t.Fatalf("docs = %d after replace", d.Stats().Docs)
	}
}

func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for i := range 30 {
		s := text(uint64(100+i%10), 200)
		if i >= 10 {
			s = edit(s, 5+i)
		}
		texts = append(texts, s)
		if _, err := d.Add(ctx, Input{ID: fmt.Sprint("doc", i), Text: []byte(s)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Delete(ctx, "doc3"); err != nil {
		t.Fatal(err)
	}
	answers := func(d *DB) string {
		var b strings.Builder
		for _, s := range texts {
			q, err := d.Query(ctx, []byte(s), QueryOptions{Threshold: 0.6})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, q.Matches)
		}
		return b.String()
	}
	before := answers(d)
	closeChecked(t, d)
	if _, err := d.Query(ctx, []byte("x y z"), QueryOptions{Threshold: 0.5}); !errors.Is(err, ErrClosed) {
		t.Fatalf("query after close: %v", err)
	}
	d2 := openTest(t, dir, nil)
	if after := answers(d2); after != before {
		t.Fatalf("answers differ after reopen:\n%s\nvs\n%s", before, after)
	}
	if !strings.Contains(before, "doc13") || strings.Contains(before, "doc3 ") {
		t.Fatalf("unexpected answers: %s", before)
	}
	if d2.Stats().Docs != 29 {
		t.Fatalf("docs after reopen = %d", d2.Stats().Docs)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, &Options{K: 256})
	if err != nil {
		t.Fatal(err)
	}
	// Locked, in this process too.
	if _, err := Open(dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	closeChecked(t, d)

	// Parameters recorded at creation are checked.
	var pe *ParamsError
	if _, err := Open(dir, &Options{K: 512}); !errors.As(err, &pe) || !errors.Is(err, ErrParamsMismatch) || pe.Param != "K" {
		t.Fatalf("K mismatch: %v", err)
	}
	if _, err := Open(dir, &Options{ShingleWidth: 3}); !errors.Is(err, ErrParamsMismatch) {
		t.Fatalf("shingle mismatch: %v", err)
	}
	d = openTest(t, dir, nil) // zero options take the stored ones
	if d.Params().K != 256 {
		t.Fatalf("K = %d", d.Params().K)
	}
	closeChecked(t, d)

	// Not an fpdb directory.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(other, nil); !errors.Is(err, ErrNotFPDB) {
		t.Fatalf("foreign dir: %v", err)
	}
	if ents, _ := os.ReadDir(other); len(ents) != 1 {
		t.Fatalf("Open wrote into a foreign directory: %v", ents)
	}
	// A Pebble store that is not fpdb's.
	pdir := t.TempDir()
	p, err := pebble.Open(pdir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Set([]byte("k"), []byte("v"), pebble.Sync)
	_ = p.Close()
	if _, err := Open(pdir, nil); !errors.Is(err, ErrNotFPDB) {
		t.Fatalf("foreign pebble: %v", err)
	}

	// Missing DB with ErrorIfNotExist / ReadOnly: not created.
	missing := filepath.Join(t.TempDir(), "none")
	for _, o := range []*Options{{ErrorIfNotExist: true}, {ReadOnly: true}} {
		if _, err := Open(missing, o); !errors.Is(err, ErrNotExist) {
			t.Fatalf("missing: %v", err)
		}
		if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("Open created the directory")
		}
	}
	// Invalid options.
	for _, o := range []*Options{{K: 100}, {K: 128, GroupWidths: []int{64, 64}}, {ShingleWidth: -1}, {GroupWidths: []int{16, 16}}} {
		if _, err := Open(t.TempDir(), o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("options %+v: %v", o, err)
		}
	}
}

func TestCorruptMeta(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := encodeMeta(d.params)
	raw[3] ^= 0x20
	if err := d.pdb.Set([]byte{0, 'm', 'e', 't', 'a'}, raw, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := d.Check(ctx); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Check with corrupt meta: %v", err)
	}
	_ = d.Close()
	if _, err := Open(dir, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with corrupt meta: %v", err)
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte(text(9, 50))}, nil); err != nil {
		t.Fatal(err)
	}
	closeChecked(t, d)
	ro := openTest(t, dir, &Options{ReadOnly: true})
	if q, err := ro.Query(ctx, []byte(text(9, 50)), QueryOptions{Threshold: 1}); err != nil || len(q.Matches) != 1 {
		t.Fatalf("read-only query: %+v %v", q, err)
	}
	if _, err := ro.Add(ctx, Input{ID: "b", Text: []byte("x y")}, nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only add: %v", err)
	}
	if err := ro.Delete(ctx, "a"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only delete: %v", err)
	}
}

func TestBadInputLeavesDBUnchanged(t *testing.T) {
	d := openTest(t, "", nil)
	if _, err := d.Add(ctx, Input{ID: "good", Text: []byte(text(7, 100))}, nil); err != nil {
		t.Fatal(err)
	}
	before := dump(t, d)
	long := strings.Repeat("x", MaxIDLen+1)
	cases := []struct {
		name string
		do   func() error
		want error
	}{
		{"binary", func() error {
			_, err := d.Add(ctx, Input{ID: "bin", Text: []byte("abc\x00\x01\x02 def")}, nil)
			return err
		}, ErrBinary},
		{"not UTF-8 though UTF-8 was named", func() error {
			_, err := d.Add(ctx, Input{ID: "latin1", Text: []byte("caf\xe9 cr\xe8me"), TextOptions: TextOptions{Encoding: "utf-8"}}, nil)
			return err
		}, ErrBinary},
		{"unknown encoding", func() error {
			_, err := d.Add(ctx, Input{ID: "enc", Text: []byte("plain words"), TextOptions: TextOptions{Encoding: "klingon-8"}}, nil)
			return err
		}, ErrInvalidOptions},
		{"empty", func() error { _, err := d.Add(ctx, Input{ID: "empty", Text: []byte{}}, nil); return err }, ErrNoWords},
		{"no text", func() error { _, err := d.Add(ctx, Input{ID: "none"}, nil); return err }, ErrBadInput},
		{"text and fingerprint", func() error {
			_, err := d.Add(ctx, Input{ID: "two", Text: []byte("two sources"), Fingerprint: make([]uint64, 8)}, nil)
			return err
		}, ErrBadInput},
		{"punctuation", func() error {
			_, err := d.Add(ctx, Input{ID: "punct", Text: []byte("... !!! --- ??? <> &")}, nil)
			return err
		}, ErrNoWords},
		{"threshold 0", func() error {
			_, err := d.Add(ctx, Input{ID: "t0", Text: []byte("a b c")}, &AddOptions{Threshold: -0.5})
			return err
		}, ErrInvalidThreshold},
		{"threshold 1.5", func() error {
			_, err := d.Query(ctx, []byte("a b c"), QueryOptions{Threshold: 1.5})
			return err
		}, ErrInvalidThreshold},
		{"threshold 0 query", func() error {
			_, err := d.Query(ctx, []byte("a b c"), QueryOptions{})
			return err
		}, ErrInvalidThreshold},
		{"short fingerprint", func() error { _, err := d.Add(ctx, Input{ID: "fp", Fingerprint: make([]uint64, 7)}, nil); return err }, ErrBadFingerprint},
		{"short query fingerprint", func() error {
			_, err := d.QueryFingerprint(ctx, make([]uint64, 9), QueryOptions{Threshold: 0.5})
			return err
		}, ErrBadFingerprint},
		{"empty id", func() error { _, err := d.Add(ctx, Input{ID: "", Text: []byte("a b c")}, nil); return err }, ErrInvalidID},
		{"long id", func() error { _, err := d.Add(ctx, Input{ID: long, Text: []byte("a b c")}, nil); return err }, ErrInvalidID},
		{"non-UTF-8 id", func() error { _, err := d.Add(ctx, Input{ID: "a\xff", Text: []byte("a b c")}, nil); return err }, ErrInvalidID},
		{"delete unknown", func() error { return d.Delete(ctx, "nobody") }, ErrNotFound},
	}
	for _, c := range cases {
		err := c.do()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if after := dump(t, d); after != before {
			t.Errorf("%s changed the database", c.name)
		}
	}
	// Errors name the input.
	_, err := d.Add(ctx, Input{ID: "bin", Text: []byte("abc\x00")}, nil)
	if err == nil || !strings.Contains(err.Error(), `"bin"`) {
		t.Errorf("error does not name the id: %v", err)
	}
}

// TestOracle adds random fingerprints with planted neighbours, replaces and
// deletes some, and compares every plan with a brute-force scan of a model,
// before and after reopening.
func TestOracle(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{K: 256, GroupWidths: EqualWidths(256, 12), NoSync: true}
	d, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(42, 42))
	model := map[string][]uint64{}
	randFP := func() []uint64 {
		fp := make([]uint64, 4)
		for i := range fp {
			fp[i] = r.Uint64()
		}
		return fp
	}
	flip := func(fp []uint64, n int) []uint64 {
		out := slices.Clone(fp)
		for _, b := range r.Perm(256)[:n] {
			out[b/64] ^= 1 << (b % 64)
		}
		return out
	}
	put := func(id string, fp []uint64) {
		if _, err := d.Add(ctx, Input{ID: id, Fingerprint: fp}, nil); err != nil {
			t.Fatal(err)
		}
		model[id] = fp
	}
	var queries [][]uint64
	for i := range 800 {
		fp := randFP()
		put(fmt.Sprint("r", i), fp)
		if i%80 == 0 {
			queries = append(queries, fp)
		}
	}
	thresholds := []float64{1, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.2}
	for qi, q := range queries {
		for _, thr := range thresholds {
			rh := int(float64(256) * (1 - thr) / 2)
			for _, dist := range []int{rh - 1, rh, rh + 1} {
				if dist >= 0 {
					put(fmt.Sprintf("p%d-%v-%d", qi, thr, dist), flip(q, dist))
				}
			}
		}
	}
	for i := 0; i < 800; i += 7 {
		id := fmt.Sprint("r", i)
		if err := d.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		delete(model, id)
	}
	for i := 3; i < 800; i += 11 {
		put(fmt.Sprint("r", i), flip(queries[i%len(queries)], i%40))
	}
	compare := func(d *DB) {
		for _, q := range queries {
			for _, thr := range thresholds {
				var want []Match
				for id, fp := range model {
					h := bitvec.Hamming(q, fp)
					if s := 1 - 2*float64(h)/256; s >= thr {
						want = append(want, Match{ID: id, Hamming: h, Similarity: s})
					}
				}
				slices.SortFunc(want, func(a, b Match) int {
					if a.Hamming != b.Hamming {
						return a.Hamming - b.Hamming
					}
					return strings.Compare(a.ID, b.ID)
				})
				plans := []Plan{{}, {Kind: PlanScan}}
				for tau := 0; tau <= 3; tau++ {
					plans = append(plans, Plan{Kind: PlanProbe, Tau: tau})
				}
				for _, p := range plans {
					res, err := d.QueryFingerprint(ctx, q, QueryOptions{Threshold: thr, Plan: p})
					if errors.Is(err, ErrInfeasiblePlan) {
						continue
					}
					if err != nil {
						t.Fatalf("thr %v plan %+v: %v", thr, p, err)
					}
					if !slices.Equal(res.Matches, want) && !(len(res.Matches) == 0 && len(want) == 0) {
						t.Fatalf("thr %v plan %+v: got %d matches, want %d", thr, p, len(res.Matches), len(want))
					}
				}
			}
		}
	}
	compare(d)
	closeChecked(t, d)
	d = openTest(t, dir, nil)
	compare(d)
}

func TestConcurrent(t *testing.T) {
	d := openTest(t, "", &Options{NoSync: true})
	base := make([]string, 8)
	for i := range base {
		base[i] = text(uint64(200+i), 150)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for i := range 60 {
				id := fmt.Sprint("g", g, "-", r.IntN(10))
				var err error
				switch r.IntN(4) {
				case 0, 1:
					_, err = d.Add(ctx, Input{ID: id, Text: []byte(edit(base[r.IntN(8)], 3+r.IntN(20)))}, &AddOptions{Threshold: 0.8})
				case 2:
					if err = d.Delete(ctx, id); errors.Is(err, ErrNotFound) {
						err = nil
					}
				case 3:
					_, err = d.Query(ctx, []byte(base[i%8]), QueryOptions{Threshold: 0.6})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestIDs(t *testing.T) {
	d := openTest(t, "", nil)
	for _, id := range []string{"a", "dir/file.txt", "ünïcødé", strings.Repeat("z", MaxIDLen), "with space"} {
		if _, err := d.Add(ctx, Input{ID: id, Text: []byte(text(11, 30))}, nil); err != nil {
			t.Errorf("id %q: %v", id, err)
		}
		if doc, err := d.Get(ctx, id); err != nil || doc.ID != id {
			t.Errorf("get %q: %v", id, err)
		}
	}
}

func TestAddReaderMatchesAdd(t *testing.T) {
	d := openTest(t, "", nil)
	s := text(12, 500)
	a, err := d.Add(ctx, Input{ID: "a", Text: []byte(s)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Add(ctx, Input{ID: "b", Reader: bytes.NewBufferString(s)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Doc.Fingerprint, b.Doc.Fingerprint) || a.Doc.ContentHash != b.Doc.ContentHash {
		t.Fatal("AddReader and Add disagree")
	}
}

func TestInMemoryFS(t *testing.T) {
	fs := vfs.NewMem()
	d, err := Open("db", &Options{fs: fs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte(text(13, 40))}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("db", &Options{fs: fs}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open on the same FS: %v", err)
	}
	closeChecked(t, d)
	d = openTest(t, "db", &Options{fs: fs})
	if d.Stats().Docs != 1 {
		t.Fatalf("docs = %d after reopen", d.Stats().Docs)
	}
}

func TestWarm(t *testing.T) {
	d := openTest(t, "", nil)
	texts := []string{text(21, 200), text(22, 200), edit(text(21, 200), 9)}
	for i, s := range texts {
		if _, err := d.Add(ctx, Input{ID: fmt.Sprint("w", i), Text: []byte(s)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	// Writes after Warm keep the complete cache right (Check compares it
	// with Pebble at cleanup).
	if _, err := d.Add(ctx, Input{ID: "w3", Text: []byte(edit(texts[1], 40))}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "w0"); err != nil {
		t.Fatal(err)
	}
	q, err := d.Query(ctx, []byte(texts[1]), QueryOptions{Threshold: 0.7, Plan: Plan{Kind: PlanProbe, Tau: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Matches) != 2 || q.Matches[0].ID != "w1" || q.Matches[1].ID != "w3" || q.Stats.Reads != 0 {
		t.Fatalf("after warm: %+v %+v", q.Matches, q.Stats)
	}
	scan, err := d.Query(ctx, []byte(texts[1]), QueryOptions{Threshold: 0.7, Plan: Plan{Kind: PlanScan}})
	if err != nil || !slices.Equal(scan.Matches, q.Matches) {
		t.Fatalf("scan %+v differs from probe %+v (%v)", scan.Matches, q.Matches, err)
	}
}

// SuggestedGroupWidth widens the groups only for large collections, and
// only where the wider layout keeps the dense posting cache.
func TestSuggestedGroupWidth(t *testing.T) {
	for _, c := range []struct{ k, docs, want int }{
		{512, 0, DefaultGroupWidth},
		{512, 1_000_000, DefaultGroupWidth},
		{512, 3_999_999, DefaultGroupWidth},
		{512, 4_000_000, 18},
		{512, 10_000_000, 18},
		{64, 10_000_000, 18},
		{704, 10_000_000, 18}, // 24 groups of 18 bits and 16 of 17: exactly 2^23 values
		{768, 10_000_000, DefaultGroupWidth},
		{1024, 10_000_000, DefaultGroupWidth},
	} {
		if got := SuggestedGroupWidth(c.k, c.docs); got != c.want {
			t.Errorf("SuggestedGroupWidth(%d, %d) = %d, want %d", c.k, c.docs, got, c.want)
		}
	}
}

// TestOpenWidthsWithoutK: group widths given without K say K: a database
// of those widths opens (and Repair takes it), other widths are a
// *ParamsError, and a new database gets K = their sum.
func TestOpenWidthsWithoutK(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	openTest(t, dir, &Options{K: 256}).Close()
	d, err := Open(dir, &Options{GroupWidths: EqualWidths(256, 16)})
	if err != nil {
		t.Fatalf("open with the stored widths and no K: %v", err)
	}
	if k := d.Params().K; k != 256 {
		t.Errorf("K = %d, want 256", k)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(ctx, dir, &Options{GroupWidths: EqualWidths(256, 16)}); err != nil {
		t.Errorf("repair with the stored widths and no K: %v", err)
	}
	var pe *ParamsError
	if _, err := Open(dir, &Options{GroupWidths: EqualWidths(512, 16)}); !errors.As(err, &pe) {
		t.Errorf("open with other widths and no K: %v, want a *ParamsError", err)
	}
	// Widths that say no K are named against the default K, as before.
	for _, c := range []struct {
		widths []int
		want   string
	}{{[]int{0}, "width 0"}, {[]int{-512, 512}, "width -512"}, {[]int{16, 16, 16}, "sum to 48, want K = 512"}, {[]int{500}, "width 500"}} {
		_, err := Open(filepath.Join(t.TempDir(), "bad"), &Options{GroupWidths: c.widths})
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("widths %v: %v, want %q", c.widths, err, c.want)
		}
	}
	n := openTest(t, filepath.Join(t.TempDir(), "new"), &Options{GroupWidths: EqualWidths(128, 16)})
	if p := n.Params(); p.K != 128 || len(p.GroupWidths) != 8 {
		t.Errorf("new database with widths only: K %d, %d groups", p.K, len(p.GroupWidths))
	}
}

// TestOptionsCloneNil: Clone of a nil *Options is a new zero Options (read
// as every default), not a panic; Clone of an Options is a deep copy.
func TestOptionsCloneNil(t *testing.T) {
	c := (*Options)(nil).Clone()
	if c == nil || !reflect.DeepEqual(*c, Options{}) {
		t.Fatalf("nil Clone: %+v, want a zero Options", c)
	}
	o := &Options{K: 256, GroupWidths: EqualWidths(256, 16)}
	c = o.Clone()
	c.GroupWidths[0] = 1
	if o.GroupWidths[0] != 16 {
		t.Error("Clone shares GroupWidths")
	}
}

// TestStatsSlots: a replace and a delete each leave a dead slot, which
// Stats.Slots counts (internal ids are never reused), and export and
// import into a new database leaves none.
func TestStatsSlots(t *testing.T) {
	d := openTest(t, "", nil)
	addBatch(t, d, []Input{
		{ID: "a", Text: []byte("one two three four five six seven")},
		{ID: "b", Text: []byte("eight nine ten eleven twelve thirteen")},
	})
	if st := d.Stats(); st.Docs != 2 || st.Slots != 2 {
		t.Fatalf("after two adds: %d docs, %d slots; want 2, 2", st.Docs, st.Slots)
	}
	if _, err := d.Add(ctx, Input{ID: "a", Text: []byte("another text altogether for a")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.Docs != 1 || st.Slots != 3 {
		t.Fatalf("after a replace and a delete: %d docs, %d slots; want 1, 3", st.Docs, st.Slots)
	}
	dir := filepath.Join(t.TempDir(), "copy")
	if _, err := Import(ctx, dir, bytes.NewReader(exportOf(t, d)), nil); err != nil {
		t.Fatal(err)
	}
	c := openTest(t, dir, nil)
	if st := c.Stats(); st.Docs != 1 || st.Slots != 1 {
		t.Fatalf("the imported copy: %d docs, %d slots; want 1, 1", st.Docs, st.Slots)
	}
}
