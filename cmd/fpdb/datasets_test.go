package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fpdb/fpdb/internal/records"
)

// TestReadmeDatasets runs the examples of README's "Datasets" top to
// bottom, exactly as printed, in a copy of examples/datasets: every line
// must succeed (exit 0, or 1 where add found near duplicates), the
// figures README states must be what dedup prints, and every record must
// be in the kept or the removed output once.
func TestReadmeDatasets(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("jq is not installed: README's examples use it (make test installs it: apt-get install jq)")
	}
	bin := buildFPDB(t)
	work := filepath.Join(t.TempDir(), "work")
	if err := os.CopyFS(work, os.DirFS("../../examples/datasets")); err != nil {
		t.Fatal(err)
	}
	lines := readmeExamples(t, "Datasets")
	if len(lines) < 5 || lines[0] != "cd examples/datasets" {
		t.Fatalf("README's Datasets examples: %q", lines)
	}
	env := append(withoutEnvDB(os.Environ()), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, line := range lines[1:] {
		cmd := exec.Command("bash", "-o", "pipefail", "-c", line) // every command of a pipeline must succeed
		cmd.Dir, cmd.Env = work, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !(strings.HasPrefix(line, "fpdb --db archive add") && errors.As(err, &ee) && ee.ExitCode() == 1) {
			t.Errorf("%s: %v\nstdout: %s\nstderr: %s", line, err, stdout.String(), stderr.String())
		}
		if strings.HasPrefix(line, "fpdb dedup hf/data/") && !strings.Contains(stderr.String(), "dedup: 14 kept, 10 removed") {
			t.Errorf("%s: README says 24 records: 14 kept, 10 removed; the run printed\n%s", line, stderr.String())
		}
	}
	// Every crawl record once, in kept or removed.
	count := func(name string) int {
		b, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("\n"))
	}
	if k, r := count("kept.jsonl"), count("removed.jsonl"); k+r != 15 || r == 0 {
		t.Errorf("crawl: %d kept + %d removed, want 15 records with some removed", k, r)
	}
	for _, d := range []string{"archive", "pages"} {
		cmd := exec.Command(filepath.Join(bin, "fpdb"), "--db", d, "check")
		cmd.Dir, cmd.Env = work, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("fpdb --db %s check: %v\n%s", d, err, out)
		}
	}
	for _, p := range []string{"kept.parquet.fpdb", "kept.fpdb"} {
		if _, err := os.Stat(filepath.Join(work, p)); !os.IsNotExist(err) {
			t.Errorf("the work database of a successful dedup is left: %v", err)
		}
	}
	// The shards: every record of hf/data once, in the shard of its input.
	for _, shard := range []string{"train-00000-of-00002.parquet", "train-00001-of-00002.parquet"} {
		in, kept, removed := readIDsOf(t, filepath.Join(work, "hf", "data", shard)), readIDsOf(t, filepath.Join(work, "kept", shard)), readIDsOf(t, filepath.Join(work, "removed", shard))
		if got := append(kept, removed...); len(kept) == 0 || !sameSet(got, in) {
			t.Errorf("shard %s: kept %q + removed %q, want the input's records %q", shard, kept, removed, in)
		}
	}
}

// readIDsOf returns the ids of the records of a dataset file.
func readIDsOf(t *testing.T, path string) []string {
	t.Helper()
	r, err := records.Open(path, records.Options{IDField: "id"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ids []string
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return ids
		}
		if err != nil || rec.Err != nil {
			t.Fatalf("%s: %v %v", path, err, rec.Err)
		}
		ids = append(ids, rec.ID)
	}
}

// sameSet reports whether a and b hold the same strings, as many times.
func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// killAt runs the command and kills it with SIGKILL at the count-th line
// of its standard error that holds marker (a progress line of the load, or
// the report of a bad record, written once its batch is stored).
func killAt(t *testing.T, marker string, count int, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = withoutEnvDB(os.Environ())
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	sc := bufio.NewScanner(pr)
	var seen []string
	for count > 0 && sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), marker) {
			count--
		}
	}
	if count > 0 {
		cmd.Wait()
		t.Fatalf("the command ended before it could be killed: %q", seen)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if cmd.ProcessState.Success() {
		t.Fatal("the load ended before it was killed")
	}
}

