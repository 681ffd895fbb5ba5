// Package bitvec holds fpdb's k-bit fingerprints as []uint64 words and the
// bit-level primitives every other layer builds on: Hamming distance
// (popcount of xor), extraction of the bit groups that become posting keys
// (Bits), enumeration of the probe values within a small Hamming radius of a
// group value (Neighbors, BallSize), the unrolled linear scan that is both the
// verification step and the exact fallback for low thresholds (Scan), and the
// hex (user-facing) and little-endian byte (on-disk) encodings. Bit j of a
// fingerprint is bit j%64 of word j/64. The package has no state; all
// functions are safe for concurrent use and never panic on bad input.
package bitvec
