package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// scaleRun is a plan run of n random fingerprints whose auto plan took
// p50 at r = 0.8 (and the scan 10 ms).
func scaleRun(workload string, n int, p50 time.Duration) PlanRun {
	return PlanRun{Workload: workload, N: n, K: 512, Results: []PlanResult{
		{Plan: "auto", R: 0.8, Latency: Latency{N: 10, P50: p50}, Speedup: float64(10*time.Millisecond) / float64(p50)},
		{Plan: "scan", R: 0.8, Latency: Latency{N: 10, P50: 10 * time.Millisecond}},
		{Plan: RefScanName, R: 0.8, Latency: Latency{N: 10, P50: 10 * time.Millisecond}},
	}}
}

// The 10 M targets are judged on the layout db.SuggestedGroupWidth gives
// for 10 M when the report holds it, with the default layout's figure
// beside it; without it, on the default layout.
func TestScaleTargetsSuggestedLayout(t *testing.T) {
	wide := RandomName(db.SuggestedGroupWidth(512, 10_000_000))
	if wide == "random" {
		t.Fatalf("10 M documents should get a layout other than the default")
	}
	target := func(rep *Report) Target {
		t.Helper()
		for _, tg := range scaleTargets(rep) {
			if strings.HasPrefix(tg.Target, "n=10M k=512 random") && strings.Contains(tg.Target, "cold caches, auto r=0.8") {
				return tg
			}
		}
		t.Fatal("no 10 M r=0.8 target")
		return Target{}
	}
	both := &Report{Plans: []PlanRun{scaleRun("random", 10_000_000, 700*time.Microsecond), scaleRun(wide, 10_000_000, 300*time.Microsecond)}}
	tg := target(both)
	if tg.Status != "pass" || !strings.HasPrefix(tg.Measured, wide+": p50 300") || !strings.Contains(tg.Measured, "; random: p50 700") {
		t.Errorf("both layouts: %+v", tg)
	}
	only := &Report{Plans: []PlanRun{scaleRun("random", 10_000_000, 700*time.Microsecond)}}
	if tg := target(only); tg.Status != "fail" || !strings.HasPrefix(tg.Measured, "random: p50 700") {
		t.Errorf("default layout only: %+v", tg)
	}
	if wl, other := suggestedWorkload(both, 1_000_000, 512); wl != "random" || other != "" {
		t.Errorf("1 M: %q, %q", wl, other)
	}
	if tg := target(both); !strings.Contains(tg.Target, wide) {
		t.Errorf("the target does not name its layout: %q", tg.Target)
	}
	// Never slower than the scan plan: a row for each layout measured.
	var rows []string
	for _, tg := range scaleTargets(both) {
		if strings.HasPrefix(tg.Target, "n=10M") && strings.Contains(tg.Target, "never slower") {
			rows = append(rows, tg.Target)
		}
	}
	if len(rows) != 2 || !strings.Contains(rows[0], wide) || strings.Contains(rows[1], "-bit") {
		t.Errorf("own-scan rows at 10 M: %q", rows)
	}
	wideOnly := &Report{Plans: []PlanRun{scaleRun(wide, 10_000_000, 300*time.Microsecond)}}
	if tg := target(wideOnly); tg.Status != "pass" || strings.Contains(tg.Measured, "; random:") {
		t.Errorf("suggested layout only: %+v", tg)
	}
}
