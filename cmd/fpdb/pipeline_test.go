package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// buildFPDB builds the fpdb binary into a temporary directory and returns
// that directory, for tests that run shell pipelines.
func buildFPDB(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "fpdb"), ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// shellPipelines returns every example line of every command's help that
// pipes into "fpdb delete -": the pipelines the help recommends.
func shellPipelines() []string {
	var lines []string
	for _, c := range NewRootCommand().Commands() {
		for _, l := range strings.Split(c.Example, "\n") {
			if l = strings.TrimSpace(l); strings.Contains(l, "|") && strings.HasSuffix(l, "| fpdb delete -") {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// TestHelpPipelines runs, exactly as printed, every pipeline of the help
// texts that ends in "fpdb delete -" (clusters … --json | jq … | fpdb
// delete -, pairs | awk … | fpdb delete -) on a database of the test
// corpus, with the fpdb binary on PATH: both ends use the database, so the
// reader must release it and the writer must wait for it. Each must exit 0,
// delete at least one document, and leave a database that passes check.
// jq comes from the system (make test installs it when it is missing).
func TestHelpPipelines(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("jq is not installed: the help's pipelines use it (make test installs it: apt-get install jq)")
	}
	pipes := shellPipelines()
	if len(pipes) < 2 {
		t.Fatalf("only %d pipelines found in the help texts: %q", len(pipes), pipes)
	}
	bin := buildFPDB(t)
	deleted := regexp.MustCompile(`^(\d+) documents? deleted\n$`)
	for _, line := range pipes {
		t.Run(line, func(t *testing.T) {
			dir := dbDir(t)
			runFPDB(t, "", "--db", dir, "add", corpus).mustCode(t, exitDuplicates)
			before := docCount(t, dir)
			cmd := exec.Command("bash", "-o", "pipefail", "-c", line) // every command of a pipeline must succeed
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), envDB+"="+dir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", line, err, stdout.String(), stderr.String())
			}
			m := deleted.FindStringSubmatch(stdout.String())
			if m == nil {
				t.Fatalf("%s: stdout %q, stderr %q", line, stdout.String(), stderr.String())
			}
			n, _ := strconv.Atoi(m[1])
			if n == 0 || docCount(t, dir) != before-n {
				t.Fatalf("%s: %d deleted, %d documents before, %d after", line, n, before, docCount(t, dir))
			}
			runFPDB(t, "", "--db", dir, "check").mustCode(t, exitOK)
		})
	}
}

// docCount returns the number of documents fpdb stats reports.
func docCount(t *testing.T, dir string) int {
	t.Helper()
	r := runFPDB(t, "", "--db", dir, "stats", "--json").mustCode(t, exitOK)
	js := jsonLines(t, r.stdout)
	n, ok := js[0]["docs"].(float64)
	if !ok {
		t.Fatalf("stats --json: %s", r.stdout)
	}
	return int(n)
}
