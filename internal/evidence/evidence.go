package evidence

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/fpdb/fpdb/internal/fingerprint"
	"github.com/fpdb/fpdb/internal/minhash"
	"github.com/fpdb/fpdb/internal/normalize"
)

// Defaults of Options.
const (
	// DefaultMinWords is the shortest passage reported, in words of A.
	DefaultMinWords = 8
	// DefaultMaxRepeats is how many places of one shingle in B are matched.
	DefaultMaxRepeats = 64
)

// ErrParams is returned by Compare for Docs analyzed with different
// fingerprint parameters.
var ErrParams = errors.New("evidence: texts analyzed with different parameters")

// Options tune Compare. The zero value means the defaults.
type Options struct {
	// MinWords leaves out passages of fewer words (counted in A). Default
	// DefaultMinWords; a negative value keeps every passage (one shingle
	// at least).
	MinWords int
	// MaxGap merges two passages that lie at most MaxGap words apart in
	// both texts (the words between them join the passage). Default 0:
	// merged only where they touch or overlap.
	MaxGap int
	// MaxPassages keeps the longest MaxPassages passages. Default 0: all.
	MaxPassages int
	// MaxRepeats is how many places of one shingle in B are matched.
	// Default DefaultMaxRepeats.
	MaxRepeats int
}

func (o Options) withDefaults() Options {
	if o.MinWords == 0 {
		o.MinWords = DefaultMinWords
	}
	if o.MaxGap < 0 {
		o.MaxGap = 0
	}
	if o.MaxRepeats <= 0 {
		o.MaxRepeats = DefaultMaxRepeats
	}
	return o
}

// Doc is an analyzed text. It is immutable and safe for concurrent use.
type Doc struct {
	params fingerprint.Params
	text   []byte
	markup bool     // read as markup (HTML or XML)
	words  []span   // word i's bytes in text
	hashes []uint64 // shingle i covers words [i, i+w−1] (all of them if fewer)
	set    map[uint64]int32
	fp     []uint64
}

type span struct{ start, end int64 }

// Analyze reads text (UTF-8; f says whether it is markup, FormatAuto
// sniffs as normalize.Sniff does) with the rules of p. fp, when not nil,
// is used as the text's fingerprint (a stored document's) instead of
// computing it. The shingles
// of p.Exclude (templates) are not part of the text's shingle set: they are
// never shared, so no passage is made of template text alone. Errors wrap
// fingerprint.ErrNoWords, normalize.ErrBinary or fingerprint.ErrInvalidParams.
func Analyze(p fingerprint.Params, text []byte, f normalize.Format, fp []uint64) (*Doc, error) {
	sh, err := p.NewShingler()
	if err != nil {
		return nil, err
	}
	if fp != nil && len(fp) != p.K/64 {
		return nil, fmt.Errorf("%w: fingerprint of %d bits, want %d", fingerprint.ErrInvalidParams, 64*len(fp), p.K)
	}
	if f == normalize.FormatAuto && normalize.Sniff(text) == normalize.FormatMarkup {
		f = normalize.FormatMarkup // as the tokenizer sniffs (version 2)
	}
	d := &Doc{params: p, text: text, markup: f == normalize.FormatMarkup}
	emit := func(h uint64) { d.hashes = append(d.hashes, h) }
	tok := &normalize.Tokenizer{Version: p.NormalizeVersion, Format: f}
	err = tok.WordSpans(bytes.NewReader(text), func(w []byte, start, end int64) {
		d.words = append(d.words, span{start, end})
		sh.Add(w, emit)
	})
	if err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	if sh.Finish(emit) == 0 {
		return nil, fingerprint.ErrNoWords
	}
	d.set = make(map[uint64]int32, len(d.hashes))
	for _, h := range d.hashes {
		if !p.Exclude.Has(h) { // a template's shingles are never shared
			d.set[h]++
		}
	}
	if fp == nil {
		b, err := fingerprint.NewBuilder(p)
		if err != nil {
			return nil, err
		}
		res, err := b.Read(bytes.NewReader(text), f)
		if err != nil {
			return nil, err
		}
		fp = res.FP
	}
	d.fp = slices.Clone(fp)
	return d, nil
}

// Words returns the number of normalized words of the text.
func (d *Doc) Words() int { return len(d.words) }

// Shingles returns the number of distinct shingles of the text, templates'
// (Params.Exclude) left out.
func (d *Doc) Shingles() int { return len(d.set) }

// Text returns the analyzed text; the caller must not modify it.
func (d *Doc) Text() []byte { return d.text }

// Markup reports whether the text was read as markup (HTML or XML): its
// passages are shown as the text a reader sees (Readable).
func (d *Doc) Markup() bool { return d.markup }

// Comparison is what Compare finds.
type Comparison struct {
	// A and B describe the two texts.
	A, B Side
	// Shared is the number of distinct shingles in both texts.
	Shared int
	// Jaccard is the exact resemblance of the shingle sets,
	// Shared / |A ∪ B|.
	Jaccard float64
	// ContainedA is the share of A's distinct shingles found in B,
	// Shared / |A| (how much of A is in B); ContainedB the share of B's in A.
	ContainedA, ContainedB float64
	// Estimated is the resemblance the fingerprints estimate,
	// 1 − 2·Hamming/K (at least 0), the figure queries use.
	Estimated float64
	// Hamming is the Hamming distance of the fingerprints.
	Hamming int
	// Passages are the shared passages, longest first.
	Passages []Passage
}

