package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fpdb/fpdb/db"
)

// complete runs "fpdb __complete ARGS..." (what the shell scripts of "fpdb
// completion" run on Tab) and returns the candidates, without their
// descriptions, and the directive.
func complete(t *testing.T, args ...string) ([]string, cobra.ShellCompDirective) {
	t.Helper()
	r := runFPDB(t, "", append([]string{"__complete"}, args...)...).mustCode(t, exitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, ":") {
		t.Fatalf("__complete %q: no directive line:\n%s", args, r.stdout)
	}
	dir, err := strconv.Atoi(last[1:])
	if err != nil {
		t.Fatal(err)
	}
	var cands []string
	for _, l := range lines[:len(lines)-1] {
		cands = append(cands, strings.SplitN(l, "\t", 2)[0])
	}
	return cands, cobra.ShellCompDirective(dir)
}

// TestCompletion: Tab completes the names of --plan and --keep, the stored
// ids for get, delete and --prefix (never files), and offers nothing, and
// no files, when the database is missing or held by another process.
func TestCompletion(t *testing.T) {
	// The completion scripts; a shell cobra does not know is a usage
	// error, not its help and exit status 0.
	if r := runFPDB(t, "", "completion", "bash").mustCode(t, exitOK); !strings.Contains(r.stdout, "bash completion") {
		t.Errorf("completion bash:\n%.200s", r.stdout)
	}
	if r := runFPDB(t, "", "completion", "tcsh").mustCode(t, exitFailure); !strings.Contains(r.stderr, `"tcsh"`) {
		t.Errorf("completion tcsh: %s", r.stderr)
	}
	runFPDB(t, "", "completion").mustCode(t, exitOK)
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", corpus+"bees.txt", corpus+"bread.txt", corpus+"coffee.txt").mustCode(t, exitOK)
	runFPDB(t, "x", "--db", dir, "add", "--id", "tab\tid", "-").mustCode(t, exitOK)
	all := []string{"testdata/corpus/bees.txt", "testdata/corpus/bread.txt", "testdata/corpus/coffee.txt"}
	noFiles := cobra.ShellCompDirectiveNoFileComp

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--db", dir, "get", ""}, all},
		{[]string{"--db", dir, "get", "testdata/corpus/b"}, all[:2]},
		{[]string{"--db", dir, "get", "testdata/corpus/bees.txt", ""}, nil},
		{[]string{"--db", dir, "delete", all[0], ""}, all[1:]},
		{[]string{"--db", dir, "delete", "--prefix", "testdata/corpus/c"}, all[2:]},
		{[]string{"--db", dir, "delete", "-", ""}, nil},
		{[]string{"--db", dir, "list", "--prefix", ""}, all},
		{[]string{"--db", dir, "query", "--plan", ""}, planNames},
		{[]string{"query", "--plan", "a"}, []string{"auto", "approx"}},
		{[]string{"clusters", "--keep", ""}, []string{"oldest", "newest", "first", "longest", "shortest"}},
		{[]string{"--db", dbDir(t), "get", ""}, nil}, // no database
	} {
		got, d := complete(t, c.args...)
		if !slices.Equal(got, c.want) || d != noFiles {
			t.Errorf("__complete %q: %q directive %d, want %q directive %d", c.args, got, d, c.want, noFiles)
		}
	}
	if _, err := os.Stat(filepath.Join(t.TempDir(), "db")); err == nil {
		t.Error("completion created a database")
	}
	if _, d := complete(t, "--db", ""); d != cobra.ShellCompDirectiveFilterDirs {
		t.Errorf("--db completes with directive %d, want directories", d)
	}

	// Another process holds the database: nothing, at once (--wait is
	// not waited).
	d, err := db.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, dir := complete(t, "--db", dir, "get", ""); got != nil || dir != noFiles {
		t.Errorf("completion of a held database: %q directive %d", got, dir)
	}
}
