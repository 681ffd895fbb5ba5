package normalize

import (
	"errors"
	"fmt"
	"html"
	"io"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
)

// Version is the version of the normalization rules that new databases use.
// Bump it whenever the words produced for some input change, and keep the
// older versions working: stored fingerprints depend on them.
//
// Version 1 takes markup out of every input (a '<' followed by a letter
// starts a tag) and lower-cases with simple case mapping. Version 2 strips
// markup only from HTML and XML (see [Format]), and normalizes Unicode:
// compatibility decomposition (NFKD) of every character, full case folding,
// canonical composition (NFC) of each word, default-ignorable code points
// removed, and Cyrillic and Greek letters that look like Latin ones read as
// those Latin letters (see the package documentation). Version 3 reads
// markup as a browser shows it: the tags of inline elements (<span>, <b>,
// <a>, <wbr>, …) and comments join the text on both sides instead of
// separating words, so "P<span></span>layful" is the word "playful".
const Version = 3

// MinVersion is the oldest version of the rules a Tokenizer still applies.
const MinVersion = 1

// MaxWordLen is the largest word, in bytes, that a [Tokenizer] emits; longer
// runs of word characters are split into several words.
const MaxWordLen = 1024

// MaxEntityLen is the largest HTML entity, in bytes including '&' and ';',
// that a [Tokenizer] decodes; a longer run is left as text.
const MaxEntityLen = 32

// bufSize is the size of the read buffer.
const bufSize = 64 << 10

// MaxTagLen is the largest tag, in bytes after the '<', that a Tokenizer
// removes; a longer run without '>' or '<' is text.
const MaxTagLen = 16 << 10

// maxEmptyReads is how many consecutive (0, nil) reads are tolerated before
// Words gives up with io.ErrNoProgress.
const maxEmptyReads = 100

// ErrBinary is wrapped by every error about input that is not text.
var ErrBinary = errors.New("normalize: binary or non-UTF-8 input")

// InputError reports where the input stopped being text. errors.Is(err,
// ErrBinary) holds for every *InputError.
type InputError struct {
	// Offset is the byte offset of the offending byte in the input.
	Offset int64
	// Reason says what is wrong ("NUL byte" or "invalid UTF-8").
	Reason string
	// Hint, when not empty, guesses what the input is (UTF-16 without a
	// byte-order mark), from the bytes of the read that found the NUL:
	// how the input was read may change it.
	Hint string
}

// Error implements error.
func (e *InputError) Error() string {
	s := fmt.Sprintf("%v: %s at byte offset %d", ErrBinary, e.Reason, e.Offset)
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// Unwrap returns ErrBinary.
func (e *InputError) Unwrap() error { return ErrBinary }

// utf16Hint says that b, from an even offset, looks like UTF-16 without a
// byte-order mark (every other byte NUL, as ASCII text in UTF-16 is), or
// returns "".
func utf16Hint(b []byte) string {
	b = b[:min(len(b), 64)&^1]
	if len(b) < 8 {
		return ""
	}
	le, be := true, true
	for k := 0; k < len(b); k += 2 {
		le = le && b[k] != 0 && b[k+1] == 0
		be = be && b[k] == 0 && b[k+1] != 0
	}
	switch {
	case le:
		return "the text looks like UTF-16LE without a byte-order mark: give its encoding, utf-16le"
	case be:
		return "the text looks like UTF-16BE without a byte-order mark: give its encoding, utf-16be"
	}
	return ""
}

// Byte classes of the ASCII fast path.
const (
	cSep     = iota // separator: dropped, ends the current word
	cWord           // lower-case letter or digit: appended as is
	cUpper          // upper-case letter: appended lower-cased
	cSpecial        // '<', '&', NUL or a non-ASCII byte: slow path
)

// asciiClass classifies bytes when '<' and '&' may start markup;
// asciiText when they are punctuation (plain text under version 2).
var asciiClass, asciiText = classTable(true), classTable(false)

func classTable(markup bool) (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= utf8.RuneSelf, c == 0, markup && (c == '<' || c == '&'):
			t[c] = cSpecial
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			t[c] = cWord
		case c >= 'A' && c <= 'Z':
			t[c] = cUpper
		default:
			t[c] = cSep
		}
	}
	return t
}

