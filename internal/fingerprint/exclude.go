package fingerprint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"slices"

	"github.com/fpdb/fpdb/internal/normalize"
	"github.com/fpdb/fpdb/internal/splitmix"
)

// Exclude is an immutable set of shingle hashes that a Builder leaves out
// of the sketch: the shingles of template texts (a call for proposals, a
// license header, starter code), so that text shared only through a
// template never makes two documents similar. A nil *Exclude is the empty
// set. It is safe for concurrent use.
type Exclude struct {
	set map[uint64]struct{}
}

// NewExclude returns the set of the given hashes (repeats allowed), or nil
// when there are none.
func NewExclude(hashes []uint64) *Exclude {
	if len(hashes) == 0 {
		return nil
	}
	e := &Exclude{set: make(map[uint64]struct{}, len(hashes))}
	for _, h := range hashes {
		e.set[h] = struct{}{}
	}
	return e
}

// Has reports whether h is in the set.
func (e *Exclude) Has(h uint64) bool {
	if e == nil {
		return false
	}
	_, ok := e.set[h]
	return ok
}

// Len returns the number of hashes in the set.
func (e *Exclude) Len() int {
	if e == nil {
		return 0
	}
	return len(e.set)
}

// Shingles returns the distinct shingle hashes of the text read from r (of
// format f) under p's rules, ignoring p.Exclude, sorted. Errors are those
// of Builder.Read.
func (p Params) Shingles(r io.Reader, f normalize.Format) ([]uint64, error) {
	sh, err := p.NewShingler()
	if err != nil {
		return nil, err
	}
	var out []uint64
	emit := func(h uint64) { out = append(out, h) }
	tok := &normalize.Tokenizer{Version: p.NormalizeVersion, Format: f}
	if err := tok.Words(r, func(w []byte) { sh.Add(w, emit) }); err != nil {
		return nil, fmt.Errorf("fingerprint: %w", err)
	}
	if sh.Finish(emit) == 0 {
		return nil, ErrNoWords
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ShinglesOf is Shingles of a text in memory.
func (p Params) ShinglesOf(text []byte, f normalize.Format) ([]uint64, error) {
	return p.Shingles(bytes.NewReader(text), f)
}

// templateOnly fills fp for a document whose every shingle is excluded: K
// bits drawn from its content hash, so that it matches its exact copies
// (same normalized words, same bits) and, like two random fingerprints,
// resembles no other document (estimated resemblance near 0).
func templateOnly(fp []uint64, hash [16]byte) {
	x := binary.LittleEndian.Uint64(hash[:8]) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(hash[8:]), 32)
	for i := range fp {
		fp[i] = splitmix.Next(&x)
	}
}

// Equal reports whether e and o hold the same hashes.
func (e *Exclude) Equal(o *Exclude) bool {
	if e.Len() != o.Len() {
		return false
	}
	for h := range e.setOrNil() {
		if !o.Has(h) {
			return false
		}
	}
	return true
}

func (e *Exclude) setOrNil() map[uint64]struct{} {
	if e == nil {
		return nil
	}
	return e.set
}
