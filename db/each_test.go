package db

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// eachCase builds the stored documents and the batch inputs of an AddEach
// test: near copies of stored documents and of earlier inputs, exact
// copies, unchanged and replaced ids, a replaced document's old text
// again, ids given twice, empty texts.
func eachCase(seed uint64) (stored, inputs []Input) {
	r := rand.New(rand.NewPCG(seed, 9))
	var texts []string
	for i := range 40 {
		t := text(seed*1000+uint64(i), 150+r.IntN(200))
		texts = append(texts, t)
		stored = append(stored, Input{ID: fmt.Sprintf("s%02d", i), Text: []byte(t), Source: "old"})
	}
	for i := range 260 {
		id := fmt.Sprintf("n%03d", i)
		var t string
		switch k := r.IntN(12); {
		case k < 3: // a new text
			t = text(seed*1000+500+uint64(i), 120+r.IntN(200))
		case k < 5: // a near copy of any text so far
			t = edit(texts[r.IntN(len(texts))], 25+r.IntN(40))
		case k < 6: // an exact copy
			t = texts[r.IntN(len(texts))]
		case k < 7: // a stored id, its own text: unchanged (unless replaced)
			j := r.IntN(40)
			id, t = fmt.Sprintf("s%02d", j), texts[j]
		case k < 9: // a stored id, a new version near its text
			j := r.IntN(40)
			id, t = fmt.Sprintf("s%02d", j), edit(texts[j], 10+r.IntN(30))
		case k < 10: // an id given before in the batch (or stored)
			if len(inputs) > 0 {
				id = inputs[r.IntN(len(inputs))].ID
			}
			t = text(seed*1000+900+uint64(i), 200)
		case k < 11: // the old text of a stored document (replaced or not)
			t = texts[r.IntN(40)]
		default: // no words, or near an earlier input
			if r.IntN(3) == 0 {
				t = "  ,;  "
			} else {
				t = edit(texts[40+r.IntN(max(len(texts)-40, 1))%len(texts)], 30)
			}
		}
		texts = append(texts, t)
		inputs = append(inputs, Input{ID: id, Text: []byte(t), Source: fmt.Sprintf("in%d", i), ReplaceUnchanged: r.IntN(20) == 0})
	}
	return stored, inputs
}

// TestAddEachSameAsAdd: AddEach returns, stores and logs what Add of each
// document in turn does — the oracle — for checks with and without
// Reject and Limit and without a check, in batches of several sizes.
func TestAddEachSameAsAdd(t *testing.T) {
	for ci, o := range []*AddOptions{
		{Threshold: 0.8},
		{Threshold: 0.8, Reject: true},
		{Threshold: 0.7, Reject: true, Limit: 2},
		nil,
	} {
		t.Run(fmt.Sprintf("case%d", ci), func(t *testing.T) {
			stored, inputs := eachCase(uint64(ci + 1))
			opts := &Options{AuditLog: true, NoSync: true}
			a, b := openTest(t, "", opts), openTest(t, "", opts)
			for _, d := range []*DB{a, b} {
				if res, err := d.AddBatch(ctx, stored); err != nil || res.Stored != len(stored) {
					t.Fatalf("AddBatch: %+v, %v", res, err)
				}
			}
			var counts struct{ inBatch, rejected, replaced, unchanged, skipped, dup int }
			for lo, size := 0, 1; lo < len(inputs); lo, size = lo+size, size*3+1 {
				batch := inputs[lo:min(lo+size, len(inputs))]
				res, err := a.AddEach(ctx, batch, o)
				if err != nil {
					t.Fatalf("AddEach: %v", err)
				}
				if len(res.Results) != len(batch) {
					t.Fatalf("%d results for %d inputs", len(res.Results), len(batch))
				}
				skipped := map[int]error{}
				for _, s := range res.Skipped {
					skipped[s.Index] = s.Err
					if batch[s.Index].ID != s.ID {
						t.Errorf("skip %d names %q, input %q", s.Index, s.ID, batch[s.Index].ID)
					}
				}
				inBatch := map[string]bool{}
				for i, in := range batch {
					got := res.Results[i]
					if err, ok := skipped[i]; ok {
						counts.skipped++
						if got != nil {
							t.Errorf("%s: skipped (%v) with a result", in.ID, err)
						}
						if errors.Is(err, ErrDuplicateInBatch) {
							counts.dup++
							if !inBatch[in.ID] {
								t.Errorf("%s: %v, but given once before it in the batch", in.ID, err)
							}
							continue
						}
						// The oracle refuses it too.
						if _, werr := b.Add(ctx, in, o); werr == nil || !errors.Is(werr, err) {
							t.Errorf("%s: AddEach skipped it (%v), Add says %v", in.ID, err, werr)
						}
						continue
					}
					inBatch[in.ID] = true
					want, err := b.Add(ctx, in, o)
					if err != nil {
						t.Fatalf("%s: Add: %v", in.ID, err)
					}
					if got == nil {
						t.Fatalf("%s: no result", in.ID)
					}
					if got.Stored != want.Stored || got.Replaced != want.Replaced || got.Unchanged != want.Unchanged {
						t.Errorf("%s (input %d): stored/replaced/unchanged %v/%v/%v, Add %v/%v/%v", in.ID, lo+i,
							got.Stored, got.Replaced, got.Unchanged, want.Stored, want.Replaced, want.Unchanged)
					}
					if !reflect.DeepEqual(got.Matches, want.Matches) {
						t.Errorf("%s (input %d): matches\n%+v\nAdd's\n%+v", in.ID, lo+i, got.Matches, want.Matches)
					}
					gd, wd := got.Doc, want.Doc
					gd.Added, wd.Added = time.Time{}, time.Time{}
					if !reflect.DeepEqual(gd, wd) {
						t.Errorf("%s: doc %+v, Add's %+v", in.ID, gd, wd)
					}
					for _, m := range got.Matches {
						if inBatch[m.ID] && m.ID != in.ID {
							counts.inBatch++
						}
					}
					switch {
					case got.Unchanged:
						counts.unchanged++
					case !got.Stored:
						counts.rejected++
					case got.Replaced:
						counts.replaced++
					}
				}
			}
			t.Logf("%+v", counts)
			if counts.replaced == 0 || counts.unchanged == 0 || counts.skipped == 0 || counts.dup == 0 ||
				o != nil && counts.inBatch == 0 || o != nil && o.Reject && counts.rejected == 0 {
				t.Errorf("the case misses a kind of document: %+v", counts)
			}
			if ga, gb := docsOf(t, a), docsOf(t, b); !reflect.DeepEqual(ga, gb) {
				t.Errorf("stored documents differ:\n%v\nAdd's:\n%v", ga, gb)
			}
			if ga, gb := untimed(logOf(t, a, LogOptions{})), untimed(logOf(t, b, LogOptions{})); !reflect.DeepEqual(ga, gb) {
				t.Errorf("audit logs differ:\n%v\nAdd's:\n%v", ga, gb)
			}
		})
	}
}

// docsOf lists the stored documents of d without their times added.
func docsOf(t *testing.T, d *DB) []Doc {
	t.Helper()
	var out []Doc
	if err := d.Docs(ctx, func(doc Doc) error {
		doc.Added = time.Time{}
		out = append(out, doc)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// untimed returns es without their times.
func untimed(es []LogEntry) []LogEntry {
	for i := range es {
		es[i].Time = time.Time{}
	}
	return es
}
