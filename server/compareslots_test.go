package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// TestCompareSlots: no more comparisons run at once than there are slots;
// one that finds none free waits, up to its deadline, and then fails with
// the context's error; it runs once a slot is free.
func TestCompareSlots(t *testing.T) {
	slots := make(CompareSlots, 1)
	release, running := make(chan struct{}), make(chan struct{}, 2)
	cmp := slots.Limit(func(ctx context.Context, a, b db.CompareInput, o *db.CompareOptions) (*db.Comparison, error) {
		running <- struct{}{}
		<-release
		return &db.Comparison{}, nil
	})
	first := make(chan error, 1)
	go func() {
		_, err := cmp(context.Background(), db.CompareInput{}, db.CompareInput{}, nil)
		first <- err
	}()
	<-running
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := cmp(ctx, db.CompareInput{}, db.CompareInput{}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second comparison with the slot taken: %v, want the deadline", err)
	}
	select {
	case <-running:
		t.Fatal("a second comparison ran while the slot was taken")
	default:
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, err := cmp(context.Background(), db.CompareInput{}, db.CompareInput{}, nil); err != nil {
		t.Fatalf("once the slot is free: %v", err)
	}
	if n := cap(NewCompareSlots()); n < 1 {
		t.Fatalf("NewCompareSlots: %d slots", n)
	}
}
