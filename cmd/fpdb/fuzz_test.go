package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// fuzzing reports whether this test binary runs a fuzz target (as the
// coordinator or a worker), which needs no fpdb binary built.
func fuzzing() bool {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.fuzz=") || strings.HasPrefix(a, "-test.fuzzworker") {
			return true
		}
	}
	return false
}

// FuzzArgs runs fpdb with fuzzed command lines (arguments separated by
// newlines) in an empty working directory. fpdb must not panic, must exit
// with 0, 1 or 2, and must say why on standard error when it exits with 2.
// Arguments that could name a path outside the working directory (with a
// slash, a backslash, "..", "~") are skipped so that the fuzzer never reads
// or writes outside its sandbox.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{
		"add\n--threshold\n0.5\n--id\nx\n-",
		"add\n--reject\na.txt",
		"query\n--threshold\nNaN\nx",
		"query\n--threshold\n0.9\n--limit\n-3\n--json\n-",
		"check\n--repair",
		"check",
		"--db\n\x00\nstats",
		"delete\n--older-than\n-5d",
		"delete\n--prefix\n",
		"stats\n--json",
		"get\n",
		"--help",
		"version",
		"pairs\n--threshold\n2",
		"export",
		"bogus\n--flag",
	} {
		f.Add(s, "words of standard input for fpdb")
	}
	f.Fuzz(func(t *testing.T, line, stdin string) {
		args := strings.Split(line, "\n")
		for _, a := range args {
			if strings.ContainsAny(a, `/\~`) || strings.Contains(a, "..") {
				t.Skip("argument may leave the sandbox")
			}
		}
		t.Chdir(t.TempDir())
		t.Setenv(envDB, "")
		var out, errb bytes.Buffer
		code := run(args, strings.NewReader(stdin), &out, &errb)
		if code < 0 || code > 2 {
			t.Fatalf("fpdb %q: exit code %d", args, code)
		}
		if code == exitFailure && !strings.Contains(errb.String(), "fpdb: ") {
			t.Fatalf("fpdb %q: exit 2 without a message; stderr %q", args, errb.String())
		}
	})
}
