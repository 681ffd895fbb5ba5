package index

import "slices"

// sortKeys sorts ks in place: an LSD radix sort with 16-bit digits for
// large inputs (digits that are equal in every key are skipped), pdqsort
// for small ones. Bulk writes sort y‖id keys of every document and group,
// millions at a time, where the radix sort is several times faster.
func sortKeys(ks []uint64) {
	if len(ks) < 1<<12 {
		slices.Sort(ks)
		return
	}
	var or, and uint64 = 0, ^uint64(0)
	for _, k := range ks {
		or |= k
		and &= k
	}
	varying := or ^ and // bits that differ between some keys
	tmp := make([]uint64, len(ks))
	src, dst := ks, tmp
	var count [1 << 16]int
	for shift := uint(0); shift < 64; shift += 16 {
		if (varying>>shift)&0xffff == 0 {
			continue
		}
		clear(count[:])
		for _, k := range src {
			count[(k>>shift)&0xffff]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, k := range src {
			d := (k >> shift) & 0xffff
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ks[0] {
		copy(ks, src)
	}
}
