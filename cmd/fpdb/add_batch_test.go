package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestAddBatchedSameAsOneByOne: a local add writes files and records in
// batches (db.AddEach), an add through a server one document at a time;
// both must print, count and exit alike — every document checked against
// the ones before it, near copies, exact copies and repeated ids inside a
// batch included.
func TestAddBatchedSameAsOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var texts [][]string
	var recs bytes.Buffer
	files := t.TempDir()
	for i := range 700 {
		id := fmt.Sprintf("r%03d", i)
		if i > 0 && rng.IntN(10) == 0 {
			id = fmt.Sprintf("r%03d", rng.IntN(i)) // replaces an earlier record
		}
		var w []string
		switch k := rng.IntN(20); {
		case k < 2:
			fmt.Fprintf(&recs, `{"id":%q}`+"\n", id) // no text field
			continue
		case k < 3:
			fmt.Fprintf(&recs, `{"id":%q,"text":" ;; "}`+"\n", id) // no words
			continue
		case k < 11 || len(texts) == 0:
			w = randomWords(rng, 3000, 120+rng.IntN(100))
		case k < 17: // a near copy of an earlier text
			w = append([]string(nil), texts[rng.IntN(len(texts))]...)
			for j := range w {
				if rng.IntN(40) == 0 {
					w[j] = "x" + w[j]
				}
			}
		default: // an exact copy
			w = texts[rng.IntN(len(texts))]
		}
		texts = append(texts, w)
		fmt.Fprintf(&recs, `{"id":%q,"text":%q}`+"\n", id, strings.Join(w, " "))
		if i < 400 {
			writeFile(t, files, fmt.Sprintf("f%03d.txt", i), []byte(strings.Join(w, " ")))
		}
	}
	jsonl := writeFile(t, t.TempDir(), "recs.jsonl", recs.Bytes())
	for _, args := range [][]string{
		{"add", jsonl},
		{"add", "--reject", "--json", "--threshold", "0.7", jsonl},
		{"add", "--dups-only", "--threshold", "0.9", files},
		{"add", "--reject", "--quiet", files},
	} {
		name := strings.Join(args, " ")
		local := runFPDB(t, "", append([]string{"--db", dbDir(t)}, args...)...)
		remote := runFPDB(t, "", append([]string{"--server", testServer(t, nil)}, args...)...)
		if local.code != remote.code || (local.code != exitDuplicates && local.code != exitInput) {
			t.Errorf("%s: exit code %d locally, %d through the server\nstderr:\n%s", name, local.code, remote.code, local.stderr)
		}
		if lo, ro := untimed(local.stdout), untimed(remote.stdout); lo != ro {
			t.Errorf("%s: standard output differs\nlocal:\n%s\nthrough the server:\n%s", name, lo, ro)
		}
		if le, re := untimed(local.stderr), untimed(remote.stderr); le != re {
			t.Errorf("%s: standard error differs\nlocal:\n%s\nthrough the server:\n%s", name, le, re)
		}
		if !strings.Contains(local.stdout+local.stderr, "near duplicate") || strings.Contains(name, "reject") && !strings.Contains(local.stdout+local.stderr, "rejected") {
			t.Errorf("%s: no near duplicate or no rejection:\n%s", name, local.stderr)
		}
		t.Logf("%s: %s", filepath.Base(name), strings.TrimSpace(local.stderr[strings.LastIndex(strings.TrimSpace(local.stderr), "\n")+1:]))
	}
}
