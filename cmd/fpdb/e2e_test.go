package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// fpdbBinary is the fpdb binary built by TestMain for the end-to-end tests.
var fpdbBinary string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if fuzzing() {
		return m.Run() // fuzz targets run in-process: no binary to build
	}
	tmp, err := os.MkdirTemp("", "fpdb-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(tmp)
	fpdbBinary = filepath.Join(tmp, "fpdb")
	build := exec.Command("go", "build", "-o", fpdbBinary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building fpdb:", err)
		return 2
	}
	return m.Run()
}

// exe runs the fpdb binary in testdata/ (so ids read "corpus/x.txt") with
// the extra environment variables env.
func exe(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(fpdbBinary, args...)
	cmd.Dir = "testdata"
	cmd.Env = append(withoutEnvDB(os.Environ()), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running fpdb %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

// withoutEnvDB returns env without $FPDB_DB.
func withoutEnvDB(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, envDB+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// corpusPaths returns "corpus/NAME.txt" for each name.
func corpusPaths(names ...string) []string {
	var ps []string
	for _, n := range names {
		ps = append(ps, "corpus/"+n+".txt")
	}
	return ps
}

// docsCount returns the number of documents in the database in dir.
func docsCount(t *testing.T, dir string) int {
	t.Helper()
	r := exe(t, nil, "", "--db", dir, "stats", "--json").mustCode(t, exitOK)
	var st jsonStats
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, r.stdout)
	}
	return st.Docs
}

func TestE2EAddCorpus(t *testing.T) {
	dir := dbDir(t)
	r := exe(t, nil, "", "--db", dir, "add", "--json", "corpus").mustCode(t, exitDuplicates)
	// The walk is sorted, so each edit or copy is added before its
	// original, and each original finds it.
	var pairs []string
	stored := 0
	for _, o := range jsonLines(t, r.stdout) {
		if _, ok := o["stored"]; ok {
			if o["stored"] == true {
				stored++
			}
			continue
		}
		pairs = append(pairs, fmt.Sprintf("%v -> %v exact=%v", o["query"], o["id"], o["exact"]))
	}
	sort.Strings(pairs)
	want := []string{
		"corpus/bees.txt -> corpus/bees-edited.txt exact=false",
		"corpus/bread.txt -> corpus/bread-edited.txt exact=false",
		"corpus/chess.txt -> corpus/chess-revised.txt exact=false",
		"corpus/volcano.txt -> corpus/volcano-copy.txt exact=true",
	}
	if strings.Join(pairs, "\n") != strings.Join(want, "\n") {
		t.Errorf("near duplicates found:\n%s\nwant:\n%s", strings.Join(pairs, "\n"), strings.Join(want, "\n"))
	}
	if stored != 12 || docsCount(t, dir) != 12 {
		t.Errorf("stored %d documents, want 12", stored)
	}
	// Standard error (not a terminal) holds the summary line alone: no
	// progress line.
	if !strings.HasPrefix(r.stderr, "add: 12 inputs: 12 stored (0 replaced), 0 unchanged, 0 rejected, 0 failed; 4 with near duplicates in ") ||
		strings.Count(r.stderr, "\n") != 1 || strings.Contains(r.stderr, "\r") {
		t.Errorf("stderr (not a terminal) is not the summary alone:\n%q", r.stderr)
	}
}

func TestE2EAddOriginals(t *testing.T) {
	// The corpus files that are not edits or copies of another.
	originals := []string{"bees", "bread", "chess", "coffee", "lighthouse", "railway", "tides", "volcano"}
	dir := dbDir(t)
	args := append([]string{"--db", dir, "add"}, corpusPaths(originals...)...)
	r := exe(t, nil, "", args...).mustCode(t, exitOK)
	if strings.Count(r.stdout, ": stored\n") != len(originals) || strings.Contains(r.stdout, "near duplicate") {
		t.Errorf("add of the originals:\n%s", r.stdout)
	}

	// A second add of a near duplicate names the original, exits 1.
	r = exe(t, nil, "", "--db", dir, "add", "corpus/chess-revised.txt").mustCode(t, exitDuplicates)
	want := "corpus/chess-revised.txt: 1 near duplicate\n  corpus/chess.txt  similarity "
	if !strings.HasPrefix(r.stdout, want) || !strings.HasSuffix(r.stdout, "corpus/chess-revised.txt: stored\n") {
		t.Errorf("add of a near duplicate:\n%s", r.stdout)
	}

	// --reject leaves it out.
	r = exe(t, nil, "", "--db", dir, "add", "--reject", "corpus/bread-edited.txt").mustCode(t, exitDuplicates)
	if !strings.Contains(r.stdout, "  corpus/bread.txt  similarity ") || !strings.HasSuffix(r.stdout, "corpus/bread-edited.txt: rejected\n") {
		t.Errorf("add --reject:\n%s", r.stdout)
	}
	r = exe(t, nil, "", "--db", dir, "add", "--reject", "--json", "corpus/bread-edited.txt").mustCode(t, exitDuplicates)
	if !strings.HasSuffix(r.stdout, `{"query":"corpus/bread-edited.txt","stored":false,"replaced":false,"unchanged":false,"rejected":true,"matches":1}`+"\n") {
		t.Errorf("add --reject --json:\n%s", r.stdout)
	}
	r = exe(t, nil, "", "--db", dir, "get", "corpus/bread-edited.txt").mustCode(t, exitFailure)
	if r.stderr != "fpdb: get \"corpus/bread-edited.txt\": document not found\n" {
		t.Errorf("get of a rejected document: %q", r.stderr)
	}

	// The exact copy: query lists the original as exact, with the same
	// fingerprint.
	r = exe(t, nil, "", "--db", dir, "query", "corpus/volcano-copy.txt").mustCode(t, exitOK)
	if r.stdout != "corpus/volcano.txt  similarity 1.000  hamming 0  contained 1.000  exact\n" {
		t.Errorf("query of the exact copy:\n%q", r.stdout)
	}
	r = exe(t, nil, "", "--db", dir, "query", "--json", "corpus/bees-edited.txt").mustCode(t, exitOK)
	objs := jsonLines(t, r.stdout)
	if len(objs) != 1 || objs[0]["id"] != "corpus/bees.txt" || objs[0]["exact"] != false || objs[0]["query"] != "corpus/bees-edited.txt" {
		t.Errorf("query --json of a near duplicate:\n%s", r.stdout)
	} else if s := objs[0]["similarity"].(float64); s < 0.7 || s >= 1 {
		t.Errorf("similarity %v", s)
	}

	// Delete, then query no longer shows it.
	exe(t, nil, "", "--db", dir, "delete", "corpus/bees.txt").mustCode(t, exitOK)
	r = exe(t, nil, "", "--db", dir, "query", "corpus/bees-edited.txt").mustCode(t, exitNoMatch)
	if r.stdout != "" {
		t.Errorf("query after delete:\n%s", r.stdout)
	}
	if n := docsCount(t, dir); n != len(originals) {
		t.Errorf("docs = %d, want %d", n, len(originals))
	}
}

func TestE2EBadInputs(t *testing.T) {
	dir := dbDir(t)
	args := append([]string{"--db", dir, "add"}, corpusPaths("coffee", "tides")...)
	exe(t, nil, "", args...).mustCode(t, exitOK)

	badFiles := []string{"bad/binary.bin", "bad/empty.txt", "bad/utf16-no-bom.txt", "bad/punct.txt"}
	args = append([]string{"--db", dir, "add"}, append(corpusPaths("railway"), append(badFiles, "corpus/tides.txt")...)...)
	r := exe(t, nil, "", args...).mustCode(t, exitInput)
	for _, b := range badFiles {
		if !strings.Contains(r.stderr, "fpdb: add "+b+": ") {
			t.Errorf("stderr does not name %s:\n%s", b, r.stderr)
		}
	}
	if !strings.Contains(r.stderr, "4 of 6 inputs failed") {
		t.Errorf("stderr lacks the summary:\n%s", r.stderr)
	}
	// The good files were still added (tides unchanged, no duplicate).
	if !strings.Contains(r.stdout, "corpus/railway.txt: stored\n") || !strings.Contains(r.stdout, "corpus/tides.txt: unchanged\n") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	if n := docsCount(t, dir); n != 3 {
		t.Errorf("docs = %d, want 3", n)
	}
	// The bad directory alone.
	r = exe(t, nil, "", "--db", dir, "add", "bad").mustCode(t, exitInput)
	if strings.Count(r.stderr, "fpdb: add bad/") != 4 {
		t.Errorf("add bad:\n%s", r.stderr)
	}
	if n := docsCount(t, dir); n != 3 {
		t.Errorf("docs = %d, want 3", n)
	}
}

func TestE2EMissingDatabase(t *testing.T) {
	dir := dbDir(t)
	r := exe(t, nil, "", "--db", dir, "query", "corpus/bees.txt").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("stderr: %q", r.stderr)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("query created the database directory (stat: %v)", err)
	}
}

