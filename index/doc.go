// Package index is fpdb's group-merging index on Pebble (docs/algorithm.md
// §2, the paper's alg.H). A K-bit fingerprint is split into m groups; group
// i's value A_i is merged into one key space as y_i = Offset_i + A_i, and the
// key 'p' ‖ y holds the roaring bitmap of the documents that have y, written
// with fpdb's posting merge operator. A query with Hamming radius rh probes,
// in every group, the values within τ bits of the query's group value, counts
// the hits per document in a dense counter array, keeps the documents hit in
// at least t = m − ⌊rh/(τ+1)⌋ groups and verifies their exact Hamming
// distance against the fingerprints, which the index also keeps (on disk and
// in one contiguous array in memory, which serves the linear scan too). A
// small cost-based planner picks τ or the scan per query; every exact plan
// returns exactly the set a linear scan returns. Approximate plans (Approx,
// or a Probe whose MinHits is above the exact filter) return a subset, with
// their expected recall (recall.go).
//
// For bulk loads, adds can be deferred (Defer): their postings are written
// later, once per key, by FlushTail, and until then probe plans also scan
// those documents' fingerprints (tail.go).
//
// # Caveats
//
// Index does no locking: the caller serializes writes (Stage, then commit,
// then Apply) against each other and against Search, Fingerprint and Check.
package index
