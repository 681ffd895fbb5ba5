// Package db is fpdb's public embedding API: a persistent on-disk database
// of near-duplicate document fingerprints.
//
// Every document is turned into a K-bit fingerprint (normalized words →
// w-word shingles → K one-bit min-hashes) and stored with a caller-given
// id; a query returns every stored document whose estimated resemblance
// 1 − 2·Hamming/K is at least a threshold r — exactly the set a linear scan
// of all fingerprints would return — using the group-merging index of
// package index. Exact duplicates (identical normalized text) are flagged.
//
// # Basics
//
//	d, err := db.Open("fpdb-data", nil) // nil: default options
//	if err != nil { ... }
//	defer d.Close()
//	res, err := d.Add(ctx, "proposal-17", text, &db.AddOptions{Threshold: 0.7})
//	for _, m := range res.Matches { fmt.Println(m.ID, m.Similarity, m.Exact) }
//	q, err := d.Query(ctx, other, db.QueryOptions{Threshold: 0.8})
//
// Each Add, AddFingerprint and Delete is one atomic Pebble batch: after a
// crash a document is either fully present or fully absent. Writes are
// synced before they return unless Options.NoSync is set. K, the group
// widths, the shingle width and the seed are fixed when the database is
// created and checked at every Open.
//
// To load many documents, open with Options.BulkLoad and call AddBatch:
// each batch is still atomic and durable, and queries see it at once, but
// the posting lists are written once per key for up to a million documents
// (and by Flush and Close) — several times faster than writing them with
// every batch.
//
// # Caveats
//
// A DB is safe for concurrent use by many goroutines; writes are
// serialized, and queries wait while a write commits. Only one DB value,
// in one process, may have a directory open at a time (ErrLocked). Slices
// in returned values belong to the caller. All fingerprints are kept in
// memory (K/8 bytes per document) for verification and scanning. If Pebble
// hits an unrecoverable internal error it panics with a message naming it.
package db
