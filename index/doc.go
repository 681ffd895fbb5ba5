// Package index is fpdb's group-merging index on Pebble (docs/algorithm.md
// §2, the paper's alg.H). A K-bit fingerprint is split into m groups; group i's value A_i is
// merged into one key space as y_i = Offset_i + A_i, and the key 'p' ‖ y holds
// the set of the documents that have y (package internal/posting: a roaring
// bitmap, or a shorter list of gaps), written with fpdb's posting merge
// operator. A query with Hamming radius rh probes, in every
// group, the values within τ bits of the query's group value, counts the hits
// per document in a dense counter array, keeps the documents hit in at least
// t = m − ⌊rh/(τ+1)⌋ groups and verifies their exact Hamming distance against
// the fingerprints, which the index also keeps (on disk and in one contiguous
// array in memory, which serves the linear scan too). A small cost-based
// planner picks τ or the scan per query; every exact plan returns exactly
// the set a linear scan returns (an approximate one, a subset with a stated
// expected recall).
//
// For bulk loads, adds can be deferred (Defer): their postings are written
// later, once per key, by FlushDeferred, and until then probe plans also scan
// those documents' fingerprints (deferred.go).
//
// The index owns its on-disk format end to end: besides searching and
// writing, it verifies its posting keys (VerifyPostings), rebuilds them
// (StageRebuild), reads the deferred mark and counts posting statistics.
//
// # Basics
//
// Writes are staged into a Pebble batch and committed through the index,
// which applies them to its memory with readers excluded:
//
//	w, err := ix.Stage(b, adds, removes) // b also holds the caller's records
//	if err != nil { ... }
//	err = w.Commit(func() error { return b.Commit(pebble.Sync) })
//	hits, stats, err := ix.Search(ctx, q, rh, index.Plan{}) // the planner's choice
//
// # Caveats
//
// An Index is safe for concurrent use: readers run in parallel; writers
// (a Write from Stage to Commit or Abort, Defer, FlushDeferred, Warm,
// Check) one at a time, and readers wait only while a writer's change is
// committed and applied. Internal ids are the caller's: the index stores
// and finds them, but does not allocate them. All fingerprints are kept in
// memory (K/8 bytes per id up to the largest).
package index
