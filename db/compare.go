package db

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/fpdb/fpdb/internal/evidence"
	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/normalize"
)

// MaxCompareText is the longest text (decoded, in bytes) Compare reads
// from CompareInput.Text or Reader: comparing takes about 64 bytes per word
// of each text while it runs (16 MiB of text: about 200 MB per side).
const MaxCompareText = 16 << 20

// CompareInput is one side of a comparison: a stored document (ID) or a
// text (exactly one of Text and Reader).
type CompareInput struct {
	// ID names a stored document: its stored text (Options.KeepTexts) and
	// its stored fingerprint are compared.
	ID string
	// Text is a text to compare.
	Text []byte
	// Reader is read to the end for the text (at most MaxCompareText bytes
	// once decoded, and Options.MaxTextSize).
	Reader io.Reader
	// Name names the text in errors and, for FormatAuto, by its extension.
	Name string
	// TextOptions say how Text or Reader's bytes are read.
	TextOptions
}

// name returns how errors name in.
func (in *CompareInput) name() string {
	switch {
	case in.ID != "":
		return fmt.Sprintf("document %q", in.ID)
	case in.Name != "":
		return in.Name
	}
	return "text"
}

// CompareOptions tune Compare. A nil *CompareOptions means the defaults.
type CompareOptions struct {
	// MinWords leaves out shared passages of fewer words. Default 8; a
	// negative value keeps every passage (one shingle at least).
	MinWords int
	// MaxGap merges shared passages at most MaxGap words apart in both
	// texts. Default 0: merged only where they touch or overlap.
	MaxGap int
	// MaxPassages keeps the longest MaxPassages passages. Default 0: all.
	MaxPassages int
}

// Figures are the measures of a comparison (see Comparison).
type Figures = evidence.Comparison

// Side describes one text of a comparison: its bytes, words and distinct
// shingles.
type Side = evidence.Side

// Passage is a passage of text A found in text B.
type Passage = evidence.Passage

// Span is a part of a compared text: byte offsets [Start, End), first word
// and number of words, and the line:column of its first and last
// characters.
type Span = evidence.Span

// Comparison is what Compare finds: the figures of Figures (exact Jaccard
// of the shingle sets, containment both ways, the fingerprints' estimated
// resemblance and Hamming distance, the shared passages, longest first)
// and the two texts the passages' offsets refer to.
type Comparison struct {
	Figures
	// TextA and TextB are the compared texts, UTF-8 (decoded from their
	// character encoding), the offsets of Passages are in them.
	TextA, TextB []byte
	// FormatA and FormatB are how the texts were read (FormatText or
	// FormatHTML).
	FormatA, FormatB Format
}

// Compare explains how similar a and b are, with the database's
// fingerprint parameters: exact Jaccard resemblance and containments of
// their shingle sets, the resemblance their fingerprints estimate (the
// figure queries use; a stored document's stored fingerprint), and the
// passages they share. A stored document needs its stored text: errors
// wrap ErrNoText when the database keeps none, ErrNotFound for an unknown
// id. Errors name the input they are about.
func (d *DB) Compare(ctx context.Context, a, b CompareInput, opts *CompareOptions) (*Comparison, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	defer d.leave()
	return compare(ctx, d.fpParams(), a, b, opts, d.compareDoc(ctx), min(d.opts.MaxTextSize, MaxCompareText))
}

// CompareTexts is Compare without a database, for two texts (not ids),
// fingerprinted with the parameters p (nil: the defaults of a new
// database).
func CompareTexts(ctx context.Context, a, b CompareInput, p *Params, opts *CompareOptions) (*Comparison, error) {
	fp := fingerprint.Params{K: DefaultK, ShingleWidth: DefaultShingleWidth, Seed: DefaultSeed, NormalizeVersion: NormalizeVersion}
	if p != nil {
		fp = fingerprint.Params{K: p.K, ShingleWidth: p.ShingleWidth, Seed: p.Seed, NormalizeVersion: p.NormalizeVersion}
	}
	noIDs := func(in *CompareInput) (*evidence.Doc, Format, error) {
		return nil, 0, fmt.Errorf("%w: %s: no database to read it from", ErrBadInput, in.name())
	}
	return compare(ctx, fp, a, b, opts, noIDs, MaxCompareText)
}

// storedDoc analyzes a stored document.
type storedDoc func(in *CompareInput) (*evidence.Doc, Format, error)