// Side describes one text of a comparison.
type Side struct {
	// Bytes is the length of the text.
	Bytes int
	// Words is its number of normalized words.
	Words int
	// Shingles is its number of distinct shingles.
	Shingles int
	// Markup reports a text read as markup (HTML or XML): what its
	// passages say is shown by Readable, tags removed and character
	// references decoded; their offsets and positions are in the text
	// as it is, markup included.
	Markup bool
}

// Passage is a passage of A found in B.
type Passage struct {
	// A and B are where the passage is in each text.
	A, B Span
}

// Span is a part of a text.
type Span struct {
	// Start and End are the byte offsets [Start, End) in the text.
	Start, End int64
	// Word is the index of the first word; Words the number of words.
	Word, Words int
	// Line and Col are the position of the first character; EndLine and
	// EndCol that of the last (lines and columns from 1, columns in
	// characters).
	Line, Col, EndLine, EndCol int
}

// Compare compares a with b, which must be analyzed with equal parameters.
func Compare(a, b *Doc, o Options) (*Comparison, error) {
	if a.params != b.params {
		return nil, fmt.Errorf("%w: %+v and %+v", ErrParams, a.params, b.params)
	}
	o = o.withDefaults()
	c := &Comparison{
		A: Side{Bytes: len(a.text), Words: len(a.words), Shingles: len(a.set), Markup: a.markup},
		B: Side{Bytes: len(b.text), Words: len(b.words), Shingles: len(b.set), Markup: b.markup},
	}
	for h := range a.set {
		if _, ok := b.set[h]; ok {
			c.Shared++
		}
	}
	c.Jaccard = ratio(c.Shared, len(a.set)+len(b.set)-c.Shared)
	c.ContainedA = ratio(c.Shared, len(a.set))
	c.ContainedB = ratio(c.Shared, len(b.set))
	for i := range a.fp {
		c.Hamming += bits.OnesCount64(a.fp[i] ^ b.fp[i])
	}
	c.Estimated = max(0, minhash.Similarity(a.params.K, c.Hamming))
	c.Passages = passages(a, b, o)
	return c, nil
}

