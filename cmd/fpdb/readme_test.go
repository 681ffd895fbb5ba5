package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// readmeSection returns the lines of README.md's section whose heading is
// title, up to the next "## " heading.
func readmeSection(t *testing.T, title string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			in = line == "## "+title
			continue
		}
		if in {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		t.Fatalf("README.md has no section %q", title)
	}
	return out
}

// codeSpan matches a Markdown code span.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// readmeCommands returns the commands of the table under "## The command
// line": the first word of each code span in the first column.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	var cmds []string
	for _, line := range readmeSection(t, "The command line") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		// The first column ends at the first "|" that is not escaped.
		col := line[1:]
		for i := 0; i < len(col); i++ {
			if col[i] == '\\' {
				i++
				continue
			}
			if col[i] == '|' {
				col = col[:i]
				break
			}
		}
		for _, m := range codeSpan.FindAllStringSubmatch(col, -1) {
			if f := strings.Fields(m[1]); len(f) > 0 && !slices.Contains(cmds, f[0]) {
				cmds = append(cmds, f[0])
			}
		}
	}
	slices.Sort(cmds)
	return cmds
}

// helpCommands returns the commands "fpdb help" lists (help itself left
// out), checked against the commands of NewRootCommand.
func helpCommands(t *testing.T) []string {
	t.Helper()
	r := runFPDB(t, "", "help").mustCode(t, exitOK)
	_, list, ok := strings.Cut(r.stdout, "Available Commands:\n")
	if !ok {
		t.Fatalf("fpdb help lists no commands:\n%s", r.stdout)
	}
	var cmds []string
	for line := range strings.Lines(list) {
		if !strings.HasPrefix(line, "  ") {
			break
		}
		if f := strings.Fields(line); len(f) > 0 && f[0] != "help" {
			cmds = append(cmds, f[0])
		}
	}
	slices.Sort(cmds)
	// The same set from the command tree (cobra adds completion and help
	// when it executes).
	root := NewRootCommand()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var tree []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() && c.Name() != "help" {
			tree = append(tree, c.Name())
		}
	}
	slices.Sort(tree)
	if !slices.Equal(cmds, tree) {
		t.Fatalf("fpdb help lists %v, the command tree has %v", cmds, tree)
	}
	return cmds
}

// TestReadmeCommandTable: README's command table lists exactly the
// commands "fpdb help" lists — a command added to the CLI without a row
// fails it, and so does a row for a command that does not exist.
func TestReadmeCommandTable(t *testing.T) {
	readme, cli := readmeCommands(t), helpCommands(t)
	for _, c := range cli {
		if !slices.Contains(readme, c) {
			t.Errorf("fpdb %s has no row in README.md's table under \"## The command line\"", c)
		}
	}
	for _, c := range readme {
		if !slices.Contains(cli, c) {
			t.Errorf("README.md's command table lists %q, which fpdb help does not", c)
		}
	}
	if len(cli) < 10 {
		t.Fatalf("parsed only %v from fpdb help", cli)
	}
}

// TestReadmePairsFormat: the pairs line format README gives is the one
// fpdb pairs prints.
func TestReadmePairsFormat(t *testing.T) {
	const format = "A<TAB>B<TAB>0.914<TAB>22[<TAB>exact]"
	if !slices.ContainsFunc(readmeSection(t, "Discovery and lifecycle"), func(l string) bool { return strings.Contains(l, format) }) {
		t.Errorf("README.md does not give the pairs format %s", format)
	}
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus).mustCode(t, exitDuplicates)
	r := runFPDB(t, "", "--db", dir, "pairs", "--threshold", "0.85").mustCode(t, exitOK)
	line := regexp.MustCompile(`^[^\t]+\t[^\t]+\t[01]\.\d{3}\t\d+(\texact)?$`)
	exact := 0
	for l := range strings.Lines(strings.TrimSuffix(r.stdout, "\n")) {
		l = strings.TrimSuffix(l, "\n")
		if !line.MatchString(l) {
			t.Errorf("pairs line %q is not %s", l, format)
		}
		if strings.HasSuffix(l, "\texact") {
			exact++
		}
	}
	if exact != 1 {
		t.Errorf("want one exact pair (volcano):\n%s", r.stdout)
	}
}