// Markup states.
const (
	stText    = iota // ordinary text
	stLT             // after '<', deciding whether a tag starts
	stTag            // inside a tag, until '>' (or '<', which cancels it)
	stBang           // after "<!", counting dashes of a comment opener
	stComment        // inside <!-- ... -->
	stRaw            // inside the content of <script> or <style>
	stRawEnd         // inside the </script or </style end tag, until '>'
	stEntity         // after '&', collecting an entity
)

// Kinds of raw-text elements.
const (
	rawNone = iota
	rawScript
	rawStyle
)

var rawEnd = [...]string{rawScript: "</script", rawStyle: "</style"}

// maxTagName is the longest tag name remembered (long enough for "script").
const maxTagName = 8

// Tokenizer splits text into normalized words. The zero value is ready to
// use (the current [Version], [FormatAuto]); NewTokenizer is provided for
// symmetry. A Tokenizer is reusable but not safe for concurrent use.
type Tokenizer struct {
	// Version selects the rules: 0 means [Version]; otherwise a version in
	// [MinVersion, Version]. Words refuses any other value.
	Version int
	// Format says whether the input is plain text or markup (version 2;
	// version 1 treats every input alike).
	Format Format

	buf []byte // read buffer, bufSize bytes
	off int64  // stream offset of buf[0]
	fn  func(word []byte)

	word   [MaxWordLen + utf8.UTFMax]byte
	wlen   int
	single bool // the current word is a one-letter word (Han, Thai, ...)

	state   int
	tagName [maxTagName]byte
	tagLen  int    // bytes in tagName; maxTagName+1 once too long
	nameEnd bool   // the tag name is complete (or there is none)
	closing bool   // the current tag is an end tag (version 3 reads its name)
	last    rune   // last rune inside the current tag, before '>'
	tagBuf  []byte // the text of the current tag after '<', replayed if it is not one
	dashes  int    // consecutive '-' in a comment (or after "<!")
	raw     int    // rawScript or rawStyle while in stRaw
	match   int    // bytes of rawEnd[raw] matched so far
	ent     [MaxEntityLen]byte
	entLen  int

	// Spans (see WordSpans): the input bytes of the rune being processed,
	// of the current word, of the current entity, and where the text of
	// the current tag (after its '<') starts.
	cur, curEnd      int64
	wstart, wend     int64
	entStart, entEnd int64
	tagStart         int64

	sawWord bool // a word was emitted
	html    bool // a tag came before the first word: the input is HTML

	v2     bool        // version 2 rules
	v3     bool        // version 3 rules: inline tags and comments join words
	markup bool        // '<' and '&' may start markup
	class  *[256]uint8 // asciiClass or asciiText
	uni    bool        // the current word holds a non-ASCII character (version 2)
	fold   cases.Caser // full case folding (version 2)
	hasFld bool        // fold is set
	fbuf   []byte      // folded word
	nbuf   []byte      // folded word in NFC
	obuf   []byte      // a piece of the normalized word being emitted
}

// NewTokenizer returns a Tokenizer with its read buffer allocated.
func NewTokenizer() *Tokenizer {
	return &Tokenizer{buf: make([]byte, bufSize)}
}

