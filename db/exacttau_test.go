package db

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestExactTau: a probe plan with ExactTau runs and finds what the scan
// finds; one less is refused with ErrInfeasiblePlan, whose message names
// the exact radii.
func TestExactTau(t *testing.T) {
	d := openTest(t, "", nil)
	for i := range 20 {
		if _, err := d.Add(ctx, Input{ID: fmt.Sprint("d", i), Text: []byte(text(uint64(i%5), 300))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	q := []byte(text(2, 300))
	for _, thr := range []float64{0.5, 0.7, 0.9, 1} {
		tau, err := d.ExactTau(thr)
		if err != nil {
			t.Fatal(err)
		}
		scan, err := d.Query(ctx, q, QueryOptions{Threshold: thr, Plan: Plan{Kind: PlanScan}})
		if err != nil {
			t.Fatal(err)
		}
		probe, err := d.Query(ctx, q, QueryOptions{Threshold: thr, Plan: Plan{Kind: PlanProbe, Tau: tau}})
		if err != nil {
			t.Fatalf("threshold %v, tau %d: %v", thr, tau, err)
		}
		if len(probe.Matches) != len(scan.Matches) || len(scan.Matches) == 0 {
			t.Errorf("threshold %v, tau %d: %d matches, the scan %d", thr, tau, len(probe.Matches), len(scan.Matches))
		}
		if tau == 0 {
			continue
		}
		_, err = d.Query(ctx, q, QueryOptions{Threshold: thr, Plan: Plan{Kind: PlanProbe, Tau: tau - 1}})
		if !errors.Is(err, ErrInfeasiblePlan) {
			t.Fatalf("threshold %v, tau %d: err %v, want ErrInfeasiblePlan", thr, tau-1, err)
		}
		if want := fmt.Sprintf("tau %d or more is exact", tau); !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
	if _, err := d.ExactTau(0); !errors.Is(err, ErrInvalidThreshold) {
		t.Errorf("ExactTau(0): %v", err)
	}
}
