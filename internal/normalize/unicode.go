package normalize

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// text2 applies the version 2 word rules to one non-ASCII rune of text:
// default-ignorable code points vanish, and a character with a
// compatibility decomposition is replaced by it (ligatures, full-width
// forms, circled digits, "™" → "TM"), so what the decomposition holds goes
// through the word rules: letters and digits join the word, punctuation
// separates.
func (t *Tokenizer) text2(r rune) {
	if isDefaultIgnorable(r) {
		return
	}
	var b [utf8.UTFMax]byte
	n := utf8.EncodeRune(b[:], r)
	if d := norm.NFKD.Properties(b[:n]).Decomposition(); d != nil {
		for len(d) > 0 {
			c, size := utf8.DecodeRune(d)
			d = d[size:]
			if c < utf8.RuneSelf {
				t.text(c)
			} else if !isDefaultIgnorable(c) {
				t.base2(c)
			}
		}
		return
	}
	t.base2(r)
}

// base2 applies the version 2 word rules to a non-ASCII rune without a
// compatibility decomposition. Case is folded when the word is emitted.
func (t *Tokenizer) base2(r rune) {
	if r == 0x0345 {
		// COMBINING GREEK YPOGEGRAMMENI folds to the letter iota: read it
		// as that letter, so that folding never turns a mark into a
		// letter inside a one-letter word.
		r = 0x03B9
	}
	if unicode.IsMark(r) {
		if t.wlen > 0 {
			t.appendRune(r)
			t.uni = true
		}
		return
	}
	if t.single {
		t.flush()
	}
	switch {
	case unicode.IsLetter(r):
		if isOneLetterWord(r) {
			t.flush()
			t.appendRune(r)
			t.single, t.uni = true, true
			return
		}
		t.appendRune(r)
		t.uni = true
	case unicode.IsNumber(r):
		t.appendRune(r)
		t.uni = true
	default:
		t.flush()
	}
}

// emitUnicode emits the current word, which holds a non-ASCII character,
// under the version 2 rules: case-folded, composed (NFC), look-alike
// letters replaced, and cut into pieces of at most MaxWordLen bytes.
func (t *Tokenizer) emitUnicode() {
	src := t.word[:t.wlen]
	t.fold.Reset()
	if cap(t.fbuf) < 3*len(src)+utf8.UTFMax {
		t.fbuf = make([]byte, 3*len(src)+utf8.UTFMax)
	}
	dst := t.fbuf[:cap(t.fbuf)]
	nDst, _, err := t.fold.Transform(dst, src, true)
	for err == transform.ErrShortDst {
		// Folding grows a word at most threefold; this is only a safeguard.
		dst = make([]byte, 2*len(dst))
		t.fbuf = dst
		t.fold.Reset()
		nDst, _, err = t.fold.Transform(dst, src, true)
	}
	folded := dst[:nDst]
	if err != nil {
		folded = src // cannot happen for valid UTF-8; keep the word as it is
	}
	// Look-alikes are replaced before composition, so that a replaced
	// letter composes with its marks as the Latin letter would.
	mapped := t.obuf[:0]
	for w := folded; len(w) > 0; {
		r, size := utf8.DecodeRune(w)
		w = w[size:]
		mapped = utf8.AppendRune(mapped, lookalike(cherokee(r)))
	}
	t.obuf = mapped
	t.nbuf = norm.NFC.Append(t.nbuf[:0], mapped...)
	out := t.obuf[:0]
	for w := t.nbuf; len(w) > 0; {
		_, size := utf8.DecodeRune(w)
		if len(out)+size > MaxWordLen {
			t.fn(out)
			out = out[:0]
		}
		out = append(out, w[:size]...)
		w = w[size:]
	}
	if len(out) > 0 {
		t.fn(out)
	}
	t.obuf = out[:0]
}

