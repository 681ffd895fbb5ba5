package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// corpusDups are the corpus documents that have a near duplicate stored
// before them when the corpus directory is added in sorted order.
var corpusDups = []string{
	"testdata/corpus/bees.txt", // bees-edited.txt sorts first
	"testdata/corpus/bread.txt",
	"testdata/corpus/chess.txt",
	"testdata/corpus/volcano.txt",
}

// TestAddSummary: every add, a single file included, ends with one
// summary line on standard error; standard output keeps its lines.
func TestAddSummary(t *testing.T) {
	dir := dbDir(t)
	r := runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt").mustCode(t, exitOK)
	if r.stdout != "testdata/corpus/bees.txt: stored\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "add: 1 input: 1 stored (0 replaced), 0 unchanged, 0 rejected, 0 failed; 0 with near duplicates in ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q, want the summary line", r.stderr)
	}
	r = runFPDB(t, "", "--db", dir, "add", "--reject", corpus+"bees.txt", corpus+"bees-edited.txt", bad+"empty.txt", corpus+"coffee.txt").mustCode(t, exitInput)
	if !strings.Contains(r.stderr, "add: 4 inputs: 1 stored (0 replaced), 1 unchanged, 1 rejected, 1 failed; 1 with near duplicates in ") {
		t.Errorf("stderr lacks the summary:\n%s", r.stderr)
	}
	// The --json output is unchanged: the summary is not on stdout.
	r = runFPDB(t, "", "--db", dir, "add", "--json", corpus+"tides.txt").mustCode(t, exitOK)
	if objs := jsonLines(t, r.stdout); len(objs) != 1 || !strings.HasPrefix(r.stderr, "add: 1 input: 1 stored") {
		t.Errorf("--json: stdout %q stderr %q", r.stdout, r.stderr)
	}
}

