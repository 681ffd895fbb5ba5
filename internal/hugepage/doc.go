// Package hugepage asks the operating system to back large, randomly read
// arrays with huge pages (2 MiB on x86-64 and arm64 Linux), where it can.
//
// # Basics
//
// A query of the index reads a few hundred cache lines at random from
// arrays of hundreds of megabytes (the posting lists, the fingerprints).
// With the usual 4 KiB pages nearly every such read also misses the TLB,
// and the page-table walk that follows misses the CPU caches too: on the
// machines measured, 150 independent reads after the caches were evicted
// took twice as long on 4 KiB pages as on 2 MiB ones. Linux backs memory
// with huge pages when it is asked to (transparent huge pages in "madvise"
// mode, the default of many distributions) or always ("always" mode).
//
// Zeroed advises a slice just made (all zero, not yet written): it marks
// the whole huge pages inside the slice for huge pages and releases the
// small pages already there, so that the first writes fault in huge pages
// (zero-filled, as the slice was).
//
// # Caveats
//
// Advice only: where transparent huge pages are off ("never"), on other
// systems, or when the kernel has no huge page free, nothing changes but
// the speed. Only the part of a slice made of whole, aligned huge pages is
// advised, so slices under 4 MiB may gain nothing. The advice stays on the
// address range after the slice is freed: later allocations there may be
// backed by huge pages too, and the kernel may gather memory the Go
// runtime has returned to it in small pages into huge pages again, so the
// process's resident memory can exceed what the runtime counts as in use
// (the runtime itself does not advise huge pages, for these reasons). With
// the kernel's defrag setting "madvise" (a common default), the first write
// to an advised page may wait while the kernel compacts memory to find a
// huge page: the index advises only the arrays Warm builds and the
// fingerprint chunks, whose first writes happen while loading, not while
// answering queries. Index.SetHugePages(false) (db.Options.NoHugePages)
// turns the advice off for one index.
//
// MappingOf reads what Linux reports of the mapping holding an address
// (its huge pages, whether it is advised): tests check the advice with it.
package hugepage