// TestDedupArchiveResumeAfterKill kills "fpdb dedup --db ARCHIVE" with
// SIGKILL while it loads, then runs it again: the rerun writes the outputs
// an uninterrupted run over a copy of the archive writes, byte for byte,
// although the archive holds documents under the ids of records the
// database refuses (no words).
func TestDedupArchiveResumeAfterKill(t *testing.T) {
	bin := buildFPDB(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "crawl.jsonl")
	const n = 150_000
	var b, arch bytes.Buffer
	body := func(i int) string {
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		var w strings.Builder
		for range 60 {
			fmt.Fprintf(&w, " w%d", rng.IntN(20000))
		}
		return w.String()
	}
	for i := range n {
		text := "record" + body(i)
		switch {
		case i%10 == 9: // a near duplicate of the record before it
			text = "copy" + body(i - 1)[4:]
		case i%997 == 0: // refused, and its id is archived
			text = " ... !!! "
			fmt.Fprintf(&arch, `{"id":"r%06d","text":"archived%s"}`+"\n", i, body(i+1))
		}
		fmt.Fprintf(&b, `{"id":"r%06d","text":"%s"}`+"\n", i, text)
	}
	writeFile(t, dir, "crawl.jsonl", b.Bytes())
	writeFile(t, dir, "archive.jsonl", arch.Bytes())
	for _, name := range []string{"archive", "reference"} {
		runFPDB(t, "", "--db", filepath.Join(dir, name), "add", "--bulk", "-q", filepath.Join(dir, "archive.jsonl")).mustCode(t, 0)
	}
	outs := func(sub string) []string {
		os.MkdirAll(filepath.Join(dir, sub), 0o755)
		return []string{"--out", filepath.Join(dir, sub, "kept.jsonl"), "--removed", filepath.Join(dir, sub, "removed.jsonl"), "--clusters", filepath.Join(dir, sub, "clusters.jsonl")}
	}
	want := runFPDB(t, "", append([]string{"dedup", "-q", "--batch", "500", "--db", filepath.Join(dir, "reference"), in}, outs("want")...)...).mustCode(t, 3)
	// Killed after the batch of its 20th refused record (of 150) is stored.
	killAt(t, "no words", 20, filepath.Join(bin, "fpdb"), append([]string{"dedup", "--batch", "100", "--db", filepath.Join(dir, "archive"), in}, outs("got")...)...)
	got := runFPDB(t, "", append([]string{"dedup", "-q", "--batch", "500", "--db", filepath.Join(dir, "archive"), in}, outs("got")...)...).mustCode(t, 3)
	if !strings.Contains(got.stderr, "resumed") {
		t.Errorf("the rerun did not resume: %s", got.stderr)
	}
	// The summaries count the same bad records, clusters and records.
	counts := regexp.MustCompile(`\d+ skipped \([^)]*\)|\d+ kept, \d+ removed; \d+ clusters \(\d+ pairs\)`)
	if w, g := counts.FindAllString(want.stderr, -1), counts.FindAllString(got.stderr, -1); len(w) != 2 || !slices.Equal(w, g) {
		t.Errorf("summaries differ: %q, want %q", g, w)
	}
	for _, f := range []string{"kept.jsonl", "removed.jsonl", "clusters.jsonl"} {
		w, _ := os.ReadFile(filepath.Join(dir, "want", f))
		g, _ := os.ReadFile(filepath.Join(dir, "got", f))
		if len(w) == 0 || !bytes.Equal(w, g) {
			t.Errorf("%s of the resumed run (%d bytes) differs from an uninterrupted run's (%d bytes)", f, len(g), len(w))
		}
	}
}

