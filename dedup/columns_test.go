package dedup

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/internal/records"
)

// writeHeterogeneous writes the records of rs as JSON Lines whose members
// differ: extra[i] is appended to record i's members, and bad[i] replaces
// line i.
func writeHeterogeneous(t *testing.T, path string, rs []rec, extra, bad map[int]string) {
	t.Helper()
	var b bytes.Buffer
	for i, r := range rs {
		if line, ok := bad[i]; ok {
			b.WriteString(line + "\n")
			continue
		}
		fmt.Fprintf(&b, `{"id":%q,"text":%q,"score":%v%s}`+"\n", r.ID, r.Text, r.Score, extra[i])
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// columnsOf returns the column names of a CSV/TSV or Parquet output.
func columnsOf(t *testing.T, path string) []string {
	t.Helper()
	r, err := records.Open(path, records.Options{IDField: "", TextField: FieldKept})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return slices.Clone(r.Columns())
}

// readColumnar reads the records of a CSV/TSV or Parquet output by id:
// each a map of its column values as text ("" for an empty cell or null).
func readColumnar(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	r, err := records.Open(path, records.Options{IDField: "", TextField: FieldKept, Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]map[string]string{}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		rec.LoadFields()
		m := map[string]string{}
		for _, f := range rec.Fields {
			switch v := f.Value.(type) {
			case nil:
				m[f.Name] = ""
			case string:
				m[f.Name] = v
			default:
				b, _ := json.Marshal(v)
				m[f.Name] = string(b)
			}
		}
		out[m["id"]] = m
	}
}

// TestColumnarOutputsOfHeterogeneousJSONL deduplicates JSON Lines whose
// records have members that the first record lacks (an optional key that
// appears late, a nested object, a bad record's own member, a member only
// the second input has) into CSV, TSV and Parquet: the outputs have a
// column for every member, in order of first appearance, and are the
// same (byte for byte) on 1 and 4 cores and when the run resumes after an
// interruption whose stored part holds a member that no later record has.
func TestColumnarOutputsOfHeterogeneousJSONL(t *testing.T) {
	rs := dataset(11, 400)[:400]
	dir := t.TempDir()
	in1, in2 := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeHeterogeneous(t, in1, rs[:300],
		map[int]string{5: `,"early":"e5"`, 250: `,"lang":"en"`, 280: `,"meta":{"k":[1,2]},"lang":null`},
		map[int]string{10: `{"id":"bad10","note":"no text"}`, 20: `{"id":`})
	writeHeterogeneous(t, in2, rs[300:], map[int]string{50: `,"late2":7`}, nil)
	wantCols := []string{"id", "text", "score", "early", "note", "lang", "meta", "late2"}
	extras := []string{FieldCluster, FieldKept, FieldSimilarity, FieldError}

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, f := range []string{"csv", "tsv", "parquet"} {
		t.Run(f, func(t *testing.T) {
			options := func(out string) Options {
				return Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in1, in2}, Batch: 20}, Threshold: 0.8,
					Out: filepath.Join(out, "kept."+f), Removed: filepath.Join(out, "removed."+f)}
			}
			outputs := func(o Options) [2][]byte {
				var b [2][]byte
				for i, p := range []string{o.Out, o.Removed} {
					var err error
					if b[i], err = os.ReadFile(p); err != nil {
						t.Fatal(err)
					}
				}
				return b
			}
			var first [2][]byte
			var o Options // the first run's
			for i, procs := range []int{1, 4} {
				runtime.GOMAXPROCS(procs)
				out := t.TempDir()
				oi := options(out)
				sum, err := Run(ctx, openDB(t, filepath.Join(out, "db")), oi)
				if err != nil {
					t.Fatalf("GOMAXPROCS %d: %v", procs, err)
				}
				if sum.Kept+sum.Removed != 400 || sum.Skipped != 2 || sum.Removed <= 2 {
					t.Fatalf("GOMAXPROCS %d: %+v", procs, sum)
				}
				b := outputs(oi)
				if i == 0 {
					o, first = oi, b
					continue
				}
				if !bytes.Equal(b[0], first[0]) || !bytes.Equal(b[1], first[1]) {
					t.Fatalf("GOMAXPROCS %d: the outputs differ from those of GOMAXPROCS 1", procs)
				}
			}

			// The removed output has bad records: their raw text goes to
			// fpdb_raw, after the records' columns; the kept output has
			// the column too (empty), so that both have one schema.
			want := append(append(slices.Clone(wantCols), "fpdb_raw"), extras...)
			for _, path := range []string{o.Out, o.Removed} {
				if got := columnsOf(t, path); !slices.Equal(got, want) {
					t.Errorf("%s columns %q, want %q", filepath.Base(path), got, want)
				}
			}
			all := readColumnar(t, o.Out)
			for id, m := range readColumnar(t, o.Removed) {
				all[id] = m
			}
			if len(all) != 400 {
				t.Errorf("%d records read back", len(all))
			}
			for id, want := range map[string]map[string]string{
				rs[5].ID:   {"early": "e5", "lang": "", "late2": ""},
				rs[250].ID: {"lang": "en", "early": ""},
				rs[280].ID: {"meta": `{"k":[1,2]}`, "lang": ""},
				"bad10":    {"note": "no text", "text": "", FieldCluster: "-1"},
				rs[350].ID: {"late2": "7", "note": ""},
				"":         {"fpdb_raw": `{"id":`, "text": ""}, // the malformed line
			} {
				for col, v := range want {
					if got, ok := all[id][col]; !ok || got != v {
						t.Errorf("record %s, column %s: %q (%v), want %q", id, col, got, ok, v)
					}
				}
			}

			// Interrupted once its load has stored the record with the
			// member "early" (and no later record has it), then resumed:
			// the same outputs.
			out := t.TempDir()
			o = options(out)
			stored := interruptedRun(t, filepath.Join(out, "db"), o, 100)
			if stored < 50 || stored >= 300 {
				t.Fatalf("%d stored by the interrupted run", stored)
			}
			sum, err := Run(ctx, openDB(t, filepath.Join(out, "db")), o)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Resumed == 0 {
				t.Fatalf("the rerun did not resume: %+v", sum)
			}
			if b := outputs(o); !bytes.Equal(b[0], first[0]) || !bytes.Equal(b[1], first[1]) {
				t.Fatal("the resumed run's outputs differ from an uninterrupted run's")
			}
		})
	}
}

