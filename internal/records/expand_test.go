package records

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{
		"d/b.jsonl", "d/a.csv.gz", "d/sub/c.parquet", "d/sub/notes.txt", "d/.hidden.jsonl",
		"d/.git/x.jsonl", "d/z.tsv", "g/one.jsonl", "g/two.jsonl", "g/three.csv", "odd.txt",
	} {
		writeFile(t, dir, name, []byte("x"))
	}
	j := func(p string) string { return filepath.Join(dir, p) }

	got, err := Expand([]string{j("d")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{j("d/a.csv.gz"), j("d/b.jsonl"), j("d/sub/c.parquet"), j("d/z.tsv")}; !equalStrings(got, want) {
		t.Errorf("directory: %q\nwant %q", got, want)
	}

	got, err = Expand([]string{j("g/t*.jsonl"), j("g/*.csv")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{j("g/two.jsonl"), j("g/three.csv")}; !equalStrings(got, want) {
		t.Errorf("globs: %q, want %q", got, want)
	}

	// A file is kept whatever its extension; "-" stays; duplicates go.
	got, err = Expand([]string{j("odd.txt"), "-", j("g/one.jsonl"), j("g/../g/one.jsonl"), j("g/*.jsonl"), "-", j("g")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{j("odd.txt"), "-", j("g/one.jsonl"), j("g/two.jsonl"), j("g/three.csv")}; !equalStrings(got, want) {
		t.Errorf("mixed: %q\nwant %q", got, want)
	}

	// "**" matches any number of directories, none included; hidden
	// files and directories are left out, as in a directory's walk.
	if err := os.Symlink(j("d"), j("link")); err != nil {
		t.Fatal(err)
	}
	for pattern, want := range map[string][]string{
		"d/**/*.jsonl":    {j("d/b.jsonl")},
		"d/**/*.parquet":  {j("d/sub/c.parquet")},
		"d/**":            {j("d/a.csv.gz"), j("d/b.jsonl"), j("d/sub/c.parquet"), j("d/z.tsv")},
		"*/**/*.jsonl":    {j("d/b.jsonl"), j("g/one.jsonl"), j("g/two.jsonl"), j("link/b.jsonl")},
		"d/**/sub/*":      {j("d/sub/c.parquet"), j("d/sub/notes.txt")}, // as d/sub/* does: any extension
		"d/**/*.txt":      {j("d/sub/notes.txt")},
		"d/**/c.parquet":  {j("d/sub/c.parquet")},
		"d/**/sub":        {j("d/sub/c.parquet")}, // a directory matched: read as a directory argument
		"d/**/sub/":       {j("d/sub/c.parquet")},
		"link/**/*.jsonl": {j("link/b.jsonl")}, // under a symbolic link to a directory
		"link":            {j("link/a.csv.gz"), j("link/b.jsonl"), j("link/sub/c.parquet"), j("link/z.tsv")},
	} {
		got, err := Expand([]string{j(pattern)})
		if err != nil || !equalStrings(got, want) {
			t.Errorf("%s: %q, %v\nwant %q", pattern, got, err, want)
		}
	}
	// A symbolic link to a directory below the base is neither entered
	// nor matched (a loop, or files outside); "*" after "**" matches
	// files only, whatever their extension, at every depth alike.
	writeFile(t, dir, "s/a.jsonl", []byte("x"))
	writeFile(t, dir, "s/sub/notes.txt", []byte("x"))
	writeFile(t, dir, "outside/o.jsonl", []byte("x"))
	for name, target := range map[string]string{"s/self": j("s"), "s/sub/ext": j("outside")} {
		if err := os.Symlink(target, j(name)); err != nil {
			t.Fatal(err)
		}
	}
	for pattern, want := range map[string][]string{
		"s/**/*":   {j("s/a.jsonl"), j("s/sub/notes.txt")},
		"s/**/ext": nil,
		"s/**/s*":  nil, // not s/self (a link), nor s/sub (a directory, for a pattern)
	} {
		got, err := Expand([]string{j(pattern)})
		if want == nil {
			if err == nil || !strings.Contains(err.Error(), "no file matches") {
				t.Errorf("%s: %q, %v; want no match", pattern, got, err)
			}
			continue
		}
		if err != nil || !equalStrings(got, want) {
			t.Errorf("%s: %q, %v\nwant %q", pattern, got, err, want)
		}
	}
	for _, bad := range []string{"d/**/x/**/*.jsonl", "d/a**b/*.jsonl", "d/**/[.jsonl"} {
		if _, err := Expand([]string{j(bad)}); err == nil || !strings.Contains(err.Error(), "bad pattern") {
			t.Errorf("%s: %v, want a bad pattern", bad, err)
		}
	}
	if _, err := Expand([]string{j("d/**/*.csv")}); err == nil || !strings.Contains(err.Error(), "no file matches") {
		t.Errorf("a ** pattern matching nothing: %v", err)
	}

	if _, err := Expand([]string{j("g/*.parquet")}); err == nil || !strings.Contains(err.Error(), "g/*.parquet") {
		t.Errorf("no match: %v", err)
	}
	if _, err := Expand([]string{j("missing.jsonl")}); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Expand([]string{j("g/[.jsonl")}); err == nil {
		t.Error("bad pattern accepted")
	}
	got, err = Expand(nil)
	if err != nil || len(got) != 0 {
		t.Errorf("Expand(nil) = %q, %v", got, err)
	}
}

// TestExpandKeepMissing: a file that does not exist stays among the files,
// once, with its error; a pattern that matches nothing is still an error.
func TestExpandKeepMissing(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "g/one.jsonl", []byte("x"))
	j := func(p string) string { return filepath.Join(dir, p) }
	got, missing, err := ExpandKeepMissing([]string{j("no.jsonl"), j("g"), "-", j("./no.jsonl"), j("no2.csv")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{j("no.jsonl"), j("g/one.jsonl"), "-", j("no2.csv")}; !equalStrings(got, want) {
		t.Errorf("files %q\nwant %q", got, want)
	}
	if len(missing) != 2 || !errors.Is(missing[0], fs.ErrNotExist) || !strings.Contains(missing[0].Error(), "no.jsonl") ||
		!strings.Contains(missing[1].Error(), "no2.csv") {
		t.Errorf("missing %v", missing)
	}
	if _, _, err := ExpandKeepMissing([]string{j("g/*.parquet")}); err == nil {
		t.Error("a pattern matching nothing accepted")
	}
}
