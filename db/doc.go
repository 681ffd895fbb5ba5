// Package db is fpdb's public embedding API: a persistent on-disk database
// of near-duplicate document fingerprints.
//
// Every document is turned into a K-bit fingerprint (normalized words →
// w-word shingles → K one-bit min-hashes) and stored with a caller-given
// id; a query returns every stored document whose estimated resemblance
// 1 − 2·Hamming/K is at least a threshold r — exactly the set a linear scan
// of all fingerprints would return — using the group-merging index of
// package index (docs/algorithm.md). Only a query that opts in to an
// approximate plan (PlanApprox) may miss matches. Exact duplicates
// (identical normalized text) are flagged.
//
// # Basics
//
//	d, err := db.Open("fpdb-data", nil) // nil: default options
//	if err != nil { ... }
//	defer d.Close()
//	res, err := d.Add(ctx, db.Input{ID: "proposal-17", Text: text}, &db.AddOptions{Threshold: 0.7})
//	for _, m := range res.Matches { fmt.Println(m.ID, m.Similarity, m.Exact) }
//	q, err := d.Query(ctx, other, db.QueryOptions{Threshold: 0.8})
//
// Each Add, AddBatch, AddEach and Delete is one atomic Pebble batch: after a
// crash a document is either fully present or fully absent. Writes are
// synced before they return unless Options.NoSync is set. Writers from
// several goroutines share syncs (group commit): a write is checked and
// committed under the writer lock, then waits for its sync outside it, so
// the next writer goes on meanwhile and one sync covers every write
// committed since the last. A write is visible to queries and to the
// checks of later adds from its commit on, before its call returns. The
// WAL is synced in commit order, so a call that returns has every write
// committed before its own durable, and a call that writes nothing but
// reports on the state (an add found unchanged or rejected, a delete of
// a missing document, a read of the audit log) returns only once the
// writes it saw are synced. K, the group widths, the shingle width and
// the seed are fixed when the database is created and checked at every
// Open.
//
// Texts are bytes in any common encoding (TextOptions.Encoding: a
// byte-order mark, a charset declared by HTML/XML, else UTF-8 with
// Windows-1252 for the bytes that are not UTF-8), plain text or HTML
// (TextOptions.Format: by Source's extension or by content); words are
// Unicode-normalized (NFKC-like compatibility folding, case folding,
// invisible characters dropped, Latin look-alikes read as Latin), and in
// HTML the tags of inline elements (span, b, a, …) and comments join the
// text around them. These are the rules of normalization version 3, a
// creation parameter: a database made with version 1 or 2 keeps its rules.
//
// A database created with Options.KeepTexts also stores each document's
// text, compressed with zstd, in the same atomic write as the document:
// Text returns it with the format it was read as; replacing or deleting a
// document replaces or deletes its text, and Export and Import carry it.
// Without it (the default) only fingerprints and metadata are stored.
//
// AddTemplate registers a template, text documents share without copying
// each other (a call for proposals, a license header): its shingles are
// left out of every fingerprint and of every shared passage, so that it
// alone never makes two documents similar. Stored documents are
// fingerprinted again from their texts; SuggestTemplate finds boilerplate
// most stored texts share, for the caller to review and add.
//
// Docs iterates over the stored documents from a snapshot; Pairs and
// Clusters find every near-duplicate pair among them; Backup copies the
// open database; Metrics returns counters for a server to export. The
// examples show each.
//
// To check and store a stream of documents (a crawl, the records of a
// dataset), call AddEach with batches of a few hundred: each document is
// checked against the stored ones and those of the batch before it, as
// Add would check it, and the batch is one write with one sync, where Add
// syncs once per document.
//
// To load many documents, open with Options.BulkLoad and call AddBatch:
// each batch is still atomic and durable, and queries see it at once, but
// the posting lists are written once per key for 1 to 4 million documents
// (and by Flush and Close) — several times faster than writing them with
// every batch. A loader that must resume after a crash passes a Mark with
// each batch (AddBatchMarked): the mark, saying how far its input is
// stored, is written in the same atomic batch, and Mark reads it back on
// the next run (package dedup does this for dataset files).
// AddBatchMarkedBy makes the marks from the documents the batch refuses,
// so that a loader can also keep which inputs were refused.
//
// # Caveats
//
// A DB is safe for concurrent use by many goroutines; writes are
// serialized, and queries wait while a write commits. Only one DB value,
// in one process, may have a directory open at a time (ErrLocked). Slices
// in returned values belong to the caller. All fingerprints are kept in
// memory (K/8 bytes per internal id) for verification and scanning.
//
// Internal ids are never reused: each document added takes a new one, and
// so does each replace (an Add that changes a stored id's document) and
// each document whose fingerprint a template change alters; the id it
// had, like that of a deleted document, is left as a dead slot, which
// still takes its K/8 bytes in memory and is still visited by every scan
// (Pairs, Clusters, Check, Warm, a query that scans) until the database
// is exported and imported into a new one. Stats.Slots counts the ids
// used, live or dead. After 2^32 − 1 ids in total, however few documents
// are live, every write fails with ErrIDSpaceExhausted; export and import
// then renumber the live ones.
//
// Close waits for the calls in flight (and cancels the long ones: Export,
// Pairs, Clusters, Check, …, which then return an error wrapping
// ErrClosed); every call after Close that takes a context returns
// ErrClosed, whatever its arguments, and on a read-only DB too.
//
// A storage failure the storage engine cannot recover from — a failed WAL
// write, sync or creation, a full disk under the WAL or under the tables
// Pebble writes its memtables to (which Pebble would retry without end),
// table writes that keep failing for a minute, a failed MANIFEST write —
// ends the process with exit status 74 after logging the cause, as Pebble
// itself does: no acknowledged write is lost, and the next Open replays
// them. Run a service that embeds fpdb under a supervisor that
// restarts it. See docs/RELIABILITY.md.
package db