// TestAddQuiet: --quiet prints no line per document, only errors and the
// summary; the exit status still reports near duplicates.
func TestAddQuiet(t *testing.T) {
	dir := dbDir(t)
	r := runFPDB(t, "", "--db", dir, "add", "--quiet", corpus).mustCode(t, exitDuplicates)
	if r.stdout != "" {
		t.Errorf("--quiet printed:\n%s", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "add: 12 inputs: 12 stored") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q, want the summary alone", r.stderr)
	}
	r = runFPDB(t, "", "--db", dir, "add", "-q", "--json", bad+"empty.txt", corpus+"railway.txt").mustCode(t, exitInput)
	if r.stdout != "" || !strings.Contains(r.stderr, "fpdb: add "+bad+"empty.txt: ") || !strings.Contains(r.stderr, "add: 2 inputs: 0 stored (0 replaced), 1 unchanged, 0 rejected, 1 failed") {
		t.Errorf("-q --json with a bad input:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// TestAddDupsOnly: --dups-only prints the documents that have near
// duplicates (their matches and status), nothing for the others.
func TestAddDupsOnly(t *testing.T) {
	r := runFPDB(t, "", "--db", dbDir(t), "add", "--dups-only", corpus).mustCode(t, exitDuplicates)
	var ids []string
	for line := range strings.Lines(r.stdout) {
		if id, ok := strings.CutSuffix(line, ": stored\n"); ok {
			ids = append(ids, id)
		}
	}
	if !slices.Equal(ids, corpusDups) {
		t.Errorf("--dups-only printed %v, want %v:\n%s", ids, corpusDups, r.stdout)
	}
	if strings.Contains(r.stdout, "railway") || !strings.Contains(r.stdout, "testdata/corpus/bees.txt: 1 near duplicate\n") {
		t.Errorf("--dups-only output:\n%s", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "add: 12 inputs: 12 stored") {
		t.Errorf("stderr %q", r.stderr)
	}
	r = runFPDB(t, "", "--db", dbDir(t), "add", "--dups-only", "--json", corpus).mustCode(t, exitDuplicates)
	var queries []string
	for _, o := range jsonLines(t, r.stdout) {
		if _, ok := o["stored"]; ok {
			queries = append(queries, o["query"].(string))
			if o["matches"].(float64) == 0 {
				t.Errorf("summary of a document without near duplicates: %v", o)
			}
		}
	}
	if !slices.Equal(queries, corpusDups) {
		t.Errorf("--dups-only --json printed %v, want %v", queries, corpusDups)
	}
	for _, args := range [][]string{{"--quiet", "--dups-only"}, {"--bulk", "--dups-only"}} {
		r := runFPDB(t, "", append([]string{"--db", dbDir(t), "add"}, append(args, corpus)...)...).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, "--dups-only") {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
	}
}

// TestAddProgressFlag: --progress shows progress on a standard error that
// is not a terminal, one line at a time, with the total, a percentage and
// an estimate of the time left; without it, none is shown.
func TestAddProgressFlag(t *testing.T) {
	now := time.Unix(1000, 0)
	progressNow = func() time.Time { now = now.Add(3 * time.Second); return now }
	defer func() { progressNow = time.Now }()
	r := runFPDB(t, "", "--db", dbDir(t), "add", "--progress", "--quiet", corpus).mustCode(t, exitDuplicates)
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) != 13 || strings.Contains(r.stderr, "\r") {
		t.Fatalf("want 12 progress lines and the summary:\n%q", r.stderr)
	}
	// Each update is 3 s after the last on this clock: n docs in 3n s.
	for i, want := range map[int]string{0: "1/12 docs (8%), 0 docs/s, ETA 33s", 5: "6/12 docs (50%), 0 docs/s, ETA 18s", 11: "12/12 docs (100%), 0 docs/s, ETA 0s"} {
		if lines[i] != want {
			t.Errorf("progress line %d = %q, want %q", i, lines[i], want)
		}
	}
	if !strings.HasPrefix(lines[12], "add: 12 inputs") {
		t.Errorf("last line %q, want the summary", lines[12])
	}
	r = runFPDB(t, "", "--db", dbDir(t), "add", corpus).mustCode(t, exitDuplicates)
	if strings.Contains(r.stderr, "docs (") {
		t.Errorf("progress without --progress on a buffer:\n%s", r.stderr)
	}
}

// TestProgressTotal draws the terminal line with a known total.
func TestProgressTotal(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	p := newProgress(&buf, func() time.Time { return now }).withTotal(40)
	now = now.Add(2 * time.Second)
	p.update(10)
	if got, want := buf.String(), "\r10/40 docs (25%), 5 docs/s, ETA 6s"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}

// TestCreationFlags: add --k, --group-bits, --shingle-width and --seed set
// the creation parameters of a new database; on an existing one a
// different value is an error naming both and changes nothing, an equal
// one is accepted.
func TestCreationFlags(t *testing.T) {
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", "--k", "256", "--group-bits", "12", "--shingle-width", "3", "--seed", "0x4d", "--normalize-version", "1", corpus+"bees.txt").mustCode(t, exitOK)
	stats := func() jsonStats {
		r := runFPDB(t, "", "--db", dir, "stats", "--json").mustCode(t, exitOK)
		var st jsonStats
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := stats()
	if st.K != 256 || !slices.Equal(st.GroupWidths, db.EqualWidths(256, 12)) || st.ShingleWidth != 3 || st.Seed != 0x4d || st.NormalizeVersion != 1 {
		t.Fatalf("creation parameters not applied: %+v", st)
	}
	for _, c := range []struct {
		flag, value, stored string
	}{
		{"--k", "512", "--k 256"},
		{"--group-bits", "16", "--group-bits 12 (22 groups)"},
		{"--shingle-width", "4", "--shingle-width 3"},
		{"--seed", "5", "--seed 0x4d"},
		{"--normalize-version", "2", "--normalize-version 1"},
	} {
		r := runFPDB(t, "", "--db", dir, "add", c.flag, c.value, corpus+"bread.txt").mustCode(t, exitFailure)
		given := c.flag + " " + c.value
		if c.flag == "--seed" {
			given = "--seed 0x5"
		}
		want := fmt.Sprintf("fpdb: the database was created with %s, but %s was given", c.stored, given)
		if !strings.HasPrefix(r.stderr, want) {
			t.Errorf("%s %s: stderr %q, want %q", c.flag, c.value, r.stderr, want)
		}
	}
	if st := stats(); st.Docs != 1 {
		t.Errorf("a refused add changed the database: %d documents", st.Docs)
	}
	// Equal values, all or some, decimal or hex.
	runFPDB(t, "", "--db", dir, "add", "--k", "256", "--group-bits", "12", "--shingle-width", "3", "--seed", "77", corpus+"bread.txt").mustCode(t, exitOK)
	runFPDB(t, "", "--db", dir, "add", "--group-bits", "12", corpus+"chess.txt").mustCode(t, exitOK)
	runFPDB(t, "", "--db", dir, "add", "--bulk", "--seed", "0x4d", corpus+"tides.txt").mustCode(t, exitOK)
	if st := stats(); st.Docs != 4 || st.K != 256 {
		t.Errorf("after adds with equal parameters: %+v", st)
	}
	// --group-bits alone on a new database splits the default K.
	dir2 := dbDir(t)
	runFPDB(t, "", "--db", dir2, "add", "--group-bits", "20", corpus+"bees.txt").mustCode(t, exitOK)
	r := runFPDB(t, "", "--db", dir2, "stats", "--json").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, `"k":512,`) || !strings.Contains(r.stdout, fmt.Sprintf(`"group_widths":%s`, strings.ReplaceAll(fmt.Sprint(db.EqualWidths(512, 20)), " ", ","))) {
		t.Errorf("--group-bits 20: %s", r.stdout)
	}
	// Bad values are refused before anything is created.
	for _, args := range [][]string{{"--k", "100"}, {"--k", "0"}, {"--group-bits", "0"}, {"--shingle-width", "0"}, {"--shingle-width", "65"}, {"--seed", "0"}} {
		d := dbDir(t)
		r := runFPDB(t, "", append(append([]string{"--db", d, "add"}, args...), corpus+"bees.txt")...).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, `invalid value "`+args[1]+`" for `+args[0]+": must") {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%v created the database", args)
		}
	}
}

// TestIDWithFilesFromAndDeleteTwice: --id with --files-from is a usage
// error (every listed file would get that one id, all but one dropped),
// and delete of an id given twice deletes it once and succeeds.
func TestIDWithFilesFromAndDeleteTwice(t *testing.T) {
	dir := t.TempDir()
	list := writeFile(t, dir, "list.txt", []byte(corpus+"bees.txt\n"+corpus+"tides.txt\n"))
	db := filepath.Join(dir, "db")
	r := runFPDB(t, "", "--db", db, "add", "--id", "X", corpus+"coffee.txt", "--files-from", list).mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "--files-from") {
		t.Errorf("--id with --files-from: %q", r.stderr)
	}
	runFPDB(t, "", "--db", db, "add", corpus+"coffee.txt").mustCode(t, exitOK)
	r = runFPDB(t, "", "--db", db, "delete", corpus+"coffee.txt", corpus+"coffee.txt").mustCode(t, exitOK)
	if strings.Count(r.stdout, "deleted") != 1 || r.stderr != "" {
		t.Errorf("delete of an id given twice: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

// TestFilesFromLiteralPaths: --files-from takes each line as a path as it
// is (only the line ending is removed): a path starting with a double
// quote is not unquoted as delete's id list is.
func TestFilesFromLiteralPaths(t *testing.T) {
	text, err := os.ReadFile(corpus + "bees.txt")
	if err != nil {
		t.Fatal(err)
	}
	text2, err := os.ReadFile(corpus + "tides.txt")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	names := []string{`"a\tb"`, `"quoted".txt`} // sorted
	writeFile(t, ".", names[0], text)
	writeFile(t, ".", names[1], text2)
	list := writeFile(t, ".", "list.txt", []byte(names[0]+"\r\n\n"+names[1]+"\n"))
	runFPDB(t, "", "--db", "db", "add", "--files-from", list).mustCode(t, exitOK)
	var got []string
	for _, doc := range jsonLines(t, runFPDB(t, "", "--db", "db", "list", "--json").mustCode(t, exitOK).stdout) {
		got = append(got, fmt.Sprint(doc["id"]))
	}
	slices.Sort(got)
	if !slices.Equal(got, names) {
		t.Errorf("--files-from stored %q, want %q", got, names)
	}
}

// TestInvalidIDFlag: an --id the database would refuse (empty, too long,
// not UTF-8, with a NUL) is a usage error, exit 2 as for get and delete,
// said before the database is created; an empty one says so plainly.
func TestInvalidIDFlag(t *testing.T) {
	for name, c := range map[string]struct{ id, want string }{
		"empty":    {"", "--id: empty id"},
		"too long": {strings.Repeat("x", db.MaxIDLen+1), "at most"},
		"not UTF8": {"a\xffb", "not valid UTF-8"},
		"NUL":      {"a\x00b", "NUL"},
	} {
		for _, path := range []string{corpus + "bees.txt", "-"} {
			t.Run(name+"/"+path, func(t *testing.T) {
				dir := dbDir(t)
				r := runFPDB(t, "bees and honey", "--db", dir, "add", "--id", c.id, path).mustCode(t, exitFailure)
				if !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "--id") {
					t.Errorf("stderr does not say %q about --id:\n%s", c.want, r.stderr)
				}
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a bad --id created the database directory (stat: %v)", err)
				}
			})
		}
	}
}
