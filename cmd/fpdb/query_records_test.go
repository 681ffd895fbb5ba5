package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestQueryRecords: query of a dataset queries each record, and answers
// for it exactly what a query of its text as a file answers, records in
// input order; bad records are reported with their position and the
// others still queried.
func TestQueryRecords(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(9, 9))
	text := func(n int) []string { return randomWords(rng, 400, n) }
	var crawl bytes.Buffer
	stored := make([][]string, 20)
	for i := range stored {
		stored[i] = text(120)
	}
	archive := archiveOf(stored)
	type rec struct{ id, text string }
	var recs []rec
	for i := range 30 {
		var w []string
		switch {
		case i%3 == 0: // a near duplicate of a stored text
			w = slices.Clone(stored[i%20])
			w[3], w[60] = "changed", "edited"
		case i%3 == 1: // an unrelated text
			w = text(120)
		default: // half of a stored text
			w = stored[i%20][:60]
		}
		recs = append(recs, rec{fmt.Sprintf("c%02d", i), strings.Join(w, " ")})
	}
	gz := gzip.NewWriter(&crawl)
	for i, r := range recs {
		fmt.Fprintf(gz, `{"id":%q,"text":%q}`+"\n", r.id, r.text)
		if i == 4 {
			fmt.Fprintln(gz, `{"id":"nofield","body":"x"}`)
			fmt.Fprintln(gz, `{"id":"empty","text":""}`)
		}
	}
	gz.Close()
	writeFile(t, dir, "archive.jsonl", archive)
	in := writeFile(t, dir, "crawl.jsonl.gz", crawl.Bytes())
	d := filepath.Join(dir, "db")
	runFPDB(t, "", "--db", d, "add", "--bulk", filepath.Join(dir, "archive.jsonl")).mustCode(t, exitOK)

	r := runFPDB(t, "", "--db", d, "query", "--threshold", "0.5", "--json", in).mustCode(t, exitInput)
	for _, want := range []string{in + ":6: bad record: missing field \"text\"", in + ":7: fingerprint: document has no words", "query: 32 records: ", "2 failed"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	var got []string
	for _, m := range jsonLines(t, r.stdout) {
		got = append(got, fmt.Sprintf("%s %s %v", m["query"], m["id"], m["hamming"]))
	}
	// The oracle: each record's text queried as a file of its own.
	var want []string
	matched := 0
	for _, rc := range recs {
		f := writeFile(t, dir, rc.id+".txt", []byte(rc.text))
		one := runFPDB(t, "", "--db", d, "query", "--threshold", "0.5", "--json", f)
		if one.code != exitOK && one.code != exitNoMatch {
			t.Fatalf("query %s: exit %d: %s", f, one.code, one.stderr)
		}
		for _, m := range jsonLines(t, one.stdout) {
			want = append(want, fmt.Sprintf("%s %s %v", rc.id, m["id"], m["hamming"]))
		}
		if one.code == exitOK {
			matched++
		}
	}
	if matched < 10 || !slices.Equal(got, want) {
		t.Fatalf("records queried (%d with matches):\n%s\nwant, as files:\n%s", matched, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(r.stderr, fmt.Sprintf("%d with matches", matched)) {
		t.Errorf("summary: %s", r.stderr)
	}

	// Positions for ids; the text output; a directory of shards.
	r = runFPDB(t, "", "--db", d, "query", "--id-field", "", "--threshold", "0.9", dir+"/archive.jsonl").mustCode(t, exitOK)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 20 || !strings.HasPrefix(lines[0], filepath.Join(dir, "archive.jsonl")+":1\ta00\t1.000\t0\texact") {
		t.Errorf("query of the stored records by position: %q", lines)
	}
	shards := filepath.Join(dir, "shards")
	writeFile(t, shards, "part-1.jsonl", []byte(`{"id":"s1","text":"`+strings.Join(stored[1], " ")+`"}`+"\n"))
	r = runFPDB(t, "", "--db", d, "query", shards).mustCode(t, exitOK)
	if r.stdout != "s1\ta01\t1.000\t0\texact\n" {
		t.Errorf("query of a directory of shards: %q", r.stdout)
	}
	// Standard input with --format; no match.
	r = runFPDB(t, `{"id":"x","text":"nothing like any stored text at all"}`+"\n", "--db", d, "query", "--format", "jsonl", "-").mustCode(t, exitNoMatch)
	if r.stdout != "" || !strings.Contains(r.stderr, "query: 1 record: 0 with matches") {
		t.Errorf("query of standard input: stdout %q stderr %q", r.stdout, r.stderr)
	}

	// A file that cannot be read to its end is reported, and the next
	// one read; a dataset without the id field gets a hint, once.
	trunc := writeFile(t, dir, "trunc.jsonl.gz", crawl.Bytes()[:crawl.Len()/2])
	noID := writeFile(t, dir, "noid.jsonl", []byte(`{"url":"u1","text":"x y z"}`+"\n"+`{"url":"u2","text":"x y z"}`+"\n"+`{"id":"u3","text":"x y z"}`+"\n"))
	r = runFPDB(t, "", "--db", d, "query", "--threshold", "0.5", trunc, noID, in).mustCode(t, exitInput)
	if !strings.Contains(r.stderr, "fpdb: query "+trunc+": bad input: "+trunc+": the gzip member at offset 0 is cut off") || strings.Count(r.stderr, "fpdb: hint: ") != 1 ||
		!strings.Contains(r.stderr, `records without an "id" field: --id-field FIELD`) || !strings.Contains(r.stderr, "1 file could not be read (to the end)") {
		t.Errorf("query of a truncated file, one without ids, and a good one:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "c27\t") {
		t.Errorf("the file after a truncated one was not queried:\n%s", r.stdout)
	}
	// Only files failed: the message says so, without "0 records failed".
	junk := writeFile(t, dir, "junk.parquet", []byte("not a Parquet file"))
	r = runFPDB(t, "", "--db", d, "query", junk).mustCode(t, exitInput)
	if !strings.Contains(r.stderr, "fpdb: query: 1 file could not be read (to the end)\n") || strings.Contains(r.stderr, "0 of 0") {
		t.Errorf("query of a file that is not Parquet: %s", r.stderr)
	}

	// Misuse.
	txt := writeFile(t, dir, "doc.txt", []byte("a plain document"))
	for _, args := range [][]string{
		{"query", in, txt},
		{"query", "--id-field", "url", txt},
		{"query", "--exclude", "*.gz", in},
	} {
		r := runFPDB(t, "", append([]string{"--db", d}, args...)...).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, "dataset") {
			t.Errorf("%q: %s", args, r.stderr)
		}
	}
}

// TestQueryRecordsJSON: the JSON lines of a record query decode as the
// API's matches, "query" holding the record's id.
func TestQueryRecordsJSON(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "db")
	recs := writeFile(t, dir, "r.jsonl", []byte(`{"id":"one","text":"the quick brown fox jumps over the lazy dog again and again"}`+"\n"))
	runFPDB(t, "", "--db", d, "add", recs).mustCode(t, exitOK)
	r := runFPDB(t, "", "--db", d, "query", "--json", recs).mustCode(t, exitOK)
	var m jsonMatch
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || m.Query != "one" || m.ID != "one" || !m.Exact || m.Similarity != 1 {
		t.Errorf("%q: %+v (%v)", r.stdout, m, err)
	}
}

// TestQueryRecordsStopsWaitingForInput: an error that ends a query of
// records (here, standard output failing) ends the run at once, even
// while standard input has no next record yet.
func TestQueryRecordsStopsWaitingForInput(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "db")
	rec := `{"id":"one","text":"the quick brown fox jumps over the lazy dog again and again"}` + "\n"
	runFPDB(t, rec, "--db", d, "add", "--format", "jsonl", "-").mustCode(t, exitOK)
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(rec)) // and nothing more: the pipe stays open
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() { done <- run([]string{"--db", d, "query", "--format", "jsonl", "-"}, pr, failWriter{}, &stderr) }()
	select {
	case code := <-done:
		if code != exitFailure || !strings.Contains(stderr.String(), "broken output") {
			t.Errorf("exit %d, stderr %q", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("query still waits for standard input after its output failed")
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken output") }

// TestQueryRecordsWarm: a run long enough to warm the posting cache while
// it queries (warmAt records) answers what the scan plan answers.
func TestQueryRecordsWarm(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 5))
	words := func(n int) []string { return randomWords(rng, 300, n) }
	var crawl bytes.Buffer
	stored := make([][]string, 40)
	for i := range stored {
		stored[i] = words(80)
	}
	archive := archiveOf(stored)
	for i := range 600 {
		w := words(80)
		if i%2 == 0 {
			w = slices.Clone(stored[i%40])
			w[rng.IntN(80)] = "edit"
		}
		fmt.Fprintf(&crawl, `{"id":"c%03d","text":%q}`+"\n", i, strings.Join(w, " "))
	}
	d := filepath.Join(dir, "db")
	runFPDB(t, "", "--db", d, "add", "--bulk", writeFile(t, dir, "archive.jsonl", archive)).mustCode(t, exitOK)
	in := writeFile(t, dir, "crawl.jsonl", crawl.Bytes())
	auto := runFPDB(t, "", "--db", d, "query", "--threshold", "0.7", in).mustCode(t, exitOK)
	scan := runFPDB(t, "", "--db", d, "query", "--threshold", "0.7", "--plan", "scan", in).mustCode(t, exitOK)
	if n := strings.Count(auto.stdout, "\n"); n < 300 || auto.stdout != scan.stdout {
		t.Errorf("%d matches with the auto plan; the scan plan's differ:\nauto:\n%s\nscan:\n%s", n, auto.stdout, scan.stdout)
	}
}

// randomWords returns n words drawn from a vocabulary of "w0" … "wV-1".
func randomWords(rng *rand.Rand, vocab, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%d", rng.IntN(vocab))
	}
	return out
}

