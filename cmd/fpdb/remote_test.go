package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/server"
)

// testServer serves a new database in a temporary directory, opened as
// "fpdb serve" opens it, on 127.0.0.1; tokens may be nil. It returns the
// server's URL.
func testServer(t *testing.T, tokens *server.Tokens) string {
	t.Helper()
	return testServerWrapped(t, tokens, nil)
}

// testServerWrapped is testServer with the handler wrap returns (nil: the
// server's own) in front of the server's.
func testServerWrapped(t *testing.T, tokens *server.Tokens, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	return serveDir(t, dbDir(t), tokens, wrap)
}

// serveDir is testServerWrapped serving the database in dir (made if
// there is none).
func serveDir(t *testing.T, dir string, tokens *server.Tokens, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	g := &globalOptions{dbDir: dir}
	d, err := g.openDBWith(openCreate, &creationFlags{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(d, &server.Options{Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h) // on 127.0.0.1
	t.Cleanup(func() {
		ts.Close()
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return ts.URL
}

// timings matches what differs between two runs of the same command: the
// durations of the summaries and of --explain, the posting lists read from
// storage (a server's cache is warm), and times of day (documents are
// added, and databases created, at other instants).
var timings = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(` in [0-9.]+(ns|µs|ms|s|m)\b`), " in T"},
	{regexp.MustCompile(`(?m)^(elapsed +)\S+$`), "${1}T"},
	{regexp.MustCompile(`"elapsed_ns":\d+`), `"elapsed_ns":T`},
	{regexp.MustCompile(`(?m)^(pebble reads +)\d+$`), "${1}N"},
	{regexp.MustCompile(`"reads":\d+`), `"reads":N`},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "TIME"},
}

// untimed returns s without what differs between runs (timings).
func untimed(s string) string {
	for _, r := range timings {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}

// sortedLines returns the lines of s sorted (pairs come in no order).
func sortedLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "")
}

// remoteStep is one command of a scenario: its arguments after the
// database (--db DIR or --server URL), its standard input, and its exit
// code (checked on both sides).
type remoteStep struct {
	args     []string
	stdin    string
	code     int
	unsorted bool // its lines come in no particular order
}

// TestRemoteSameAsLocal runs the same scenario of commands once on a local
// database and once through a server of another, and compares each
// command's standard output, standard error (without timings) and exit
// code.
func TestRemoteSameAsLocal(t *testing.T) {
	tides, err := os.ReadFile(corpus + "tides.txt")
	if err != nil {
		t.Fatal(err)
	}
	html := writeFile(t, t.TempDir(), "page.html", []byte("<html><body><p>"+string(tides)+"</p></body></html>"))
	tidesJSON, _ := json.Marshal(string(tides))
	recs := writeFile(t, t.TempDir(), "recs.jsonl", []byte(`{"id":"r1","text":`+string(tidesJSON)+"}\n"+`{"id":"r2","text":""}`+"\n"+`{"id":"r3","text":"words unlike any stored"}`+"\n"))
	steps := []remoteStep{
		// add: files, a near duplicate, JSON, a directory with bad inputs.
		{args: []string{"add", corpus + "bees.txt", corpus + "lighthouse.txt"}, code: exitOK},
		{args: []string{"add", corpus + "bees-edited.txt"}, code: exitDuplicates},
		{args: []string{"add", "--json", "--id", "bees-again", corpus + "bees.txt"}, code: exitDuplicates},
		{args: []string{"add", corpus + "coffee.txt", bad, corpus + "missing.txt", corpus + "tides.txt"}, code: exitInput},
		{args: []string{"add", corpus + "nope.txt"}, code: exitInput},
		{args: []string{"add", "--reject", "--threshold", "0.5", corpus + "bees-edited.txt", "--id", "rejected"}, code: exitDuplicates},
		{args: []string{"add", "--quiet", corpus + "bread.txt", corpus + "bread-edited.txt"}, code: exitDuplicates},
		{args: []string{"add", "--dups-only", corpus + "chess.txt", corpus + "chess-revised.txt", corpus + "railway.txt"}, code: exitDuplicates},
		{args: []string{"add", corpus + "railway.txt"}, code: exitOK}, // unchanged
		{args: []string{"add", "--replace", "--json", corpus + "railway.txt"}, code: exitOK},
		{args: []string{"add", "--id", "tides-stdin", "--source", "http://x/y", "-"}, stdin: string(tides), code: exitDuplicates},
		{args: []string{"add", "--format", "html", "--id", "page", html}, code: exitDuplicates},
		{args: []string{"add", "--id", "volcano", "--encoding", "latin1", corpus + "volcano.txt"}, code: exitOK},
		// query: one input, several, JSON, plans, explain, no match, bad inputs.
		{args: []string{"query", corpus + "bees.txt"}, code: exitOK},
		{args: []string{"query", "--json", "--limit", "1", "--explain", corpus + "bees-edited.txt"}, code: exitOK},
		{args: []string{"query", "--explain", "--plan", "scan", corpus + "bees.txt"}, code: exitOK},
		{args: []string{"query", "--explain", "--plan", "probe", corpus + "bees.txt"}, code: exitOK},
		{args: []string{"query", "--explain", "--tau", "2", corpus + "bees.txt"}, code: exitOK},
		{args: []string{"query", "--plan", "approx", "--recall", "0.99", corpus + "bees.txt"}, code: exitOK},
		{args: []string{"query", "--plan", "probe", "--tau", "0", corpus + "bees.txt"}, code: exitFailure},
		{args: []string{"query", "--containment", "0.5", corpus + "tides.txt"}, code: exitOK},
		{args: []string{"query", "--threshold", "0.9", corpus}, code: exitOK},
		{args: []string{"query", "--json", corpus + "bees.txt", corpus + "railway.txt", bad + "empty.txt"}, code: exitInput},
		{args: []string{"query", bad + "binary.bin"}, code: exitInput},
		{args: []string{"query", "-"}, stdin: string(tides), code: exitOK},
		{args: []string{"query", "--threshold", "1", corpus + "volcano-copy.txt"}, code: exitOK},
		{args: []string{"query", "--threshold", "1", corpus + "coffee.txt", "--limit", "1"}, code: exitOK},
		{args: []string{"query", "--threshold", "0.95", corpus + "lighthouse.txt", corpus + "chess.txt"}, code: exitOK},
		{args: []string{"query", "--threshold", "0.5", "--explain", recs}, code: exitInput},
		{args: []string{"query", "--json", "--id-field", "", recs}, code: exitInput},
		// compare: files, stored ids, standard input, another encoding,
		// JSON, HTML, passage options, an unknown id, a binary file.
		{args: []string{"compare", corpus + "bees.txt", corpus + "bees-edited.txt"}, code: exitOK},
		{args: []string{"compare", "--json", "--min-words", "0", "--passages", "2", corpus + "bread-edited.txt", "tides-stdin"}, code: exitOK},
		{args: []string{"compare", "-", "tides-stdin"}, stdin: string(tides), code: exitOK},
		{args: []string{"compare", "--html", "-", "page", "tides-stdin"}, code: exitOK},
		{args: []string{"compare", "--json", "--encoding", "latin1", corpus + "volcano.txt", "volcano"}, code: exitOK},
		{args: []string{"compare", "--gap", "3", html, "tides-stdin"}, code: exitOK},
		{args: []string{"compare", "nope", corpus + "bees.txt"}, code: exitInput},
		{args: []string{"compare", bad + "binary.bin", corpus + "bees.txt"}, code: exitInput},
		// get.
		{args: []string{"get", "testdata/corpus/bees.txt"}, code: exitOK},
		{args: []string{"get", "--json", "tides-stdin"}, code: exitOK},
		{args: []string{"get", "nope"}, code: exitFailure},
		// pairs and clusters.
		{args: []string{"pairs", "--threshold", "0.5"}, code: exitOK, unsorted: true},
		{args: []string{"pairs", "--threshold", "0.5", "--json"}, code: exitOK, unsorted: true},
		{args: []string{"clusters", "--threshold", "0.5"}, code: exitOK},
		{args: []string{"clusters", "--threshold", "0.5", "--keep", "oldest", "--json"}, code: exitOK},
		{args: []string{"clusters", "--threshold", "0.5", "--centers", "--keep", "longest", "--max-size", "2"}, code: exitOK},
		{args: []string{"clusters", "--threshold", "0.5", "--keep", "biggest"}, code: exitFailure},
		// delete: ids, standard input, dry runs, prefix, age.
		{args: []string{"delete", "nope", "bees-again"}, code: exitFailure},
		{args: []string{"delete", "--dry-run", "page", "nope"}, code: exitFailure},
		{args: []string{"delete", "-"}, stdin: "page\nnope\n\"tides-stdin\"\n", code: exitFailure},
		{args: []string{"delete", "--older-than", "30d"}, code: exitOK},
		{args: []string{"delete", "--prefix", "testdata/corpus/b"}, code: exitOK},
		{args: []string{"query", corpus + "bees.txt"}, code: exitNoMatch},
		{args: []string{"delete", "--prefix", ""}, code: exitFailure},
	}
	dir := dbDir(t)
	url := testServer(t, nil)
	for _, st := range steps {
		name := strings.Join(st.args, " ")
		local := runFPDB(t, st.stdin, append([]string{"--db", dir}, st.args...)...)
		remote := runFPDB(t, st.stdin, append([]string{"--server", url}, st.args...)...)
		if local.code != st.code {
			t.Errorf("%s: local exit code %d, want %d\nstderr:\n%s", name, local.code, st.code, local.stderr)
		}
		if remote.code != local.code {
			t.Errorf("%s: exit code %d through the server, %d locally\nstderr:\n%s", name, remote.code, local.code, remote.stderr)
		}
		lo, ro := untimed(local.stdout), untimed(remote.stdout)
		if st.unsorted {
			lo, ro = sortedLines(lo), sortedLines(ro)
		}
		if lo != ro {
			t.Errorf("%s: standard output differs\nlocal:\n%s\nthrough the server:\n%s", name, lo, ro)
		}
		if le, re := untimed(local.stderr), untimed(remote.stderr); le != re {
			t.Errorf("%s: standard error differs\nlocal:\n%s\nthrough the server:\n%s", name, le, re)
		}
	}
}

// TestRemoteStats: through a server, stats prints the lines of the
// database's parameters and size, as the local command prints them.
func TestRemoteStats(t *testing.T) {
	url := testServer(t, nil)
	runFPDB(t, "", "--server", url, "add", corpus+"bees.txt", corpus+"tides.txt").mustCode(t, exitOK)
	r := runFPDB(t, "", "--server", url, "stats").mustCode(t, exitOK)
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt", corpus+"tides.txt").mustCode(t, exitOK)
	local := runFPDB(t, "", "--db", dir, "stats").mustCode(t, exitOK)
	// Two databases: their creation times and file sizes differ, nothing
	// else.
	same := func(s string) string {
		var keep []string
		for _, line := range strings.Split(s, "\n") {
			f := strings.Fields(line)
			if len(f) > 0 && (f[0] == "created" || f[0] == "disk" || f[0] == "bytes" || f[0] == "audit" || f[0] == "compaction") {
				continue
			}
			keep = append(keep, line)
		}
		return strings.Join(keep, "\n")
	}
	if same(r.stdout) != same(local.stdout) || !strings.Contains(r.stdout, "posting lists") {
		t.Errorf("stats through the server:\n%s\nlocal:\n%s", r.stdout, local.stdout)
	}
	r = runFPDB(t, "", "--server", url, "stats", "--json").mustCode(t, exitOK)
	l := runFPDB(t, "", "--db", dir, "stats", "--json").mustCode(t, exitOK)
	m, lm := jsonLines(t, r.stdout), jsonLines(t, l.stdout)
	if len(m) != 1 || len(lm) != 1 || len(m[0]) != len(lm[0]) || m[0]["docs"] != 2.0 || m[0]["posting_keys"] != lm[0]["posting_keys"] {
		t.Errorf("stats --json through the server: %s\nlocal: %s", r.stdout, l.stdout)
	}
}

// TestRemoteErrors: a server that is not there, a read-only token, a
// command that works on a local database only.
func TestRemoteErrors(t *testing.T) {
	// Nothing listens on the port of a closed server.
	ts := httptest.NewServer(nil)
	gone := ts.URL
	ts.Close()
	for _, args := range [][]string{
		{"add", corpus + "bees.txt"},
		{"query", corpus + "bees.txt"},
		{"get", "x"},
		{"delete", "x"},
		{"stats"},
		{"pairs", "--threshold", "0.9"},
		{"clusters", "--threshold", "0.9"},
	} {
		r := runFPDB(t, "", append([]string{"--server", gone}, args...)...).mustCode(t, exitFailure)
		if want := "no fpdb server at " + gone + ": connection refused"; !strings.Contains(r.stderr, want) || !strings.HasPrefix(r.stderr, "fpdb: ") {
			t.Errorf("%v: stderr %q lacks %q", args, r.stderr, want)
		}
	}

	tokens, err := server.ParseTokens(strings.NewReader("ro read-only-token-0123\nrw read-write-token-0123\n"))
	if err != nil {
		t.Fatal(err)
	}
	url := testServer(t, tokens)
	tmp := t.TempDir()
	ro := writeFile(t, tmp, "ro", []byte("# the reader's token\nread-only-token-0123\n"))
	rw := writeFile(t, tmp, "rw", []byte("rw read-write-token-0123\n"))
	r := runFPDB(t, "", "--server", url, "--token-file", ro, "add", corpus+"bees.txt", corpus+"tides.txt").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "read-only") || strings.Count(r.stderr, "fpdb: ") != 1 || r.stdout != "" {
		t.Errorf("add with a read-only token: stdout %q stderr %q", r.stdout, r.stderr)
	}
	runFPDB(t, "", "--server", url, "--token-file", rw, "add", corpus+"bees.txt").mustCode(t, exitOK)
	// The server's own token file: its rw token, wherever it is.
	both := writeFile(t, tmp, "both", []byte("ro read-only-token-0123\n# writers\nrw read-write-token-0123\n"))
	runFPDB(t, "", "--server", url, "--token-file", both, "add", corpus+"tides.txt").mustCode(t, exitOK)
	onlyRO := writeFile(t, tmp, "only-ro", []byte("ro read-only-token-0123\n"))
	runFPDB(t, "", "--server", url, "--token-file", onlyRO, "stats").mustCode(t, exitOK)
	runFPDB(t, "", "--server", url, "--token-file", ro, "query", corpus+"bees.txt").mustCode(t, exitOK)
	t.Setenv(envToken, "read-only-token-0123")
	runFPDB(t, "", "--server", url, "get", "testdata/corpus/bees.txt").mustCode(t, exitOK)
	r = runFPDB(t, "", "--server", url, "delete", "testdata/corpus/bees.txt").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "read-only") {
		t.Errorf("delete with a read-only token: %q", r.stderr)
	}
	t.Setenv(envToken, "")
	r = runFPDB(t, "", "--server", url, "stats").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "--token-file") {
		t.Errorf("stats without a token: %q", r.stderr)
	}
	r = runFPDB(t, "", "--server", url, "--token-file", filepath.Join(tmp, "none"), "stats").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "--token-file") {
		t.Errorf("a missing token file: %q", r.stderr)
	}

	// Usage errors: a command that works on a local database only, --bulk,
	// creation parameters, --db with --server.
	for _, args := range [][]string{
		{"list"},
		{"compact"},
		{"template", "list"},
		{"log"},
		{"add", "--bulk", corpus + "bees.txt"},
		{"add", "--k", "256", corpus + "bees.txt"},
		{"--db", dbDir(t), "stats"},
	} {
		r := runFPDB(t, "", append([]string{"--server", url}, args...)...).mustCode(t, exitFailure)
		if !strings.HasPrefix(r.stderr, "fpdb: ") || !strings.Contains(r.stderr, "--help") {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
		if args[0] != "add" && args[0] != "--db" && !strings.Contains(r.stderr, "fpdb: "+strings.Join(args, " ")+": works on a local database only") {
			t.Errorf("%v: stderr %q does not name the command", args, r.stderr)
		}
	}
	local := dbDir(t) // for compare below
	runFPDB(t, "", "--db", local, "add", "--id", "stored-bees", corpus+"bees.txt").mustCode(t, exitOK)
	// $FPDB_SERVER is the default of --server; version and help ignore it.
	t.Setenv(envServer, gone)
	runFPDB(t, "", "stats").mustCode(t, exitFailure)
	runFPDB(t, "", "version").mustCode(t, exitOK)
	runFPDB(t, "", "--help").mustCode(t, exitOK)
	// compare follows $FPDB_SERVER as the other commands do, two files
	// too (the server's parameters and templates apply)...
	if r := runFPDB(t, "", "compare", corpus+"bees.txt", corpus+"bees-edited.txt").mustCode(t, exitFailure); !strings.Contains(r.stderr, "no fpdb server") {
		t.Errorf("compare of two files with $FPDB_SERVER set: %q", r.stderr)
	}
	// ... unless --db is given: a stored id is then looked up there.
	if r := runFPDB(t, "", "--db", local, "compare", corpus+"bees-edited.txt", "stored-bees").mustCode(t, exitOK); !strings.Contains(r.stdout, "stored stored-bees") {
		t.Errorf("compare with a stored id in --db, $FPDB_SERVER set: %q", r.stdout)
	}
	// --server sends compare to the server, two files too.
	if r := runFPDB(t, "", "--server", gone, "compare", corpus+"bees.txt", corpus+"bees-edited.txt").mustCode(t, exitFailure); !strings.Contains(r.stderr, "no fpdb server") {
		t.Errorf("compare of two files through a server that is gone: %q", r.stderr)
	}
	if r := runFPDB(t, "", "--server", gone, "compare", corpus+"bees.txt", "stored-id").mustCode(t, exitFailure); !strings.Contains(r.stderr, "no fpdb server") {
		t.Errorf("compare with a stored id through a server that is gone: %q", r.stderr)
	}
	r = runFPDB(t, "", "--server", "", "stats").mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "--server is empty") {
		t.Errorf("--server '': %q", r.stderr)
	}
}

