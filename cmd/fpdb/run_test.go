package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// result is the outcome of one fpdb run.
type result struct {
	code           int
	stdout, stderr string
}

// runFPDB runs fpdb in-process with stdin as standard input.
func runFPDB(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// mustCode fails the test unless r exited with code.
func (r result) mustCode(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

// jsonLines decodes each line of s as a JSON object.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("bad JSON output: %v\n%s", err, s)
		}
		objs = append(objs, m)
	}
}

const (
	corpus = "testdata/corpus/"
	bad    = "testdata/bad/"
)

// dbDir returns a fresh database directory path (not created).
func dbDir(t *testing.T) string {
	return filepath.Join(t.TempDir(), "db")
}

func TestThresholdValidation(t *testing.T) {
	for _, cmd := range []string{"add", "query"} {
		for _, v := range []string{"0", "1.5", "-1", "abc", "NaN", "-0.5"} {
			t.Run(cmd+"/"+v, func(t *testing.T) {
				dir := dbDir(t)
				r := runFPDB(t, "", "--db", dir, cmd, "--threshold", v, corpus+"bees.txt").mustCode(t, exitFailure)
				if !strings.Contains(r.stderr, v) || !strings.Contains(r.stderr, "threshold") {
					t.Errorf("message does not name --threshold %s:\n%s", v, r.stderr)
				}
				if !strings.HasPrefix(r.stderr, "fpdb: ") {
					t.Errorf("stderr does not start with \"fpdb: \":\n%s", r.stderr)
				}
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a bad flag created the database directory (stat: %v)", err)
				}
			})
		}
	}
	// The boundary 1 is valid.
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", "--threshold", "1", corpus+"bees.txt").mustCode(t, exitOK)
	runFPDB(t, "", "--db", dir, "query", "--threshold=1", corpus+"bees.txt").mustCode(t, exitOK)
}

func TestUsageErrors(t *testing.T) {
	dir := dbDir(t)
	for name, args := range map[string][]string{
		"unknown command":    {"frobnicate"},
		"unknown flag":       {"add", "--frob", corpus + "bees.txt"},
		"add no args":        {"add"},
		"id two files":       {"add", "--id", "x", corpus + "bees.txt", corpus + "bread.txt"},
		"id directory":       {"add", "--id", "x", corpus},
		"stdin without id":   {"add", "-"},
		"stdin twice":        {"add", "--id", "x", "-", "-"},
		"query no args":      {"query"},
		"query stdin twice":  {"query", "-", corpus + "bees.txt", "-"},
		"query recall":       {"query", "--recall", "0.9", corpus + "bees.txt"},
		"query recall scan":  {"query", "--plan", "scan", "--recall", "0.9", corpus + "bees.txt"},
		"dedup recall":       {"dedup", "--recall", "0.9", "in.jsonl", "--out", "kept.jsonl"},
		"dedup bad recall":   {"dedup", "--plan", "approx", "--recall", "1.5", "in.jsonl", "--out", "kept.jsonl"},
		"dedup tau scan":     {"dedup", "--plan", "scan", "--tau", "1", "in.jsonl", "--out", "kept.jsonl"},
		"list arg":           {"list", "x"},
		"list json null":     {"list", "--json", "-0"},
		"man no args":        {"man"},
		"query bad plan":     {"query", "--plan", "fast", corpus + "bees.txt"},
		"query tau scan":     {"query", "--plan", "scan", "--tau", "1", corpus + "bees.txt"},
		"query limit":        {"query", "--limit", "-3", corpus + "bees.txt"},
		"get no args":        {"get"},
		"delete no args":     {"delete"},
		"stats arg":          {"stats", "x"},
		"version arg":        {"version", "x"},
		"serve warm cluster": {"serve", "--cluster", "n1@127.0.0.1", "--warm=false"},
		"negative wait":      {"--wait", "-1s", "add", corpus + "bees.txt"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runFPDB(t, "", append([]string{"--db", dir}, args...)...).mustCode(t, exitFailure)
			if !strings.HasPrefix(r.stderr, "fpdb: ") || !strings.Contains(r.stderr, "--help") {
				t.Errorf("stderr lacks the error or the hint:\n%s", r.stderr)
			}
			if strings.Count(r.stderr, "fpdb: ") != 1 {
				t.Errorf("error printed more than once:\n%s", r.stderr)
			}
		})
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a usage error created the database directory (stat: %v)", err)
	}
}

