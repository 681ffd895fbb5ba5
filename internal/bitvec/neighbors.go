package bitvec

// Neighbors calls fn(u, d) for every value u of a width-bit space within
// Hamming distance radius of v, where d = popcount(u xor v): v itself first
// (d = 0), then all values at distance 1, then 2, and so on; within one
// distance the flipped bit sets come in increasing numeric order. It does not
// allocate and returns the number of calls, which equals
// BallSize(width, radius). Bits of v above width are cleared first. A width
// outside 1..32 or a negative radius yields no calls; a radius above width
// is treated as width. It is used to enumerate the probe keys of a group.
func Neighbors(v uint32, width, radius int, fn func(u uint32, d int)) int {
	if width < 1 || width > 32 || radius < 0 {
		return 0
	}
	radius = min(radius, width)
	limit := uint64(1) << uint(width)
	v &= uint32(limit - 1)
	fn(v, 0)
	n := 1
	for d := 1; d <= radius; d++ {
		// Gosper's hack: every width-bit mask with d bits set, in increasing order.
		for m := uint64(1)<<uint(d) - 1; m < limit; {
			fn(v^uint32(m), d)
			n++
			c := m & -m
			r := m + c
			m = (((r ^ m) >> 2) / c) | r
		}
	}
	return n
}

// BallSize returns the number of values within Hamming distance radius of a
// point of a width-bit space, Σ_{j ≤ radius} C(width, j). A width outside
// 0..62 or a negative radius yields 0; a radius above width is treated as
// width.
func BallSize(width, radius int) int {
	if width < 0 || width > 62 || radius < 0 {
		return 0
	}
	radius = min(radius, width)
	var c, sum uint64 = 1, 1 // C(width, 0)
	for j := 0; j < radius; j++ {
		c = c * uint64(width-j) / uint64(j+1) // C(width, j+1), exact
		sum += c
	}
	return int(sum)
}
