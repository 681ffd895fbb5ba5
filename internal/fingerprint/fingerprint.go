package fingerprint

import (
	"errors"
	"fmt"
	"io"

	"github.com/fpdb/fpdb/internal/minhash"
	"github.com/fpdb/fpdb/internal/normalize"
	"github.com/fpdb/fpdb/internal/shingle"
	"github.com/fpdb/fpdb/internal/splitmix"
)

// HashVersion is the version of the shingle-hash and min-hash scheme
// (word hash, shingle combination, seed derivation, bin assignment,
// densification and output bit). Bump it on any change to their output.
const HashVersion = 1

// DefaultSeed is the seed of DefaultParams: the bytes of "fpdb1".
const DefaultSeed = 0x6670646231

// Params define a fingerprint. Two fingerprints are comparable only if they
// were made with equal Params (and equal HashVersion and normalize.Version).
type Params struct {
	// K is the number of bits of the fingerprint: a positive multiple of
	// 64, at most minhash.MaxK.
	K int
	// ShingleWidth is the number of consecutive words per shingle, in
	// [1, shingle.MaxWidth].
	ShingleWidth int
	// Seed selects the hash functions; the shingle and min-hash seeds are
	// derived from it.
	Seed uint64
	// NormalizeVersion selects the text normalization rules; 0 means
	// normalize.Version.
	NormalizeVersion int
	// Exclude, when not nil, is the set of shingles left out of every
	// fingerprint (templates). Two Params are equal only with the same
	// set (the same pointer).
	Exclude *Exclude
}

// DefaultParams returns K = 512, ShingleWidth = 4, Seed = DefaultSeed and
// the current normalization rules.
func DefaultParams() Params {
	return Params{K: 512, ShingleWidth: 4, Seed: DefaultSeed, NormalizeVersion: normalize.Version}
}

// ErrInvalidParams is wrapped by the errors of Params.Validate.
var ErrInvalidParams = errors.New("fingerprint: invalid parameters")

// Validate reports every problem of p at once, each wrapping
// ErrInvalidParams, or nil.
func (p Params) Validate() error {
	var errs []error
	if p.K <= 0 || p.K%64 != 0 || p.K > minhash.MaxK {
		errs = append(errs, fmt.Errorf("%w: K = %d is not a positive multiple of 64 up to %d", ErrInvalidParams, p.K, minhash.MaxK))
	}
	if p.ShingleWidth < 1 || p.ShingleWidth > shingle.MaxWidth {
		errs = append(errs, fmt.Errorf("%w: ShingleWidth = %d is outside [1, %d]", ErrInvalidParams, p.ShingleWidth, shingle.MaxWidth))
	}
	if v := p.NormalizeVersion; v != 0 && (v < normalize.MinVersion || v > normalize.Version) {
		errs = append(errs, fmt.Errorf("%w: NormalizeVersion = %d is outside [%d, %d]", ErrInvalidParams, v, normalize.MinVersion, normalize.Version))
	}
	return errors.Join(errs...)
}

// seeds derives the shingle and min-hash seeds from p.Seed with two
// SplitMix64 steps.
func (p Params) seeds() (shingleSeed, minhashSeed uint64) {
	x := p.Seed
	return splitmix.Next(&x), splitmix.Next(&x)
}

// ErrNoWords is returned for a document without a single word (empty,
// punctuation only, markup only).
var ErrNoWords = errors.New("fingerprint: document has no words")

// Result is the fingerprint of one document.
type Result struct {
	// FP is the K-bit fingerprint: bit j is bit j%64 of FP[j/64]. It is a
	// fresh slice owned by the caller.
	FP []uint64
	// ContentHash is the first 16 bytes of the SHA-256 of the normalized
	// words, each followed by one space: equal for documents that normalize
	// to the same text.
	ContentHash [16]byte
	// Words is the number of normalized words.
	Words int
	// Shingles is the number of shingle hashes added to the sketch,
	// repeats included: Words−ShingleWidth+1, or 1 for a document with
	// fewer than ShingleWidth words.
	Shingles int
	// Distinct is the number of distinct shingles (exact up to
	// MaxDistinct), the set size that containment is estimated with.
	Distinct int
	// Excluded is the number of shingles left out because they are in
	// Params.Exclude, repeats included. When every shingle is excluded
	// (Shingles and Distinct are 0), FP is drawn from ContentHash: the
	// document matches its exact copies and resembles no other.
	Excluded int
}

// hashBufSize is how many bytes of normalized text are gathered before they
// are written to the content hash.
const hashBufSize = 8 << 10

// Builder computes fingerprints. It is reusable but not safe for concurrent
// use.
type Builder struct {
	p         Params
	tok       *normalize.Tokenizer
	sh        *shingle.Shingler
	mh        *minhash.Sketcher
	ch        contentHash
	shingles  int
	excluded  int
	distinct  distinctSet
	words     []uint64 // hashes of the words not yet shingled
	shs       []uint64 // scratch: the shingle hashes of words
	onWord    func([]byte)
	onShingle func(uint64)
}

