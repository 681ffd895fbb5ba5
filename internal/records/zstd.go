package records

import (
	"fmt"
	"sync"

	"github.com/parquet-go/parquet-go/compress"
	pqzstd "github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
)

// zstdFrames compresses a buffer into one zstd frame; not safe for
// concurrent use. A .zst output is a sequence of such frames, one per
// buffer of its background writer (a zstd stream may hold many frames:
// every decoder reads them as one text), and a Parquet output's zstd pages
// are one frame each. The compressor is libzstd in builds with cgo, the
// pure-Go encoder otherwise (zstd_cgo.go, zstd_purego.go).
type zstdFrames interface {
	frame(dst, src []byte) ([]byte, error)
}

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