// TestRemoteDeleteDifferences: a dry run by prefix lists the ids and
// --forget counts the log entries as the local delete does.
func TestRemoteDeleteDifferences(t *testing.T) {
	url := testServer(t, nil)
	local := dbDir(t)
	for _, target := range [][]string{{"--server", url}, {"--db", local}} {
		runFPDB(t, "", append(target, "add", corpus+"bees.txt", corpus+"tides.txt", corpus+"coffee.txt")...).mustCode(t, exitOK)
	}
	r := runFPDB(t, "", "--server", url, "delete", "--dry-run", "--prefix", "testdata/corpus/").mustCode(t, exitOK)
	l := runFPDB(t, "", "--db", local, "delete", "--dry-run", "--prefix", "testdata/corpus/").mustCode(t, exitOK)
	if r.stdout != l.stdout || r.stderr != l.stderr || strings.Count(r.stdout, "\n") != 3 {
		t.Errorf("dry run by prefix: stdout %q stderr %q, locally %q %q", r.stdout, r.stderr, l.stdout, l.stderr)
	}
	r = runFPDB(t, "", "--server", url, "delete", "--forget", "testdata/corpus/bees.txt", "nope").mustCode(t, exitFailure)
	if !strings.HasPrefix(r.stdout, "1 document deleted, 1 log entry erased") ||
		r.stderr != "fpdb: delete \"nope\": document not found (and not in the audit log)\n" {
		t.Errorf("forget: stdout %q stderr %q", r.stdout, r.stderr)
	}
	runFPDB(t, "", "--server", url, "get", "testdata/corpus/bees.txt").mustCode(t, exitFailure)
}

