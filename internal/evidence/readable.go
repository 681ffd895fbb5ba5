package evidence

import (
	"html"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fpdb/fpdb/internal/normalize"
)

// Readable returns, for each range [r[0], r[1]) of text (byte offsets,
// clamped to the text; an inverted range is empty), the text a reader sees
// there. A plain text (markup false) is shown as it is: each range's bytes.
// A markup text (HTML or XML, Side.Markup) is shown as a browser would show
// it, by the tokenizer's markup rules (package normalize, version 3):
//
//   - tags are removed; those of block-level elements (p, div, h1, li, br,
//     tr, …) become line breaks, those of inline elements (b, i, a, span,
//     em, …; normalize.JoiningElements) nothing, any other (an XML
//     element) a space;
//   - comments, declarations and processing instructions, and the content
//     of script and style elements, are not shown;
//   - character references are decoded (&amp; → &, &rsquo; → ’, &#233; →
//     é), as the tokenizer decodes them;
//   - runs of white space are one space, except inside pre and textarea;
//     no range starts with the white space or the line break before its
//     first character: that goes to the text before it.
//
// Offsets stay those of text: a range cut at a passage's Start and End
// (the first byte of its first word and the end of its last) shows the
// passage. A character reference or a character is shown in the range
// where it starts. The text is read once, whatever the number of ranges.
// The result may hold any character of text or of a character reference
// (a control character, say): a view escapes or replaces them as it
// would in a plain text.
func Readable(text []byte, markup bool, ranges [][2]int64) []string {
	n := int64(len(text))
	clamp := func(r [2]int64) (int64, int64) {
		lo, hi := min(max(r[0], 0), n), min(max(r[1], 0), n)
		return lo, max(lo, hi)
	}
	out := make([]string, len(ranges))
	if !markup {
		for i, r := range ranges {
			lo, hi := clamp(r)
			out[i] = string(text[lo:hi])
		}
		return out
	}
	cuts := make([]int64, 0, 2*len(ranges))
	for _, r := range ranges {
		if lo, hi := clamp(r); lo < hi {
			cuts = append(cuts, lo, hi)
		}
	}
	if len(cuts) == 0 {
		return out
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	rd := &reading{text: text, cuts: cuts}
	rd.read()
	for i, r := range ranges {
		lo, hi := clamp(r)
		if lo == hi {
			continue
		}
		a, _ := slices.BinarySearch(cuts, lo)
		b, _ := slices.BinarySearch(cuts, hi)
		out[i] = strings.Join(rd.pieces[a:b], "")
	}
	return out
}

// Separators between the shown pieces of a markup text, weakest first.
const (
	sepNone  = iota
	sepSpace // white space, or a tag that separates words
	sepLine  // a line break: <br>, <li>, …
	sepPara  // a paragraph break: <p>, <h1>, <div>, …
)

var sepText = [...]string{sepSpace: " ", sepLine: "\n", sepPara: "\n\n"}

// tagSeps is what the tags of an element show; an element not listed shows
// a space (it separates words, as every tag does for the tokenizer).
var tagSeps = func() map[string]int {
	m := map[string]int{}
	for _, name := range strings.Fields(normalize.JoiningElements) {
		m[name] = sepNone
	}
	for _, name := range strings.Fields(`br li dt dd tr caption figcaption legend option summary`) {
		m[name] = sepLine
	}
	for _, name := range strings.Fields(`address article aside blockquote body center details dialog dir
		div dl fieldset figure footer form h1 h2 h3 h4 h5 h6 head header hgroup hr html main menu nav
		ol p pre section table tbody tfoot thead title ul`) {
		m[name] = sepPara
	}
	return m
}()

// reading shows a markup text, cut at sorted offsets.
type reading struct {
	text []byte
	cuts []int64
	// pieces[k] is what text[cuts[k]:cuts[k+1]] shows; cur holds the
	// current piece, next is the index of the next cut.
	pieces  []string
	cur     strings.Builder
	next    int
	pending int  // separator not yet written
	started bool // something was written: separators before it are not
	pre     int  // depth of pre and textarea elements
}

// read reads the text, up to its last cut.
func (rd *reading) read() {
	text := rd.text
	n := len(text)
	for i := 0; ; {
		for rd.next < len(rd.cuts) && rd.cuts[rd.next] <= int64(i) {
			rd.cut()
		}
		if rd.next == len(rd.cuts) || i >= n {
			break
		}
		switch text[i] {
		case '<':
			if end, ok := rd.markup(i); ok {
				i = end
				continue
			}
			rd.write(text[i : i+1])
			i++
		case '&':
			i = rd.entity(i)
		case ' ', '\t', '\n', '\r', '\f':
			if rd.pre > 0 {
				rd.write(text[i : i+1])
			} else {
				rd.pending = max(rd.pending, sepSpace)
			}
			i++
		default:
			// A run of shown bytes, up to the next cut (a character
			// whole, in the piece where it starts).
			end := i + 1
			limit := int(min(rd.cuts[rd.next], int64(n)))
			for end < limit && !special(text[end]) {
				end++
			}
			for end < n && !utf8.RuneStart(text[end]) {
				end++
			}
			rd.write(text[i:end])
			i = end
		}
	}
	for rd.next < len(rd.cuts) {
		rd.cut()
	}
}

// cut ends the current piece at the next cut, with the separator pending
// (unless the text ends there): a range starting there starts with its
// first character.
func (rd *reading) cut() {
	if rd.next > 0 {
		if rd.cuts[rd.next] < int64(len(rd.text)) {
			rd.flush()
		}
		rd.pieces = append(rd.pieces, rd.cur.String())
	}
	rd.cur.Reset()
	rd.pending = sepNone
	rd.next++
}

// flush writes the pending separator, unless nothing was written yet.
func (rd *reading) flush() {
	if rd.pending != sepNone && rd.started {
		rd.cur.WriteString(sepText[rd.pending])
	}
	rd.pending = sepNone
}

// write writes b, shown text, after the pending separator.
func (rd *reading) write(b []byte) {
	if len(b) == 0 {
		return
	}
	if rd.next > 0 {
		rd.flush()
		rd.cur.Write(b)
	} // else before the first cut: not kept
	rd.pending = sepNone
	rd.started = true
}

// special reports the bytes that end a run of shown bytes: markup and
// white space.
func special(c byte) bool {
	switch c {
	case '<', '&', ' ', '\t', '\n', '\r', '\f':
		return true
	}
	return false
}

// markup reads the tag, comment or declaration at text[i] ('<') and
// returns where it ends; ok is false when the '<' starts none, as the
// tokenizer decides: a tag is '<', an ASCII letter, '/', '!' or '?', then
// at most normalize.MaxTagLen bytes without '<' up to a '>'; "<!--" starts
// a comment up to "-->" (or the end of the text); after a script or style
// start tag, the element's content and end tag (or the rest of the text)
// are read too.
func (rd *reading) markup(i int) (end int, ok bool) {
	text := rd.text
	j := i + 1
	if j >= len(text) {
		return 0, false
	}
	c := text[j]
	if !(isLetter(c) || c == '/' || c == '?' || c == '!') {
		return 0, false
	}
	if c == '!' && j+2 < len(text) && text[j+1] == '-' && text[j+2] == '-' {
		// A comment: "<!--" then up to "-->"; its opening dashes count,
		// so "<!-->" and "<!--->" are empty comments.
		dashes := 2
		for k := j + 3; k < len(text); k++ {
			switch {
			case text[k] == '-':
				dashes++
			case text[k] == '>' && dashes >= 2:
				return k + 1, true
			default:
				dashes = 0
			}
		}
		return len(text), true // an unterminated comment hides the rest
	}
	window := text[j:min(len(text), j+normalize.MaxTagLen+1)]
	g := -1
	for k, b := range window {
		if b == '<' {
			return 0, false // a tag holds no '<'
		}
		if b == '>' {
			g = k
			break
		}
	}
	if g < 0 {
		return 0, false // no '>' (soon enough): the '<' is punctuation
	}
	body := window[:g] // what is between '<' and '>'
	end = j + g + 1
	closing := c == '/'
	name := body
	if closing {
		name = body[1:]
	}
	k := 0
	for k < len(name) && (isLetter(name[k]) || '0' <= name[k] && name[k] <= '9') {
		k++
	}
	tag := strings.ToLower(string(name[:k]))
	if k < len(name) && !isSpaceByte(name[k]) && name[k] != '/' {
		tag = "" // a prefixed XML name or a custom element (a:p, q-btn): none of tagSeps
	}
	selfClosing := len(body) > 0 && body[len(body)-1] == '/'
	if c == '!' || c == '?' {
		// A declaration or a processing instruction: it separates words,
		// as the tokenizer reads them.
		rd.pending = max(rd.pending, sepSpace)
		return end, true
	}
	if sep, ok := tagSeps[tag]; ok {
		rd.pending = max(rd.pending, sep)
	} else {
		rd.pending = max(rd.pending, sepSpace)
	}
	switch tag {
	case "pre", "textarea":
		switch {
		case closing:
			rd.pre = max(rd.pre-1, 0)
		case !selfClosing:
			rd.pre++
		}
	case "script", "style":
		if !closing && !selfClosing {
			return rawEnd(text, end, "</"+tag), true
		}
	}
	return end, true
}

// rawEnd returns where the content of a script or style element, from
// text[i], ends with its end tag: after the first "</script" (pat, any
// case) followed by '>', '/' or white space, at the next '>'; the end of
// the text if there is none.
func rawEnd(text []byte, i int, pat string) int {
	for i < len(text) {
		k := indexFold(text[i:], pat)
		if k < 0 {
			break
		}
		at := i + k + len(pat)
		if at < len(text) {
			switch text[at] {
			case '>', '/', ' ', '\t', '\n', '\r', '\f':
				for ; at < len(text); at++ {
					if text[at] == '>' {
						return at + 1
					}
				}
				return len(text)
			}
		}
		i = at
	}
	return len(text)
}

// indexFold returns the index of the first occurrence of pat (lower-case
// ASCII) in b, ignoring ASCII case, or −1.
func indexFold(b []byte, pat string) int {
	for i := 0; i+len(pat) <= len(b); i++ {
		if b[i] != pat[0] {
			continue
		}
		k := 1
		for k < len(pat) && lowerASCII(b[i+k]) == pat[k] {
			k++
		}
		if k == len(pat) {
			return i
		}
	}
	return -1
}

// entity reads the character reference at text[i] ('&') as the tokenizer
// does — '&' then up to normalize.MaxEntityLen bytes of '#' (second),
// ASCII letters and digits, ended by ';' or by any other byte — writes it
// decoded and returns where it ends; when html.UnescapeString leaves it
// as it is (or it is too long), writes the '&' only and returns i+1.
func (rd *reading) entity(i int) int {
	text := rd.text
	k := i + 1
	long := false
	for k < len(text) {
		c := text[k]
		if !(isLetter(c) || '0' <= c && c <= '9' || c == '#' && k == i+1 || c == ';' && k > i+1) {
			break
		}
		if k-i == normalize.MaxEntityLen {
			long = true // too long for a reference: text
			break
		}
		k++
		if c == ';' {
			break
		}
	}
	ent := string(text[i:k])
	dec := ent
	if len(ent) > 1 && !long {
		dec = html.UnescapeString(ent)
	}
	if dec == ent {
		// Text: its '&', then the other bytes as any text, each in its
		// range.
		rd.write(text[i : i+1])
		return i + 1
	}
	for _, r := range dec {
		switch r {
		case ' ', '\t', '\n', '\r', '\f':
			if rd.pre == 0 {
				rd.pending = max(rd.pending, sepSpace)
				continue
			}
		}
		rd.write(utf8.AppendRune(nil, r))
	}
	return k
}

// lowerASCII returns c, lower-cased if it is an ASCII letter.
func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// isLetter reports an ASCII letter.
func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// isSpaceByte reports the white space that may end a tag's name.
func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
