package corpus

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadPairs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pairs.tsv")
	if err := os.WriteFile(path, []byte("id1\tid2\tjaccard\nb\ta\t0.75\nc\td\t0.5\nshort line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPairs(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[Pair{"a", "b"}] != 0.75 || got[Pair{"c", "d"}] != 0.5 {
		t.Fatalf("got %v", got)
	}
	if err := os.WriteFile(path, []byte("a\tb\tzero\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPairs(path); err == nil {
		t.Fatal("a malformed resemblance was accepted")
	}
	if _, err := ReadPairs(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing file was accepted")
	}
}