// archiveOf returns the JSON Lines of the texts, ids a00, a01, …
func archiveOf(texts [][]string) []byte {
	var b bytes.Buffer
	for i, w := range texts {
		fmt.Fprintf(&b, `{"id":"a%02d","text":%q}`+"\n", i, strings.Join(w, " "))
	}
	return b.Bytes()
}

// TestRecordsStopWithoutWaitingForAFIFO: when its output fails, a query or
// an add of the records of a FIFO whose writer has gone quiet (but not
// away) ends at once, without waiting for the next record.
func TestRecordsStopWithoutWaitingForAFIFO(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "db")
	rec := `{"id":"one","text":"the quick brown fox jumps over the lazy dog again and again"}` + "\n"
	runFPDB(t, rec, "--db", d, "add", "--format", "jsonl", "-").mustCode(t, exitOK)
	for _, cmd := range []string{"query", "add"} {
		fifo := filepath.Join(dir, cmd+".jsonl")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("no FIFO here: %v", err)
		}
		quiet := make(chan struct{})
		go func() { // writes one record and keeps the FIFO open until the end
			w, err := os.OpenFile(fifo, os.O_RDWR, 0) // does not wait for a reader
			if err != nil {
				return
			}
			defer w.Close()
			w.Write([]byte(strings.Replace(rec, "one", "two", 1)))
			<-quiet
		}()
		done := make(chan int, 1)
		var stderr bytes.Buffer
		go func() {
			done <- run([]string{"--db", d, cmd, "--format", "jsonl", fifo}, strings.NewReader(""), failWriter{}, &stderr)
		}()
		select {
		case code := <-done:
			if code != exitFailure || !strings.Contains(stderr.String(), "broken output") {
				t.Errorf("%s: exit %d, stderr %q", cmd, code, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Errorf("%s still waits for the FIFO's next record after its output failed", cmd)
		}
		close(quiet)
	}
}