// Words reads r to EOF and calls fn for each normalized word, in order. The
// word holds lower-case (version 2: case-folded) UTF-8 and is valid only
// during the call; fn must not modify it or append to it (it may be the
// input's own bytes). If the input holds a NUL byte or invalid UTF-8, Words
// returns an *InputError (wrapping ErrBinary) after having emitted the words
// before it. Errors from r other than io.EOF are returned wrapped; so is an
// invalid Version or Format.
func (t *Tokenizer) Words(r io.Reader, fn func(word []byte)) error {
	if t.buf == nil {
		t.buf = make([]byte, bufSize)
	}
	if err := t.reset(fn); err != nil {
		return err
	}
	defer func() { t.fn = nil }()
	end, eof := 0, false
	sniffed := false
	if t.v2 && t.Format == FormatAuto {
		// Read the first SniffLen bytes (or all of a shorter input) to
		// decide whether it is markup.
		for end < SniffLen && !eof {
			n, e, err := t.fill(r, end)
			if err != nil {
				return err
			}
			end, eof = end+n, e
		}
		t.setMarkup(Sniff(t.buf[:end]) == FormatMarkup)
		sniffed = true
	}
	carry := 0
	for {
		if !sniffed {
			n, e, err := t.fill(r, carry)
			if err != nil {
				return err
			}
			end, eof = carry+n, e
		}
		sniffed = false
		used, err := t.process(t.buf[:end], eof)
		if err != nil {
			return err
		}
		carry = copy(t.buf, t.buf[used:end])
		t.off += int64(used)
		if eof {
			break
		}
	}
	t.finish()
	return nil
}

// WordsBytes is Words for a text held in memory: it reads text in place,
// without copying it through a buffer, and emits the same words (and
// returns the same errors) as Words(bytes.NewReader(text), fn).
func (t *Tokenizer) WordsBytes(text []byte, fn func(word []byte)) error {
	if err := t.reset(fn); err != nil {
		return err
	}
	defer func() { t.fn = nil }()
	if t.v2 && t.Format == FormatAuto {
		t.setMarkup(Sniff(text) == FormatMarkup)
	}
	used, err := t.process(text, true)
	if err != nil {
		return err
	}
	t.off += int64(used)
	t.finish()
	return nil
}

// WordSpans is Words that also gives each word's span: the bytes
// [start, end) of the input it was read from, from its first character to
// its last (an entity, or a character whose compatibility decomposition
// makes several letters, counts whole). A word cut into pieces (longer
// than MaxWordLen) gives each piece the span of the characters it holds,
// except that the pieces of a word with a non-ASCII character share its
// whole span. The words are those of Words, in the same order. Spans do
// not overlap, except where one character's compatibility decomposition
// holds a separator ("½" is "1⁄2"): the words on both sides of it share
// its bytes.
func (t *Tokenizer) WordSpans(r io.Reader, fn func(word []byte, start, end int64)) error {
	return t.Words(r, func(w []byte) { fn(w, t.wstart, t.wend) })
}

// fill reads from r into t.buf[from:] until it gets at least one byte or the
// end of the input.
func (t *Tokenizer) fill(r io.Reader, from int) (n int, eof bool, err error) {
	for empty := 0; ; {
		n, rerr := r.Read(t.buf[from:])
		if n < 0 || n > len(t.buf)-from {
			return 0, false, fmt.Errorf("normalize: read: invalid count %d: %w", n, io.ErrShortBuffer)
		}
		eof := errors.Is(rerr, io.EOF)
		if rerr != nil && !eof {
			return 0, false, fmt.Errorf("normalize: read: %w", rerr)
		}
		if n > 0 || eof {
			return n, eof, nil
		}
		if empty++; empty >= maxEmptyReads {
			return 0, false, fmt.Errorf("normalize: read: %w", io.ErrNoProgress)
		}
	}
}

// ErrRules is wrapped by the error of Words for an unknown Version or Format.
var ErrRules = errors.New("normalize: unknown rules")

