package db

import (
	"crypto/sha256"
	"hash"

	"github.com/fpdb/fpdb/internal/normalize"
)

// textHasher computes the content hash of a text as fingerprint.Builder
// does — the first 16 bytes of the SHA-256 of the normalized words, each
// followed by one space — without the fingerprint, in about a quarter of
// the time: Check verifies every stored text with it.
// TestTextHasherMatchesBuilder keeps the two equal. Not safe for
// concurrent use.
type textHasher struct {
	tok    normalize.Tokenizer
	sha    hash.Hash
	buf    []byte // normalized words not yet written to sha
	words  int
	onWord func([]byte)
}

// newTextHasher returns a hasher for normalization version version.
func newTextHasher(version int) *textHasher {
	h := &textHasher{tok: normalize.Tokenizer{Version: version}, sha: sha256.New(), buf: make([]byte, 0, 8<<10)}
	h.onWord = h.word
	return h
}

func (h *textHasher) word(w []byte) {
	h.words++
	if len(h.buf)+len(w)+1 > cap(h.buf) {
		h.sha.Write(h.buf)
		h.buf = h.buf[:0]
	}
	h.buf = append(h.buf, w...)
	h.buf = append(h.buf, ' ')
}

// hash returns the content hash of text read as f (FormatText or
// FormatHTML, as stored) and its number of words; a text that is not
// UTF-8 gives the tokenizer's error.
func (h *textHasher) hash(text []byte, f Format) (sum [16]byte, words int, err error) {
	h.tok.Format = normalize.FormatText
	if f == FormatHTML {
		h.tok.Format = normalize.FormatMarkup
	}
	h.sha.Reset()
	h.buf, h.words = h.buf[:0], 0
	if err := h.tok.WordsBytes(text, h.onWord); err != nil {
		return sum, 0, err
	}
	h.sha.Write(h.buf)
	var full [sha256.Size]byte
	copy(sum[:], h.sha.Sum(full[:0]))
	return sum, h.words, nil
}
