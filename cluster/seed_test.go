package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// TestAddReplica gives a node a third replica of a shard while writes go
// on: it starts from a checkpoint of a live replica, catches up with the
// log and agrees with the others; removing it deletes it.
func TestAddReplica(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, 4, 2, nil)
	r := tc.nodes[0].Router()
	rng := rand.New(rand.NewPCG(9, 9))
	add := func(from, n int) uint64 {
		docs := make([]db.Input, n)
		for i := range docs {
			docs[i] = db.Input{ID: fmt.Sprintf("doc%05d", from+i), Fingerprint: randomFP(rng, 512)}
		}
		res, err := r.Add(ctx, docs, AddOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Seq
	}
	for i := 0; i < 3000; i += 500 {
		add(i, 500)
	}
	// Shard 1 is on n2 and n3: give it to n1 as well.
	if got := tc.nodes[0].Map().Assign[1]; strings.Join(got, ",") != "n2,n3" {
		t.Fatalf("shard 1 on %v", got)
	}
	if err := tc.nodes[1].AddReplica(ctx, 1, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := tc.nodes[1].AddReplica(ctx, 1, "n1"); err == nil {
		t.Fatal("a second replica on one node accepted")
	}
	if err := tc.nodes[1].AddReplica(ctx, 1, "n9"); err == nil {
		t.Fatal("a replica on an unknown node accepted")
	}
	last := add(3000, 500)
	var st ReplicaState
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var ok bool
		st, ok = tc.nodes[0].Replica(1)
		if ok && st.Applied >= last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1's new replica of shard 1: %+v (ok %v), log at %d", st, ok, last)
		}
	}
	if st.Seeded == 0 {
		t.Errorf("the new replica replayed the log instead of copying a checkpoint; the nodes' warnings:\n%s", tc.warnings.String())
	}
	var digests []string
	for i := range tc.nodes {
		if _, ok := tc.nodes[i].Replica(1); !ok {
			continue
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if s, _ := tc.nodes[i].Replica(1); s.Applied >= last || time.Now().After(deadline) {
				break
			}
		}
		seq, dig, n, err := tc.nodes[i].Digest(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, fmt.Sprintf("%d/%016x/%d", seq, dig, n))
	}
	if len(digests) != 3 || digests[0] != digests[1] || digests[1] != digests[2] {
		t.Fatalf("replicas of shard 1: %v", digests)
	}
	t.Logf("new replica seeded at sequence %d, now at %d; three replicas agree: %s", st.Seeded, st.Applied, digests[0])

	if err := tc.nodes[2].RemoveReplica(ctx, 1, "n1"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, ok := tc.nodes[0].Replica(1); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("n1 still holds shard 1 after its removal")
		}
	}
	if err := tc.nodes[2].RemoveReplica(ctx, 1, "n2"); err != nil {
		t.Fatal(err)
	}
	if err := tc.nodes[2].RemoveReplica(ctx, 1, "n3"); err == nil {
		t.Fatal("the last replica of a shard removed")
	}
	// Queries still see every document (shard 1 now on n3 alone).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		n, err := tc.nodes[0].Router().Len(ctx, last)
		if err == nil && n == 3500 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d documents (%v), want 3500", n, err)
		}
	}
}
