package fingerprint

import (
	"crypto/sha256"
	"hash"

	"github.com/fpdb/fpdb/internal/normalize"
)

// contentHash gathers a text's content hash: the first 16 bytes of the
// SHA-256 of its normalized words, each followed by one space. Builder and
// Hasher both compute it with one.
type contentHash struct {
	sha  hash.Hash
	text []byte // normalized text not yet written to sha
}

func newContentHash() contentHash {
	return contentHash{sha: sha256.New(), text: make([]byte, 0, hashBufSize)}
}

func (c *contentHash) reset() {
	c.sha.Reset()
	c.text = c.text[:0]
}

func (c *contentHash) word(w []byte) {
	if len(c.text)+len(w)+1 > cap(c.text) {
		c.sha.Write(c.text)
		c.text = c.text[:0]
	}
	c.text = append(c.text, w...)
	c.text = append(c.text, ' ')
}

func (c *contentHash) sum() (s [16]byte) {
	c.sha.Write(c.text)
	var full [sha256.Size]byte
	copy(s[:], c.sha.Sum(full[:0]))
	return s
}

// Hasher computes the content hash and the word count of a text as a
// Builder of the same normalization version does (Result.ContentHash,
// Result.Words), without the fingerprint, in about a quarter of the time.
// It is reusable but not safe for concurrent use.
type Hasher struct {
	tok    normalize.Tokenizer
	ch     contentHash
	words  int
	onWord func([]byte)
}

// NewHasher returns a Hasher for normalization version version.
func NewHasher(version int) *Hasher {
	h := &Hasher{tok: normalize.Tokenizer{Version: version}, ch: newContentHash()}
	h.onWord = func(w []byte) {
		h.words++
		h.ch.word(w)
	}
	return h
}

// Hash returns the content hash of text read as f and its number of
// words; a text the tokenizer refuses (not UTF-8) gives its error.
func (h *Hasher) Hash(text []byte, f normalize.Format) (sum [16]byte, words int, err error) {
	h.tok.Format = f
	h.ch.reset()
	h.words = 0
	if err := h.tok.WordsBytes(text, h.onWord); err != nil {
		return sum, 0, err
	}
	return h.ch.sum(), h.words, nil
}
