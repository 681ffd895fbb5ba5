package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestAddBatchedSameAsOneByOne: add writes files and records in batches
// (db.AddEach, a server's checked batch); whatever the batch size, local or
// through a server, it must print, count and exit as an add of one
// document per write (--batch 1, locally) — every document checked against
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
	// Texts and names that are not UTF-8: a Latin-1 file and its UTF-8
	// twin, a UTF-16 file with a byte-order mark, two file names in
	// Latin-1 (not valid ids).
	latin1 := []byte("caf\xe9 cr\xe8me " + strings.Join(texts[0], " "))
	writeFile(t, files, "latin1.txt", latin1)
	writeFile(t, files, "utf8.txt", []byte("café crème "+strings.Join(texts[0], " ")))
	utf16 := []byte{0xff, 0xfe}
	for _, r := range "une page en UTF-16 " + strings.Join(texts[1][:50], " ") {
		utf16 = append(utf16, byte(r), byte(r>>8))
	}
	writeFile(t, files, "utf16.txt", utf16)
	writeFile(t, files, "caf\xe8.txt", []byte(strings.Join(texts[2], " ")))
	writeFile(t, files, "caf\xe9.txt", []byte(strings.Join(texts[3], " ")))
	jsonl := writeFile(t, t.TempDir(), "recs.jsonl", recs.Bytes())
	for _, args := range [][]string{
		{"add", jsonl},
		{"add", "--reject", "--json", "--threshold", "0.7", jsonl},
		{"add", "--dups-only", "--threshold", "0.9", files},
		{"add", "--reject", "--quiet", files},
	} {
		name := strings.Join(args, " ")
		// The oracle: one document per write, locally.
		want := runFPDB(t, "", append([]string{"--db", dbDir(t), "--batch", "1"}, args...)...)
		if want.code != exitDuplicates && want.code != exitInput {
			t.Fatalf("%s --batch 1: exit code %d\nstderr:\n%s", name, want.code, want.stderr)
		}
		if !strings.Contains(want.stdout+want.stderr, "near duplicate") || strings.Contains(name, "reject") && !strings.Contains(want.stdout+want.stderr, "rejected") {
			t.Errorf("%s: no near duplicate or no rejection:\n%s", name, want.stderr)
		}
		for _, how := range [][]string{
			{"--db", dbDir(t)},
			{"--db", dbDir(t), "--batch", "7"},
			{"--server", testServer(t, nil)},
			{"--server", testServer(t, nil), "--batch", "1"},
			{"--server", noCheckedBatches(t, http.StatusNotImplemented)}, // a cluster node
			{"--server", noCheckedBatches(t, http.StatusBadRequest)},     // a server before checked batches
		} {
			got := runFPDB(t, "", append(how, args...)...)
			label := fmt.Sprintf("%s %s", how[0], strings.Join(how[2:], " "))
			if got.code != want.code {
				t.Errorf("%s (%s): exit code %d, %d one by one\nstderr:\n%s", name, label, got.code, want.code, got.stderr)
			}
			if g, w := untimed(got.stdout), untimed(want.stdout); g != w {
				t.Errorf("%s (%s): standard output differs\n%s\none by one:\n%s", name, label, g, w)
			}
			if g, w := untimed(got.stderr), untimed(want.stderr); g != w {
				t.Errorf("%s (%s): standard error differs\n%s\none by one:\n%s", name, label, g, w)
			}
		}
		t.Logf("%s: %s", filepath.Base(name), strings.TrimSpace(want.stderr[strings.LastIndex(strings.TrimSpace(want.stderr), "\n")+1:]))
	}
}

// noCheckedBatches serves a new database, as testServer does, but answers
// a checked batch (POST /v1/batch?threshold=R) with status: 501 as a
// cluster node does, 400 as a server from before checked batches did.
func noCheckedBatches(t *testing.T, status int) string {
	return testServerWrapped(t, nil, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/batch" && r.URL.Query().Has("threshold") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				fmt.Fprintf(w, `{"error": {"code": "refused", "message": "no checked batch here (%d)"}}`+"\n", status)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
}

// TestByteBudget: take waits while the bytes held would pass the limit
// (one item alone may), give releases them, and the end of the context
// releases a waiting take with its error.
func TestByteBudget(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := newByteBudget(ctx, 100)
	if err := b.take(150); err != nil { // alone: over the limit, taken
		t.Fatal(err)
	}
	took := make(chan error, 1)
	go func() { took <- b.take(10) }()
	select {
	case err := <-took:
		t.Fatalf("take past the limit returned %v without waiting", err)
	case <-time.After(50 * time.Millisecond):
	}
	b.give(150)
	if err := <-took; err != nil {
		t.Fatal(err)
	}
	go func() { took <- b.take(95) }()
	select {
	case err := <-took:
		t.Fatalf("take past the limit returned %v without waiting", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-took; !errors.Is(err, context.Canceled) {
		t.Fatalf("take after the end of the context: %v", err)
	}
}

// TestAddServerFailures: add through a server that fails mid-run.
//   - A checked batch stored, its answer lost (a proxy's 502): the run
//     stops there; the documents are not sent again one by one (they
//     would read "unchanged").
//   - Batches refused (501), then a failure of the third single add: the
//     two added before it are reported, and the third is named, as an add
//     of one document per request (--batch 1) reports them.
func TestAddServerFailures(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 5 {
		paths = append(paths, writeFile(t, dir, fmt.Sprintf("f%d.txt", i), []byte(strings.Join(randomWords(rand.New(rand.NewPCG(uint64(i), 1)), 3000, 80), " "))))
	}
	lost := testServerWrapped(t, nil, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/batch" {
				h.ServeHTTP(w, r)
				return
			}
			h.ServeHTTP(httptest.NewRecorder(), r) // stored; the answer is lost
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintln(w, "<html>502 Bad Gateway</html>")
		})
	})
	r := runFPDB(t, "", append([]string{"--server", lost, "add"}, paths...)...)
	if r.code != exitFailure || strings.Contains(r.stdout, "unchanged") || !strings.Contains(r.stderr, "502") {
		t.Errorf("a lost answer: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	failing := func() string {
		var adds atomic.Int32
		return testServerWrapped(t, nil, func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/v1/batch":
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusNotImplemented)
					fmt.Fprintln(w, `{"error": {"code": "not_implemented", "message": "a checked batch is not served by a cluster node"}}`)
				case r.URL.Path == "/v1/documents" && r.Method == "POST" && adds.Add(1) > 2:
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusServiceUnavailable)
					fmt.Fprintln(w, `{"error": {"code": "unavailable", "message": "shutting down"}}`)
				default:
					h.ServeHTTP(w, r)
				}
			})
		})
	}
	want := runFPDB(t, "", append([]string{"--server", failing(), "add", "--batch", "1"}, paths...)...)
	got := runFPDB(t, "", append([]string{"--server", failing(), "add"}, paths...)...)
	if want.code != exitFailure || !strings.Contains(want.stdout, "f1.txt: stored") || !strings.Contains(want.stderr, "f2.txt") {
		t.Fatalf("one by one: exit %d\nstdout:\n%s\nstderr:\n%s", want.code, want.stdout, want.stderr)
	}
	if got.code != want.code || got.stdout != want.stdout || untimed(got.stderr) != untimed(want.stderr) {
		t.Errorf("batched: exit %d\nstdout:\n%s\nstderr:\n%s\none by one: exit %d\nstdout:\n%s\nstderr:\n%s",
			got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
	}
}
