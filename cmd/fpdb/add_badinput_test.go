package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAddRecordsBadInput checks that add of datasets, with and without
// --bulk, reports a dataset file that cannot be read to its end (a
// truncated .gz, a corrupt .parquet) naming it, still adds the other files
// and the records read before the failure, counts the failed inputs in
// its summary (and --json summary), and exits with status 3.
func TestAddRecordsBadInput(t *testing.T) {
	dir := t.TempDir()
	var plain bytes.Buffer
	for i := range 3000 {
		fmt.Fprintf(&plain, `{"id":"r%d","text":"record number %d tells of %d apples and %d oranges sold at the market"}`+"\n", i, i, i*7919%10007, i*104729%7919)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain.Bytes())
	zw.Close()
	trunc := writeFile(t, dir, "trunc.jsonl.gz", gz.Bytes()[:gz.Len()/2])
	corrupt := writeFile(t, dir, "corrupt.parquet", []byte("not a parquet file at all\n"))
	small := writeFile(t, dir, "small.jsonl", []byte(`{"id":"s1","text":"a small file with one record about the weather in spring"}`+"\n"))
	// A file that does not exist is one more input that cannot be read
	// (it used to stop the run before anything was added).
	missing := filepath.Join(dir, "missing.jsonl")

	// Alone, it adds nothing: no database is made for a mistyped path.
	none := filepath.Join(dir, "db-none")
	if r := runFPDB(t, "", "--db", none, "add", "--bulk", missing).mustCode(t, exitInput); !strings.Contains(r.stderr, "missing.jsonl") {
		t.Errorf("add of a missing input: %s", r.stderr)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("add of a missing input made the database: %v", err)
	}

	for _, bulk := range []bool{true, false} {
		dbDir := filepath.Join(dir, fmt.Sprint("db-", bulk))
		args := []string{"--db", dbDir, "add", "-q", trunc, missing, corrupt, small}
		if bulk {
			args = append(args, "--bulk", "--json")
		}
		r := runFPDB(t, "", args...).mustCode(t, exitInput)
		for _, name := range []string{"trunc.jsonl.gz", "missing.jsonl", "corrupt.parquet"} {
			if !strings.Contains(r.stderr, "fpdb: add "+filepath.Join(dir, name)+": ") {
				t.Errorf("bulk %v: %s not reported: %s", bulk, name, r.stderr)
			}
		}
		if !strings.Contains(r.stderr, "3 inputs could not be read") {
			t.Errorf("bulk %v: the summary does not count the failed inputs: %s", bulk, r.stderr)
		}
		if !bulk && !strings.Contains(r.stderr, ", 0 failed, 3 inputs could not be read") {
			t.Errorf("the failed inputs are counted as failed records: %s", r.stderr)
		}
		get := runFPDB(t, "", "--db", dbDir, "get", "s1")
		if get.code != 0 {
			t.Errorf("bulk %v: the record of the file after the bad ones was not added: %s", bulk, get.stderr)
		}
		stats := runFPDB(t, "", "--db", dbDir, "stats", "--json").mustCode(t, 0)
		var st struct {
			Docs int `json:"docs"`
		}
		if err := json.Unmarshal([]byte(stats.stdout), &st); err != nil || st.Docs < 2 {
			t.Errorf("bulk %v: %d documents (%v): want the truncated file's records read and s1", bulk, st.Docs, err)
		}
		if !bulk {
			continue
		}
		var sum struct {
			Inputs       int   `json:"inputs"`
			InputsFailed int   `json:"inputs_failed"`
			Stored       int64 `json:"stored"`
			FailedInputs []struct {
				Path    string `json:"path"`
				Records int64  `json:"records"`
				Stored  int64  `json:"stored"`
			} `json:"failed_inputs"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
			t.Fatalf("--json: %v: %s", err, r.stdout)
		}
		if sum.Inputs != 4 || sum.InputsFailed != 3 || len(sum.FailedInputs) != 3 || sum.FailedInputs[0].Path != trunc ||
			sum.FailedInputs[0].Stored == 0 || sum.FailedInputs[1].Path != missing || sum.FailedInputs[2].Path != corrupt || sum.Stored != sum.FailedInputs[0].Stored+1 ||
			int64(st.Docs) != sum.Stored {
			t.Errorf("--json summary %s, %d documents", r.stdout, st.Docs)
		}
	}
}

// TestFailedFirstAddLeavesNoDatabase: an add that makes the database and
// stores nothing (every record bad, a wrong --format, texts without words)
// leaves no database (the directory keeps only the lock file, which is no
// database), so that a corrected add with other parameters is not refused;
// a database that existed before such an add stays, empty or not.
func TestFailedFirstAddLeavesNoDatabase(t *testing.T) {
	dir := t.TempDir()
	text := writeFile(t, dir, "a.txt", []byte("hello world of plain text\n"))
	empty := writeFile(t, dir, "empty.txt", nil)
	for i, args := range [][]string{
		{"add", "--format", "jsonl", text},
		{"add", "--bulk", "--format", "jsonl", text},
		{"add", "--bulk", "--format", "csv", text},
		{"add", empty},
		{"add", "--bulk", empty},
	} {
		dbDir := filepath.Join(dir, fmt.Sprint("db", i))
		if i%2 == 1 {
			// An empty directory made for it is no database either.
			if err := os.Mkdir(dbDir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// Twice: the second finds the lock file the first left, which
		// is no database.
		runFPDB(t, "", append([]string{"--db", dbDir}, args...)...).mustCode(t, exitInput)
		runFPDB(t, "", append([]string{"--db", dbDir}, args...)...).mustCode(t, exitInput)
		if r := runFPDB(t, "", "--db", dbDir, "stats"); r.code != exitFailure || !strings.Contains(r.stderr, "does not exist") {
			t.Errorf("%v: a database was left: stats %d %s", args, r.code, r.stderr)
		}
		// The corrected add makes the database with its own parameters.
		runFPDB(t, "", "--db", dbDir, "add", "--k", "1024", text).mustCode(t, 0)
	}

	// A database made before the failed add stays, even empty.
	kept := filepath.Join(dir, "kept")
	runFPDB(t, "", "--db", kept, "add", "--id", "k1", text).mustCode(t, 0)
	runFPDB(t, "", "--db", kept, "delete", "k1").mustCode(t, 0)
	runFPDB(t, "", "--db", kept, "add", empty).mustCode(t, exitInput)
	if r := runFPDB(t, "", "--db", kept, "stats").mustCode(t, 0); !strings.Contains(r.stdout, "docs") {
		t.Errorf("stats of the database made before: %s", r.stdout)
	}
}

// TestFailedFirstTemplateAddAndDedupLeaveNoDatabase: as add, a template add
// (a binary file) or a dedup (--id-field naming no field) that makes the
// database and fails without storing anything leaves no database, so that
// a corrected command with other parameters is not refused; a database
// that existed before stays.
func TestFailedFirstTemplateAddAndDedupLeaveNoDatabase(t *testing.T) {
	dir := t.TempDir()
	bin := writeFile(t, dir, "b.bin", []byte("\x00\x01\x02binary\x00data\xff\xfe"))
	qq := writeFile(t, dir, "qq.jsonl", []byte(`{"id":"1","text":"hello world this is a test of the records"}`+"\n"))
	text := writeFile(t, dir, "a.txt", []byte("hello world of plain text\n"))
	for _, c := range []struct {
		name string
		args []string
	}{
		{"template", []string{"template", "add", bin}},
		{"dedup", []string{"dedup", qq, "--id-field", "nosuchfield", "--out", filepath.Join(dir, "x.jsonl")}},
	} {
		dbDir := filepath.Join(dir, "db-"+c.name)
		runFPDB(t, "", append([]string{"--db", dbDir}, c.args...)...).mustCode(t, exitInput)
		if r := runFPDB(t, "", "--db", dbDir, "stats"); r.code != exitFailure || !strings.Contains(r.stderr, "does not exist") {
			t.Errorf("%s: a database was left: stats %d %s", c.name, r.code, r.stderr)
		}
		// The corrected add makes the database with its own parameters.
		runFPDB(t, "", "--db", dbDir, "add", "--k", "256", text).mustCode(t, 0)

		// A database made before the failed command stays, even empty.
		kept := filepath.Join(dir, "kept-"+c.name)
		runFPDB(t, "", "--db", kept, "add", "--id", "k1", text).mustCode(t, 0)
		runFPDB(t, "", "--db", kept, "delete", "k1").mustCode(t, 0)
		runFPDB(t, "", append([]string{"--db", kept}, c.args...)...).mustCode(t, exitInput)
		if r := runFPDB(t, "", "--db", kept, "stats").mustCode(t, 0); !strings.Contains(r.stdout, "docs") {
			t.Errorf("%s: stats of the database made before: %s", c.name, r.stdout)
		}
	}
	// A template stored by the add that made the database stays, whatever
	// fails after it (here the line that says it was added).
	tdb := filepath.Join(dir, "db-template-stored")
	var stderr bytes.Buffer
	if code := run([]string{"--db", tdb, "template", "add", text}, strings.NewReader(""), failWriter{}, &stderr); code == 0 {
		t.Fatalf("template add into a broken standard output: exit 0")
	}
	if r := runFPDB(t, "", "--db", tdb, "template", "list").mustCode(t, 0); !strings.Contains(r.stdout, "a.txt") {
		t.Errorf("the stored template is gone: template list %q %s", r.stdout, r.stderr)
	}
}

// TestInterruptedDedupKeepsItsDatabase: a dedup into a database it makes
// (--db), interrupted before it stored a record (here its context is
// cancelled from the start), keeps that database, as its message says
// ("the records stored so far are kept in DIR"), rather than discarding it
// as a failed one.
func TestInterruptedDedupKeepsItsDatabase(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "work")
	in := writeFile(t, tmp, "in.jsonl", []byte(`{"id":"1","text":"hello world this is a test of the records"}`+"\n"))
	root := NewRootCommand()
	root.SetArgs([]string{"--db", dir, "dedup", in, "--out", filepath.Join(tmp, "out.jsonl")})
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := root.ExecuteContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "kept in "+dir) {
		t.Fatalf("dedup with its context cancelled: %v; want the interruption's message", err)
	}
	if n := docsCount(t, dir); n != 0 {
		t.Errorf("the kept database holds %d documents, want 0", n)
	}
}
