package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// TestEmptyDB: an empty --db, or an empty $FPDB_DB, is refused with a
// message naming the flag or the variable, and nothing is created.
func TestEmptyDB(t *testing.T) {
	bees := corpusAbs(t) + "bees.txt"
	t.Chdir(t.TempDir())
	for _, args := range [][]string{
		{"stats"},
		{"add", "x.txt"},
		{"query", bees},
		{"export"},
		{"import", "-"},
		{"check", "--repair"},
	} {
		r := runFPDB(t, "", append([]string{"--db", ""}, args...)...).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, "--db is empty") || strings.Contains(r.stderr, "mkdir") {
			t.Errorf("--db \"\" %v: stderr %q", args, r.stderr)
		}
	}
	t.Setenv(envDB, "")
	r := runFPDB(t, "", "stats").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "$FPDB_DB is set but empty") {
		t.Errorf("empty $FPDB_DB: stderr %q", r.stderr)
	}
	r = runFPDB(t, "", "add", bees).mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "$FPDB_DB is set but empty") {
		t.Errorf("empty $FPDB_DB: stderr %q", r.stderr)
	}
	if ents, _ := os.ReadDir("."); len(ents) != 0 {
		t.Errorf("an empty --db created %v", ents)
	}
	// --db wins over an empty $FPDB_DB.
	runFPDB(t, "", "--db", "d", "add", bees).mustCode(t, exitOK)
}

// corpusAbs returns the absolute path of the test corpus, ending in a
// slash, for tests that change directory.
func corpusAbs(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd + "/" + corpus
}

// TestFlagValueMessages: a flag value that does not parse reads
// `invalid value "V" for --FLAG: REASON`, never Go's parser text, for every
// command and flag type.
func TestFlagValueMessages(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "--threshold", "abc", "x"}, `invalid value "abc" for --threshold: not a number`},
		{[]string{"query", "--threshold=abc", "x"}, `invalid value "abc" for --threshold: not a number`},
		{[]string{"pairs", "--threshold", "0.x"}, `invalid value "0.x" for --threshold: not a number`},
		{[]string{"clusters", "--threshold", "high"}, `invalid value "high" for --threshold: not a number`},
		{[]string{"query", "--limit", "ten", "x"}, `invalid value "ten" for --limit: not a whole number`},
		{[]string{"query", "--limit", "99999999999999999999", "x"}, `invalid value "99999999999999999999" for --limit: out of range`},
		{[]string{"add", "--batch", "1.5", "--bulk", "x"}, `invalid value "1.5" for --batch: not a whole number`},
		{[]string{"--wait", "soon", "stats"}, `invalid value "soon" for --wait: not a duration`},
		{[]string{"add", "--json=maybe", "x"}, `invalid value "maybe" for --json: not true or false`},
		{[]string{"add", "--threshold", "2", "x"}, `invalid value "2" for --threshold: must be in (0, 1]`},
		{[]string{"add", "--threshold", "0", "x"}, `invalid value "0" for --threshold: must be in (0, 1]`},
		{[]string{"query", "--threshold", "-0.5", "x"}, `invalid value "-0.5" for --threshold: must be in (0, 1]`},
		{[]string{"add", "--bulk", "--batch", "0", "x"}, `invalid value "0" for --batch: must be in [1, 1000000]`},
	} {
		r := runFPDB(t, "", append([]string{"--db", dbDir(t)}, c.args...)...).mustCode(t, exitFailure)
		if !strings.HasPrefix(r.stderr, "fpdb: "+c.want) {
			t.Errorf("%v: stderr %q, want it to start with %q", c.args, r.stderr, "fpdb: "+c.want)
		}
		for _, raw := range []string{"strconv", "ParseFloat", "invalid syntax", "invalid argument"} {
			if strings.Contains(r.stderr, raw) {
				t.Errorf("%v: stderr has Go's parser text %q: %q", c.args, raw, r.stderr)
			}
		}
	}
}