// TestRemoteExportImport exports a server's database with --server and
// imports it into another server's: the second holds the same documents.
// A failed export leaves the file of -o as it was.
func TestRemoteExportImport(t *testing.T) {
	from, to := testServer(t, nil), testServer(t, nil)
	runFPDB(t, "", "--server", from, "add", corpus+"bees.txt", corpus+"tides.txt", corpus+"chess.txt").mustCode(t, exitOK)
	file := filepath.Join(t.TempDir(), "export.jsonl")
	r := runFPDB(t, "", "--server", from, "export", "-o", file).mustCode(t, exitOK)
	// The database keeps an audit log: its entries follow the documents,
	// and are not counted as documents.
	if want := "exported 3 documents from " + from + " to " + file; !strings.Contains(r.stderr, want) {
		t.Fatalf("export: %q, want %q", r.stderr, want)
	}
	r = runFPDB(t, "", "--server", to, "import", file).mustCode(t, exitOK)
	if want := "imported 3 documents into " + to; !strings.Contains(r.stdout, want) {
		t.Fatalf("import: %q, want %q", r.stdout, want)
	}
	a := runFPDB(t, "", "--server", from, "get", "--json", "testdata/corpus/tides.txt").mustCode(t, exitOK)
	b := runFPDB(t, "", "--server", to, "get", "--json", "testdata/corpus/tides.txt").mustCode(t, exitOK)
	if a.stdout != b.stdout {
		t.Fatalf("the imported document:\n%s\nthe exported one:\n%s", b.stdout, a.stdout)
	}
	// Into a database that is not empty: refused, nothing changes.
	r = runFPDB(t, "", "--server", to, "import", file)
	if r.code == exitOK || !strings.Contains(r.stderr, "not empty") {
		t.Fatalf("import into a database that holds documents: exit %d, %q", r.code, r.stderr)
	}
	// An export that fails (nothing listens) leaves FILE as it was.
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r = runFPDB(t, "", "--server", "http://127.0.0.1:1", "export", "-o", file)
	after, _ := os.ReadFile(file)
	if r.code == exitOK || !bytes.Equal(before, after) {
		t.Fatalf("failed export: exit %d, %q; the file went from %d to %d bytes", r.code, r.stderr, len(before), len(after))
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".export.jsonl.*")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}