func (t *Tokenizer) reset(fn func([]byte)) error {
	v := t.Version
	if v == 0 {
		v = Version
	}
	if v < MinVersion || v > Version {
		return fmt.Errorf("%w: version %d (this build knows %d to %d)", ErrRules, t.Version, MinVersion, Version)
	}
	if t.Format > FormatMarkup {
		return fmt.Errorf("%w: format %d", ErrRules, t.Format)
	}
	t.fn = fn
	t.off = 0
	t.wlen = 0
	t.single, t.uni = false, false
	t.state = stText
	t.entLen = 0
	t.sawWord, t.html = false, false
	if t.tagBuf == nil {
		t.tagBuf = make([]byte, 0, MaxTagLen)
	}
	t.tagBuf = t.tagBuf[:0]
	t.v2 = v >= 2
	t.v3 = v >= 3
	switch {
	case !t.v2:
		// Version 1: markup anywhere; HTML if a tag comes first.
		t.markup, t.class = true, &asciiClass
	case t.Format == FormatAuto:
		t.setMarkup(false) // until Words has sniffed the input
	default:
		t.setMarkup(t.Format == FormatMarkup)
	}
	if t.v2 && !t.hasFld {
		t.fold, t.hasFld = cases.Fold(), true
	}
	return nil
}

// setMarkup chooses the version 2 rules for markup or plain text.
func (t *Tokenizer) setMarkup(markup bool) {
	t.markup, t.html = markup, markup
	if markup {
		t.class = &asciiClass
	} else {
		t.class = &asciiText
	}
}

// finish handles the end of the input.
func (t *Tokenizer) finish() {
	switch t.state {
	case stTag, stBang:
		// A tag needs its '>': what looked like one is text.
		t.replayTag()
	}
	if t.state == stEntity {
		t.endEntity()
	}
	// An unterminated comment or script is dropped.
	t.state = stText
	t.flush()
}

// replayTag gives up the current tag: the '<' was punctuation and the
// buffered tag text goes through the text rules. The buffer holds no '<', so
// the replay cannot start another tag.
func (t *Tokenizer) replayTag() {
	if t.v3 {
		t.flush() // version 3 kept the word open across the '<'
	}
	t.state = stText
	buf := t.tagBuf
	cur, curEnd := t.cur, t.curEnd
	for i := 0; i < len(buf); {
		r, size := utf8.DecodeRune(buf[i:])
		t.cur = t.tagStart + int64(i)
		t.curEnd = t.cur + int64(size)
		for t.step(r) {
		}
		i += size
	}
	t.cur, t.curEnd = cur, curEnd
	t.tagBuf = buf[:0]
}

// process consumes buf and returns how many bytes it used; fewer than
// len(buf) only when buf ends inside a multi-byte rune and more input may
// follow.
func (t *Tokenizer) process(buf []byte, eof bool) (int, error) {
	i := 0
	for i < len(buf) {
		if t.state == stText {
			i = t.fastText(buf, i)
			if i >= len(buf) {
				break
			}
		}
		c := buf[i]
		r, size := rune(c), 1
		if c < utf8.RuneSelf {
			if c == 0 {
				e := &InputError{Offset: t.off + int64(i), Reason: "NUL byte"}
				if start := i - int(e.Offset&1); start >= 0 { // from an even offset of the input
					e.Hint = utf16Hint(buf[start:])
				}
				return i, e
			}
		} else {
			if !eof && !utf8.FullRune(buf[i:]) {
				return i, nil
			}
			r, size = utf8.DecodeRune(buf[i:])
			if r == utf8.RuneError && size <= 1 {
				return i, &InputError{Offset: t.off + int64(i), Reason: "invalid UTF-8"}
			}
		}
		t.cur = t.off + int64(i)
		t.curEnd = t.cur + int64(size)
		for t.step(r) {
		}
		i += size
	}
	return len(buf), nil
}

