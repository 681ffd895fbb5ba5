package bitvec

import "math/bits"

// Scan computes the Hamming distance between q and each fingerprint of flat,
// a concatenation of fingerprints of stride words each, and calls fn(i, d)
// for every fingerprint i (0-based) whose distance d is at most maxDist, in
// increasing order of i. Strides 1, 2, 4, 8 and 16 (k = 64 … 1024) use
// specialized unrolled loops; other strides use a generic loop.
//
// Scan does nothing if stride < 1 or len(q) != stride; a trailing partial
// fingerprint of flat (len(flat) not a multiple of stride) is ignored.
func Scan(flat []uint64, stride int, q []uint64, maxDist int, fn func(i, d int)) {
	if stride < 1 || len(q) != stride || maxDist < 0 {
		return
	}
	flat = flat[:len(flat)-len(flat)%stride]
	switch stride {
	case 1:
		scan1(flat, q, maxDist, fn)
	case 2:
		scan2(flat, q, maxDist, fn)
	case 4:
		scan4(flat, q, maxDist, fn)
	case 8:
		scan8(flat, q, maxDist, fn)
	case 16:
		scan16(flat, q, maxDist, fn)
	default:
		scanGeneric(flat, stride, q, maxDist, fn)
	}
}

func scan1(flat, q []uint64, maxDist int, fn func(i, d int)) {
	q0 := q[0]
	i := 0
	for ; i+4 <= len(flat); i += 4 {
		x := flat[i : i+4 : i+4]
		d0 := bits.OnesCount64(x[0] ^ q0)
		d1 := bits.OnesCount64(x[1] ^ q0)
		d2 := bits.OnesCount64(x[2] ^ q0)
		d3 := bits.OnesCount64(x[3] ^ q0)
		if d0 <= maxDist {
			fn(i, d0)
		}
		if d1 <= maxDist {
			fn(i+1, d1)
		}
		if d2 <= maxDist {
			fn(i+2, d2)
		}
		if d3 <= maxDist {
			fn(i+3, d3)
		}
	}
	for ; i < len(flat); i++ {
		if d := bits.OnesCount64(flat[i] ^ q0); d <= maxDist {
			fn(i, d)
		}
	}
}

func scan2(flat, q []uint64, maxDist int, fn func(i, d int)) {
	q0, q1 := q[0], q[1]
	for i, n := 0, 0; i+2 <= len(flat); i, n = i+2, n+1 {
		x := flat[i : i+2 : i+2]
		d := bits.OnesCount64(x[0]^q0) + bits.OnesCount64(x[1]^q1)
		if d <= maxDist {
			fn(n, d)
		}
	}
}

func scan4(flat, q []uint64, maxDist int, fn func(i, d int)) {
	q0, q1, q2, q3 := q[0], q[1], q[2], q[3]
	for i, n := 0, 0; i+4 <= len(flat); i, n = i+4, n+1 {
		x := flat[i : i+4 : i+4]
		d := bits.OnesCount64(x[0]^q0) + bits.OnesCount64(x[1]^q1) +
			bits.OnesCount64(x[2]^q2) + bits.OnesCount64(x[3]^q3)
		if d <= maxDist {
			fn(n, d)
		}
	}
}

func scan8(flat, q []uint64, maxDist int, fn func(i, d int)) {
	q0, q1, q2, q3 := q[0], q[1], q[2], q[3]
	q4, q5, q6, q7 := q[4], q[5], q[6], q[7]
	for i, n := 0, 0; i+8 <= len(flat); i, n = i+8, n+1 {
		x := flat[i : i+8 : i+8]
		d := bits.OnesCount64(x[0]^q0) + bits.OnesCount64(x[1]^q1) +
			bits.OnesCount64(x[2]^q2) + bits.OnesCount64(x[3]^q3) +
			bits.OnesCount64(x[4]^q4) + bits.OnesCount64(x[5]^q5) +
			bits.OnesCount64(x[6]^q6) + bits.OnesCount64(x[7]^q7)
		if d <= maxDist {
			fn(n, d)
		}
	}
}

func scan16(flat, q []uint64, maxDist int, fn func(i, d int)) {
	q = q[:16:16]
	for i, n := 0, 0; i+16 <= len(flat); i, n = i+16, n+1 {
		x := flat[i : i+16 : i+16]
		d := bits.OnesCount64(x[0]^q[0]) + bits.OnesCount64(x[1]^q[1]) +
			bits.OnesCount64(x[2]^q[2]) + bits.OnesCount64(x[3]^q[3]) +
			bits.OnesCount64(x[4]^q[4]) + bits.OnesCount64(x[5]^q[5]) +
			bits.OnesCount64(x[6]^q[6]) + bits.OnesCount64(x[7]^q[7]) +
			bits.OnesCount64(x[8]^q[8]) + bits.OnesCount64(x[9]^q[9]) +
			bits.OnesCount64(x[10]^q[10]) + bits.OnesCount64(x[11]^q[11]) +
			bits.OnesCount64(x[12]^q[12]) + bits.OnesCount64(x[13]^q[13]) +
			bits.OnesCount64(x[14]^q[14]) + bits.OnesCount64(x[15]^q[15])
		if d <= maxDist {
			fn(n, d)
		}
	}
}

func scanGeneric(flat []uint64, stride int, q []uint64, maxDist int, fn func(i, d int)) {
	for i, n := 0, 0; i+stride <= len(flat); i, n = i+stride, n+1 {
		if d := Hamming(flat[i:i+stride:i+stride], q); d <= maxDist {
			fn(n, d)
		}
	}
}