// TestRemoteCompareUsesServerDB: through a server, compare of two files
// uses the server database's parameters and templates, as compare with
// --db uses the local one's: a text both files share only through a
// template is not a shared passage, and the shingles are the database's
// width. The output is the same both ways.
func TestRemoteCompareUsesServerDB(t *testing.T) {
	dir := dbDir(t)
	files := t.TempDir()
	tmpl := "This call for proposals invites researchers to submit their best ideas about soil and water before the deadline in March."
	tf := writeFile(t, files, "tmpl.txt", []byte(tmpl))
	p1 := writeFile(t, files, "p1.txt", []byte(tmpl+"\nOur project studies soil microbes in alpine meadows and their response to drought.\n"))
	p2 := writeFile(t, files, "p2.txt", []byte(tmpl+"\nWe will build a flood forecasting model for coastal cities using radar data.\n"))
	runFPDB(t, "", "--db", dir, "add", "--shingle-width", "3", p1).mustCode(t, exitOK)
	runFPDB(t, "", "--db", dir, "template", "add", tf).mustCode(t, exitOK)
	forms := [][]string{{"compare", "--json", p1, p2}, {"compare", p1, p2}, {"compare", "--html", "-", p1, p2}}
	var local []string
	for _, args := range forms {
		local = append(local, runFPDB(t, "", append([]string{"--db", dir}, args...)...).mustCode(t, exitOK).stdout)
	}
	var c api.Comparison
	if err := json.Unmarshal([]byte(local[0]), &c); err != nil {
		t.Fatal(err)
	}
	if c.Jaccard != 0 || len(c.Passages) != 0 {
		t.Fatalf("local compare shares the template: Jaccard %v, %d passages", c.Jaccard, len(c.Passages))
	}
	url := serveDir(t, dir, nil, nil) // the local runs are done: the server holds dir now
	for i, args := range forms {
		r := runFPDB(t, "", append([]string{"--server", url}, args...)...).mustCode(t, exitOK)
		if untimed(r.stdout) != untimed(local[i]) {
			t.Errorf("%v through the server:\n%s\nlocally:\n%s", args, r.stdout, local[i])
		}
	}
	// $FPDB_SERVER alone sends compare there too, in the directory whose
	// ./fpdb-data the server could hold: no wait for a local lock.
	t.Setenv(envServer, url)
	t.Setenv(envDB, dir)
	r := runFPDB(t, "", forms[0]...).mustCode(t, exitOK)
	if untimed(r.stdout) != untimed(local[0]) || strings.Contains(r.stderr, "waiting") {
		t.Errorf("compare with $FPDB_SERVER set:\n%s%s\nlocally:\n%s", r.stdout, r.stderr, local[0])
	}
}

