package bench

import (
	"math/rand/v2"
	"time"
)

// NoiseFloor is the latency spread of a fixed amount of work on this
// machine under the conditions of a cold-cache query: NoiseReads
// independent random reads of a 128 MiB array, after the CPU caches are
// evicted as before every measured query. The work is the same every time,
// so its p99/p50 is what the machine adds (other tenants, interrupts,
// memory and TLB state) and the least any plan's p99/p50 can be here.
type NoiseFloor struct {
	Reads int           `json:"reads"`
	Runs  int           `json:"runs"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
}

// NoiseReads is about the number of memory reads of a probe at r = 0.9.
const NoiseReads = 150

// MeasureNoise measures the NoiseFloor over runs repetitions.
func MeasureNoise(runs int) NoiseFloor {
	big := make([]uint64, 128<<20/8)
	for i := range big {
		big[i] = uint64(i) // touch every page first
	}
	r := rand.New(rand.NewPCG(7, 7))
	idx := make([]int, NoiseReads)
	var ev evictor
	var sum uint64
	lat := make([]time.Duration, 0, runs)
	for range runs {
		for i := range idx {
			idx[i] = r.IntN(len(big))
		}
		ev.evict()
		start := time.Now()
		for _, i := range idx {
			sum += big[i]
		}
		lat = append(lat, time.Since(start))
	}
	ev.sum += sum // keep the reads
	s := Summarize(lat)
	return NoiseFloor{Reads: NoiseReads, Runs: runs, P50: s.P50, P99: s.P99}
}
