package dedup

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/internal/records"
)

// TestBadCSVRowsKeepText: a malformed CSV row and a row of too many fields
// are written to REMOVED with their original text (column or member
// fpdb_raw) in every output format; they lost their content (all cells
// empty) or the fields past the header's.
func TestBadCSVRowsKeepText(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "q.csv")
	bare := `a,he said "hi" to all of the people here`
	extra := "c,one two three four five six seven,EXTRA"
	content := "id,text\n" + bare + "\nb,plain text with five or more words\n" + extra + "\n"
	if err := os.WriteFile(in, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"csv", "tsv", "parquet", "jsonl"} {
		out := t.TempDir()
		d := openDB(t, filepath.Join(out, "db"))
		o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{in}}, Threshold: 0.8,
			Out: filepath.Join(out, "kept."+f), Removed: filepath.Join(out, "removed."+f)}
		sum, err := Run(ctx, d, o)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if sum.Kept != 1 || sum.Skipped != 2 {
			t.Fatalf("%s: %+v", f, sum)
		}
		r, err := records.Open(o.Removed, records.Options{TextField: "fpdb_raw", Raw: true})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var raws []string
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if rec.Err == nil {
				raws = append(raws, string(rec.Text))
			}
		}
		r.Close()
		if strings.Join(raws, "|") != bare+"|"+extra {
			t.Errorf("%s: fpdb_raw of removed: %q", f, raws)
		}
	}
	// Without bad records, no fpdb_raw column.
	good := filepath.Join(dir, "good.csv")
	if err := os.WriteFile(good, []byte("id,text\nb,plain text with five or more words\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	d := openDB(t, filepath.Join(out, "db"))
	o := Options{LoadOptions: LoadOptions{RecordOptions: RecordOptions{IDField: "id"}, Inputs: []string{good}}, Threshold: 0.8,
		Out: filepath.Join(out, "kept.csv"), Removed: filepath.Join(out, "removed.csv")}
	if _, err := Run(ctx, d, o); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(o.Out); strings.Contains(string(b), "fpdb_raw") {
		t.Errorf("kept.csv has fpdb_raw:\n%s", b)
	}
}