// fastText runs the ASCII fast path of the text state from buf[i] and
// returns the index of the first byte it cannot handle (or len(buf)).
func (t *Tokenizer) fastText(buf []byte, i int) int {
	w := t.wlen
	class := t.class
	if t.single && i < len(buf) && buf[i] < utf8.RuneSelf && class[buf[i]] != cSpecial {
		// Any ASCII byte ends a one-letter word.
		t.flush()
		w = 0
	}
	last := -1 // the last byte added to the word here, for its span
	for ; i < len(buf); i++ {
		if w == 0 {
			// Most words are lower-case ASCII followed by a separator:
			// they are passed to fn in place, without a copy.
			j := i
			for j < len(buf) && class[buf[j]] == cWord {
				j++
			}
			if j > i && j-i <= MaxWordLen && j < len(buf) && class[buf[j]] == cSep {
				t.wstart, t.wend = t.off+int64(i), t.off+int64(j)
				if t.fn != nil {
					t.fn(buf[i:j:j])
				}
				t.sawWord = true
				i = j // the loop steps over the separator
				continue
			}
		}
		c := buf[i]
		switch class[c] {
		case cWord:
		case cUpper:
			c += 'a' - 'A'
		case cSep:
			if w > 0 {
				t.wlen = w
				t.endFast(last)
				t.flush()
				w = 0
			}
			continue
		default:
			t.wlen = w
			t.endFast(last)
			return i
		}
		if w >= MaxWordLen {
			t.wlen = w
			t.endFast(last)
			t.flush()
			w = 0
		}
		if w == 0 {
			t.wstart = t.off + int64(i)
		}
		t.word[w] = c
		w++
		last = i
	}
	t.wlen = w
	t.endFast(last)
	return i
}

// endFast records the end of the current word's span when fastText added
// its last byte, buf[last] (last < 0: it added none).
func (t *Tokenizer) endFast(last int) {
	if last >= 0 {
		t.wend = t.off + int64(last) + 1
	}
}

// mark extends the current word's span by the rune being processed; call
// it before adding the rune to the word.
func (t *Tokenizer) mark() {
	if t.wlen == 0 {
		t.wstart = t.cur
	}
	t.wend = t.curEnd
}

// flush emits the current word, if any.
func (t *Tokenizer) flush() {
	if t.wlen > 0 {
		switch {
		case t.fn == nil:
		case t.uni:
			t.emitUnicode()
		default:
			t.fn(t.word[:t.wlen])
		}
		t.sawWord = true
	}
	t.wlen = 0
	t.single, t.uni = false, false
}

// appendRune appends r to the current word, splitting overlong words.
func (t *Tokenizer) appendRune(r rune) {
	if t.wlen+utf8.RuneLen(r) > MaxWordLen {
		single := t.single
		t.flush()
		t.single = single
	}
	t.mark()
	t.wlen += utf8.EncodeRune(t.word[t.wlen:], r)
}

