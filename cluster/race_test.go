package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/bitvec"
)

// TestCheckThenAddRace has 8 writers submit 200 groups of 5 near
// duplicates through different nodes, each document with a check-then-add
// that rejects it if it resembles a stored one: exactly one document per
// group must be stored, and no stored pair may be within the threshold.
func TestCheckThenAddRace(t *testing.T) {
	groups, size, writers := 200, 5, 8
	if testing.Short() {
		groups = 50
	}
	const threshold = 0.9
	ctx := context.Background()
	tc := startCluster(t, 3, 4, 2, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	type sub struct {
		group int
		in    db.Input
	}
	var all []sub
	for g := 0; g < groups; g++ {
		base := randomFP(rng, 512)
		for v := 0; v < size; v++ { // pairwise at most 16 bits apart: resemblance ≥ 0.9375
			all = append(all, sub{g, db.Input{ID: fmt.Sprintf("g%03d-v%d", g, v), Fingerprint: nearFP(rng, base, rng.IntN(9))}})
		}
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })

	var mu sync.Mutex
	stored := map[int][]string{}
	work := make(chan sub)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := tc.nodes[w%3].Router()
			for s := range work {
				res, err := r.Add(ctx, []db.Input{s.in}, AddOptions{Threshold: threshold, Reject: true})
				if err != nil {
					errs <- err
					return
				}
				if res[0].Stored {
					mu.Lock()
					stored[s.group] = append(stored[s.group], s.in.ID)
					mu.Unlock()
				} else if len(res[0].Matches) == 0 {
					errs <- fmt.Errorf("%s: neither stored nor matched", s.in.ID)
					return
				}
			}
		}()
	}
	for _, s := range all {
		work <- s
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for g := 0; g < groups; g++ {
		if len(stored[g]) != 1 {
			t.Errorf("group %d: stored %v, want exactly one", g, stored[g])
		}
	}

	// Brute force over what the cluster holds.
	last, err := tc.nodes[0].Router().LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var fps [][]uint64
	var names []string
	for _, s := range all {
		d, err := tc.nodes[1].Router().Get(ctx, s.in.ID, last)
		if err == nil {
			fps = append(fps, d.Fingerprint)
			names = append(names, d.ID)
		}
	}
	if len(fps) != groups {
		t.Errorf("cluster holds %d documents, want %d", len(fps), groups)
	}
	radius := 25 // ⌊(1 − 0.9)·512/2⌋
	for i := range fps {
		for j := i + 1; j < len(fps); j++ {
			if h := bitvec.Hamming(fps[i], fps[j]); h <= radius {
				t.Errorf("stored %s and %s are %d bits apart", names[i], names[j], h)
			}
		}
	}
	var conflicts int64
	for _, nd := range tc.nodes {
		conflicts += nd.Router().Stats().Conflicts
	}
	t.Logf("%d submissions by %d writers through 3 nodes: %d stored, log at %d, %d conflicts resolved", len(all), writers, len(fps), last, conflicts)
}

// TestConflictPath makes another router append a near duplicate between
// a check and its conditional append: the append must be refused, the new
// entry compared, and the document rejected.
func TestConflictPath(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, 4, 2, nil)
	rng := rand.New(rand.NewPCG(8, 9))
	base := randomFP(rng, 512)
	a, b := tc.nodes[0].Router(), tc.nodes[1].Router()
	var once sync.Once
	var sneakErr error
	a.beforeAppend = func() {
		once.Do(func() {
			_, sneakErr = b.Add(ctx, []db.Input{{ID: "sneaky", Fingerprint: nearFP(rng, base, 4)}}, AddOptions{})
		})
	}
	res, err := a.Add(ctx, []db.Input{{ID: "late", Fingerprint: base}, {ID: "other", Fingerprint: randomFP(rng, 512)}}, AddOptions{Threshold: 0.9, Reject: true})
	if err != nil || sneakErr != nil {
		t.Fatal(err, sneakErr)
	}
	if res[0].Stored || len(res[0].Matches) != 1 || res[0].Matches[0].ID != "sneaky" || res[0].Matches[0].Hamming != 4 {
		t.Fatalf("late: %+v", res[0])
	}
	if !res[1].Stored {
		t.Fatalf("other not stored: %+v", res[1])
	}
	if st := a.Stats(); st.Conflicts != 1 {
		t.Fatalf("conflicts %d, want 1", st.Conflicts)
	}
	if _, err := b.Get(ctx, "late", res[1].Seq); err == nil {
		t.Fatal("late was stored")
	}
	if _, err := b.Get(ctx, "other", res[1].Seq); err != nil {
		t.Fatal(err)
	}
}
