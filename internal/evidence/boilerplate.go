package evidence

import (
	"bytes"

	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/normalize"
)

// Frequency counts in how many texts each shingle occurs, to find
// boilerplate: text most documents share (a call's headings, a license
// header, a site's navigation). It is not safe for concurrent use.
type Frequency struct {
	p     fingerprint.Params
	df    map[uint64]int32
	texts int
}

// NewFrequency returns an empty count for texts read with p's rules; the
// shingles of p.Exclude (templates already known) are not counted.
func NewFrequency(p fingerprint.Params) *Frequency {
	return &Frequency{p: p, df: map[uint64]int32{}}
}

// Add counts the distinct shingles of text (of format f). A text without
// words counts as a text with no shingles.
func (fr *Frequency) Add(text []byte, f normalize.Format) error {
	hs, err := fr.p.Shingles(bytes.NewReader(text), f)
	if err != nil && err != fingerprint.ErrNoWords {
		return err
	}
	fr.texts++
	for _, h := range hs {
		if !fr.p.Exclude.Has(h) {
			fr.df[h]++
		}
	}
	return nil
}

// Texts returns the number of texts counted.
func (fr *Frequency) Texts() int { return fr.texts }

// Common returns the shingles found in at least minTexts texts.
func (fr *Frequency) Common(minTexts int) map[uint64]bool {
	out := map[uint64]bool{}
	for h, n := range fr.df {
		if int(n) >= minTexts {
			out[h] = true
		}
	}
	return out
}

// CommonPassages returns the passages of text (of format f) made only of
// shingles in common — maximal runs of them, widened to their words — of
// at least minWords words that hold a shingle not yet in covered, and adds
// their shingles to covered. Called on texts in turn, it lists each common
// passage once, in the words of the first text that has it.
func CommonPassages(p fingerprint.Params, text []byte, f normalize.Format, common, covered map[uint64]bool, minWords int) ([]Span, error) {
	d, err := Analyze(p, text, f, make([]uint64, p.K/64))
	if err != nil {
		if err == fingerprint.ErrNoWords {
			return nil, nil
		}
		return nil, err
	}
	w := p.ShingleWidth
	var ranges [][2]int // word ranges [w0, w1]
	for i := 0; i < len(d.hashes); {
		if !common[d.hashes[i]] {
			i++
			continue
		}
		j, fresh := i, false
		for ; j < len(d.hashes) && common[d.hashes[j]]; j++ {
			fresh = fresh || !covered[d.hashes[j]]
		}
		w0, w1 := i, min(j-1+w-1, len(d.words)-1)
		if fresh && w1-w0+1 >= minWords {
			for _, h := range d.hashes[i:j] {
				covered[h] = true
			}
			ranges = append(ranges, [2]int{w0, w1})
		}
		i = j
	}
	var offs []int64
	for _, r := range ranges {
		offs = append(offs, d.words[r[0]].start, d.lastChar(r[1]))
	}
	pos := d.positions(offs)
	out := make([]Span, len(ranges))
	for i, r := range ranges {
		out[i] = d.span(r[0], r[1], pos)
	}
	return out, nil
}