func TestE2ELocked(t *testing.T) {
	dir := dbDir(t)
	exe(t, nil, "", "--db", dir, "add", "corpus/bees.txt").mustCode(t, exitOK)
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, args := range [][]string{
		{"add", "corpus/bread.txt"},
		{"query", "corpus/bees.txt"},
		{"stats"},
	} {
		r := exe(t, nil, "", append([]string{"--db", dir}, args...)...).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, "locked") {
			t.Errorf("%v with the database held: stderr %q", args, r.stderr)
		}
	}
}

func TestE2EEnvDB(t *testing.T) {
	dir := dbDir(t)
	env := []string{envDB + "=" + dir}
	exe(t, env, "", "add", "corpus/coffee.txt").mustCode(t, exitOK)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("$%s not honoured: %v", envDB, err)
	}
	r := exe(t, env, "", "query", "corpus/coffee.txt").mustCode(t, exitOK)
	if !strings.HasPrefix(r.stdout, "corpus/coffee.txt ") {
		t.Errorf("query with $%s:\n%s", envDB, r.stdout)
	}
	if _, err := os.Stat(filepath.Join("testdata", "fpdb-data")); err == nil {
		t.Errorf("the default ./fpdb-data was used despite $%s", envDB)
	}
}

func TestE2EStdin(t *testing.T) {
	dir := dbDir(t)
	text, err := os.ReadFile("testdata/corpus/lighthouse.txt")
	if err != nil {
		t.Fatal(err)
	}
	exe(t, nil, string(text), "--db", dir, "add", "--id", "light", "-").mustCode(t, exitOK)
	r := exe(t, nil, string(text), "--db", dir, "query", "-").mustCode(t, exitOK)
	if r.stdout != "light  similarity 1.000  hamming 0  contained 1.000  exact\n" {
		t.Errorf("query -: %q", r.stdout)
	}
	exe(t, nil, "", "--db", dir, "add", "-").mustCode(t, exitFailure)
}

