package bench

import (
	"context"
	"io"
	"testing"
	"time"
)

// TestServeLoad runs the load measurement small: every request answers,
// queries find the planted neighbours, adds are made.
func TestServeLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a load run (not with -short)")
	}
	rep, err := ServeLoad(context.Background(), ServeLoadConfig{N: 20_000, Clients: 4, Duration: 300 * time.Millisecond,
		Thresholds: []float64{0.9, 0.7}, Dir: t.TempDir(), Seed: 3}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 3 {
		t.Fatalf("%d rows", len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if r.Requests == 0 || r.Errors > 0 || r.Latency.P50 <= 0 {
			t.Fatalf("%+v", r)
		}
	}
	// Every query has planted neighbours at 0.99 and 0.93 (and more at 0.7).
	if rep.Rows[0].Mean < 2 || rep.Rows[1].Mean < rep.Rows[0].Mean {
		t.Fatalf("mean matches %.1f at 0.9, %.1f at 0.7", rep.Rows[0].Mean, rep.Rows[1].Mean)
	}
}