// cancelReader serves data and cancels a context when asked for bytes at
// or beyond offset at.
type cancelReader struct {
	data   []byte
	off    int
	at     int
	cancel context.CancelFunc
}

func (r *cancelReader) Read(p []byte) (int, error) {
	if r.off >= r.at {
		r.cancel()
	}
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	n := copy(p, r.data[r.off:])
	r.off += n
	return n, nil
}

// TestImportInterrupted cancels an import after its first batch of 10 000
// documents was written, while the second is being read: the message says
// "interrupted" with the count, not "context canceled", and the database
// holds exactly the first batch, whole and sound.
func TestImportInterrupted(t *testing.T) {
	src := dbDir(t)
	runFPDB(t, "", "--db", src, "add", corpus+"bees.txt").mustCode(t, exitOK)
	exp := runFPDB(t, "", "--db", src, "export").mustCode(t, exitOK).stdout
	header, rest, _ := strings.Cut(exp, "\n")
	rec, _, _ := strings.Cut(rest, "\n") // the document; the audit log follows
	var h, doc map[string]any
	if err := json.Unmarshal([]byte(header), &h); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(rec), &doc); err != nil {
		t.Fatal(err)
	}
	const total = 11_000
	h["docs"] = total
	delete(h, "log_entries") // none follow the documents
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(h); err != nil {
		t.Fatal(err)
	}
	end := 0 // the offset after the 10 000th document line
	for i := range total {
		doc["id"] = fmt.Sprintf("doc-%05d", i)
		if err := enc.Encode(doc); err != nil {
			t.Fatal(err)
		}
		if i == 9_999 {
			end = buf.Len()
		}
	}
	// The import reads ahead through a 64 KiB buffer: cancel once it asks
	// for bytes well past the first batch, so that batch is written.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := &cancelReader{data: buf.Bytes(), at: end + 2<<16, cancel: cancel}
	if in.at >= buf.Len() {
		t.Fatalf("export too short for the test: %d bytes", buf.Len())
	}
	dir := dbDir(t)
	o := &importOptions{globalOptions: &globalOptions{dbDir: dir}, path: "-"}
	var out bytes.Buffer
	err := o.run(ctx, in, &out)
	if err == nil {
		t.Fatal("interrupted import succeeded")
	}
	msg := errorText(err)
	if want := "import: interrupted: 10000 documents imported into " + dir; !strings.HasPrefix(msg, want) || strings.Contains(msg, "context canceled") {
		t.Errorf("message %q, want it to start with %q", msg, want)
	}
	r := runFPDB(t, "", "--db", dir, "stats", "--json").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, `"docs":10000,`) {
		t.Errorf("after the interrupt: %s", r.stdout)
	}
	// Sound, but unfinished until the same export resumes.
	runFPDB(t, "", "--db", dir, "check").mustCode(t, exitProblems)
	r = runFPDB(t, buf.String(), "--db", dir, "import", "-").mustCode(t, exitOK)
	if want := fmt.Sprintf("imported %d documents into %s", total, dir); !strings.Contains(r.stdout, want) {
		t.Errorf("the import resumed: %q, want %q", r.stdout, want)
	}
	runFPDB(t, "", "--db", dir, "check").mustCode(t, exitOK)
}