// TestQueryRecordsMissingFile: a dataset path that does not exist is
// reported as one more file that cannot be read, naming it, and the other
// files are still queried and summed up (exit 3, as add does); when no
// path exists, nothing is queried.
func TestQueryRecordsMissingFile(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	stored := [][]string{randomWords(rng, 400, 120), randomWords(rng, 400, 120)}
	archive := writeFile(t, dir, "archive.jsonl", archiveOf(stored))
	d := filepath.Join(dir, "db")
	runFPDB(t, "", "--db", d, "add", "-q", archive).mustCode(t, exitOK)
	crawl := writeFile(t, dir, "crawl-new.jsonl", []byte(`{"url":"u1","text":"`+strings.Join(stored[0], " ")+`"}`+"\n"))
	missing := filepath.Join(dir, "nosuch.jsonl")

	r := runFPDB(t, "", "--db", d, "query", "--id-field", "url", crawl, missing).mustCode(t, exitInput)
	if r.stdout != "u1\ta00\t1.000\t0\texact\n" {
		t.Errorf("the file before a missing one was not queried: %q\nstderr %s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "fpdb: query "+missing+": no such file or directory\n") ||
		!strings.Contains(r.stderr, "query: 1 record: 1 with matches, 0 failed, 1 file could not be read (to the end)") {
		t.Errorf("a missing file is not reported, or not counted:\n%s", r.stderr)
	}
	// First among the paths: the others are still queried.
	r = runFPDB(t, "", "--db", d, "query", "--id-field", "url", missing, crawl).mustCode(t, exitInput)
	if r.stdout != "u1\ta00\t1.000\t0\texact\n" {
		t.Errorf("the file after a missing one was not queried: %q\nstderr %s", r.stdout, r.stderr)
	}
	// Alone: an error naming it.
	r = runFPDB(t, "", "--db", d, "query", "--id-field", "url", missing).mustCode(t, exitInput)
	if r.stdout != "" || !strings.Contains(r.stderr, "nosuch.jsonl") {
		t.Errorf("query of a missing file alone: %q %s", r.stdout, r.stderr)
	}
}