// TestBulkResumeAfterKill kills "fpdb add --bulk" of a JSON Lines file
// with SIGKILL while it loads, then runs it again: the rerun resumes (it
// stores only what the killed run had not), and the database ends with
// every record once and passes check.
func TestBulkResumeAfterKill(t *testing.T) {
	bin := buildFPDB(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "big.jsonl")
	const n = 150_000
	var b bytes.Buffer
	refused := 0 // records without words, to kill it at the reports
	for i := range n {
		if i%5000 == 4999 {
			fmt.Fprintf(&b, `{"id":"r%06d","text":" ... "}`+"\n", i)
			refused++
			continue
		}
		fmt.Fprintf(&b, `{"id":"r%06d","text":"record %d`, i, i)
		for j := range 60 {
			fmt.Fprintf(&b, " w%d", (i*7919+j*104729)%20011)
		}
		b.WriteString("\"}\n")
	}
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dbDir := filepath.Join(dir, "db")
	// Killed once the batch of its third refused record is stored (a
	// progress line comes only after 2 s, which a fast machine may not
	// reach).
	killAt(t, "no words", 3, filepath.Join(bin, "fpdb"), "--db", dbDir, "add", "--bulk", "--batch", "500", in)

	// Exit 3: records were skipped.
	r := runFPDB(t, "", "--db", dbDir, "add", "--bulk", "--json", in).mustCode(t, 3)
	var sum struct{ Records, Resumed, Stored, Unchanged, Skipped int }
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if sum.Records != n || sum.Resumed == 0 || sum.Resumed+sum.Stored+sum.Unchanged+sum.Skipped != n {
		t.Fatalf("rerun after kill: %+v (want %d records, some resumed)", sum, n)
	}
	if !strings.Contains(r.stderr, "resumed") {
		t.Errorf("the summary does not say it resumed: %s", r.stderr)
	}
	st := cliStats(t, dbDir)
	if st.Docs != n-refused {
		t.Fatalf("%d documents after the resumed load, want %d", st.Docs, n-refused)
	}
	runFPDB(t, "", "--db", dbDir, "check").mustCode(t, 0)
	// A third run stores nothing: every input is marked done.
	r = runFPDB(t, "", "--db", dbDir, "add", "--bulk", "--json", in).mustCode(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.Resumed != n || sum.Stored != 0 {
		t.Fatalf("third run: %+v, %v", sum, err)
	}
}

// TestDedupWorkDatabase checks that a work database left by one run
// (--keep-work, or an interruption) is not mixed into a run over other
// inputs: that run starts a new one, so its records are compared only
// with each other.
func TestDedupWorkDatabase(t *testing.T) {
	dir := t.TempDir()
	text := "the committee reviewed every proposal of the spring call and ranked them by merit and by feasibility of the plan"
	writeFile(t, dir, "a.jsonl", []byte(`{"id":"a1","text":"`+text+`"}`+"\n"))
	writeFile(t, dir, "b.jsonl", []byte(`{"id":"b1","text":"`+text+` today"}`+"\n"+`{"id":"b2","text":"an unrelated record about rivers lakes and the sea in spring"}`+"\n"))
	out := filepath.Join(dir, "kept.jsonl")
	runFPDB(t, "", "dedup", "--keep-work", "-q", filepath.Join(dir, "a.jsonl"), "--out", out).mustCode(t, 0)
	if _, err := os.Stat(out + ".fpdb"); err != nil {
		t.Fatalf("--keep-work: %v", err)
	}
	r := runFPDB(t, "", "dedup", "-q", "--json", filepath.Join(dir, "b.jsonl"), "--out", out, "--removed", filepath.Join(dir, "removed.jsonl")).mustCode(t, 0)
	var sum struct{ Kept, Removed, Records int }
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.Records != 2 || sum.Kept != 2 || sum.Removed != 0 {
		t.Fatalf("second run over other inputs: %+v (%v): the first run's documents were mixed in", sum, err)
	}
	if _, err := os.Stat(out + ".fpdb"); !os.IsNotExist(err) {
		t.Fatalf("the work database is left after a successful run: %v", err)
	}
	// A plan asked for is the plan run, and the summary says so.
	r = runFPDB(t, "", "dedup", "-q", "--json", "--plan", "approx", "--recall", "0.99", filepath.Join(dir, "b.jsonl"), "--out", out).mustCode(t, 0)
	var planned struct {
		Plan   string
		Recall float64
	}
	if err := json.Unmarshal([]byte(r.stdout), &planned); err != nil || planned.Plan == "" || planned.Recall < 0.99 {
		t.Fatalf("--plan approx --recall 0.99: summary %s (%v)", r.stdout, err)
	}
	r = runFPDB(t, "", "dedup", "-q", "--json", "--tau", "2", filepath.Join(dir, "b.jsonl"), "--out", out).mustCode(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &planned); err != nil || !strings.HasPrefix(planned.Plan, "probe tau=2") || planned.Recall != 1 {
		t.Fatalf("--tau 2: summary %s (%v)", r.stdout, err)
	}
	// Bad input: exit 3, and --strict stops at the first bad record.
	writeFile(t, dir, "bad.jsonl", []byte(`{"id":"x","text":"one two three four five"}`+"\n"+`{"id":"y"}`+"\n"))
	runFPDB(t, "", "dedup", "-q", filepath.Join(dir, "bad.jsonl"), "--out", out).mustCode(t, exitInput)
	r = runFPDB(t, "", "dedup", "-q", "--strict", filepath.Join(dir, "bad.jsonl"), "--out", out).mustCode(t, exitInput)
	if !strings.Contains(r.stderr, "bad.jsonl:2") {
		t.Errorf("--strict: %s", r.stderr)
	}
	runFPDB(t, "", "dedup", filepath.Join(dir, "missing.jsonl"), "--out", out).mustCode(t, exitInput)
	runFPDB(t, "", "dedup", filepath.Join(dir, "b.jsonl"), "--out", out, "--removed", out).mustCode(t, exitFailure)

	// A run refused before it stores anything leaves no work database,
	// and an output that is a directory, or in none, is refused before the
	// load (the work database beside it made no directory for it).
	fresh := t.TempDir()
	b := filepath.Join(dir, "b.jsonl")
	writeFile(t, fresh, "a.txt", []byte("one two three four five six\n"))
	if err := os.Mkdir(filepath.Join(fresh, "outdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{b, "--out", b}, exitFailure, "is the input"},
		{[]string{b, "--out", filepath.Join(fresh, "k.jsonl"), "--removed", filepath.Join(fresh, "k.jsonl")}, exitFailure, "is the out file"},
		{[]string{filepath.Join(fresh, "a.txt"), "--out", filepath.Join(fresh, "q.jsonl")}, exitInput, "unknown record format"},
		// A directory of shards is named with a final "/"; both outputs must be.
		{[]string{b, "--out", filepath.Join(fresh, "outdir"), "--removed", filepath.Join(fresh, "k.jsonl")}, exitFailure, "is a directory (end it with"},
		{[]string{b, "--out", filepath.Join(fresh, "outdir") + "/", "--removed", filepath.Join(fresh, "k.jsonl")}, exitFailure, "give both a directory of shards"},
		{[]string{b, "--out", filepath.Dir(b) + "/", "--removed", filepath.Join(fresh, "r") + "/"}, exitFailure, "is inside the directory of shards"},
		{[]string{b, "--out", filepath.Join(fresh, "k.jsonl"), "--clusters", filepath.Join(fresh, "outdir")}, exitFailure, "is a directory"},
		{[]string{b, "--out", filepath.Join(fresh, "k.jsonl"), "--removed", filepath.Join(fresh, "nodir", "r.jsonl")}, exitFailure, "no directory"},
		{[]string{b, "--out", filepath.Join(fresh, "nodir", "k.jsonl")}, exitFailure, "no directory"},
	} {
		r := runFPDB(t, "", append([]string{"dedup", "-q"}, c.args...)...).mustCode(t, c.code)
		left, _ := filepath.Glob(filepath.Join(fresh, "*.fpdb"))
		if b1, _ := filepath.Glob(filepath.Join(dir, "b.jsonl.fpdb")); len(b1) > 0 {
			left = append(left, b1...)
		}
		if _, err := os.Stat(filepath.Join(fresh, "nodir")); err == nil {
			left = append(left, "nodir")
		}
		if !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "records") || len(left) > 0 {
			t.Errorf("dedup %q: stderr %q, left %q", c.args, r.stderr, left)
		}
	}
	// --keep-work keeps the work database of a run whose records were all
	// bad (exit 3) too.
	writeFile(t, fresh, "allbad.jsonl", []byte(`{"id":"e","text":""}`+"\n"))
	kept := filepath.Join(fresh, "kept.jsonl")
	runFPDB(t, "", "dedup", "-q", "--keep-work", filepath.Join(fresh, "allbad.jsonl"), "--out", kept).mustCode(t, exitInput)
	if _, err := os.Stat(kept + ".fpdb"); err != nil {
		t.Errorf("--keep-work after a run of bad records only: %v", err)
	}
}

// TestDedupOutputConflicts checks that dedup refuses, before it reads a
// record or makes a work database, --json with an output on standard
// output (the summary would be mixed into the records), two outputs on
// standard output, and an output that is the input through a symbolic or
// hard link (an input that is a link to the output was replaced by the
// kept records; the other cases replace only a name, and are refused as
// the same file all the same).
func TestDedupOutputConflicts(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, `{"id":"r%d","text":"record %d of the conflicts test about rivers lakes %d and the sea in spring"}`+"\n", i, i, i%50)
	}
	data := writeFile(t, dir, "data.jsonl", []byte(b.String()))
	link, hard := filepath.Join(dir, "link.jsonl"), filepath.Join(dir, "hard.jsonl")
	if err := os.Symlink("data.jsonl", link); err != nil {
		t.Skipf("no symbolic links: %v", err)
	}
	if err := os.Link(data, hard); err != nil {
		t.Skipf("no hard links: %v", err)
	}
	kept, removed, clusters := filepath.Join(dir, "k.jsonl"), filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "c.jsonl")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{data, "--out", kept, "--removed", "-", "--json"}, "--json and --removed - both write to standard output"},
		{[]string{data, "--out", kept, "--clusters", "-", "--json"}, "--json and --clusters - both write to standard output"},
		{[]string{data, "--out", "-", "--json"}, "--json and --out - both write to standard output"},
		{[]string{data, "--out", "-", "--clusters", "-"}, "--out - and --clusters - both write to standard output"},
		{[]string{data, "--out", "-", "--removed", "-"}, "--out - and --removed - both write to standard output"},
		{[]string{data, "--out", kept, "--removed", "-", "--clusters", "-"}, "--removed - and --clusters - both write to standard output"},
		{[]string{link, "--out", data}, "the out file " + data + " is the input " + link},
		{[]string{data, "--out", link}, "the out file " + link + " is the input " + data},
		{[]string{hard, "--out", data}, "the out file " + data + " is the input " + hard},
		{[]string{data, "--out", kept, "--removed", hard}, "the removed file " + hard + " is the input " + data},
		{[]string{data, "--out", kept, "--clusters", link}, "the clusters file " + link + " is the input " + data},
		{[]string{data, "--out", kept, "--removed", removed, "--clusters", clusters, "--json", "--removed", "-"}, "--json and --removed - both write to standard output"},
	} {
		r := runFPDB(t, "", append([]string{"dedup", "-q"}, c.args...)...)
		left, _ := filepath.Glob(filepath.Join(dir, "*.fpdb"))
		if r.code != exitFailure || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "records") || r.stdout != "" || len(left) > 0 {
			t.Errorf("dedup %q: exit %d, stderr %q (want %q), stdout %d bytes, left %q", c.args, r.code, r.stderr, c.want, len(r.stdout), left)
		}
		for _, p := range left {
			os.RemoveAll(p)
		}
		if got, err := os.ReadFile(data); err != nil || string(got) != b.String() {
			t.Fatalf("dedup %q changed the input (%d bytes, %v)", c.args, len(got), err)
		}
	}
	// One output on standard output, without --json, runs.
	r := runFPDB(t, "", "dedup", "-q", link, "--out", kept, "--clusters", "-").mustCode(t, 0)
	if !strings.HasPrefix(r.stdout, `{"cluster":1,`) {
		t.Errorf("--clusters -: stdout %.200q", r.stdout)
	}
}

