package bitvec

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func randVec(r *rand.Rand, n int) []uint64 {
	v := make([]uint64, n)
	for i := range v {
		v[i] = r.Uint64()
	}
	return v
}

func bit(v []uint64, j int) uint64 { return v[j/64] >> uint(j%64) & 1 }

func naiveHamming(a, b []uint64) int {
	d := 0
	for j := 0; j < 64*len(a); j++ {
		if bit(a, j) != bit(b, j) {
			d++
		}
	}
	return d
}

func TestHamming(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for stride := 0; stride <= 20; stride++ {
		for trial := 0; trial < 200; trial++ {
			a := randVec(r, stride)
			b := append([]uint64(nil), a...)
			// Flip a random number of bits so small distances occur too.
			for f := r.IntN(8); f > 0 && stride > 0; f-- {
				j := r.IntN(64 * stride)
				b[j/64] ^= 1 << uint(j%64)
			}
			if trial%2 == 1 {
				b = randVec(r, stride)
			}
			if got, want := Hamming(a, b), naiveHamming(a, b); got != want {
				t.Fatalf("stride %d: Hamming = %d, want %d", stride, got, want)
			}
		}
	}
	// Mismatched lengths compare the common prefix and do not panic.
	if got := Hamming([]uint64{1, 3}, []uint64{0}); got != 1 {
		t.Fatalf("mismatched lengths: got %d, want 1", got)
	}
}

func TestBits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 20000; trial++ {
		n := 1 + r.IntN(8)
		v := randVec(r, n)
		width := 1 + r.IntN(32)
		start := r.IntN(64*n - width + 1)
		var want uint32
		for j := 0; j < width; j++ {
			want |= uint32(bit(v, start+j)) << uint(j)
		}
		if got := Bits(v, start, width); got != want {
			t.Fatalf("Bits(start=%d, width=%d) = %#x, want %#x", start, width, got, want)
		}
	}
	v := []uint64{^uint64(0), ^uint64(0)}
	for _, tc := range []struct{ start, width int }{{-1, 4}, {0, 0}, {0, 33}, {128, 4}} {
		if got := Bits(v, tc.start, tc.width); got != 0 {
			t.Errorf("Bits(%d, %d) = %#x, want 0", tc.start, tc.width, got)
		}
	}
	if got := Bits(v, 124, 8); got != 0xf {
		t.Errorf("Bits past the end = %#x, want 0xf", got)
	}
}

func TestHexRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{64, 128, 256, 512, 1024} {
		v := randVec(r, Words(k))
		s := FormatHex(v)
		if len(s) != k/4 || strings.ToLower(s) != s {
			t.Fatalf("FormatHex: bad form %q", s)
		}
		got, err := ParseHex(s, k)
		if err != nil {
			t.Fatal(err)
		}
		if Hamming(got, v) != 0 || len(got) != len(v) {
			t.Fatalf("round trip mismatch")
		}
		got, err = ParseHex(strings.ToUpper(s), k)
		if err != nil || Hamming(got, v) != 0 {
			t.Fatalf("upper case: %v", err)
		}
	}
	if got := FormatHex([]uint64{0x0123456789abcdef, 1}); got != "0123456789abcdef0000000000000001" {
		t.Fatalf("FormatHex = %q", got)
	}
}

func TestParseHexErrors(t *testing.T) {
	good := strings.Repeat("0", 32)
	for _, tc := range []struct {
		s    string
		k    int
		want string
	}{
		{good[:31], 128, "want 32 hex digits for k=128, got 31"},
		{good + "0", 128, "got 33"},
		{"", 64, "got 0"},
		{good[:31] + "g", 128, "bad hex digit 'g' at offset 31"},
		{good[:15] + " ", 64, "offset 15"},
		{good, 100, "not a positive multiple of 64"},
		{"", 0, "not a positive multiple of 64"},
	} {
		_, err := ParseHex(tc.s, tc.k)
		if !errors.Is(err, ErrBadFingerprint) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseHex(%q, %d) error = %v, want %q", tc.s, tc.k, err, tc.want)
		}
	}
}

func TestBytesRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, k := range []int{64, 192, 512} {
		v := randVec(r, Words(k))
		b := AppendBytes([]byte("x"), v)
		if len(b) != 1+k/8 {
			t.Fatalf("len = %d", len(b))
		}
		got, err := FromBytes(b[1:], k)
		if err != nil || Hamming(got, v) != 0 || len(got) != len(v) {
			t.Fatalf("round trip: %v", err)
		}
		if _, err := FromBytes(b, k); !errors.Is(err, ErrBadFingerprint) {
			t.Fatalf("long input: err = %v", err)
		}
		if _, err := FromBytes(b[2:], k); !errors.Is(err, ErrBadFingerprint) {
			t.Fatalf("short input: err = %v", err)
		}
	}
	if b := AppendBytes(nil, []uint64{0x0807060504030201}); string(b) != "\x01\x02\x03\x04\x05\x06\x07\x08" {
		t.Fatalf("not little-endian: %x", b)
	}
	if _, err := FromBytes(nil, -64); !errors.Is(err, ErrBadFingerprint) {
		t.Fatalf("bad k: err = %v", err)
	}
}

func TestScan(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for stride := 1; stride <= 20; stride++ {
		n := 1 + r.IntN(100)
		flat := randVec(r, n*stride)
		q := randVec(r, stride)
		// Plant near neighbours so every distance class occurs.
		for i := 0; i < n; i += 3 {
			fp := flat[i*stride : (i+1)*stride]
			copy(fp, q)
			for f := r.IntN(10); f > 0; f-- {
				j := r.IntN(64 * stride)
				fp[j/64] ^= 1 << uint(j%64)
			}
		}
		for _, maxDist := range []int{0, 3, 9, 32 * stride, 64 * stride} {
			var want, got [][2]int
			for i := 0; i < n; i++ {
				if d := naiveHamming(flat[i*stride:(i+1)*stride], q); d <= maxDist {
					want = append(want, [2]int{i, d})
				}
			}
			Scan(flat, stride, q, maxDist, func(i, d int) { got = append(got, [2]int{i, d}) })
			if len(got) != len(want) {
				t.Fatalf("stride %d maxDist %d: %d hits, want %d", stride, maxDist, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("stride %d maxDist %d: hit %d = %v, want %v", stride, maxDist, i, got[i], want[i])
				}
			}
		}
		// A trailing partial fingerprint is ignored.
		calls := 0
		Scan(append(flat, q[:stride-1]...), stride, q, 64*stride, func(i, d int) { calls++ })
		if calls != n {
			t.Fatalf("stride %d: partial tail: %d calls, want %d", stride, calls, n)
		}
	}
	// Bad arguments: no calls, no panic.
	fail := func(i, d int) { t.Fatalf("unexpected call") }
	Scan([]uint64{1, 2}, 0, nil, 10, fail)
	Scan([]uint64{1, 2}, 2, []uint64{1}, 10, fail)
	Scan([]uint64{1, 2}, 2, []uint64{1, 2}, -1, fail)
}

func binom(n, k int) int {
	c := 1
	for j := 0; j < k; j++ {
		c = c * (n - j) / (j + 1)
	}
	return c
}

