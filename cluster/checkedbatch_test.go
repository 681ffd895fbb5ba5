package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/client"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server"
)

// reverseWords returns text's words in reverse order: the same words, and
// no shingle in common.
func reverseWords(text string) string {
	w := strings.Fields(text)
	slices.Reverse(w)
	return strings.Join(w, " ")
}

// singleServer returns a new database and a client of a single-node
// server of it on 127.0.0.1: what a cluster's answers are compared with.
func singleServer(t *testing.T) (*db.DB, *client.Client) {
	t.Helper()
	one, err := db.Open(t.TempDir(), &db.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { one.Close() })
	srv, err := server.New(one, nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	single, err := client.New(hs.URL, &client.Options{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return one, single
}

// TestCheckedBatch sends the same checked batches (POST
// /v1/batch?threshold=R) to a 3-node cluster, through different nodes,
// and to a single-node server holding the same documents: every answer
// (each line's outcome and matches, the counts, the skipped lines) is the
// same, and so is what each then holds. The batches exercise a near
// duplicate of a stored document, of an earlier line, an unchanged
// document, a line without words, an id given twice (its second line
// replaces the first), reject and limit.
func TestCheckedBatch(t *testing.T) {
	tc := startCluster(t, 3, 4, 2, nil)
	nodes := httpNodes(t, tc, nil, "")
	one, single := singleServer(t)
	ctx := context.Background()
	riverNear := nearDup(t, riverText, "two hundred", "three hundred", "iron scale", "brass scale")
	shipNear := nearDup(t, shipText, "long summer", "hot summer", "bright cloth", "fine cloth")
	birdNear := nearDup(t, birdText, "lightweight", "small", "continents", "oceans")
	notesNear := nearDup(t, notesText, "version four", "version five")

	for _, c := range []*client.Client{single, nodes[0]} {
		if _, err := c.Batch(ctx, []api.AddRequest{{ID: "river-1", Text: riverText, Source: "mill"}, {ID: "notes-1", Text: notesText}}); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name  string
		node  int
		check api.BatchCheck
		lines []api.AddRequest
		want  func(api.BatchResult) bool // what the single node's answer must be
	}{
		{"reject", 1, api.BatchCheck{Threshold: 0.7, Reject: true}, []api.AddRequest{
			{ID: "river-2", Text: riverNear},           // near river-1: rejected
			{ID: "ship-1", Text: shipText},             // stored
			{ID: "ship-2", Text: shipNear},             // near line 2: rejected
			{ID: "notes-1", Text: notesText},           // unchanged
			{ID: "empty-1", Text: "   "},               // skipped: no words
			{ID: "bird-1", Text: birdText},             // stored
			{ID: "bird-1", Text: birdNear},             // next chunk: replaces line 6 (its own version is no match)
			{ID: "notes-2", Text: notesNear},           // near notes-1: rejected
			{ID: "river-3", Text: riverText + " Fin."}, // near river-1: rejected
		}, func(br api.BatchResult) bool {
			return br.Stored == 3 && br.Replaced == 1 && br.Unchanged == 1 && br.Rejected == 4 && len(br.Skipped) == 1 && len(br.Results) == 8
		}},
		{"keep, limit 1", 2, api.BatchCheck{Threshold: 0.7, Limit: 1}, []api.AddRequest{
			{ID: "river-2", Text: riverNear},       // stored, one match (river-1)
			{ID: "river-3", Text: riverText + "."}, // stored, near river-1 and line 1: one match
			{ID: "ship-2", Text: shipNear},         // stored, near ship-1
			{ID: "bird-2", Text: birdText},         // stored, near bird-1's new version
		}, func(br api.BatchResult) bool {
			if br.Stored != 4 || br.Rejected != 0 || len(br.Results) != 4 {
				return false
			}
			for _, r := range br.Results {
				if len(r.Matches) != 1 {
					return false
				}
			}
			return true
		}},
		// A later line is checked against the version an earlier line of
		// its chunk stores, not the one it replaces.
		{"replaced in the batch", 0, api.BatchCheck{Threshold: 0.7, Reject: true}, []api.AddRequest{
			{ID: "notes-1", Text: reverseWords(notesText)}, // stored anew, near nothing
			{ID: "notes-3", Text: notesNear},               // near notes-1's old version only: stored
		}, func(br api.BatchResult) bool {
			return br.Stored == 2 && br.Replaced == 1 && br.Rejected == 0 && len(br.Results[1].Matches) == 0
		}},
		{"unchecked after", 0, api.BatchCheck{}, []api.AddRequest{{ID: "bird-3", Text: birdNear}}, func(br api.BatchResult) bool {
			return br.Stored == 1
		}},
	}
	for _, s := range steps {
		var got [2]api.BatchResult
		for i, c := range []*client.Client{single, nodes[s.node]} {
			var br *api.BatchResult
			var err error
			if s.check.Threshold > 0 {
				br, err = c.BatchChecked(ctx, s.lines, s.check)
			} else {
				br, err = c.Batch(ctx, s.lines)
			}
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			got[i] = *br
		}
		a, _ := json.Marshal(got[0])
		b, _ := json.Marshal(got[1])
		if string(a) != string(b) {
			t.Fatalf("%s: the cluster answered\n%s\none database\n%s", s.name, b, a)
		}
		if !s.want(got[0]) {
			t.Fatalf("%s: unexpected answer %s", s.name, a)
		}
		t.Logf("%s: %s", s.name, a)
	}
	// Both hold the same documents now, each with the same fingerprint.
	var ids []string
	if err := one.Docs(ctx, func(d db.Doc) error { ids = append(ids, d.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 10 {
		t.Fatalf("one database holds %d documents: %v", len(ids), ids)
	}
	// Read through node 1, whose last write is the last: a node reads its
	// own writes.
	st, err := nodes[0].Stats(ctx)
	if err != nil || st.Docs != len(ids) {
		t.Fatalf("cluster stats: %+v, %v (want %d documents)", st, err, len(ids))
	}
	for _, id := range ids {
		want, err := single.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := nodes[0].Get(ctx, id)
		if err != nil {
			t.Fatalf("cluster get %q: %v", id, err)
		}
		if got.Fingerprint != want.Fingerprint || got.ContentHash != want.ContentHash {
			t.Fatalf("%q differs: cluster %+v, one database %+v", id, got, want)
		}
	}
	// A checked batch whose line cannot be stored in a cluster: 501 for
	// replace, nothing stored.
	_, err = nodes[0].BatchChecked(ctx, []api.AddRequest{{ID: "x-1", Text: birdText}, {ID: "bird-1", Text: birdText, Replace: true}}, api.BatchCheck{Threshold: 0.8})
	wantStatus(t, "replace in a checked batch", err, http.StatusNotImplemented, codeNotImplemented)
	if _, err := nodes[1].Get(ctx, "x-1"); err == nil {
		t.Fatal("x-1 stored by a refused batch")
	}
}

// TestCommitKeepsRequestsWhole: the batcher gathers queued adds into one
// log message only as far as they fit in it together, so that an add of
// many documents that fits in one message is one transaction whatever it
// is gathered with; an add too large for one message is appended on its
// own, in parts.
func TestCommitKeepsRequestsWhole(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 1, 2, 1, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(7, 7))
	docs := func(prefix string, n int) []db.Input {
		var out []db.Input
		for i := range n {
			out = append(out, db.Input{ID: fmt.Sprintf("%s-%d", prefix, i), Fingerprint: randomFP(rng, 512)})
		}
		return out
	}
	r.maxMessage = 5 * entrySize(&db.Doc{ID: "aa-0", Fingerprint: randomFP(rng, 512)})
	release := holdBatcher(t, r, rng)
	queued := [][]db.Input{docs("aa", 2), docs("bb", 3), docs("cc", 4)}
	results := make([]chan []AddResult, len(queued))
	for i, in := range queued {
		results[i] = make(chan []AddResult, 1)
		go func() {
			res, err := r.Add(ctx, in, AddOptions{Threshold: 0.9})
			if err != nil {
				t.Error(err)
			}
			results[i] <- res
		}()
		waitQueued(t, r, i+1, nil)
	}
	release()
	large, err := r.Add(ctx, docs("ll", 7), AddOptions{Threshold: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	seqs := func(res []AddResult) []uint64 {
		var out []uint64
		for _, o := range res {
			if !o.Stored {
				t.Fatalf("%s not stored", o.Doc.ID)
			}
			if len(out) == 0 || out[len(out)-1] != o.Seq {
				out = append(out, o.Seq)
			}
		}
		return out
	}
	a, b, c, l := seqs(<-results[0]), seqs(<-results[1]), seqs(<-results[2]), seqs(large)
	if len(a) != 1 || len(b) != 1 || len(c) != 1 || a[0] != b[0] || c[0] == a[0] || len(l) != 2 || l[0] == c[0] || l[0] == a[0] {
		t.Fatalf("log messages of the adds: %v, %v, %v, %v; want the first two in one, the third in another, the fourth in two more", a, b, c, l)
	}
}
