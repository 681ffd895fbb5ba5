// Package splitmix holds the SplitMix64 finalizer and generator step that
// fpdb's shingle hash, min-hash functions and seed derivation share. Their
// outputs are part of the on-disk format (fingerprint.HashVersion): a change
// here changes every fingerprint, which the golden vectors of those packages
// catch.
package splitmix
