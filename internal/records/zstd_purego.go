//go:build !cgo

package records

import "github.com/klauspost/compress/zstd"

// zstdLibrary names the zstd compressor of this build.
const zstdLibrary = "github.com/klauspost/compress/zstd"

// goZstdFrames compresses with the pure-Go encoder at its fastest level
// (builds without cgo).
type goZstdFrames struct{ enc *zstd.Encoder }

func newZstdFrames() (zstdFrames, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	return &goZstdFrames{enc: enc}, nil
}

func (z *goZstdFrames) frame(dst, src []byte) ([]byte, error) {
	return z.enc.EncodeAll(src, dst[:0]), nil
}