// step feeds one rune to the markup state machine. It returns true if the
// rune was not consumed and must be fed again (in the new state).
func (t *Tokenizer) step(r rune) bool {
	switch t.state {
	case stText:
		switch {
		case !t.markup:
			t.text(r)
		case r == '<':
			if !t.v3 {
				t.flush()
			} // version 3: the tag decides, once read (see stTag)
			t.state = stLT
		case r == '&':
			t.ent[0] = '&'
			t.entLen = 1
			t.entStart, t.entEnd = t.cur, t.curEnd
			t.state = stEntity
		default:
			t.text(r)
		}
	case stLT:
		t.nameEnd, t.tagLen, t.last, t.closing = true, 0, r, false
		t.tagStart = t.cur
		if !t.sawWord && t.wlen == 0 && isTagStart(r) {
			t.html = true
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			t.state = stTag
			t.nameEnd = false
			t.tagName[0] = byte(r) | 0x20
			t.tagLen = 1
			t.tagBuf = append(t.tagBuf[:0], byte(r))
		case r == '/' || r == '?':
			t.state = stTag
			t.tagBuf = append(t.tagBuf[:0], byte(r))
			if r == '/' && t.v3 {
				t.closing, t.nameEnd = true, false // the end tag's name follows
			}
		case r == '!':
			t.state = stBang
			t.dashes = 0
			t.tagBuf = append(t.tagBuf[:0], '!')
		default:
			// Not a tag: the '<' was punctuation (and already ended the
			// word before version 3).
			if t.v3 {
				t.flush()
			}
			t.state = stText
			return true
		}
	case stTag:
		switch {
		case r == '>':
			t.state = stText
			t.tagBuf = t.tagBuf[:0]
			if t.v3 && !t.joins() {
				t.flush()
			}
			if raw := t.rawKind(); raw != rawNone && t.last != '/' && t.html {
				t.state, t.raw, t.match = stRaw, raw, 0
			}
			return false
		case r == '<', len(t.tagBuf)+utf8.RuneLen(r) > MaxTagLen:
			// Not a tag after all (a tag holds no '<').
			t.replayTag()
			return true
		}
		t.tagBuf = utf8.AppendRune(t.tagBuf, r)
		if !t.nameEnd {
			if isASCIIAlnum(r) {
				if t.tagLen < maxTagName {
					t.tagName[t.tagLen] = byte(r) | 0x20
					t.tagLen++
				} else {
					t.tagLen = maxTagName + 1
				}
			} else {
				t.nameEnd = true
				if t.v3 && !isSpace(r) && r != '/' {
					// A name that goes on (a prefixed XML name, a
					// custom element: a:p, q-btn) names no inline
					// element (version 3; version 2 read its start).
					t.tagLen = maxTagName + 1
				}
			}
		}
		t.last = r
	case stBang:
		if r == '-' {
			t.tagBuf = append(t.tagBuf, '-')
			if t.dashes++; t.dashes == 2 {
				if !t.html {
					// Plain text: "<!-- ... >" is only a tag.
					t.state = stTag
					return false
				}
				// "<!--": a comment. Starting the count at 2 makes "<!-->"
				// and "<!--->" empty comments, as in HTML.
				t.state = stComment
				t.tagBuf = t.tagBuf[:0]
			}
			return false
		}
		// A declaration such as <!DOCTYPE html>: a tag up to '>'.
		t.state = stTag
		return true
	case stComment:
		switch {
		case r == '-':
			t.dashes++
		case r == '>' && t.dashes >= 2:
			t.state = stText
		default:
			t.dashes = 0
		}
	case stRaw:
		pat := rawEnd[t.raw]
		if t.match == len(pat) {
			// "</script" seen: it ends the element unless the name goes on.
			if r == '>' || r == '/' || isSpace(r) {
				t.state = stRawEnd
				return true
			}
			t.match = 0
		}
		switch {
		case lowerASCII(r) == rune(pat[t.match]):
			t.match++
		case r == '<':
			t.match = 1
		default:
			t.match = 0
		}
	case stRawEnd:
		if r == '>' {
			t.state = stText
		}
	case stEntity:
		if isASCIIAlnum(r) || r == '#' && t.entLen == 1 || r == ';' && t.entLen > 1 {
			if t.entLen == len(t.ent) {
				// Too long for an entity: plain text.
				t.rawEntity()
				return true
			}
			t.ent[t.entLen] = byte(r)
			t.entLen++
			t.entEnd = t.curEnd
			if r != ';' {
				return false
			}
		}
		t.endEntity()
		return r != ';'
	}
	return false
}

// rawKind says whether the tag just closed starts a raw-text element.
func (t *Tokenizer) rawKind() int {
	if t.closing {
		return rawNone
	}
	switch string(t.tagName[:min(t.tagLen, maxTagName)]) {
	case "script":
		if t.tagLen == 6 {
			return rawScript
		}
	case "style":
		if t.tagLen == 5 {
			return rawStyle
		}
	}
	return rawNone
}

// joins reports whether the tag just closed joins the text on both sides
// of it (version 3): a start or end tag of an element that a browser shows
// inline, without a break ([JoiningElements]).
func (t *Tokenizer) joins() bool {
	if t.tagLen < 1 || t.tagLen > maxTagName {
		return false
	}
	return isJoining(string(t.tagName[:t.tagLen]))
}

