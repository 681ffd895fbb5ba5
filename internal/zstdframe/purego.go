//go:build !cgo

package zstdframe

import "github.com/klauspost/compress/zstd"

// Library names the zstd compressor of this build.
const Library = "github.com/klauspost/compress/zstd"

// goEncoder compresses with the pure-Go encoder.
type goEncoder struct{ enc *zstd.Encoder }

func newEncoder(k Kind) (Encoder, error) {
	level := zstd.SpeedFastest
	if k == Short {
		level = zstd.SpeedDefault
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	return &goEncoder{enc: enc}, nil
}

func (z *goEncoder) Append(dst, src []byte) ([]byte, error) { return z.enc.EncodeAll(src, dst), nil }