func TestNeighbors(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for width := 1; width <= 32; width++ {
		for radius := 0; radius <= min(width+1, 4); radius++ {
			v := r.Uint32() & uint32(uint64(1)<<uint(width)-1)
			seen := make(map[uint32]bool)
			last := 0
			n := Neighbors(v, width, radius, func(u uint32, d int) {
				if seen[u] {
					t.Fatalf("w=%d r=%d: duplicate %#x", width, radius, u)
				}
				seen[u] = true
				if u>>uint(width) != 0 && width < 32 {
					t.Fatalf("w=%d: %#x outside the space", width, u)
				}
				x := u ^ v
				pc := 0
				for ; x != 0; x &= x - 1 {
					pc++
				}
				if pc != d || d > radius || d < last {
					t.Fatalf("w=%d r=%d: u=%#x d=%d (popcount %d, previous d %d)", width, radius, u, d, pc, last)
				}
				last = d
			})
			if want := BallSize(width, radius); n != want || len(seen) != want {
				t.Fatalf("w=%d r=%d: %d calls, %d distinct, want %d", width, radius, n, len(seen), want)
			}
		}
	}
	// Every width a layout allows (1 to 24), at every radius whose ball
	// holds at most 2^20 values: BallSize counts what Neighbors yields
	// (the probe sizes its array of values by it).
	for width := 1; width <= 24; width++ {
		for radius := 0; radius <= width && BallSize(width, radius) <= 1<<20; radius++ {
			if n := Neighbors(0, width, radius, func(uint32, int) {}); n != BallSize(width, radius) {
				t.Fatalf("w=%d r=%d: Neighbors yields %d, BallSize %d", width, radius, n, BallSize(width, radius))
			}
		}
	}
	// The whole space for small widths.
	for width := 1; width <= 10; width++ {
		if n := Neighbors(0, width, width, func(uint32, int) {}); n != 1<<uint(width) {
			t.Fatalf("w=%d: %d values, want %d", width, n, 1<<uint(width))
		}
	}
	fail := func(uint32, int) { t.Fatalf("unexpected call") }
	for _, tc := range [][2]int{{0, 1}, {33, 1}, {8, -1}} {
		if n := Neighbors(1, tc[0], tc[1], fail); n != 0 {
			t.Fatalf("Neighbors(w=%d, r=%d) = %d", tc[0], tc[1], n)
		}
	}
}

func TestBallSize(t *testing.T) {
	for width := 0; width <= 62; width++ {
		sum := 0
		for radius := 0; radius <= width; radius++ {
			if width <= 30 {
				sum += binom(width, radius)
				if got := BallSize(width, radius); got != sum {
					t.Fatalf("BallSize(%d, %d) = %d, want %d", width, radius, got, sum)
				}
			}
		}
		if got := BallSize(width, width+5); got != 1<<uint(width) {
			t.Fatalf("BallSize(%d, all) = %d", width, got)
		}
	}
	if BallSize(16, 2) != 137 || BallSize(12, 1) != 13 || BallSize(-1, 1) != 0 || BallSize(63, 1) != 0 || BallSize(8, -1) != 0 {
		t.Fatal("BallSize edge cases")
	}
}

func FuzzParseHex(f *testing.F) {
	f.Add("0123456789abcdef", 64)
	f.Add("0123456789ABCDEF0000000000000000", 128)
	f.Add("xyz", 64)
	f.Add("", 0)
	f.Fuzz(func(t *testing.T, s string, k int) {
		v, err := ParseHex(s, k)
		if err != nil {
			if !errors.Is(err, ErrBadFingerprint) {
				t.Fatalf("error does not wrap ErrBadFingerprint: %v", err)
			}
			return
		}
		if got := FormatHex(v); got != strings.ToLower(s) {
			t.Fatalf("round trip: %q -> %q", s, got)
		}
	})
}

func FuzzFromBytes(f *testing.F) {
	f.Add([]byte("01234567"), 64)
	f.Add([]byte("0123456789abcdef"), 128)
	f.Add([]byte{}, 64)
	f.Fuzz(func(t *testing.T, b []byte, k int) {
		v, err := FromBytes(b, k)
		if err != nil {
			if !errors.Is(err, ErrBadFingerprint) {
				t.Fatalf("error does not wrap ErrBadFingerprint: %v", err)
			}
			return
		}
		if got := AppendBytes(nil, v); string(got) != string(b) {
			t.Fatalf("round trip: %x -> %x", b, got)
		}
	})
}