// cherokee maps Cherokee small letters to the capitals, as Unicode's case
// folding does (the one script that folds to upper case); x/text's Fold
// swaps the two cases instead, which would not be idempotent.
func cherokee(r rune) rune {
	switch {
	case r >= 0xAB70 && r <= 0xABBF:
		return r - 0xAB70 + 0x13A0
	case r >= 0x13F8 && r <= 0x13FD:
		return r - 8
	}
	return r
}

// isDefaultIgnorable reports the code points with the Unicode property
// Default_Ignorable_Code_Point (derived as in DerivedCoreProperties.txt:
// Other_Default_Ignorable_Code_Point, format characters and variation
// selectors, less white space, the interlinear annotation characters, the
// Egyptian hieroglyph format controls and the prepended concatenation
// marks), and the combining enclosing keycap U+20E3 that version 1 ignored
// too. They neither join nor split words.
func isDefaultIgnorable(r rune) bool {
	switch {
	case r < 0xAD:
		return false
	case r == 0x20E3:
		return true
	case r >= 0xFFF9 && r <= 0xFFFB, r >= 0x13430 && r <= 0x1343F:
		return false
	case unicode.Is(unicode.Prepended_Concatenation_Mark, r), unicode.Is(unicode.White_Space, r):
		return false
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// lookalike maps a case-folded Cyrillic or Greek letter that looks like a
// Latin letter (in upper or lower case) to that Latin letter, and a few
// Latin variants (dotless i, script g, Latin alpha) to the plain letter, so
// that "pаypal" with a Cyrillic "а" reads as "paypal". It is a fixed subset
// of Unicode's confusables (UTS #39): letters that are the same glyph in
// common fonts.
func lookalike(r rune) rune {
	if r < 0x0131 {
		return r
	}
	switch r {
	// Latin variants.
	case 0x0131: // ı dotless i
		return 'i'
	case 0x0251: // ɑ Latin alpha
		return 'a'
	case 0x0261: // ɡ script g
		return 'g'
	// Greek (folded forms; the comment names the capital that looks Latin).
	case 0x03B1: // α
		return 'a'
	case 0x03B2: // β (Β)
		return 'b'
	case 0x03B5: // ε (Ε)
		return 'e'
	case 0x03B6: // ζ (Ζ)
		return 'z'
	case 0x03B7: // η (Η)
		return 'h'
	case 0x03B9: // ι (Ι)
		return 'i'
	case 0x03BA: // κ (Κ)
		return 'k'
	case 0x03BC: // μ (Μ)
		return 'm'
	case 0x03BD: // ν (Ν)
		return 'v'
	case 0x03BF: // ο
		return 'o'
	case 0x03C1: // ρ (Ρ)
		return 'p'
	case 0x03C4: // τ (Τ)
		return 't'
	case 0x03C5: // υ (Υ)
		return 'u'
	case 0x03C7: // χ (Χ)
		return 'x'
	case 0x03F2: // ϲ lunate sigma
		return 'c'
	case 0x03F3: // ϳ
		return 'j'
	// Cyrillic.
	case 0x0430: // а
		return 'a'
	case 0x0432: // в (В)
		return 'b'
	case 0x0435: // е
		return 'e'
	case 0x043A: // к (К)
		return 'k'
	case 0x043C: // м (М)
		return 'm'
	case 0x043D: // н (Н)
		return 'h'
	case 0x043E: // о
		return 'o'
	case 0x0440: // р
		return 'p'
	case 0x0441: // с
		return 'c'
	case 0x0442: // т (Т)
		return 't'
	case 0x0443: // у
		return 'y'
	case 0x0445: // х
		return 'x'
	case 0x0455: // ѕ
		return 's'
	case 0x0456: // і
		return 'i'
	case 0x0458: // ј
		return 'j'
	case 0x04BB: // һ
		return 'h'
	case 0x04CF: // ӏ palochka
		return 'l'
	case 0x0501: // ԁ
		return 'd'
	case 0x051B: // ԛ
		return 'q'
	case 0x051D: // ԝ
		return 'w'
	}
	return r
}
