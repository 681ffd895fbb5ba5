package bench

import (
	"slices"
	"time"
)

// Latency summarizes a sample of latencies.
type Latency struct {
	N    int           `json:"n"`
	Mean time.Duration `json:"mean_ns"`
	P50  time.Duration `json:"p50_ns"`
	P95  time.Duration `json:"p95_ns"`
	P99  time.Duration `json:"p99_ns"`
	Max  time.Duration `json:"max_ns"`
}

// Summarize returns the mean and the nearest-rank percentiles of ds.
func Summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	pct := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return Latency{N: len(s), Mean: sum / time.Duration(len(s)), P50: pct(0.50), P95: pct(0.95), P99: pct(0.99), Max: s[len(s)-1]}
}