// wordChunk is how many words a Builder gathers before it hashes their
// shingles, in one loop (shingle.Shingler.AddHashes).
const wordChunk = 512

// NewBuilder returns a Builder for p, or an error wrapping ErrInvalidParams.
func NewBuilder(p Params) (*Builder, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	sh, err := p.NewShingler()
	if err != nil {
		return nil, err
	}
	_, mhSeed := p.seeds()
	mh, err := minhash.New(p.K, mhSeed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParams, err)
	}
	b := &Builder{
		p:   p,
		tok: &normalize.Tokenizer{Version: p.NormalizeVersion},
		sh:  sh,
		mh:  mh,
		ch:  newContentHash(),
	}
	b.onWord = b.word
	b.onShingle = b.shingle
	return b, nil
}

// Params returns the parameters of b.
func (b *Builder) Params() Params { return b.p }

func (b *Builder) word(w []byte) {
	b.words = append(b.words, b.sh.WordHash(w))
	if len(b.words) == wordChunk {
		b.addWords()
	}
	b.ch.word(w)
}

// addWords adds the shingles that the gathered words complete.
func (b *Builder) addWords() {
	b.shs = b.sh.AddHashes(b.shs[:0], b.words)
	b.words = b.words[:0]
	b.addShingles(b.shs)
}

// addShingles adds the shingle hashes hs (but those of Params.Exclude),
// each step in a loop of its own, whose iterations the processor overlaps.
func (b *Builder) addShingles(hs []uint64) {
	if b.p.Exclude != nil {
		kept := hs[:0]
		for _, h := range hs {
			if b.p.Exclude.Has(h) {
				b.excluded++
			} else {
				kept = append(kept, h)
			}
		}
		hs = kept
	}
	b.mh.AddAll(hs)
	for _, h := range hs {
		b.distinct.add(h)
	}
	b.shingles += len(hs)
}

// shingle adds one shingle hash (the one of a document shorter than the
// shingle width).
func (b *Builder) shingle(h uint64) { b.addShingles(append(b.shs[:0], h)) }

// FromReader reads r to EOF and returns the fingerprint of its text,
// sniffing whether it is markup (normalize.FormatAuto). Memory use is
// bounded whatever the input size. Errors wrap normalize.ErrBinary (NUL
// byte or invalid UTF-8, as a *normalize.InputError), ErrNoWords, or the
// error of r.
func (b *Builder) FromReader(r io.Reader) (Result, error) {
	return b.Read(r, normalize.FormatAuto)
}

// Read is FromReader for text of the given format (the normalization rules
// of version 1 ignore it).
func (b *Builder) Read(r io.Reader, f normalize.Format) (Result, error) {
	return b.build(f, func() error { return b.tok.Words(r, b.onWord) })
}

// ReadBytes is Read for a text held in memory, which it reads in place.
func (b *Builder) ReadBytes(text []byte, f normalize.Format) (Result, error) {
	return b.build(f, func() error { return b.tok.WordsBytes(text, b.onWord) })
}

// build fingerprints the words that tokenize passes to b.onWord.
func (b *Builder) build(f normalize.Format, tokenize func() error) (Result, error) {
	b.tok.Format = f
	b.sh.Reset()
	b.mh.Reset()
	b.ch.reset()
	b.shingles, b.excluded = 0, 0
	b.distinct.reset()
	b.words = b.words[:0]
	if err := tokenize(); err != nil {
		return Result{}, fmt.Errorf("fingerprint: %w", err)
	}
	b.addWords()
	words := b.sh.Finish(b.onShingle)
	if words == 0 {
		return Result{}, ErrNoWords
	}
	res := Result{FP: make([]uint64, b.p.K/64), Words: words, Shingles: b.shingles,
		Distinct: b.distinct.count(), Excluded: b.excluded}
	res.ContentHash = b.ch.sum()
	if b.shingles == 0 {
		templateOnly(res.FP, res.ContentHash)
	} else {
		b.mh.Fingerprint(res.FP)
	}
	return res, nil
}

// FromBytes returns the fingerprint of text, as FromReader would.
func (b *Builder) FromBytes(text []byte) (Result, error) {
	return b.ReadBytes(text, normalize.FormatAuto)
}

// NewShingler returns a Shingler that hashes shingles exactly as a Builder
// for p does, so that callers can work on the same shingle sets (evidence:
// shared passages, exact Jaccard and containment).
func (p Params) NewShingler() (*shingle.Shingler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	shSeed, _ := p.seeds()
	sh, err := shingle.New(p.ShingleWidth, shSeed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParams, err)
	}
	return sh, nil
}
