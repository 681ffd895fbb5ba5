package records

import (
	"fmt"
	"sync"

	"github.com/parquet-go/parquet-go/compress"
	pqzstd "github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/format"

	"github.com/fpdb/fpdb/internal/zstdframe"
)

// zstdFrames compresses a buffer into one zstd frame, in dst's storage;
// not safe for concurrent use. A .zst output is a sequence of such frames,
// one per buffer of its background writer (a zstd stream may hold many
// frames: every decoder reads them as one text), and a Parquet output's
// zstd pages are one frame each. The compressor is libzstd at level 1 in
// builds with cgo (1.7 times as fast as the pure-Go encoder's fastest
// level on text records, at a slightly lower ratio: BenchmarkZstdOutput),
// the pure-Go encoder otherwise (package zstdframe).
type zstdFrames interface {
	frame(dst, src []byte) ([]byte, error)
}

// zstdLibrary names the zstd compressor of this build.
const zstdLibrary = zstdframe.Library

// frames is the zstdFrames of zstdframe's encoder for long buffers.
type frames struct{ e zstdframe.Encoder }

func newZstdFrames() (zstdFrames, error) {
	e, err := zstdframe.New(zstdframe.Long)
	if err != nil {
		return nil, err
	}
	return frames{e}, nil
}

func (f frames) frame(dst, src []byte) ([]byte, error) { return f.e.Append(dst[:0], src) }

// pqZstdCodec is the zstd codec of Parquet outputs: pages compressed by
// zstdFrames, read back by parquet-go's own codec.
type pqZstdCodec struct {
	pool sync.Pool // of zstdFrames: pages are compressed on several goroutines
	dec  pqzstd.Codec
}

var _ compress.Codec = (*pqZstdCodec)(nil)

func (c *pqZstdCodec) String() string                            { return "ZSTD" }
func (c *pqZstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }
func (c *pqZstdCodec) Decode(dst, src []byte) ([]byte, error)    { return c.dec.Decode(dst, src) }

func (c *pqZstdCodec) Encode(dst, src []byte) ([]byte, error) {
	z, _ := c.pool.Get().(zstdFrames)
	if z == nil {
		var err error
		if z, err = newZstdFrames(); err != nil {
			return dst, fmt.Errorf("records: zstd: %w", err)
		}
	}
	defer c.pool.Put(z)
	return z.frame(dst, src)
}
