package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// manPages reads the man pages in dir, without their .TH header line (it
// holds the date).
func manPages(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(l, ".TH ") {
				keep = append(keep, l)
			}
		}
		pages[e.Name()] = strings.Join(keep, "\n")
	}
	return pages
}

// TestManPagesCurrent: the man pages committed in docs/man are those "fpdb
// man" writes for today's commands (run "make man" after changing a
// command, its flags or its help), one per command.
func TestManPagesCurrent(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "man")
	runFPDB(t, "", "man", tmp).mustCode(t, exitOK)
	got := manPages(t, tmp)
	for _, c := range NewRootCommand().Commands() {
		if name := "fpdb-" + c.Name() + ".1"; got[name] == "" {
			t.Errorf("fpdb man wrote no %s", name)
		}
	}
	if !strings.Contains(got["fpdb-pairs.1"], "A<TAB>B<TAB>") || !strings.Contains(got["fpdb-list.1"], "\n.SH EXAMPLE") {
		t.Errorf("fpdb-pairs.1 lost the format line or fpdb-list.1 its examples:\n%s", got["fpdb-pairs.1"])
	}
	committed := manPages(t, filepath.Join("..", "..", manDir))
	names := func(m map[string]string) []string {
		var ns []string
		for n := range m {
			ns = append(ns, n)
		}
		slices.Sort(ns)
		return ns
	}
	if g, c := names(got), names(committed); !slices.Equal(g, c) {
		t.Fatalf("%s holds %q, fpdb man writes %q: run make man", manDir, c, g)
	}
	for name, page := range got {
		if committed[name] != page {
			t.Errorf("%s/%s is out of date: run make man", manDir, name)
		}
	}
}