// abs is the absolute value of x.
func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// ratio is n/d, 0 when d is 0 (a text made only of templates).
func ratio(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// run is a diagonal of matching shingles: A's shingles [a, a+n) equal
// B's [b, b+n).
type run struct{ a, b, n int }

// runs finds the maximal diagonal runs of shared shingles.
func runs(a, b *Doc, maxRepeats int) []run {
	pos := make(map[uint64][]int32, len(b.set))
	for j, h := range b.hashes {
		if _, ok := a.set[h]; !ok {
			continue
		}
		if p := pos[h]; len(p) < maxRepeats {
			pos[h] = append(p, int32(j))
		}
	}
	var out []run
	// prev maps a place j in B matched at A's place i−1 to its run's start.
	prev, cur := map[int32]run{}, map[int32]run{}
	for i, h := range a.hashes {
		for _, j := range pos[h] {
			if r, ok := prev[j-1]; ok {
				r.n++
				cur[j] = r
				delete(prev, j-1)
			} else {
				cur[j] = run{a: i, b: int(j), n: 1}
			}
		}
		for _, r := range prev {
			out = append(out, r)
		}
		clear(prev)
		prev, cur = cur, prev
	}
	for _, r := range prev {
		out = append(out, r)
	}
	return out
}

// wordRange is a passage as word indexes [a0, a1] and [b0, b1].
type wordRange struct{ a0, a1, b0, b1 int }

func passages(a, b *Doc, o Options) []Passage {
	rs := runs(a, b, o.MaxRepeats)
	if len(rs) == 0 {
		return nil
	}
	w := a.params.ShingleWidth
	ws := make([]wordRange, len(rs))
	for i, r := range rs {
		ws[i] = wordRange{
			a0: r.a, a1: min(r.a+r.n-1+w-1, len(a.words)-1),
			b0: r.b, b1: min(r.b+r.n-1+w-1, len(b.words)-1),
		}
	}
	slices.SortFunc(ws, func(x, y wordRange) int {
		return cmp.Or(cmp.Compare(x.a0, y.a0), cmp.Compare(x.b0, y.b0), cmp.Compare(x.a1, y.a1), cmp.Compare(x.b1, y.b1))
	})
	// Merge each range into a passage it goes on from in both texts: it
	// begins at or after the passage in A and in B, ends further on in
	// both, begins at most MaxGap words after the passage ends in each
	// text (ranges of one diagonal cut by a shingle not shared, a
	// template's, overlap by up to ShingleWidth−2 words), and its diagonal
	// is at most MaxGap words from that of the range merged last, so that
	// the words of a passage differ in A and B by at most MaxGap words at
	// each join (none when MaxGap is 0). A range going back in one text (a
	// repeated passage of A against one copy in B) or overlapping the
	// passage in one text but not in the other (a word repeated in one
	// text) is not merged into it. Of the passages a range may go on from,
	// the one of the nearest diagonal, then the latest, takes it. The
	// passages open to a range (not ended more than MaxGap words before it
	// in A) are few: at most MaxRepeats runs cover a word of A from each of
	// the ShingleWidth shingles holding it, so at most
	// (ShingleWidth+MaxGap)·MaxRepeats.
	type chain struct {
		wordRange
		diag int // diagonal a0 − b0 of the range merged last
	}
	var (
		chains []chain
		open   []int // indexes in chains of the passages open to a range
	)
	for _, r := range ws {
		diag := r.a0 - r.b0
		best := -1
		kept := open[:0]
		for _, ci := range open {
			m := &chains[ci]
			if m.a1+1+o.MaxGap < r.a0 {
				continue // ended before r in A: closed for every later range
			}
			kept = append(kept, ci)
			if r.b0 >= m.b0 && r.a1 > m.a1 && r.b1 > m.b1 &&
				r.b0 <= m.b1+1+o.MaxGap && abs(diag-m.diag) <= o.MaxGap &&
				(best < 0 || abs(diag-m.diag) <= abs(diag-chains[best].diag)) {
				best = ci
			}
		}
		open = kept
		if best >= 0 {
			m := &chains[best]
			m.a1, m.b1, m.diag = r.a1, r.b1, diag
			continue
		}
		open = append(open, len(chains))
		chains = append(chains, chain{r, diag})
	}
	merged := make([]wordRange, len(chains))
	for i, c := range chains {
		merged[i] = c.wordRange
	}
	slices.SortStableFunc(merged, func(x, y wordRange) int {
		return cmp.Or(cmp.Compare(y.a1-y.a0, x.a1-x.a0), cmp.Compare(x.a0, y.a0), cmp.Compare(x.b0, y.b0))
	})
	var kept []wordRange
	// A passage inside a kept one covers its first word of A: the kept
	// passages are registered in every block of insideBlock words of A
	// they cover, and a passage is checked against those of its first
	// word's block only.
	const insideBlock = 64
	blocks := map[int][]int{}
	for _, r := range merged {
		if o.MinWords > 0 && r.a1-r.a0+1 < o.MinWords {
			continue
		}
		inside := false
		for _, ki := range blocks[r.a0/insideBlock] {
			k := kept[ki]
			if r.a0 >= k.a0 && r.a1 <= k.a1 && r.b0 >= k.b0 && r.b1 <= k.b1 {
				inside = true
				break
			}
		}
		if inside {
			continue
		}
		for blk := r.a0 / insideBlock; blk <= r.a1/insideBlock; blk++ {
			blocks[blk] = append(blocks[blk], len(kept))
		}
		kept = append(kept, r)
		if o.MaxPassages > 0 && len(kept) == o.MaxPassages {
			break
		}
	}
	// Line and column of every passage end, in one pass over each text.
	var offA, offB []int64
	for _, r := range kept {
		offA = append(offA, a.words[r.a0].start, a.lastChar(r.a1))
		offB = append(offB, b.words[r.b0].start, b.lastChar(r.b1))
	}
	posA, posB := a.positions(offA), b.positions(offB)
	out := make([]Passage, len(kept))
	for i, r := range kept {
		out[i] = Passage{A: a.span(r.a0, r.a1, posA), B: b.span(r.b0, r.b1, posB)}
	}
	return out
}

// lastChar returns the offset of the last character of word w.
func (d *Doc) lastChar(w int) int64 {
	end := d.words[w].end
	_, size := utf8.DecodeLastRune(d.text[:end])
	return end - int64(max(size, 1))
}

// position is a line and a column, from 1 (columns in characters).
type position struct{ line, col int }

// positions returns the line and column of every offset, in one pass over
// the text.
func (d *Doc) positions(offs []int64) map[int64]position {
	sorted := slices.Clone(offs)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	out := make(map[int64]position, len(sorted))
	line, col := 1, 1
	var at int64
	var prev rune
	for _, off := range sorted {
		for at < off && at < int64(len(d.text)) {
			r, size := utf8.DecodeRune(d.text[at:])
			switch {
			case r == '\n' && prev == '\r': // CRLF: one line break, counted at CR
			case r == '\n' || r == '\r': // LF, or CR alone (old Mac files)
				line, col = line+1, 1
			default:
				col++
			}
			prev = r
			at += int64(size)
		}
		out[off] = position{line, col}
	}
	return out
}

// span returns the Span of words [w0, w1], with positions from pos.
func (d *Doc) span(w0, w1 int, pos map[int64]position) Span {
	s := Span{Start: d.words[w0].start, End: d.words[w1].end, Word: w0, Words: w1 - w0 + 1}
	p, q := pos[s.Start], pos[d.lastChar(w1)]
	s.Line, s.Col, s.EndLine, s.EndCol = p.line, p.col, q.line, q.col
	return s
}