// TestDeferredWrittenByWritableOpen checks README's claim: postings a bulk
// load left deferred are written by the next writable open (here
// compact's), and read-only commands leave them deferred.
func TestDeferredWrittenByWritableOpen(t *testing.T) {
	dir := dbDir(t)
	d, err := db.Open(dir, &db.Options{BulkLoad: true})
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(corpus + "bees.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.AddBatch(context.Background(), []db.Input{{ID: "bees", Text: text}}); err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	_ = d.CloseContext(done) // cut short: the postings stay deferred
	deferred := func() string {
		r := runFPDB(t, "", "--db", dir, "stats", "--json").mustCode(t, exitOK)
		_, after, _ := strings.Cut(r.stdout, `"deferred_postings_docs":`)
		n, _, _ := strings.Cut(after, ",")
		return n
	}
	if n := deferred(); n != "1" {
		t.Skipf("CloseContext with a done context wrote the postings (deferred %s)", n)
	}
	for _, args := range [][]string{{"query", corpus + "bees.txt"}, {"get", "bees"}, {"pairs", "--threshold", "0.9"}, {"export"}, {"check"}} {
		runFPDB(t, "", append([]string{"--db", dir}, args...)...).mustCode(t, exitOK)
		if n := deferred(); n != "1" {
			t.Errorf("after read-only %v: %s documents deferred, want 1", args, n)
		}
	}
	runFPDB(t, "", "--db", dir, "compact").mustCode(t, exitOK)
	if n := deferred(); n != "0" {
		t.Errorf("after a writable open (compact): %s documents deferred, want 0", n)
	}
}

// readmeExamples returns the command lines of the sh blocks of README's
// section title, without their comments.
func readmeExamples(t *testing.T, title string) []string {
	t.Helper()
	var lines []string
	in := false
	for _, l := range readmeSection(t, title) {
		switch {
		case l == "```sh":
			in = true
		case l == "```":
			in = false
		case in:
			if i := strings.Index(l, "  #"); i >= 0 {
				l = l[:i]
			}
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// TestReadmeExamples runs the examples of README's "The command line" and
// "Discovery and lifecycle" top to bottom, exactly as printed, in a
// directory holding the files they name (the demo corpus under the names
// README uses): every line must succeed, every command of a pipeline too
// (exit 0, or 1 where add found near duplicates or query no match), and
// the database must pass check at the end.
func TestReadmeExamples(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("jq is not installed: README's pipelines use it (make test installs it: apt-get install jq)")
	}
	bin := buildFPDB(t)
	work := filepath.Join(t.TempDir(), "work")
	src, err := filepath.Glob("../../examples/corpus/*")
	if err != nil || len(src) < 10 {
		t.Fatalf("examples/corpus: %v (%d files)", err, len(src))
	}
	text := func(i int) []byte {
		b, err := os.ReadFile(src[i%len(src)])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	files := map[string][]byte{
		"proposals/2024-017.txt": text(0), "new.txt": text(1), "page.html": text(13), "paper.txt": text(10),
		"submissions/a.txt": text(2), "submissions/draft-b.txt": text(3), "submissions/c.md": text(4),
		"inbox/x.txt": text(5), "incoming/y.txt": text(11), "incoming/z.txt": text(6),
		"crawl/p1.txt": text(7), "crawl/p2.txt": text(12), "crawl/p3.txt": text(8),
		// Every corpus text is also under proposals/, so the clusters line
		// drops the crawl's copies: the stale id is a text of its own.
		"crawl/p4.txt":  []byte("A page of the crawl that no other document resembles: opening hours of the harbour museum, its winter exhibitions and the ferry timetable.\n"),
		"stale-ids.txt": []byte("crawl/p4.txt\n"),
		"call-2026.txt": []byte("Call for proposals 2026. Applicants describe the aims, the methods, the budget and the expected impact of the project in at most ten pages.\n"),
	}
	for i, s := range src {
		files["proposals/"+filepath.Base(s)] = text(i)
	}
	for name, b := range files {
		writeFile(t, work, name, b)
	}
	// last-run is older than inbox/x.txt.
	old := time.Now().Add(-time.Hour)
	if err := os.WriteFile(filepath.Join(work, "last-run"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(work, "last-run"), old, old); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, title := range []string{"The command line", "Discovery and lifecycle"} {
		lines = append(lines, readmeExamples(t, title)...)
	}
	if len(lines) < 25 {
		t.Fatalf("only %d example lines in README: %q", len(lines), lines)
	}
	env := append(withoutEnvDB(os.Environ()), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, line := range lines {
		if line == "make build" {
			continue
		}
		// pipefail: a failing command inside a pipeline fails the line too.
		cmd := exec.Command("bash", "-o", "pipefail", "-c", line)
		cmd.Dir, cmd.Env = work, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		// Exit 1 is success for add (near duplicates) and query (no match)
		// when fpdb is the last command of the line.
		segs := strings.Split(line, "|")
		last := strings.TrimSpace(segs[len(segs)-1])
		one := strings.HasPrefix(last, "fpdb add") || strings.HasPrefix(last, "fpdb query")
		var ee *exec.ExitError
		if err != nil && !(one && errors.As(err, &ee) && ee.ExitCode() == 1) {
			t.Errorf("%s: %v\nstdout: %s\nstderr: %s", line, err, stdout.String(), stderr.String())
		}
	}
	cmd := exec.Command(filepath.Join(bin, "fpdb"), "check")
	cmd.Dir, cmd.Env = work, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("fpdb check after README's examples: %v\n%s", err, out)
	}
	// The restored copy and the backup open as databases.
	for _, d := range []string{filepath.Join(work, "restored"), filepath.Join(work, "..", "fpdb-backup-2026-11-22")} {
		cmd := exec.Command(filepath.Join(bin, "fpdb"), "--db", d, "check")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("fpdb --db %s check: %v\n%s", d, err, out)
		}
	}
}
