// Package keys defines fpdb's Pebble key layout: one byte of prefix per key
// range, followed by big-endian integers or raw bytes so that Pebble's byte
// order is the numeric order. Every key fpdb writes is built and parsed here,
// and docs/format.md describes the same layout in prose.
package keys
