package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTemplateCorpus writes a call for proposals and n proposals that
// quote it, each with text of its own; proposals 0 and 1 also share a
// paragraph. It returns the call's path and the proposals' directory.
func writeTemplateCorpus(t *testing.T, n int) (call, dir string) {
	t.Helper()
	root := t.TempDir()
	words := func(seed, n int) string {
		rng := rand.New(rand.NewPCG(uint64(seed), 5))
		ws := make([]string, n)
		for i := range ws {
			ws[i] = fmt.Sprintf("w%d", rng.IntN(5000))
		}
		return strings.Join(ws, " ")
	}
	callText := "Call for proposals. " + words(1, 400)
	call = filepath.Join(root, "call.txt")
	if err := os.WriteFile(call, []byte(callText), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(root, "proposals")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		body := words(100+i, 120) + "\n\n" + callText + "\n\n" + words(200+i, 40)
		if i < 2 {
			body += "\n\n" + words(999, 300)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%02d.txt", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return call, dir
}

func TestTemplateCommand(t *testing.T) {
	call, proposals := writeTemplateCorpus(t, 12)
	dir := dbDir(t)
	runFPDB(t, "", "--db", dir, "add", proposals).mustCode(t, exitDuplicates)
	pairs := func() int {
		out := runFPDB(t, "", "--db", dir, "pairs", "--threshold", "0.3").mustCode(t, exitOK).stdout
		return strings.Count(out, "\n")
	}
	if n := pairs(); n != 12*11/2 {
		t.Fatalf("%d pairs before the template, want all 66", n)
	}

	// suggest finds the call, cut from the first proposal.
	r := runFPDB(t, "", "--db", dir, "template", "suggest", "--json").mustCode(t, exitOK)
	var sug jsonBoilerplate
	if err := json.Unmarshal([]byte(r.stdout), &sug); err != nil {
		t.Fatal(err)
	}
	callText, _ := os.ReadFile(call)
	if sug.Text != string(callText) || len(sug.Passages) != 1 || !strings.HasSuffix(sug.Passages[0].ID, "p00.txt") || sug.Documents != 12 {
		t.Fatalf("suggestion %+v", sug)
	}
	r = runFPDB(t, "", "--db", dir, "template", "suggest").mustCode(t, exitOK)
	if r.stdout != string(callText)+"\n" || !strings.Contains(r.stderr, "1 passage") {
		t.Fatalf("suggest: stdout %q, stderr %q", r.stdout[:min(80, len(r.stdout))], r.stderr)
	}

	r = runFPDB(t, "", "--db", dir, "template", "add", call).mustCode(t, exitOK)
	if !strings.Contains(r.stdout, `template "call.txt" added: 400 shingles`) || !strings.Contains(r.stdout, "12 documents fingerprinted again, 12 changed") {
		t.Fatalf("template add: %q", r.stdout)
	}
	if n := pairs(); n != 1 {
		t.Fatalf("%d pairs with the template, want only the planted one", n)
	}
	r = runFPDB(t, "", "--db", dir, "template", "list").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "call.txt") || !strings.Contains(r.stdout, "400") {
		t.Fatalf("template list: %q", r.stdout)
	}
	// The call alone matches no proposal.
	runFPDB(t, "", "--db", dir, "query", "--threshold", "0.2", call).mustCode(t, exitNoMatch)

	// Errors: a missing file is an input error; a name is needed for stdin;
	// an unknown template.
	runFPDB(t, "", "--db", dir, "template", "add", filepath.Join(proposals, "missing.txt")).mustCode(t, exitInput)
	runFPDB(t, "x y z w", "--db", dir, "template", "add", "-").mustCode(t, exitFailure)
	runFPDB(t, "", "--db", dir, "template", "remove", "nope").mustCode(t, exitFailure)

	r = runFPDB(t, "", "--db", dir, "template", "remove", "call.txt").mustCode(t, exitOK)
	if !strings.Contains(r.stdout, "12 changed") {
		t.Fatalf("template remove: %q", r.stdout)
	}
	if n := pairs(); n != 66 {
		t.Fatalf("%d pairs after removing the template, want 66", n)
	}

	// A database without texts refuses a template once it has documents.
	nt := dbDir(t)
	runFPDB(t, "", "--db", nt, "add", "--no-texts", proposals).mustCode(t, exitDuplicates)
	r = runFPDB(t, "", "--db", nt, "template", "add", call).mustCode(t, exitFailure)
	if !strings.Contains(r.stderr, "needs the text of every stored document") {
		t.Fatalf("no texts: %q", r.stderr)
	}
}
