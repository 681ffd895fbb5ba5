package bench

import (
	"math"
	"math/rand/v2"
)

// RandomWorkload is workload (a): n uniformly random k-bit fingerprints
// stored with ids 0..n−1, and queries that are fresh random fingerprints
// each with one planted stored neighbour per entry of Sims, at Hamming
// distance round(k(1−s)/2) (estimated resemblance s).
type RandomWorkload struct {
	K       int
	Flat    []uint64   // n fingerprints, K/64 words each
	Queries [][]uint64 // query fingerprints
	// Planted[i][j] is the id of query i's neighbour at Sims[j].
	Planted [][]uint32
	Sims    []float64
}

// DefaultPlantSims are the resemblances of the neighbours planted around
// every query: one in each band between the thresholds the suite measures.
var DefaultPlantSims = []float64{0.99, 0.93, 0.87, 0.83, 0.77, 0.73, 0.67, 0.63, 0.57, 0.53, 0.45}

// NewRandomWorkload generates workload (a) deterministically from seed.
// It needs n ≥ queries·len(sims).
func NewRandomWorkload(n, k, queries int, sims []float64, seed uint64) *RandomWorkload {
	rng := rand.New(rand.NewPCG(seed, 0x62656e6368))
	stride := k / 64
	w := &RandomWorkload{K: k, Flat: make([]uint64, n*stride), Sims: sims}
	for i := range w.Flat {
		w.Flat[i] = rng.Uint64()
	}
	perm := rng.Perm(n)
	next := 0
	for range queries {
		q := make([]uint64, stride)
		for j := range q {
			q[j] = rng.Uint64()
		}
		ids := make([]uint32, len(sims))
		for j, s := range sims {
			id := perm[next]
			next++
			d := int(math.Round(float64(k) * (1 - s) / 2))
			fp := w.Flat[id*stride : (id+1)*stride]
			copy(fp, q)
			for _, b := range rng.Perm(k)[:d] {
				fp[b/64] ^= 1 << (b % 64)
			}
			ids[j] = uint32(id)
		}
		w.Queries = append(w.Queries, q)
		w.Planted = append(w.Planted, ids)
	}
	return w
}
