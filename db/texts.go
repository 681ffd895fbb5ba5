package db

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/klauspost/compress/zstd"

	"github.com/fpdb/fpdb/internal/keys"
	"github.com/fpdb/fpdb/internal/normalize"
	"github.com/fpdb/fpdb/internal/zstdframe"
)

// textValueVersion is the first byte of a stored text (the value of a
// keys.Text key): version, format byte (textFormatPlain or
// textFormatMarkup), then one zstd frame of the UTF-8 text.
const textValueVersion = 1

// Format bytes of a stored text: how its words were read. They are
// on-disk values, independent of the numbering of Format.
const (
	textFormatPlain  = 1
	textFormatMarkup = 2
)

// StoredText is a document's text as a database that keeps texts stored it
// (Options.KeepTexts).
type StoredText struct {
	// Text is the text the document's words were read from: UTF-8, after
	// the input's character encoding was decoded, markup included.
	Text []byte
	// Format is how the text was read: FormatText or FormatHTML (what
	// FormatAuto chose, never FormatAuto itself). Reading Text again with
	// it and the database's normalization version gives the same words.
	Format Format
}

// textCodec compresses and decompresses the texts of one DB; safe for
// concurrent use. Texts are compressed by zstdframe's encoder for short
// texts: libzstd at level 1 in builds with cgo, 1.6 to 2.5 times as fast
// as the pure-Go encoder's default level on 2 KB texts at nearly the same
// size (zstdframe.BenchmarkShort); any zstd decoder reads either.
type textCodec struct {
	encs sync.Pool // of zstdframe.Encoder: texts are compressed on several goroutines
	dec  *zstd.Decoder
}

// newTextCodec returns a codec; close releases it.
func newTextCodec() (*textCodec, error) {
	// A damaged frame header cannot make DecodeAll allocate more than the
	// largest text a database accepts.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxMaxTextSize), zstd.WithDecoderConcurrency(0))
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	return &textCodec{dec: dec}, nil
}

// close releases the codec; a nil codec is a no-op.
func (c *textCodec) close() {
	if c == nil {
		return
	}
	c.dec.Close()
}

// encode returns the stored value of text read with format f.
func (c *textCodec) encode(text []byte, f normalize.Format) ([]byte, error) {
	fb := byte(textFormatPlain)
	if f == normalize.FormatMarkup {
		fb = textFormatMarkup
	}
	e, _ := c.encs.Get().(zstdframe.Encoder)
	if e == nil {
		var err error
		if e, err = zstdframe.New(zstdframe.Short); err != nil {
			return nil, fmt.Errorf("zstd encoder: %w", err)
		}
	}
	defer c.encs.Put(e)
	v := make([]byte, 2, 2+len(text)/3+64)
	v[0], v[1] = textValueVersion, fb
	v, err := e.Append(v, text)
	if err != nil {
		return nil, fmt.Errorf("compressing the text: %w", err)
	}
	return v, nil
}

// decode decodes a stored value into dst's storage (dst may be nil).
// Errors wrap ErrCorrupt.
func (c *textCodec) decode(v, dst []byte) (StoredText, error) {
	if len(v) < 2 {
		return StoredText{}, fmt.Errorf("%w: text is %d bytes", ErrCorrupt, len(v))
	}
	if v[0] != textValueVersion {
		return StoredText{}, fmt.Errorf("%w: text version %d, this build reads %d", ErrCorrupt, v[0], textValueVersion)
	}
	var st StoredText
	switch v[1] {
	case textFormatPlain:
		st.Format = FormatText
	case textFormatMarkup:
		st.Format = FormatHTML
	default:
		return StoredText{}, fmt.Errorf("%w: text format byte %d", ErrCorrupt, v[1])
	}
	text, err := c.dec.DecodeAll(v[2:], dst[:0])
	if err != nil {
		return StoredText{}, fmt.Errorf("%w: text: zstd: %w", ErrCorrupt, err)
	}
	st.Text = text
	return st, nil
}

// rawSize returns the decompressed size a stored value's frame header
// announces, or -1 when it announces none.
func rawSize(v []byte) int64 {
	var h zstd.Header
	if len(v) < 2 || h.Decode(v[2:]) != nil || !h.HasFCS {
		return -1
	}
	return int64(h.FrameContentSize)
}

// errTextLimit is what a textCapture's Write returns past its limit; build
// turns it into an error wrapping ErrTextTooLarge.
var errTextLimit = errors.New("text limit reached")

// textCapture keeps a copy of the decoded text the tokenizer reads, up to
// limit bytes.
type textCapture struct {
	buf   []byte
	limit int64
	over  bool
}

// Write appends p, or fails once the text would exceed the limit.
func (c *textCapture) Write(p []byte) (int, error) {
	if int64(len(c.buf))+int64(len(p)) > c.limit {
		c.over = true
		return 0, errTextLimit
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

// format returns the format the tokenizer read the captured text as: f,
// or for FormatAuto what normalize.Sniff decides from the same first
// bytes the tokenizer sniffs.
func (c *textCapture) format(f normalize.Format) normalize.Format {
	if f != normalize.FormatAuto {
		return f
	}
	return normalize.Sniff(c.buf[:min(len(c.buf), normalize.SniffLen)])
}

// maxPooledText is the largest capture buffer kept for reuse
// (DB.textBufs).
const maxPooledText = 1 << 20

// Text returns the text stored with the document id (see
// Options.KeepTexts). It fails with an error wrapping ErrNotFound when no
// document has the id, and ErrNoText when the database does not keep
// texts or the document has none (it was added by fingerprint, or
// imported without one). The returned slices belong to the caller.
func (d *DB) Text(ctx context.Context, id string) (*StoredText, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validID(id); err != nil {
		return nil, fmt.Errorf("fpdb: text: %w", err)
	}
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	defer d.leave()
	v, err := d.rawText(id)
	if err != nil {
		return nil, fmt.Errorf("fpdb: text %q: %w", id, err)
	}
	st, err := d.texts.decode(v, nil)
	if err != nil {
		return nil, fmt.Errorf("fpdb: text %q: %w", id, err)
	}
	return &st, nil
}

// rawText returns a copy of the stored value of id's text, read under mu
// so that the id map and the text are of the same version.
func (d *DB) rawText(id string) ([]byte, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, v, err := d.rawTextLocked(id)
	return v, err
}

// rawTextLocked is rawText with mu held; it also returns the document's
// internal id.
func (d *DB) rawTextLocked(id string) (uint32, []byte, error) {
	iid, found, err := d.lookup(id)
	if err != nil {
		return 0, nil, storageError(err)
	}
	if !found {
		return 0, nil, ErrNotFound
	}
	if !d.params.KeepTexts {
		return 0, nil, fmt.Errorf("%w: the database does not keep texts (it was created without Options.KeepTexts)", ErrNoText)
	}
	v, closer, err := d.pdb.Get(keys.Text(iid))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil, fmt.Errorf("%w: the document was stored without one (added by fingerprint)", ErrNoText)
	}
	if err != nil {
		return 0, nil, storageError(err)
	}
	defer closer.Close()
	return iid, append([]byte(nil), v...), nil
}

// hasText reports whether internal id iid has a stored text. writeMu is
// held.
func (d *DB) hasText(iid uint32) (bool, error) {
	_, closer, err := d.pdb.Get(keys.Text(iid))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}
