// Package shingle turns the word stream of a document into the set of its
// w-shingle hashes (docs/algorithm.md §1.2): every run of w consecutive words is a
// shingle, hashed to 64 bits; the document is represented by the set of those
// hashes, whose Jaccard resemblance the min-hash sketch estimates.
//
// # Hashing
//
// Each word is hashed once with [HashBytes], a seeded 64-bit hash in the style
// of XXH64's short-input path (a multiply-rotate round per 8 bytes, the tail
// packed into one more round, then the XXH64 avalanche). A [Shingler] keeps the hashes of
// the last w words in a ring buffer; the hash of a shingle of n words
// h_0 … h_{n-1} (oldest first) is
//
//	x = seed'
//	x = rotl((x ^ h_i)·P + (i+1)·φ, 29)   for i = 0 … n-1
//	shingle = mix(x ^ n·ψ)
//
// where mix is the SplitMix64 finalizer (full avalanche), P, φ and ψ are
// fixed odd constants and seed' is derived from the seed. Each chain step is
// a bijection of x for a given word hash and position, so the chain makes the
// hash order-sensitive ("a b" ≠ "b a") and loses no information before the
// final mix, which also binds the word count n.
//
// A document with fewer than w words (but at least one) gets exactly one
// shingle, built by the same formula with n = its word count, so it can equal
// no full shingle (n = w) by construction; only the count differs.
//
// All arithmetic is on uint64 with words read little-endian, so hashes are
// identical on every machine and run.
//
// A Shingler is reusable but not safe for concurrent use.
package shingle
