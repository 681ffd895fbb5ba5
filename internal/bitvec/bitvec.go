package bitvec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// ErrBadFingerprint is wrapped by every error returned for a malformed
// fingerprint (wrong length, bad hex digit, invalid k). Test with errors.Is.
var ErrBadFingerprint = errors.New("bitvec: bad fingerprint")

// Words returns the number of 64-bit words of a k-bit fingerprint, k/64.
// k must be a positive multiple of 64; other values are not rejected here
// (use CheckK for that) and yield k/64.
func Words(k int) int { return k / 64 }

// CheckK reports an error wrapping ErrBadFingerprint unless k is a positive
// multiple of 64.
func CheckK(k int) error {
	if k <= 0 || k%64 != 0 {
		return fmt.Errorf("%w: k=%d is not a positive multiple of 64", ErrBadFingerprint, k)
	}
	return nil
}

// Hamming returns popcount(a xor b), the number of differing bits. a and b
// should have the same length; if they do not, only the common prefix of
// min(len(a), len(b)) words is compared.
func Hamming(a, b []uint64) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	d := 0
	i := 0
	for ; i+4 <= n; i += 4 {
		d += bits.OnesCount64(a[i]^b[i]) + bits.OnesCount64(a[i+1]^b[i+1]) +
			bits.OnesCount64(a[i+2]^b[i+2]) + bits.OnesCount64(a[i+3]^b[i+3])
	}
	for ; i < n; i++ {
		d += bits.OnesCount64(a[i] ^ b[i])
	}
	return d
}

// Bits returns the value of the width bits of v starting at bit start; bit
// start becomes the least significant bit of the result. width must be in
// 1..32 and the field may straddle a word boundary. Bits outside v read as
// zero; a width outside 1..32 or a negative start yields 0.
func Bits(v []uint64, start, width int) uint32 {
	if width < 1 || width > 32 || start < 0 {
		return 0
	}
	w, off := start>>6, uint(start&63)
	if w >= len(v) {
		return 0
	}
	x := v[w] >> off
	if int(off)+width > 64 && w+1 < len(v) {
		x |= v[w+1] << (64 - off)
	}
	return uint32(x & (1<<uint(width) - 1))
}

const hexDigits = "0123456789abcdef"

// FormatHex returns v as lower-case hex: word 0 first, each word as 16 hex
// digits, most significant digit first. A k-bit fingerprint yields k/4
// characters.
func FormatHex(v []uint64) string {
	buf := make([]byte, 16*len(v))
	for i, w := range v {
		b := buf[16*i : 16*i+16]
		for j := 15; j >= 0; j-- {
			b[j] = hexDigits[w&15]
			w >>= 4
		}
	}
	return string(buf)
}

// ParseHex parses the output of FormatHex for a k-bit fingerprint. Upper-case
// digits are accepted. A wrong length, a bad digit or an invalid k yields an
// error wrapping ErrBadFingerprint.
func ParseHex(s string, k int) ([]uint64, error) {
	if err := CheckK(k); err != nil {
		return nil, err
	}
	if len(s) != k/4 {
		return nil, fmt.Errorf("%w: want %d hex digits for k=%d, got %d", ErrBadFingerprint, k/4, k, len(s))
	}
	v := make([]uint64, k/64)
	for i := range v {
		var w uint64
		for j := 0; j < 16; j++ {
			c := s[16*i+j]
			var d byte
			switch {
			case c >= '0' && c <= '9':
				d = c - '0'
			case c >= 'a' && c <= 'f':
				d = c - 'a' + 10
			case c >= 'A' && c <= 'F':
				d = c - 'A' + 10
			default:
				return nil, fmt.Errorf("%w: bad hex digit %q at offset %d", ErrBadFingerprint, c, 16*i+j)
			}
			w = w<<4 | uint64(d)
		}
		v[i] = w
	}
	return v, nil
}

// AppendBytes appends the on-disk form of v to dst: 8 little-endian bytes
// per word, word 0 first.
func AppendBytes(dst []byte, v []uint64) []byte {
	for _, w := range v {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return dst
}

// FromBytes decodes the on-disk form written by AppendBytes of a k-bit
// fingerprint into a new slice (b is not retained). A length other than k/8
// or an invalid k yields an error wrapping ErrBadFingerprint.
func FromBytes(b []byte, k int) ([]uint64, error) {
	if err := CheckK(k); err != nil {
		return nil, err
	}
	if len(b) != k/8 {
		return nil, fmt.Errorf("%w: want %d bytes for k=%d, got %d", ErrBadFingerprint, k/8, k, len(b))
	}
	v := make([]uint64, k/64)
	for i := range v {
		v[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return v, nil
}
