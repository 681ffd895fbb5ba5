package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// proseWords returns n words of pseudo-prose.
func proseWords(n int) []string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("word%d", (i*7919)%1009)
	}
	return w
}

// addJSON runs fpdb add --json --threshold 0.5 and returns its objects.
func addJSON(t *testing.T, dir string, args ...string) []map[string]any {
	t.Helper()
	r := runFPDB(t, "", append([]string{"--db", dir, "add", "--json", "--threshold", "0.5"}, args...)...)
	if r.code != exitOK && r.code != exitDuplicates {
		t.Fatalf("add %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
	}
	return jsonLines(t, r.stdout)
}

// TestAddPlainTextAndUnicode is defects 2 and 3 of the CLI review, through
// the command line: a text file with "i<n; … x>0" matches its spaced copy
// at 1.000 (version 1 cut the words between < and >), and the NFD,
// zero-width-space and ligature spellings of a text are exact duplicates.
func TestAddPlainTextAndUnicode(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, text string) string { return writeFile(t, tmp, name, []byte(text)) }
	w := proseWords(600)
	a, b := append([]string(nil), w...), append([]string(nil), w...)
	a[100], b[100] = "for (i=0; i<n; i++)", "for (i=0; i < n; i++)"
	a[400], b[400] = "while (x>0) x--;", "while (x > 0) x--;"
	dir := dbDir(t)
	addJSON(t, dir, write("code.txt", strings.Join(a, " ")))
	objs := addJSON(t, dir, write("code-spaced.txt", strings.Join(b, " ")))
	if len(objs) != 2 || objs[0]["id"] != filepath.Join(tmp, "code.txt") || objs[0]["similarity"] != 1.0 {
		t.Errorf("spaced copy: %v, want code.txt at similarity 1", objs)
	}

	french := strings.Repeat("Le château de la forêt était très général après l'été. ", 40)
	nfd := strings.NewReplacer("â", "a\u0302", "ê", "e\u0302", "é", "e\u0301", "è", "e\u0300").Replace(french)
	zwsp := strings.ReplaceAll(french, "a", "a\u200b")
	liga := strings.ReplaceAll(french+" final official", "fi", "ﬁ")
	addJSON(t, dir, write("fr.txt", french+" final official"))
	for _, name := range []string{"nfd", "zwsp"} {
		text := map[string]string{"nfd": nfd, "zwsp": zwsp}[name]
		objs := addJSON(t, dir, "--id", name, write(name+".txt", text+" final official"))
		if len(objs) < 2 || objs[0]["id"] != filepath.Join(tmp, "fr.txt") || objs[0]["exact"] != true {
			t.Errorf("%s: %v, want fr.txt as an exact duplicate", name, objs)
		}
	}
	objs = addJSON(t, dir, "--id", "liga", write("liga.txt", liga))
	if len(objs) < 2 || objs[0]["exact"] != true {
		t.Errorf("ligatures: %v, want an exact duplicate", objs)
	}
}

// TestAddFormat checks --format and the auto rules by extension.
func TestAddFormat(t *testing.T) {
	tmp := t.TempDir()
	frag := "Hello <b>big</b> world and more words here"
	for _, name := range []string{"a.txt", "a.html"} {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(frag), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := dbDir(t)
	words := func(args ...string) string {
		t.Helper()
		if r := runFPDB(t, "", append([]string{"--db", dir, "add"}, args...)...); r.code != exitOK && r.code != exitDuplicates {
			t.Fatalf("add %v: exit %d\n%s", args, r.code, r.stderr)
		}
		id := args[len(args)-1]
		if i := indexOf(args, "--id"); i >= 0 {
			id = args[i+1]
		}
		r := runFPDB(t, "", "--db", dir, "get", "--json", id).mustCode(t, exitOK)
		return fmt.Sprint(jsonLines(t, r.stdout)[0]["words"])
	}
	if got := words(filepath.Join(tmp, "a.txt")); got != "9" {
		t.Errorf("a.txt: %s words, want 9 (plain text keeps b)", got)
	}
	if got := words(filepath.Join(tmp, "a.html")); got != "7" {
		t.Errorf("a.html: %s words, want 7 (HTML by extension)", got)
	}
	if got := words("--format", "html", "--id", "forced", filepath.Join(tmp, "a.txt")); got != "7" {
		t.Errorf("--format html: %s words, want 7", got)
	}
	if got := words("--format", "text", "--id", "forced-text", filepath.Join(tmp, "a.html")); got != "9" {
		t.Errorf("--format text: %s words, want 9", got)
	}
	r := runFPDB(t, "", "--db", dir, "add", "--format", "pdf", filepath.Join(tmp, "a.txt")).mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "pdf") {
		t.Errorf("--format pdf: %s", r.stderr)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestAddEncoding: a Latin-1 file is read as the text it encodes without
// being told (an exact duplicate of its UTF-8 copy); --encoding names an
// encoding that cannot be detected (Shift_JIS); a bad --encoding is refused
// before anything is read, naming the label.
func TestAddEncoding(t *testing.T) {
	tmp := t.TempDir()
	write := func(name string, b []byte) string { return writeFile(t, tmp, name, b) }
	utf8 := strings.Repeat("Le château de la forêt était très général après l'été, à côté du café. ", 30)
	latin1 := make([]byte, 0, len(utf8))
	for _, r := range utf8 {
		latin1 = append(latin1, byte(r)) // every rune here is below U+0100
	}
	dir := dbDir(t)
	addJSON(t, dir, write("utf8.txt", []byte(utf8)))
	objs := addJSON(t, dir, write("latin1.txt", latin1))
	if len(objs) != 2 || objs[0]["id"] != filepath.Join(tmp, "utf8.txt") || objs[0]["exact"] != true {
		t.Errorf("Latin-1 copy: %v, want utf8.txt as an exact duplicate", objs)
	}
	r := runFPDB(t, "", "--db", dir, "add", "--encoding", "utf-8", "--id", "strict", filepath.Join(tmp, "latin1.txt")).mustCode(t, exitInput)
	if !strings.Contains(r.stderr, "latin1.txt") {
		t.Errorf("strict utf-8 on a Latin-1 file: %s, want the file named", r.stderr)
	}

	// "日本語の文書" in Shift_JIS, as words: 日本 語 の 文書.
	sjis := []byte("\x93\xfa\x96\x7b \x8c\xea \x82\xcc \x95\xb6\x8f\x91 ")
	addJSON(t, dir, "--id", "jp", write("jp.txt", []byte(strings.Repeat("日本 語 の 文書 ", 20))))
	objs = addJSON(t, dir, "--encoding", "shift_jis", "--id", "jp-sjis", write("jp-sjis.txt", bytes.Repeat(sjis, 20)))
	if len(objs) != 2 || objs[0]["id"] != "jp" || objs[0]["exact"] != true {
		t.Errorf("--encoding shift_jis: %v, want jp as an exact duplicate", objs)
	}
	r = runFPDB(t, "", "--db", dir, "add", "--encoding", "klingon-8", filepath.Join(tmp, "utf8.txt")).mustCode(t, exitFailure)
	if want := `fpdb: invalid value "klingon-8" for --encoding: "klingon-8" is not a character encoding fpdb reads`; !strings.HasPrefix(r.stderr, want) {
		t.Errorf("--encoding klingon-8: stderr %q, want it to start %q", r.stderr, want)
	}
	r = runFPDB(t, "", "--db", dir, "query", "--encoding", "latin1", filepath.Join(tmp, "latin1.txt")).mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "utf8.txt") {
		t.Errorf("query --encoding latin1: %s", r.stdout)
	}
}