// damageTables overwrites the bytes of every sstable of the closed
// database in dir from the fraction lo of its length to hi with garbage,
// after compacting it into sstables.
func damageTables(t *testing.T, dir string, lo, hi float64) {
	t.Helper()
	runFPDB(t, "", "--db", dir, "compact").mustCode(t, exitOK)
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(ssts) == 0 {
		t.Fatalf("no sstable in %s (%v)", dir, err)
	}
	for _, f := range ssts {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i := int(lo * float64(len(b))); i < int(hi*float64(len(b))); i++ {
			b[i] ^= 0x5a
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCorruptStoreMessages damages the sstables of a database: every
// command that fails says what is wrong (Pebble's checksum mismatch and the
// file), never Pebble's "<corruption detail carrier>".
func TestCorruptStoreMessages(t *testing.T) {
	// The first range holds the meta record (Open fails), the others
	// posting and document blocks (Open succeeds, reads fail).
	for _, r := range [][2]float64{{0.02, 0.05}, {0.4, 0.45}, {0.6, 0.65}} {
		t.Run(fmt.Sprint(r), func(t *testing.T) { testCorruptStoreMessages(t, r[0], r[1]) })
	}
}

func testCorruptStoreMessages(t *testing.T, lo, hi float64) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus).mustCode(t, exitDuplicates)
	damageTables(t, dir, lo, hi)
	failed := 0
	for _, args := range [][]string{
		{"stats"},
		{"check"},
		{"compact"},
		{"query", corpus + "bees.txt"},
		{"pairs", "--threshold", "0.5"},
		{"export"},
		{"get", "testdata/corpus/bees.txt"},
	} {
		r := runFPDB(t, "", append([]string{"--db", dir}, args...)...)
		out := r.stdout + r.stderr
		if strings.Contains(out, "carrier") {
			t.Errorf("%v prints Pebble's carrier:\n%s", args, out)
		}
		if r.code == exitOK {
			continue
		}
		failed++
		if !strings.Contains(out, "checksum mismatch") || !strings.Contains(out, ".sst") {
			t.Errorf("%v: exit %d, the message does not say what is wrong:\n%s", args, r.code, out)
		}
	}
	if failed == 0 {
		t.Fatal("no command failed on a damaged store")
	}
}

// TestPluralsAndRawErrors: counts of one read "1 input", "1 pair", "1
// document"; Go's raw error texts (strconv's "invalid syntax", "unexpected
// EOF", "context canceled") do not reach the user.
func TestPluralsAndRawErrors(t *testing.T) {
	// Nothing readable: no database is made, and the summary is printed
	// as for every add (with --bulk --json, its object too).
	nothing := dbDir(t)
	r := runFPDB(t, "", "--db", nothing, "add", corpus+"nope.txt").mustCode(t, exitInput)
	if !strings.Contains(r.stderr, "fpdb: add: 1 of 1 input failed\n") || !strings.Contains(r.stderr, "add: 1 input: 0 stored (0 replaced), 0 unchanged, 0 rejected, 1 failed;") {
		t.Errorf("stderr %q", r.stderr)
	}
	r = runFPDB(t, "", "--db", nothing, "add", "--bulk", "--json", corpus+"nope.txt").mustCode(t, exitInput)
	if sum := jsonLines(t, r.stdout); len(sum) != 1 || sum[0]["skipped"] != 1.0 || !strings.Contains(r.stderr, "bulk: 0 stored (0 replaced), 0 unchanged, 1 skipped (1 not found)") {
		t.Errorf("add --bulk --json of no readable input: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	if _, err := os.Stat(nothing); !os.IsNotExist(err) {
		t.Errorf("a database was made though no input could be read: %v", err)
	}
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"volcano.txt", corpus+"volcano-copy.txt").mustCode(t, exitDuplicates)
	r = runFPDB(t, "", "--db", dir, "clusters", "--threshold", "0.9").mustCode(t, exitOK)
	if !strings.HasPrefix(r.stdout, "cluster 1: 2 documents, 1 pair, cohesion ") {
		t.Errorf("clusters stdout %q", r.stdout)
	}
	runFPDB(t, "", "--db", dir, "delete", corpus+"volcano-copy.txt").mustCode(t, exitOK)
	r = runFPDB(t, "", "--db", dir, "check").mustCode(t, exitOK)
	if !strings.HasPrefix(r.stdout, "ok: 1 document, ") {
		t.Errorf("check stdout %q", r.stdout)
	}
	exp := runFPDB(t, "", "--db", dir, "export").mustCode(t, exitOK).stdout
	r = runFPDB(t, exp, "--db", dbDir(t), "import", "-").mustCode(t, exitOK)
	if !strings.HasPrefix(r.stdout, "imported 1 document into ") {
		t.Errorf("import stdout %q", r.stdout)
	}

	for name, c := range map[string]struct {
		stdin string
		args  []string
	}{
		"truncated export line":   {exp[:len(exp)-40], []string{"--db", dbDir(t), "import", "-"}},
		"truncated export header": {exp[:40], []string{"--db", dbDir(t), "import", "-"}},
		"bad quoted id":           {`"abc` + "\n", []string{"--db", dir, "delete", "-"}},
	} {
		r := runFPDB(t, c.stdin, c.args...).mustCode(t, exitFailure)
		for _, raw := range []string{"EOF", "invalid syntax", "strconv"} {
			if strings.Contains(r.stderr, raw) {
				t.Errorf("%s: stderr has Go's %q: %q", name, raw, r.stderr)
			}
		}
	}
	err := fmt.Errorf("export: %w", context.Canceled)
	if got := errorText(err); got != "export: interrupted" {
		t.Errorf("errorText(%v) = %q", err, got)
	}
}

// TestLockedDatabase checks what a command says about a database another
// process (here another DB) holds: a notice while it waits, and a hint
// towards --server when it gives up.
func TestLockedDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	runFPDB(t, "one two three four five six", "--db", dir, "add", "--id", "a", "-").mustCode(t, 0)
	held, err := db.Open(dir, &db.Options{ErrorIfNotExist: true})
	if err != nil {
		t.Fatal(err)
	}
	notice := "fpdb: waiting up to 1.5s (--wait) for " + dir + ": another fpdb process holds it\n"
	r := runFPDB(t, "", "--db", dir, "--wait", "1500ms", "stats").mustCode(t, exitFailure)
	if !strings.HasPrefix(r.stderr, notice) || !strings.Contains(r.stderr, "is in use") || !strings.Contains(r.stderr, "--server URL") {
		t.Errorf("gave up waiting: %q", r.stderr)
	}
	r = runFPDB(t, "", "--db", dir, "--wait", "0", "stats").mustCode(t, exitFailure)
	if strings.Contains(r.stderr, "waiting") || !strings.Contains(r.stderr, "--server URL") {
		t.Errorf("--wait 0: %q", r.stderr)
	}
	// A command that cannot work through a server is not sent there.
	r = runFPDB(t, "", "--db", dir, "--wait", "0", "compact").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "is in use") || strings.Contains(r.stderr, "--server") {
		t.Errorf("compact: %q", r.stderr)
	}
	// Released while the command waits: it goes on.
	go func() {
		time.Sleep(1500 * time.Millisecond)
		if err := held.Close(); err != nil {
			t.Error(err)
		}
	}()
	r = runFPDB(t, "", "--db", dir, "--wait", "20s", "list").mustCode(t, 0)
	if !strings.HasPrefix(r.stderr, "fpdb: waiting up to 20s (--wait)") || !strings.HasPrefix(r.stdout, "a\t") {
		t.Errorf("released while waiting: stdout %q stderr %q", r.stdout, r.stderr)
	}
	// Not held: no notice.
	if r := runFPDB(t, "", "--db", dir, "list").mustCode(t, 0); r.stderr != "" {
		t.Errorf("not held: %q", r.stderr)
	}
}

// TestCreationFlagMessages: an operation a database cannot do for how it
// was created names the flag (--no-texts, --no-log), not the Go option.
func TestCreationFlagMessages(t *testing.T) {
	bees := corpusAbs(t) + "bees.txt"
	t.Chdir(t.TempDir())
	runFPDB(t, "", "--db", "d", "add", "--no-texts", "--no-log", bees).mustCode(t, exitOK)
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"template", "suggest"}, "--no-texts"},
		{[]string{"template", "add", bees}, "--no-texts"},
		{[]string{"log"}, "--no-log"},
	} {
		r := runFPDB(t, "", append([]string{"--db", "d"}, tc.args...)...)
		if r.code == exitOK || !strings.Contains(r.stderr, tc.flag) || strings.Contains(r.stderr, "Options.") {
			t.Errorf("%v: exit %d, stderr %q; want a failure naming %s", tc.args, r.code, r.stderr, tc.flag)
		}
	}
}