// TestDedupWorkChangedInput checks that a work database left by a run
// (--keep-work, or an interruption) does not serve a run over an input
// changed since: a record deleted from it must not be clustered with the
// current records, named as kept, or left out of every output.
func TestDedupWorkChangedInput(t *testing.T) {
	dir := t.TempDir()
	text := "the quick brown fox jumps over the lazy dog near the river bank today"
	a := `{"id":"a","text":"` + text + `"}` + "\n"
	b := `{"id":"b","text":"` + text + ` again"}` + "\n"
	in := writeFile(t, dir, "in.jsonl", []byte(a+b))
	out, removed := filepath.Join(dir, "k.jsonl"), filepath.Join(dir, "r.jsonl")
	args := []string{"dedup", "-q", "--keep-work", in, "--out", out, "--removed", removed}
	runFPDB(t, "", args...).mustCode(t, 0)
	if got := readText(t, removed); !strings.Contains(got, `"fpdb_kept":"a"`) {
		t.Fatalf("first run: removed %q, want b removed for a", got)
	}
	// Record a deleted: the input's size and modification time change.
	if err := os.WriteFile(in, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(in, time.Now().Add(time.Minute), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	runFPDB(t, "", args...).mustCode(t, 0)
	kept, rem := readText(t, out), readText(t, removed)
	if !strings.Contains(kept, `"id":"b"`) || !strings.Contains(kept, `"fpdb_kept":"b"`) || rem != "" {
		t.Fatalf("after record a was deleted from the input: kept %q, removed %q; want b kept, nothing removed", kept, rem)
	}
}

// TestDedupWorkOtherCreationFlags: a rerun with other creation flags than
// the run that left the work database (--shingle-width) starts a new one,
// as other record options do; it was refused ("the database was created
// with --shingle-width 4").
func TestDedupWorkOtherCreationFlags(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in.jsonl", []byte(`{"id":"a","text":"one two three four five six seven"}`+"\n"+
		`{"id":"b","text":"one two three four five six eight"}`+"\n"))
	out := filepath.Join(dir, "k.jsonl")
	args := []string{"dedup", "-q", "--keep-work", in, "--out", out, "--threshold", "0.5"}
	runFPDB(t, "", args...).mustCode(t, 0)
	r := runFPDB(t, "", append(args, "--shingle-width", "2")...).mustCode(t, 0)
	if r.stderr == "" || strings.Contains(r.stderr, "created with") {
		t.Fatalf("rerun with --shingle-width 2: %s", r.stderr)
	}
	r = runFPDB(t, "", "--db", out+".fpdb", "stats", "--json").mustCode(t, 0)
	if !strings.Contains(r.stdout, `"shingle_width":2`) {
		t.Errorf("the work database after the rerun: %s", r.stdout)
	}
}