// JoiningElements are the HTML elements whose tags join the text on both
// sides in version 3 (and in the readable text of a passage): the inline
// elements a browser shows without a break, and the raw-text and hidden
// elements whose content is not shown.
const JoiningElements = "a abbr acronym b bdi bdo big cite code data del dfn em font i ins " +
	"kbd label mark nobr q rp rt ruby s samp small span strike strong sub sup time tt u var wbr " +
	"script style noscript template"

// isJoining reports whether name (lower case) is one of JoiningElements.
func isJoining(name string) bool {
	switch name {
	case "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em", "font", "i", "ins",
		"kbd", "label", "mark", "nobr", "q", "rp", "rt", "ruby", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr",
		"script", "style", "noscript", "template":
		return true
	}
	return false
}

// endEntity decodes the collected entity, feeds the result to the word
// rules and returns to the text state.
func (t *Tokenizer) endEntity() {
	t.state = stText
	ent := t.ent[:t.entLen]
	if len(ent) > 1 {
		if dec := html.UnescapeString(string(ent)); dec != string(ent) {
			t.entLen = 0
			cur, curEnd := t.cur, t.curEnd
			t.cur, t.curEnd = t.entStart, t.entEnd
			for _, r := range dec {
				t.text(r)
			}
			t.cur, t.curEnd = cur, curEnd
			return
		}
	}
	t.rawEntity()
}

// rawEntity feeds the collected bytes to the word rules as plain text ('&'
// is punctuation) and returns to the text state.
func (t *Tokenizer) rawEntity() {
	t.state = stText
	cur, curEnd := t.cur, t.curEnd
	for i, c := range t.ent[:t.entLen] {
		t.cur = t.entStart + int64(i)
		t.curEnd = t.cur + 1
		t.text(rune(c))
	}
	t.cur, t.curEnd = cur, curEnd
	t.entLen = 0
}

// text applies the word rules to one rune of text.
func (t *Tokenizer) text(r rune) {
	if r < utf8.RuneSelf {
		c := byte(r)
		switch asciiClass[c] {
		case cWord, cUpper:
			if t.single || t.wlen >= MaxWordLen {
				t.flush()
			}
			if asciiClass[c] == cUpper {
				c += 'a' - 'A'
			}
			t.mark()
			t.word[t.wlen] = c
			t.wlen++
		default:
			t.flush()
		}
		return
	}
	if t.v2 {
		t.text2(r)
		return
	}
	if isIgnorable(r) {
		return
	}
	if unicode.IsMark(r) {
		if t.wlen > 0 {
			t.appendRune(r)
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
			t.appendRune(unicode.ToLower(r))
			t.single = true
			return
		}
		t.appendRune(unicode.ToLower(r))
	case unicode.IsNumber(r):
		t.appendRune(r)
	default:
		t.flush()
	}
}

// oneLetterScripts are the scripts written without spaces between words;
// each of their letters is a word.
var oneLetterScripts = []*unicode.RangeTable{
	unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai,
	unicode.Lao, unicode.Khmer, unicode.Myanmar, unicode.Ideographic,
}

func isOneLetterWord(r rune) bool {
	if r < 0x0E00 { // Thai, the first of these scripts, starts at U+0E00
		return false
	}
	if r == 0x30FC { // KATAKANA-HIRAGANA PROLONGED SOUND MARK (script Common)
		return true
	}
	return unicode.IsOneOf(oneLetterScripts, r)
}

// isIgnorable reports the invisible format characters that neither join
// nor split words.
func isIgnorable(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x200C, r == 0x200D, r == 0x2060, r == 0xFEFF, r == 0x20E3:
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF:
		return true
	}
	return false
}

func isASCIIAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

func lowerASCII(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f'
}

// isTagStart reports whether r after '<' starts a tag.
func isTagStart(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '/' || r == '?' || r == '!'
}
