package main

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

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
