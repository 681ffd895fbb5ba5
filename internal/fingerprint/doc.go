// Package fingerprint composes the steps of docs/algorithm.md §1 into one call:
// text → normalized words ([normalize]) → w-shingle hashes ([shingle]) →
// k-bit one-permutation min-hash fingerprint ([minhash]), plus a 128-bit
// content hash of the normalized text for exact-duplicate lookups (§1.7).
// A [Builder] streams its input with bounded memory and is reusable but not
// safe for concurrent use; use one per goroutine.
//
// The output depends on [Params] (K, ShingleWidth, Seed), on
// normalize.Version and on [HashVersion]; a database must record all of
// them and refuse to mix fingerprints made with different ones.
// testdata/golden.txt pins the output: if it changes, bump the version that
// covers the change (go test -run TestGolden -update rewrites the file).
package fingerprint