func TestE2EVersion(t *testing.T) {
	r := exe(t, nil, "", "version").mustCode(t, exitOK)
	if !strings.HasPrefix(r.stdout, "fpdb "+version) {
		t.Errorf("version: %q", r.stdout)
	}
}

// TestE2EInterrupt sends SIGINT during a long add: the run stops between
// documents with exit 2, closes the database, and every document reported
// stored is in it.
func TestE2EInterrupt(t *testing.T) {
	dir := dbDir(t)
	src := t.TempDir()
	const n = 5000
	vocab := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		words := make([]string, 40)
		for j := range words {
			words[j] = vocab[rng.IntN(len(vocab))]
		}
		text := fmt.Sprintf("document %d %s", i, strings.Join(words, " "))
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("%05d.txt", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(fpdbBinary, "--db", dir, "add", "--threshold", "1", src)
	cmd.Env = withoutEnvDB(os.Environ())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// One scanner reads every line: it buffers ahead, so the lines after
	// the interrupt must come from it too.
	sc := bufio.NewScanner(stdout)
	stored := 0
	signalled := false
	watchdog := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	for sc.Scan() {
		if strings.HasSuffix(sc.Text(), ": stored") {
			stored++
		}
		if stored == 20 && !signalled {
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			signalled = true
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("fpdb add did not stop after SIGINT")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailure {
		t.Fatalf("exit: %v, want code %d; stderr:\n%s", err, exitFailure, errb.String())
	}
	if !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("stderr: %q", errb.String())
	}
	if stored >= n {
		t.Fatalf("the add finished before the interrupt")
	}
	// The database was closed (not locked) and holds what was reported.
	if n := docsCount(t, dir); n != stored {
		t.Errorf("docs = %d, but %d were reported stored", n, stored)
	}
}

// TestInterruptWhileReadingStdin: Ctrl-C (SIGINT) stops an add or a query
// that waits for standard input (here a pipe whose writer stays silent),
// and the database is left closed and unchanged.
func TestInterruptWhileReadingStdin(t *testing.T) {
	dir := dbDir(t)
	exe(t, nil, "one two three four five six seven", "--db", dir, "add", "--id", "a", "-").mustCode(t, 0)
	for _, args := range [][]string{{"add", "--id", "b", "-"}, {"query", "-"}} {
		cmd := exec.Command(fpdbBinary, append([]string{"--db", dir}, args...)...)
		cmd.Env = withoutEnvDB(os.Environ())
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := stdin.Write([]byte("some words but no end of input yet ")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("%v did not stop after SIGINT while reading standard input", args)
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitFailure || !strings.Contains(errb.String(), "interrupted") {
			t.Errorf("%v: %v; stderr %q", args, err, errb.String())
		}
	}
	if n := docsCount(t, dir); n != 1 {
		t.Errorf("docs = %d after the interrupted add, want 1", n)
	}
}
