// Package posting encodes the values of fpdb's posting keys and provides the
// named Pebble merge operator that combines them. A posting value is a set of
// uint32 document ids stored as a roaring bitmap or, where that is shorter,
// as a list of gaps (the compact encoding); writers never
// read-modify-write it but Merge operands into Pebble. Each operand, and each
// partially merged value, is an Op meaning x → (x \ Remove) ∪ Add with Add
// and Remove disjoint; ops compose associatively, so Pebble may merge them in
// any grouping, and a merge that includes the oldest operand drops Remove and
// leaves the plain id set. Queries read merged values with ForEach, which
// walks the serialized set in place without allocating.
//
// # Encoding
//
// One tag byte, the uvarint length of Add's serialization, Add's
// serialization, then Remove's serialization up to the end of the value. With
// tag 1 both use roaring's portable format; with tag 2 (the compact
// encoding) each id is the uvarint of its gap from the previous one. An empty
// set is encoded as zero bytes, so the value of an empty op is two bytes.
// A writer picks tag 2 only when its Encoding is Compact and the value is
// shorter so: about 3 bytes per id against roaring's 10 for sparse lists,
// whose every id has a roaring container of its own. A merge writes tag 2
// only once one of its operands had it, so a store written with Roaring
// stays readable by builds that predate tag 2. The full format is
// described in docs/format.md.
//
// # Caveats
//
// Values read from Pebble are only valid until the iterator moves or the
// closer is closed: IDs and Decode copy, ForEach does not retain anything
// after it returns. Every decoder validates its input completely (lengths,
// key and value order, container cardinalities) and returns an error wrapping
// ErrCorrupt rather than panicking. The validation runs before roaring sees
// the bytes: roaring's own decoder accepts many corrupt inputs unless
// Validate is called, and set operations on such bitmaps can corrupt memory.
//
// The merge operator applies small add-only or remove-only operands id by id
// (no bitmap is decoded for them), so a key with hundreds of single-id
// operands in the memtable merges in microseconds. A merge whose result is
// the empty set stays as a small empty value: asking Pebble to drop it
// panics in Pebble v2.1.7's compaction (see merger.go).
package posting
