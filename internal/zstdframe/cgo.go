//go:build cgo

package zstdframe

import (
	"encoding/binary"
	"errors"
	"slices"

	ddzstd "github.com/DataDog/zstd"
	"github.com/cespare/xxhash/v2"
)

// Library names the zstd compressor of this build.
const Library = "libzstd (github.com/DataDog/zstd)"

// libzstd compresses with libzstd at level 1.
type libzstd struct{ ctx ddzstd.Ctx }

func newEncoder(Kind) (Encoder, error) { return &libzstd{ctx: ddzstd.NewCtx()}, nil }

// Frame format constants (RFC 8878, 3.1.1): the magic number, and the
// Content_Checksum_flag of the Frame_Header_Descriptor that follows it.
const (
	frameMagic   = 0xFD2FB528
	checksumFlag = 1 << 2
)

// Append compresses src with libzstd and gives the frame the content
// checksum that the pure-Go encoder writes and libzstd does not by
// default (github.com/DataDog/zstd sets no frame parameters): the flag in
// the frame header and the low 32 bits of XXH64(src) after the last
// block, so that a decoder detects a damaged frame rather than return
// other text.
func (z *libzstd) Append(dst, src []byte) ([]byte, error) {
	n := len(dst)
	dst = slices.Grow(dst, ddzstd.CompressBound(len(src))+4)
	out, err := z.ctx.CompressLevel(dst[n:cap(dst)], src, 1)
	if err != nil {
		return dst[:n], err
	}
	// The bound fits, so libzstd wrote in place.
	dst = dst[:n+len(out)]
	if len(out) < 5 || binary.LittleEndian.Uint32(out) != frameMagic {
		return dst[:n], errors.New("zstdframe: libzstd wrote no zstd frame header")
	}
	if out[4]&checksumFlag != 0 {
		return dst, nil
	}
	dst[n+4] |= checksumFlag
	return binary.LittleEndian.AppendUint32(dst, uint32(xxhash.Sum64(src))), nil
}
