package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/fpdb/fpdb/api"
)

// TestClientPending: the 202 answers of a cluster node whose shard has no
// live replica (bodies as package cluster writes them) are returned with
// what is pending: an add's Pending, a batch's count, a delete's ids
// (counted neither deleted nor not found).
func TestClientPending(t *testing.T) {
	answers := map[string]string{
		"POST /v1/documents":   `{"id":"a","stored":true,"replaced":false,"unchanged":false,"rejected":false,"matches":[],"pending":true}`,
		"DELETE /v1/documents": `{"deleted":0,"pending":["a"]}`,
		"POST /v1/delete":      `{"deleted":1,"not_found":["c"],"pending":["a"]}`,
		"POST /v1/batch":       `{"stored":2,"replaced":0,"unchanged":0,"skipped":[],"pending":1}`,
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		if r.Method == http.MethodDelete {
			key = "DELETE /v1/documents"
		}
		body, ok := answers[key]
		if !ok {
			http.Error(w, `{"error":{"code":"not_found","message":"no such path"}}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(body + "\n"))
	}))
	defer ts.Close()
	c := newClient(t, ts.URL, nil)
	ctx := context.Background()

	add, err := c.Add(ctx, api.AddRequest{ID: "a", Text: textA})
	if err != nil || !add.Stored || !add.Pending {
		t.Errorf("add: %+v, %v; want stored, pending", add, err)
	}
	del, err := c.Delete(ctx, "a", nil)
	if err != nil || del.Deleted != 0 || !slices.Equal(del.Pending, []string{"a"}) {
		t.Errorf("delete: %+v, %v; want a pending", del, err)
	}
	many, err := c.DeleteMany(ctx, api.DeleteRequest{IDs: []string{"a", "b", "c"}})
	if err != nil || many.Deleted != 1 || !slices.Equal(many.NotFound, []string{"c"}) || !slices.Equal(many.Pending, []string{"a"}) {
		t.Errorf("delete many: %+v, %v; want 1 deleted, c not found, a pending", many, err)
	}
	batch, err := c.Batch(ctx, []api.AddRequest{{ID: "a", Text: textA}, {ID: "b", Text: textB}})
	if err != nil || batch.Stored != 2 || batch.Pending != 1 {
		t.Errorf("batch: %+v, %v; want 2 stored, 1 pending", batch, err)
	}
}