// TestDedupLeavesUsersDatabase checks that a database at the place of the
// work database (KEPT.fpdb) that dedup did not make is never replaced:
// one made by add (which keeps texts, as a work database does not), and
// one made with the work database's own flags.
func TestDedupLeavesUsersDatabase(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in.jsonl", []byte(`{"id":"a","text":"one two three four five six seven"}`+"\n"))
	out := filepath.Join(dir, "k.jsonl")
	for _, flags := range [][]string{{"--k", "256"}, {"--no-texts", "--no-log"}} {
		os.RemoveAll(out + ".fpdb")
		runFPDB(t, "", append([]string{"--db", out + ".fpdb", "add", "--id", "mine", corpus + "bees.txt"}, flags...)...).mustCode(t, exitOK)
		r := runFPDB(t, "", "dedup", "-q", in, "--out", out)
		if r.code == exitOK || !strings.Contains(r.stderr, "dedup did not make (1 document)") {
			t.Errorf("%v: exit %d: %s", flags, r.code, r.stderr)
		}
		runFPDB(t, "", "--db", out+".fpdb", "get", "mine").mustCode(t, exitOK)
	}
}

// TestDedupResumedBadExit checks the exit status of a rerun whose bad
// records were all stored (refused) by the earlier run: 3, as the first
// run's, not 2 without a message.
func TestDedupResumedBadExit(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in.jsonl", []byte(`{"id":"a","text":"one two three four five six seven"}`+"\n"+`{"id":"b","text":"!!! ???"}`+"\n"))
	args := []string{"dedup", "-q", "--keep-work", in, "--out", filepath.Join(dir, "k.jsonl")}
	runFPDB(t, "", args...).mustCode(t, exitInput)
	r := runFPDB(t, "", append(args, "--json")...).mustCode(t, exitInput)
	if !strings.Contains(r.stderr, "1 skipped (1 no words)") {
		t.Errorf("rerun: %s", r.stderr)
	}
	// The rate of the summary line is the --json summary's (every record
	// read, the resumed ones too).
	var sum struct {
		Resumed int
		Rate    float64 `json:"records_per_second"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.Resumed != 2 {
		t.Fatalf("rerun --json: %v %s", err, r.stdout)
	}
	if want := fmt.Sprintf(", %.0f records/s", sum.Rate); !strings.Contains(r.stderr, want) {
		t.Errorf("rerun: the summary line lacks %q: %s", want, r.stderr)
	}
}

// readText returns the contents of the file at path.
func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAddRecordsStrict checks add of a dataset's records: an empty text is
// a document without words (exit 3), and --strict stops at the first bad
// record, whether the record is malformed or refused by the database, and
// counts it.
func TestAddRecordsStrict(t *testing.T) {
	dir := t.TempDir()
	good := `{"id":"g","text":"one two three four five six seven eight nine ten"}`
	for name, first := range map[string]string{"empty": `{"id":"e","text":""}`, "nowords": `{"id":"n","text":" ... "}`, "missing": `{"id":"m"}`} {
		in := filepath.Join(dir, name+".jsonl")
		writeFile(t, dir, name+".jsonl", []byte(first+"\n"+good+"\n"))
		db1 := filepath.Join(dir, name+"-1")
		r := runFPDB(t, "", "--db", db1, "add", in).mustCode(t, exitInput)
		want := "no words"
		if name == "missing" {
			want = `missing field "text"`
		}
		if !strings.Contains(r.stderr, in+":1") || !strings.Contains(r.stderr, want) || !strings.Contains(r.stdout, "g: stored") {
			t.Errorf("%s: add: stdout %q stderr %q", name, r.stdout, r.stderr)
		}
		db2 := filepath.Join(dir, name+"-2")
		r = runFPDB(t, "", "--db", db2, "add", "--strict", in).mustCode(t, exitInput)
		if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "1 record: 0 stored (0 replaced), 0 unchanged, 0 rejected, 1 failed") ||
			!strings.Contains(r.stderr, "stopped at the first record that failed (--strict)") || strings.Contains(r.stdout, "g: stored") {
			t.Errorf("%s: add --strict: stdout %q stderr %q", name, r.stdout, r.stderr)
		}
	}
}

// TestAddDatasetDirectory: add of a directory holding only dataset files
// reads their records (as dedup does); dataset files met among documents
// are added whole, with a notice.
func TestAddDatasetDirectory(t *testing.T) {
	dir := t.TempDir()
	r := runFPDB(t, "", "--db", filepath.Join(dir, "hf"), "add", "--quiet", "../../examples/datasets/hf/data/").mustCode(t, exitDuplicates)
	if !strings.Contains(r.stderr, "add: 24 records: 24 stored") {
		t.Errorf("add of a directory of Parquet shards: %q", r.stderr)
	}
	// The database inside the directory does not make it a mixed one: a
	// second run reads the records again (unchanged).
	shards := filepath.Join(dir, "shards")
	writeFile(t, shards, "s1.jsonl", []byte(`{"id":"r1","text":"one two three four five six"}`+"\n"))
	for _, want := range []string{"1 stored", "1 unchanged"} {
		r = runFPDB(t, "", "--db", filepath.Join(shards, "db"), "add", shards).mustCode(t, 0)
		if !strings.Contains(r.stderr, "add: 1 record: "+strings.Replace(want, "1 unchanged", "0 stored (0 replaced), 1 unchanged", 1)) || !strings.Contains(r.stdout, "r1: ") {
			t.Errorf("add of shards with the database among them: stdout %q stderr %q", r.stdout, r.stderr)
		}
	}
	mixed := filepath.Join(dir, "mixed")
	writeFile(t, mixed, "recs.jsonl", []byte(`{"id":"r1","text":"one two three four five six"}`+"\n"))
	writeFile(t, mixed, "a.txt", []byte("a plain text document of a few words\n"))
	r = runFPDB(t, "", "--db", filepath.Join(dir, "m"), "add", mixed).mustCode(t, 0)
	if !strings.Contains(r.stderr, "fpdb: add: 1 dataset file among the documents") || !strings.Contains(r.stdout, filepath.Join(mixed, "recs.jsonl")+": stored") {
		t.Errorf("add of a mixed directory: stdout %q stderr %q", r.stdout, r.stderr)
	}
}

// TestIDFieldHint: add and dedup of records without the id field say once
// how to name it.
func TestIDFieldHint(t *testing.T) {
	dir := t.TempDir()
	// (One record has it: a small file none of whose records has it is
	// refused as a whole, as records.TestJSONLMisspelledField checks.)
	in := writeFile(t, dir, "noid.jsonl", []byte(`{"url":"u1","text":"one two three four five"}`+"\n"+`{"url":"u2","text":"six seven eight nine ten"}`+"\n"+`{"id":"u3","text":"eleven twelve thirteen fourteen"}`+"\n"))
	for _, args := range [][]string{
		{"--db", filepath.Join(dir, "a"), "add", in},
		{"dedup", in, "--threshold", "0.8", "--out", filepath.Join(dir, "kept.jsonl")},
	} {
		r := runFPDB(t, "", args...).mustCode(t, exitInput)
		if strings.Count(r.stderr, `fpdb: hint: records without an "id" field: --id-field FIELD`) != 1 {
			t.Errorf("%q: %s", args, r.stderr)
		}
	}
}

// TestBulkRerunAfterDelete: a file an earlier add --bulk stored to its
// end is skipped while it is unchanged, even after some of its documents
// were deleted; the summary says so and how to store them again, and
// --restart does.
func TestBulkRerunAfterDelete(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	for i := range 40 {
		fmt.Fprintf(&b, `{"id":"r%02d","text":"record %d about the %d rivers and %d lakes of a country far away"}`+"\n", i, i, i*7, i*13)
	}
	in := writeFile(t, dir, "recs.jsonl", b.Bytes())
	db := filepath.Join(dir, "db")
	runFPDB(t, "", "--db", db, "add", "--bulk", in).mustCode(t, 0)
	runFPDB(t, "", "--db", db, "delete", "--prefix", "r1").mustCode(t, 0)
	r := runFPDB(t, "", "--db", db, "add", "--bulk", in).mustCode(t, 0)
	if !strings.Contains(r.stderr, "40 resumed (done by an earlier run: stored, or skipped as bad; their file unchanged since, --restart reads them again)") {
		t.Errorf("rerun after a delete: %s", r.stderr)
	}
	if st := cliStats(t, db); st.Docs != 30 {
		t.Fatalf("%d documents after the rerun, want 30 (the file is skipped)", st.Docs)
	}
	runFPDB(t, "", "--db", db, "add", "--bulk", "--restart", in).mustCode(t, 0)
	if st := cliStats(t, db); st.Docs != 40 {
		t.Fatalf("%d documents after --restart, want 40", st.Docs)
	}
}