// TestColumnarOutputsOfCSV checks that a CSV input into a CSV output is
// written as before: columns from its header, no collection of names.
func TestColumnarOutputsOfCSV(t *testing.T) {
	rs := dataset(12, 50)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"id", "text", "score"})
	for _, r := range rs {
		w.Write([]string{r.ID, r.Text, fmt.Sprint(r.Score)})
	}
	w.Flush()
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8,
		Out: filepath.Join(dir, "kept.csv")}
	if _, err := Run(ctx, openDB(t, filepath.Join(dir, "db")), o); err != nil {
		t.Fatal(err)
	}
	if got, want := columnsOf(t, o.Out), []string{"id", "text", "score", FieldCluster, FieldKept, FieldSimilarity, FieldError}; !slices.Equal(got, want) {
		t.Errorf("columns %q, want %q", got, want)
	}
}

// TestColumnarOutputsTooManyMembers checks that JSON Lines records with
// more than MaxColumns different members stop a run into CSV during its
// load, rather than make an output of that many columns, while a JSON
// Lines output takes them.
func TestColumnarOutputsTooManyMembers(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	b.WriteString(`{"id":"a","text":"one two three four five"}` + "\n" + `{"id":"b","text":"six seven eight nine ten"`)
	for i := range MaxColumns {
		fmt.Fprintf(&b, `,"k%d":1`, i)
	}
	b.WriteString("}\n")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8, Out: filepath.Join(dir, "kept.csv")}
	_, err := Run(ctx, openDB(t, filepath.Join(dir, "db")), o)
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d different fields", MaxColumns)) {
		t.Fatalf("Run: %v", err)
	}
	if _, err := os.Stat(o.Out); !os.IsNotExist(err) {
		t.Errorf("an output was written: %v", err)
	}
	o.Out = filepath.Join(dir, "kept.jsonl")
	if _, err := Run(ctx, openDB(t, filepath.Join(dir, "db2")), o); err != nil {
		t.Fatalf("into JSON Lines: %v", err)
	}
}
