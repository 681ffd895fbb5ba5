package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/client"
	"github.com/fpdb/fpdb/db"
)

// exportedDocs reads an export from c: each document's id and what a
// replica stores of it (fingerprint, content hash, source).
func exportedDocs(t *testing.T, c *client.Client) map[string]string {
	t.Helper()
	var buf bytes.Buffer
	if _, err := c.Export(context.Background(), &buf); err != nil {
		t.Fatalf("export: %v", err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	for first := true; sc.Scan(); first = false {
		if first {
			continue // the header
		}
		var d db.ExportRecord
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		out[d.ID] = d.Fingerprint + " " + d.ContentHash + " " + d.Source
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBigBatch: an unchecked POST /v1/batch of about 9 MiB of text in
// small documents, whose log entries take more than one log message (and
// more than the 7 MiB a batch was once refused beyond), is stored whole by
// a cluster as by a single-node server: every document, with the same
// fingerprint, is exported, got and found by a query. A line whose log
// entry alone exceeds a log message is still 413, and nothing of its
// batch is stored.
func TestBigBatch(t *testing.T) {
	tc := startCluster(t, 3, 4, 2, nil)
	nodes := httpNodes(t, tc, nil, "")
	_, single := singleServer(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 9))
	vocab := make([]string, 4000)
	for i := range vocab {
		b := make([]byte, 3+rng.IntN(6))
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		vocab[i] = string(b)
	}
	var lines []api.AddRequest
	textBytes, entryBytes := 0, 0
	for textBytes < 9<<20 {
		var sb strings.Builder
		for sb.Len() < 170 {
			sb.WriteString(vocab[rng.IntN(len(vocab))])
			sb.WriteByte(' ')
		}
		l := api.AddRequest{ID: fmt.Sprintf("bulk-%06d", len(lines)), Text: sb.String(), Source: fmt.Sprintf("crawl/bulk/%06d", len(lines))}
		lines = append(lines, l)
		textBytes += len(l.Text)
		entryBytes += addEntrySize(l.ID, l.Source, db.DefaultK/64)
	}
	if entryBytes <= 7<<20 || entryBytes <= maxMessage {
		t.Fatalf("the batch's log entries take %d bytes: no more than one message", entryBytes)
	}
	t.Logf("%d documents, %d bytes of text, %d bytes of log entries", len(lines), textBytes, entryBytes)
	want, err := single.Batch(ctx, lines)
	if err != nil {
		t.Fatalf("single-node server: %v", err)
	}
	got, err := nodes[0].Batch(ctx, lines)
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	if got.Stored != len(lines) || got.Stored != want.Stored || len(got.Skipped) != 0 {
		t.Fatalf("cluster stored %d (skipped %d), single node %d, of %d", got.Stored, len(got.Skipped), want.Stored, len(lines))
	}
	if st, err := nodes[0].Stats(ctx); err != nil || st.Docs != len(lines) {
		t.Fatalf("cluster stats: %+v, %v (want %d documents)", st, err, len(lines))
	}
	a, b := exportedDocs(t, single), exportedDocs(t, nodes[0])
	if len(a) != len(lines) || len(b) != len(lines) {
		t.Fatalf("exported %d documents from the single node, %d from the cluster, want %d", len(a), len(b), len(lines))
	}
	for id, v := range a {
		if b[id] != v {
			t.Fatalf("%s: cluster %q, single node %q", id, b[id], v)
		}
	}
	for i := 0; i < len(lines); i += len(lines) / 40 {
		l := lines[i]
		d, err := nodes[i%3].Get(ctx, l.ID)
		if err != nil || d.Source != l.Source {
			t.Fatalf("get %s: %+v, %v", l.ID, d, err)
		}
		q, err := nodes[0].Query(ctx, api.QueryRequest{Text: l.Text, Threshold: 0.9})
		if err != nil || len(q.Matches) == 0 || q.Matches[0].ID != l.ID {
			t.Fatalf("query by the text of %s: %+v, %v", l.ID, q, err)
		}
	}

	// A log entry alone larger than a log message: 413, nothing stored.
	tooBig := []api.AddRequest{
		{ID: "small-1", Text: "a few words of a small document"},
		{ID: "huge-1", Text: "a few words of another document", Source: strings.Repeat("s", maxMessage)},
	}
	_, err = nodes[1].Batch(ctx, tooBig)
	wantStatus(t, "a batch with an entry larger than a log message", err, http.StatusRequestEntityTooLarge, api.CodeTooLarge)
	for _, id := range []string{"small-1", "huge-1"} {
		if _, err := nodes[1].Get(ctx, id); err == nil {
			t.Fatalf("%s stored by a refused batch", id)
		}
	}
}