// TestReadToken: a token alone, or the server's form (its first rw token,
// else its first ro one), comments, blank lines, CRLF and a byte-order
// mark; a file mixing the forms or with another line is refused whatever
// the order of its lines.
func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct{ text, want string }{
		{"tok-a\n", "tok-a"},
		{"# c\n\n  tok-a  \r\ntok-b\n", "tok-a"},
		{"\ufeffro r1\nrw w1\nrw w2\n", "w1"},
		{"ro r1\r\nro r2\r\n", "r1"},
		{"ro r1\nbare\n", ""},
		{"bare\nrw w1\n", ""},
		{"rw w1\nbad line here\n", ""},
		{"rw\n", ""},
		{"# only a comment\n", ""},
	} {
		got, err := readToken(writeFile(t, dir, "t"+strconv.Itoa(i), []byte(c.text)))
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%q: %q, %v; want %q", c.text, got, err, c.want)
		}
	}
}

// TestRemoteEnvServerGivesWayToDB: with $FPDB_SERVER set, an explicit --db
// makes every command work on that database, here (as compare did), the
// server unasked; --db with an explicit --server stays a usage error.
func TestRemoteEnvServerGivesWayToDB(t *testing.T) {
	var requests atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "not this one", http.StatusTeapot)
	}))
	defer ts.Close()
	local := dbDir(t)
	runFPDB(t, "", "--db", local, "add", "--id", "stored-bees", corpus+"bees.txt").mustCode(t, exitOK)
	t.Setenv(envServer, ts.URL)
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"query", corpus + "bees.txt"}, exitOK, "stored-bees"},
		{[]string{"get", "stored-bees"}, exitOK, "stored-bees"},
		{[]string{"stats"}, exitOK, "docs"},
		{[]string{"compare", corpus + "bees-edited.txt", "stored-bees"}, exitOK, "stored stored-bees"},
		{[]string{"check"}, exitOK, "ok"},
		{[]string{"list"}, exitOK, "stored-bees"},
		{[]string{"template", "list"}, exitOK, ""},
		{[]string{"add", "--id", "tides", corpus + "tides.txt"}, exitOK, "tides"},
		{[]string{"delete", "tides"}, exitOK, "deleted"},
	} {
		r := runFPDB(t, "", append([]string{"--db", local}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stdout, c.out) {
			t.Errorf("--db with $FPDB_SERVER set, %v: exit %d, stdout %q, stderr %q", c.args, r.code, r.stdout, r.stderr)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests to $FPDB_SERVER, though --db was given", n)
	}
	// --token-file goes with the server, which --db put aside.
	if r := runFPDB(t, "", "--db", local, "--token-file", "nope", "stats").mustCode(t, exitFailure); !strings.Contains(r.stderr, "--token-file goes with --server") {
		t.Errorf("--db --token-file with $FPDB_SERVER set: %q", r.stderr)
	}
	// An explicit --server with --db is still refused.
	for _, args := range [][]string{{"query", corpus + "bees.txt"}, {"stats"}} {
		r := runFPDB(t, "", append([]string{"--db", local, "--server", ts.URL}, args...)...).mustCode(t, exitFailure)
		if !strings.Contains(r.stderr, "give --db or --server, not both") {
			t.Errorf("--db --server %v: %q", args, r.stderr)
		}
	}
}