func TestIDMisuseMessages(t *testing.T) {
	r := runFPDB(t, "", "--db", dbDir(t), "add", "--id", "x", corpus+"bees.txt", corpus+"bread.txt").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "--id") {
		t.Errorf("stderr does not mention --id:\n%s", r.stderr)
	}
	r = runFPDB(t, "", "--db", dbDir(t), "add", "-").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "--id is required") {
		t.Errorf("stderr does not say --id is required:\n%s", r.stderr)
	}
}

func TestHelpAndVersion(t *testing.T) {
	r := runFPDB(t, "", "--help").mustCode(t, exitOK)
	for _, want := range []string{"add", "query", "get", "delete", "stats", "version", "Examples:", "--db"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("fpdb --help lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runFPDB(t, "", "add", "--help").mustCode(t, exitOK)
	for _, want := range []string{"Exit status", `"stored": true`, `"similarity"`, "--reject"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("fpdb add --help lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runFPDB(t, "", "version").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "fpdb "+version) || !strings.Contains(r.stdout, "go1.") {
		t.Errorf("version output:\n%s", r.stdout)
	}
}

func TestAddQueryGetDeleteStats(t *testing.T) {
	dir := dbDir(t)
	db := func(args ...string) []string { return append([]string{"--db", dir}, args...) }

	r := runFPDB(t, "", db("add", corpus+"bees.txt", corpus+"lighthouse.txt")...).mustCode(t, exitOK)
	for _, want := range []string{"testdata/corpus/bees.txt: stored\n", "testdata/corpus/lighthouse.txt: stored\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("add output lacks %q:\n%s", want, r.stdout)
		}
	}

	// A near duplicate: exit 1, the original is listed, the copy is stored.
	r = runFPDB(t, "", db("add", corpus+"bees-edited.txt")...).mustCode(t, exitDuplicates)
	if !strings.Contains(r.stdout, "testdata/corpus/bees-edited.txt: 1 near duplicate\n") ||
		!strings.Contains(r.stdout, "  testdata/corpus/bees.txt  similarity ") ||
		!strings.HasSuffix(r.stdout, "testdata/corpus/bees-edited.txt: stored\n") {
		t.Errorf("add output:\n%s", r.stdout)
	}

	// JSON output of add.
	r = runFPDB(t, "", db("add", "--json", "--id", "bees-again", corpus+"bees.txt")...).mustCode(t, exitDuplicates)
	objs := jsonLines(t, r.stdout)
	if len(objs) != 3 {
		t.Fatalf("want 2 matches and a summary, got:\n%s", r.stdout)
	}
	if objs[0]["query"] != "bees-again" || objs[0]["id"] != "testdata/corpus/bees.txt" || objs[0]["exact"] != true ||
		objs[0]["hamming"] != 0.0 || objs[0]["similarity"] != 1.0 {
		t.Errorf("first match: %v", objs[0])
	}
	if objs[1]["id"] != "testdata/corpus/bees-edited.txt" || objs[1]["exact"] != false {
		t.Errorf("second match: %v", objs[1])
	}
	if s := objs[2]; s["query"] != "bees-again" || s["stored"] != true || s["replaced"] != false || s["matches"] != 2.0 {
		t.Errorf("summary: %v", s)
	}

	// Query, text and JSON.
	r = runFPDB(t, "", db("query", corpus+"bees.txt")...).mustCode(t, exitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "bees-again ") || !strings.HasSuffix(lines[0], "exact") ||
		!strings.HasPrefix(lines[2], "testdata/corpus/bees-edited.txt") || strings.HasSuffix(lines[2], "exact") {
		t.Errorf("query output:\n%s", r.stdout)
	}
	// Aligned columns.
	if i, j := strings.Index(lines[0], "similarity"), strings.Index(lines[2], "similarity"); i != j {
		t.Errorf("columns not aligned:\n%s", r.stdout)
	}
	r = runFPDB(t, "", db("query", "--json", "--limit", "1", "--explain", corpus+"bees-edited.txt")...).mustCode(t, exitOK)
	objs = jsonLines(t, r.stdout)
	if len(objs) != 2 || objs[0]["query"] != corpus+"bees-edited.txt" || objs[0]["id"] != "testdata/corpus/bees-edited.txt" {
		t.Fatalf("query --json --limit 1 --explain:\n%s", r.stdout)
	}
	ex, ok := objs[1]["explain"].(map[string]any)
	if !ok || ex["plan"] == "" || ex["radius"] == nil || ex["verified"] == nil {
		t.Errorf("explain object: %v", objs[1])
	}
	for _, plan := range [][]string{{"--plan", "scan"}, {"--plan", "auto"}, {"--plan", "probe", "--tau", "2"}, {"--tau", "3"}} {
		args := append(append([]string{"query"}, plan...), "--explain", corpus+"bees.txt")
		r = runFPDB(t, "", db(args...)...).mustCode(t, exitOK)
		if strings.Count(r.stdout, "\n") != 3 || !strings.Contains(r.stderr, "plan") || !strings.Contains(r.stderr, "candidates") {
			t.Errorf("query %v:\nstdout:\n%s\nstderr:\n%s", plan, r.stdout, r.stderr)
		}
	}
	// A probe radius that cannot be exact at the threshold is refused.
	runFPDB(t, "", db("query", "--plan", "probe", "--tau", "0", corpus+"bees.txt")...).mustCode(t, exitFailure)
	// No match: empty output, exit 1 (as grep).
	r = runFPDB(t, "", db("query", corpus+"railway.txt")...).mustCode(t, exitNoMatch)
	if r.stdout != "" {
		t.Errorf("query with no match printed:\n%s", r.stdout)
	}

	// Get.
	r = runFPDB(t, "", db("get", "--json", "testdata/corpus/bees.txt")...).mustCode(t, exitOK)
	var doc jsonDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(corpus + "bees.txt")
	if err != nil {
		t.Fatal(err)
	}
	if doc.ID != "testdata/corpus/bees.txt" || doc.Source != corpus+"bees.txt" || doc.Size != fi.Size() ||
		doc.Words < 250 || len(doc.ContentHash) != 32 || len(doc.Fingerprint) != 512/4 {
		t.Errorf("get --json: %+v", doc)
	}
	if added, err := time.Parse(time.RFC3339, doc.Added); err != nil || time.Since(added) > time.Hour {
		t.Errorf("added = %q (%v)", doc.Added, err)
	}
	r = runFPDB(t, "", db("get", "testdata/corpus/bees.txt")...).mustCode(t, exitOK)
	for _, want := range []string{"fingerprint   " + doc.Fingerprint, "content hash  " + doc.ContentHash, "source ", "words "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("get output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runFPDB(t, "", db("get", "nope")...).mustCode(t, exitFailure)
	if r.stderr != "fpdb: get \"nope\": document not found\n" {
		t.Errorf("get unknown: stderr %q", r.stderr)
	}

	// Stats.
	r = runFPDB(t, "", db("stats", "--json")...).mustCode(t, exitOK)
	var st jsonStats
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Docs != 4 || st.K != 512 || st.M != len(st.GroupWidths) || st.M == 0 || st.ShingleWidth == 0 || st.DiskBytes <= 0 {
		t.Errorf("stats: %+v", st)
	}
	r = runFPDB(t, "", db("stats")...).mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "docs") || !strings.Contains(r.stdout, "group widths") {
		t.Errorf("stats output:\n%s", r.stdout)
	}

	// Delete: the unknown id is reported, the known one deleted anyway.
	r = runFPDB(t, "", db("delete", "nope", "bees-again")...).mustCode(t, exitFailure)
	if r.stdout != "bees-again: deleted\n" || r.stderr != "fpdb: delete \"nope\": document not found\n" {
		t.Errorf("delete: stdout %q stderr %q", r.stdout, r.stderr)
	}
	runFPDB(t, "", db("get", "bees-again")...).mustCode(t, exitFailure)
	r = runFPDB(t, "", db("query", corpus+"bees.txt")...).mustCode(t, exitOK)
	if strings.Contains(r.stdout, "bees-again") {
		t.Errorf("deleted document still found:\n%s", r.stdout)
	}
	runFPDB(t, "", db("delete", "testdata/corpus/lighthouse.txt")...).mustCode(t, exitOK)
}

func TestAddReplace(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", "--id", "doc", corpus+"bees.txt").mustCode(t, exitOK)
	// Same id, other text: replaced, and no near duplicate.
	r := runFPDB(t, "", "--db", dir, "add", "--json", "--id", "doc", corpus+"coffee.txt").mustCode(t, exitOK)
	objs := jsonLines(t, r.stdout)
	if len(objs) != 1 || objs[0]["replaced"] != true || objs[0]["stored"] != true {
		t.Errorf("replace: %s", r.stdout)
	}
}

func TestAddStdin(t *testing.T) {
	dir := dbDir(t)
	text, err := os.ReadFile(corpus + "tides.txt")
	if err != nil {
		t.Fatal(err)
	}
	r := runFPDB(t, string(text), "--db", dir, "add", "--id", "tides-stdin", "-").mustCode(t, exitOK)
	if r.stdout != "tides-stdin: stored\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "get", "--json", "tides-stdin").mustCode(t, exitOK)
	var doc jsonDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Source != "" || doc.Size != int64(len(text)) {
		t.Errorf("stdin document: %+v", doc)
	}
	// --source is recorded; query from stdin.
	runFPDB(t, string(text), "--db", dir, "add", "--id", "t2", "--source", "http://x/y", "-").mustCode(t, exitDuplicates)
	r = runFPDB(t, "", "--db", dir, "get", "--json", "t2").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, `"source":"http://x/y"`) {
		t.Errorf("get t2: %s", r.stdout)
	}
	r = runFPDB(t, string(text), "--db", dir, "query", "--json", "-").mustCode(t, exitOK)
	objs := jsonLines(t, r.stdout)
	if len(objs) != 2 || objs[0]["query"] != "-" || objs[0]["exact"] != true {
		t.Errorf("query -: %s", r.stdout)
	}
}

func TestAddReject(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bread.txt").mustCode(t, exitOK)
	r := runFPDB(t, "", "--db", dir, "add", "--reject", corpus+"bread-edited.txt").mustCode(t, exitDuplicates)
	if !strings.Contains(r.stdout, "testdata/corpus/bread.txt  similarity") || !strings.HasSuffix(r.stdout, "bread-edited.txt: rejected\n") {
		t.Errorf("add --reject:\n%s", r.stdout)
	}
	runFPDB(t, "", "--db", dir, "get", "testdata/corpus/bread-edited.txt").mustCode(t, exitFailure)
	// --reject stores a document without near duplicates.
	runFPDB(t, "", "--db", dir, "add", "--reject", corpus+"coffee.txt").mustCode(t, exitOK)
	runFPDB(t, "", "--db", dir, "get", "testdata/corpus/coffee.txt").mustCode(t, exitOK)
}

func TestAddBadInputs(t *testing.T) {
	dir := dbDir(t)
	r := runFPDB(t, "", "--db", dir, "add", corpus+"coffee.txt", bad, corpus+"missing.txt", corpus+"tides.txt").mustCode(t, exitInput)
	for _, p := range []string{"binary.bin", "utf16-no-bom.txt", "empty.txt", "punct.txt", "missing.txt"} {
		if !strings.Contains(r.stderr, "fpdb: add testdata/") || !strings.Contains(r.stderr, p+": ") {
			t.Errorf("stderr does not report %s:\n%s", p, r.stderr)
		}
	}
	if !strings.Contains(r.stderr, "5 of 7 inputs failed") {
		t.Errorf("stderr lacks the summary:\n%s", r.stderr)
	}
	if strings.Count(r.stdout, ": stored\n") != 2 {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	r = runFPDB(t, "", "--db", dir, "stats", "--json").mustCode(t, exitOK)
	var st jsonStats
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Docs != 2 {
		t.Errorf("docs = %d, want 2", st.Docs)
	}
	// A bad input and near duplicates: 3 wins over 1.
	runFPDB(t, "", "--db", dir, "add", corpus+"coffee.txt", bad+"empty.txt").mustCode(t, exitInput)
	// A bad query input: exit 3, an input error.
	r = runFPDB(t, "", "--db", dir, "query", bad+"binary.bin").mustCode(t, exitInput)
	if !strings.Contains(r.stderr, "binary.bin") {
		t.Errorf("query of a binary file: %s", r.stderr)
	}
}

func TestMissingDatabase(t *testing.T) {
	dir := dbDir(t)
	for _, args := range [][]string{
		{"query", corpus + "bees.txt"},
		{"get", "x"},
		{"delete", "x"},
		{"stats"},
		{"check", "--repair"},
		{"list"},
	} {
		r := runFPDB(t, "", append([]string{"--db", dir}, args...)...).mustCode(t, exitFailure)
		want := "database does not exist: " + dir + " (fpdb add creates a database; --db DIR or $FPDB_DB names another)\n"
		if !strings.HasSuffix(r.stderr, want) {
			t.Errorf("%v: stderr %q, want it to end %q", args, r.stderr, want)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%v created the database directory (stat: %v)", args, err)
		}
	}
}

func TestEnvDB(t *testing.T) {
	dir := dbDir(t)
	t.Setenv(envDB, dir)
	runFPDB(t, "", "add", corpus+"chess.txt").mustCode(t, exitOK)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("$%s not used: %v", envDB, err)
	}
	r := runFPDB(t, "", "stats", "--json").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, `"docs":1`) {
		t.Errorf("stats: %s", r.stdout)
	}
	// --db wins over the environment.
	other := dbDir(t)
	runFPDB(t, "", "--db", other, "stats").mustCode(t, exitFailure)
}

func TestErrorText(t *testing.T) {
	for in, want := range map[string]string{
		`get "x": fpdb: document not found`:               `get "x": document not found`,
		"fpdb: open db: fpdb: not an fpdb database":       "open db: not an fpdb database",
		`fpdb: get "x/fpdb: y": fpdb: document not found`: `get "x/fpdb: y": document not found`,
		"open /tmp/x/nofpdb: no such file or directory":   "open /tmp/x/nofpdb: no such file or directory",
		"add bin/fpdb: fpdb: fpdb: corrupt":               "add bin/fpdb: corrupt",
	} {
		if got := errorText(errors.New(in)); got != want {
			t.Errorf("errorText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	p := newProgress(&buf, clock)
	p.update(1)
	if buf.Len() != 0 {
		t.Fatalf("progress drawn before the interval: %q", buf.String())
	}
	now = now.Add(time.Second)
	p.update(12345)
	if got := buf.String(); got != "\r12345 docs, 12345 docs/s" {
		t.Fatalf("progress line %q", got)
	}
	now = now.Add(progressInterval / 2)
	p.update(12346)
	if strings.Count(buf.String(), "\r") != 1 {
		t.Fatalf("progress redrawn too soon: %q", buf.String())
	}
	now = now.Add(progressInterval)
	buf.Reset()
	p.update(20)
	if got := buf.String(); !strings.HasPrefix(got, "\r20 docs, 15 docs/s") || len(got) != len("\r12345 docs, 12345 docs/s") {
		t.Fatalf("shorter line not padded: %q", got)
	}
	buf.Reset()
	p.hide()
	blank := "\r" + strings.Repeat(" ", len("20 docs, 15 docs/s")) + "\r"
	if got := buf.String(); got != blank {
		t.Fatalf("hide wrote %q", got)
	}
	buf.Reset()
	p.show()
	if got := buf.String(); got != "\r20 docs, 15 docs/s" {
		t.Fatalf("show wrote %q", got)
	}
	buf.Reset()
	p.clear()
	p.clear()
	p.show()
	var nilP *progress
	nilP.update(3)
	nilP.hide()
	nilP.show()
	nilP.clear()
	if got := buf.String(); got != blank {
		t.Fatalf("clear, clear, show wrote %q", got)
	}
	if isTerminal(&buf) {
		t.Error("a buffer is not a terminal")
	}
}

func TestAddOnlyMissing(t *testing.T) {
	dir := dbDir(t)
	r := runFPDB(t, "", "--db", dir, "add", corpus+"nope.txt", corpus+"nope2.txt").mustCode(t, exitInput)
	want := "fpdb: add testdata/corpus/nope.txt: no such file or directory\n" +
		"fpdb: add testdata/corpus/nope2.txt: no such file or directory\n" +
		"add: 2 inputs: 0 stored (0 replaced), 0 unchanged, 0 rejected, 2 failed; 0 with near duplicates in 0s\n" +
		"fpdb: add: 2 of 2 inputs failed\n"
	if r.stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the database was created (stat: %v)", err)
	}
	// An empty directory.
	r = runFPDB(t, "", "--db", dir, "add", t.TempDir()).mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "no files to add") {
		t.Errorf("stderr: %q", r.stderr)
	}
}

func TestAddErrorsInOrder(t *testing.T) {
	r := runFPDB(t, "", "--db", dbDir(t), "add", bad+"empty.txt", corpus+"nope.txt", bad+"punct.txt", corpus+"coffee.txt").mustCode(t, exitInput)
	lines := strings.Split(r.stderr, "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], "empty.txt") || !strings.Contains(lines[1], "nope.txt") || !strings.Contains(lines[2], "punct.txt") {
		t.Errorf("errors not in argument order:\n%s", r.stderr)
	}
}

func TestIsTerminalDevNull(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Errorf("%s is not a terminal", os.DevNull)
	}
}

func TestNewRootCommand(t *testing.T) {
	dir := dbDir(t)
	var out bytes.Buffer
	cmd := NewRootCommand()
	cmd.SetArgs([]string{"--db", dir, "add", "--json", corpus + "railway.txt"})
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != `{"query":"testdata/corpus/railway.txt","stored":true,"replaced":false,"unchanged":false,"rejected":false,"matches":0}`+"\n" {
		t.Errorf("output %q", got)
	}
	// A second add finds the first: the command returns an exitError
	// carrying exit code 1 and nothing to print.
	cmd = NewRootCommand()
	cmd.SetArgs([]string{"--db", dir, "add", "--id", "again", corpus + "railway.txt"})
	cmd.SetOut(io.Discard)
	var ee *exitError
	if err := cmd.Execute(); !errors.As(err, &ee) || ee.code != exitDuplicates || ee.err != nil {
		t.Errorf("second add returned %v, want exit code %d", err, exitDuplicates)
	}
}

// writeFile writes b to dir/name, making the directories it needs, and
// returns the file's path.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestErrorTextTooLarge: a text over the size a database keeps is refused
// with what to do, in the command line's words, not the Go option's.
func TestErrorTextTooLarge(t *testing.T) {
	d, err := db.Open(dbDir(t), &db.Options{KeepTexts: true, MaxTextSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = d.Add(context.Background(), db.Input{ID: "long", Text: []byte(strings.Repeat("many words here ", 10))}, nil)
	if !errors.Is(err, db.ErrTextTooLarge) {
		t.Fatalf("Add of a long text: %v, want ErrTextTooLarge", err)
	}
	got := errorText(err)
	if strings.Contains(got, "Options.") || !strings.Contains(got, "split the document, or add it to a database created with --no-texts") {
		t.Errorf("errorText = %q", got)
	}
}

// TestReadOnlyOpenError checks the advice added to an open refused for
// want of write access, for any user (root is never refused a write, so
// TestReadOnlyDatabase can only run as another user).
func TestReadOnlyOpenError(t *testing.T) {
	dir := t.TempDir()
	g := &globalOptions{command: "fpdb add"}
	for _, errno := range []error{syscall.EACCES, syscall.EROFS} {
		base := fmt.Errorf("open db: %w", &fs.PathError{Op: "open", Path: filepath.Join(dir, "FPDB.LOCK"), Err: errno})
		err := g.openError(base, openCreate, dir)
		if !errors.Is(err, errno) || !strings.Contains(err.Error(), "fpdb add opens the database for writing and needs write access to "+dir) {
			t.Errorf("%v: %v", errno, err)
		}
		if err := g.openError(base, openReadOnly, dir); err != base {
			t.Errorf("%v, read-only open: %v, want the error unchanged", errno, err)
		}
		if err := g.openError(base, openCreate, filepath.Join(dir, "missing")); err != base {
			t.Errorf("%v, no directory: %v, want the error unchanged", errno, err)
		}
	}
}

// TestReadOnlyDatabase: a database this user may read but not write is
// queried; a command that writes says it needs write access, and which
// commands only read.
func TestReadOnlyDatabase(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root writes anything; TestReadOnlyOpenError checks the message")
	}
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt").mustCode(t, exitOK)
	for _, p := range []string{filepath.Join(dir, "FPDB.LOCK"), dir} {
		if err := os.Chmod(p, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	runFPDB(t, "", "--db", dir, "query", corpus+"bees.txt").mustCode(t, exitOK)
	for _, args := range [][]string{{"add", corpus + "tides.txt"}, {"delete", corpus + "bees.txt"}, {"compact"}, {"check", "--repair"}} {
		r := runFPDB(t, "", append([]string{"--db", dir}, args...)...).mustCode(t, exitFailure)
		name := args[0]
		if name == "check" {
			name = "check --repair"
		}
		want := fmt.Sprintf("permission denied (fpdb %s opens the database for writing and needs write access to %s; commands that only read it, such as query, get, list, stats and export, work)\n", name, dir)
		if !strings.HasSuffix(r.stderr, want) {
			t.Errorf("%s: stderr %q, want it to end %q", args, r.stderr, want)
		}
	}
}
