package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
)

// TestDeleteWhere deletes by prefix and by age (POST /v1/delete) through
// cluster nodes and through a single-node server holding the same
// documents: the dry runs name the same documents, the deletes delete as
// many, and both then hold the same documents.
func TestDeleteWhere(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, 4, 2, nil)
	nodes := httpNodes(t, tc, nil, "")
	one, single := singleServer(t)
	rng := rand.New(rand.NewPCG(3, 4))
	old := time.Now().Add(-48 * time.Hour).UTC()
	var ins []db.Input
	for i := range 40 {
		in := db.Input{ID: fmt.Sprintf("%s/%02d", []string{"crawl-a", "crawl-b", "crawl-c"}[i%3], i), Fingerprint: randomFP(rng, 512)}
		if i%4 == 0 {
			in.Added = old.Add(time.Duration(i) * time.Minute)
		}
		ins = append(ins, in)
	}
	if _, err := one.AddBatch(ctx, ins); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.nodes[0].Router().Add(ctx, ins, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	docs := func() []string {
		var ids []string
		if err := one.Docs(ctx, func(d db.Doc) error { ids = append(ids, d.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		return ids
	}
	for i, req := range []api.DeleteRequest{
		{Prefix: "crawl-b/", DryRun: true},
		{OlderThan: "24h", DryRun: true},
		{Prefix: "crawl-b/"},
		{OlderThan: "24h"},
		{Prefix: "crawl-none/"},
		{OlderThan: "1000h", DryRun: true},
	} {
		want, err := single.DeleteMany(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := nodes[i%3].DeleteMany(ctx, req)
		if err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
		slices.Sort(want.IDs)
		if got.Deleted != want.Deleted || got.DryRun != want.DryRun || !slices.Equal(got.IDs, want.IDs) {
			t.Fatalf("%+v: the cluster answered %+v, one database %+v", req, got, want)
		}
		if i < 2 && got.Deleted == 0 {
			t.Fatalf("%+v: nothing selected", req)
		}
		// Read through the node that deleted (it reads its own writes):
		// both hold the same documents.
		st, err := nodes[i%3].Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ids := docs(); st.Docs != len(ids) {
			t.Fatalf("%+v: the cluster holds %d documents, one database %d", req, st.Docs, len(ids))
		}
	}
	left := docs()
	if len(left) == 0 || len(left) >= 40 {
		t.Fatalf("%d documents left of 40", len(left))
	}
	for _, id := range left {
		if _, err := nodes[2].Get(ctx, id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	// The requests a single node refuses, the cluster refuses alike.
	for _, req := range []api.DeleteRequest{{Prefix: "x", Forget: true}, {OlderThan: "soon"}} {
		_, werr := single.DeleteMany(ctx, req)
		_, gerr := nodes[0].DeleteMany(ctx, req)
		wantStatus(t, fmt.Sprintf("%+v", req), gerr, http.StatusBadRequest, api.CodeBadRequest)
		wantStatus(t, fmt.Sprintf("%+v on one database", req), werr, http.StatusBadRequest, api.CodeBadRequest)
	}
}

// TestDeleteWhereConflict makes other writes reach the log between a
// delete's selection and its append: it brings its selection up to date
// with them and tries again. A document added since that meets the
// condition is deleted too, one deleted since is not counted, and one
// stored anew since (newer than the cutoff) is left.
func TestDeleteWhereConflict(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, 4, 2, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := tc.nodes[0].Router(), tc.nodes[1].Router()
	old := time.Now().Add(-48 * time.Hour).UTC()
	var ins []db.Input
	for i := range 6 {
		ins = append(ins, db.Input{ID: fmt.Sprintf("old-%d", i), Fingerprint: randomFP(rng, 512), Added: old})
	}
	ins = append(ins, db.Input{ID: "new-0", Fingerprint: randomFP(rng, 512)})
	if _, err := a.Add(ctx, ins, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var sneakErr error
	a.beforeAppend = func() {
		once.Do(func() {
			// Through another router: an old document added, one old
			// document deleted, one stored anew (now).
			if _, err := b.Add(ctx, []db.Input{{ID: "old-late", Fingerprint: randomFP(rng, 512), Added: old}}, AddOptions{}); err != nil {
				sneakErr = err
				return
			}
			if _, err := b.Delete(ctx, []string{"old-1"}); err != nil {
				sneakErr = err
				return
			}
			_, sneakErr = b.Add(ctx, []db.Input{{ID: "old-2", Fingerprint: randomFP(rng, 512)}}, AddOptions{})
		})
	}
	deleted, err := a.DeleteWhere(ctx, Where{Before: time.Now().Add(-time.Hour)}, false)
	if err != nil || sneakErr != nil {
		t.Fatal(err, sneakErr)
	}
	if want := []string{"old-0", "old-3", "old-4", "old-5", "old-late"}; !slices.Equal(deleted, want) {
		t.Fatalf("deleted %v, want %v", deleted, want)
	}
	if st := a.Stats(); st.Conflicts != 1 {
		t.Fatalf("conflicts %d, want 1", st.Conflicts)
	}
	seq := a.Written()
	for _, id := range []string{"old-2", "new-0"} {
		if _, err := b.Get(ctx, id, seq); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	n, err := b.Len(ctx, seq)
	if err != nil || n != 2 {
		t.Fatalf("%d documents left, %v; want 2", n, err)
	}
}

// TestDeleteWhereParts deletes more ids than one log message holds: the
// deletion is appended in parts, and an id stored anew between two parts
// (it still meets the condition) is deleted again but listed once.
func TestDeleteWhereParts(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 2, 2, 1, nil)
	rng := rand.New(rand.NewPCG(9, 10))
	a, b := tc.nodes[0].Router(), tc.nodes[1].Router()
	var ins []db.Input
	for i := range 10 {
		ins = append(ins, db.Input{ID: fmt.Sprintf("p/%02d", i), Fingerprint: randomFP(rng, 512)})
	}
	if _, err := a.Add(ctx, append(ins, db.Input{ID: "q/0", Fingerprint: randomFP(rng, 512)}), AddOptions{}); err != nil {
		t.Fatal(err)
	}
	a.maxMessage = 5 * (len("p/00") + 11)
	calls := 0
	var sneakErr error
	a.beforeAppend = func() {
		if calls++; calls == 2 { // before the second part
			_, sneakErr = b.Add(ctx, []db.Input{{ID: "p/00", Fingerprint: randomFP(rng, 512)}}, AddOptions{})
		}
	}
	deleted, err := a.DeleteWhere(ctx, Where{Prefix: "p/"}, false)
	if err != nil || sneakErr != nil {
		t.Fatal(err, sneakErr)
	}
	var want []string
	for _, in := range ins {
		want = append(want, in.ID)
	}
	if !slices.Equal(deleted, want) {
		t.Fatalf("deleted %v, want %v", deleted, want)
	}
	if st := a.Stats(); st.Batches < 3 {
		t.Fatalf("%d log messages, want the deletion in parts", st.Batches)
	}
	n, err := b.Len(ctx, a.Written())
	if err != nil || n != 1 {
		t.Fatalf("%d documents left (%v), want q/0 only", n, err)
	}
}