func compare(ctx context.Context, p fingerprint.Params, a, b CompareInput, opts *CompareOptions, stored storedDoc, limit int64) (*Comparison, error) {
	var o evidence.Options
	if opts != nil {
		o = evidence.Options{MinWords: opts.MinWords, MaxGap: opts.MaxGap, MaxPassages: opts.MaxPassages}
	}
	side := func(in *CompareInput) (*evidence.Doc, Format, error) {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		n := 0
		if in.ID != "" {
			n++
		}
		if in.Text != nil {
			n++
		}
		if in.Reader != nil {
			n++
		}
		if n != 1 {
			return nil, 0, fmt.Errorf("%w: compare %s: set exactly one of ID, Text and Reader", ErrBadInput, in.name())
		}
		var doc *evidence.Doc
		var f Format
		var err error
		if in.ID != "" {
			doc, f, err = stored(in)
		} else {
			doc, f, err = analyzeText(p, in, limit)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("fpdb: compare %s: %w", in.name(), err)
		}
		return doc, f, nil
	}
	da, fa, err := side(&a)
	if err != nil {
		return nil, err
	}
	db, fb, err := side(&b)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err // the texts were long: the time may be over
	}
	figs, err := evidence.Compare(da, db, o)
	if err != nil {
		return nil, fmt.Errorf("fpdb: compare: %w", err)
	}
	return &Comparison{Figures: *figs, TextA: da.Text(), TextB: db.Text(), FormatA: fa, FormatB: fb}, nil
}

// analyzeText reads and analyzes a text input.
func analyzeText(p fingerprint.Params, in *CompareInput, limit int64) (*evidence.Doc, Format, error) {
	f, err := in.TextOptions.normalizeFormat(in.Name)
	if err != nil {
		return nil, 0, err
	}
	r := in.Reader
	if r == nil {
		r = bytes.NewReader(in.Text)
	}
	text, err := decodeText(r, in.Encoding, f, p.NormalizeVersion)
	if err != nil {
		return nil, 0, err
	}
	data, err := io.ReadAll(io.LimitReader(text, limit+1))
	if err != nil {
		return nil, 0, err
	}
	if int64(len(data)) > limit {
		return nil, 0, fmt.Errorf("%w: more than the %d bytes a comparison reads", ErrTextTooLarge, limit)
	}
	if f == normalize.FormatAuto {
		f = normalize.Sniff(data[:min(len(data), normalize.SniffLen)])
		if p.NormalizeVersion < 2 {
			f = normalize.FormatText // version 1 reads every text alike
		}
	}
	doc, err := evidence.Analyze(p, data, f, nil)
	if err != nil {
		return nil, 0, err
	}
	return doc, fromNormalize(f), nil
}

// compareDoc returns the storedDoc of d: the stored text, analyzed, with
// the stored fingerprint.
func (d *DB) compareDoc(ctx context.Context) storedDoc {
	return func(in *CompareInput) (*evidence.Doc, Format, error) {
		if err := validID(in.ID); err != nil {
			return nil, 0, err
		}
		st, fp, err := d.textAndFingerprint(in.ID)
		if err != nil {
			return nil, 0, err
		}
		// A stored text may be longer (Options.MaxTextSize) than a
		// comparison reads: its analysis would take as much memory as a
		// text's that Compare refuses.
		if len(st.Text) > MaxCompareText {
			return nil, 0, fmt.Errorf("%w: stored text of %q: %d bytes, more than the %d a comparison reads", ErrTextTooLarge, in.ID, len(st.Text), MaxCompareText)
		}
		f := normalize.FormatText
		if st.Format == FormatHTML {
			f = normalize.FormatMarkup
		}
		doc, err := evidence.Analyze(d.fpParams(), st.Text, f, fp)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: stored text: %w", ErrCorrupt, err)
		}
		return doc, st.Format, ctx.Err()
	}
}

// textAndFingerprint returns the stored text and fingerprint of id, of the
// same version of the document.
func (d *DB) textAndFingerprint(id string) (*StoredText, []uint64, error) {
	d.mu.RLock()
	locked := true
	defer func() {
		if locked {
			d.mu.RUnlock()
		}
	}()
	iid, v, err := d.rawTextLocked(id)
	if err != nil {
		return nil, nil, err
	}
	fp := d.ix.Fingerprint(iid)
	if fp == nil {
		return nil, nil, fmt.Errorf("%w: internal id %d has no fingerprint", ErrCorrupt, iid)
	}
	d.mu.RUnlock()
	locked = false
	st, err := d.texts.decode(v, nil) // v is a copy: decompress unlocked
	if err != nil {
		return nil, nil, err
	}
	return &st, fp, nil
}
