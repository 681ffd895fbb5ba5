// Package normalize turns raw document text into the stream of normalized
// words that fpdb shingles and fingerprints: it is the first step of the
// pipeline text → words → shingle hashes → min-hash fingerprint
// (docs/algorithm.md §1.1). A [Tokenizer] reads its input in fixed-size chunks, so memory stays
// bounded for any input size; it rejects binary input (a NUL byte or invalid
// UTF-8) with an [*InputError] that wraps [ErrBinary]; it drops HTML markup
// (tags, comments, the content of script and style elements), decodes HTML
// entities, lower-cases (Unicode-aware) and splits the text into words made of
// letters, combining marks and digits. Everything else — punctuation, symbols,
// emoji, white space — separates words and is dropped.
//
// # Word rules
//
// The segmentation is a simplified form of Unicode UAX #29 word boundaries:
//
//   - A word is a maximal run of letters (unicode.IsLetter), marks
//     (unicode.IsMark) and numbers (unicode.IsDigit / unicode.IsNumber).
//   - Every letter of a script written without spaces between words — Han
//     (and other ideographs), Hiragana, Katakana (including the prolonged
//     sound mark U+30FC), Thai, Lao, Khmer and Myanmar — is a word of its
//     own, so "日本語" yields three words. Combining marks that follow such a
//     letter stay attached to it (Thai vowel signs, for example).
//   - A combining mark that does not follow a word character is dropped.
//   - The invisible format characters soft hyphen U+00AD, ZWNJ U+200C, ZWJ
//     U+200D, word joiner U+2060, U+FEFF (a byte-order mark anywhere,
//     including a leading UTF-8 BOM), the variation selectors and the
//     combining enclosing keycap U+20E3 are ignored: they neither join nor
//     split words.
//   - Letters are lower-cased with unicode.ToLower (simple case mapping, no
//     special final-sigma or locale rules: "ΣΑΣ" → "σασ", "İ" → "i").
//   - A word longer than [MaxWordLen] bytes is split into pieces of at most
//     that length (at rune boundaries).
//
// # Markup
//
// A '<' followed by an ASCII letter, '/', '!' or '?' starts a tag that ends at
// the next '>'; the tag is removed and separates words. A tag holds no '<':
// if another '<' (or the end of the input, or more than [MaxTagLen] bytes)
// comes before the '>', the first '<' was punctuation and the text after it
// is kept. This is the regular expression <[A-Za-z/!?][^<>]*> of the
// corpus ground truth, so "Ann <ann@example.org" keeps its address words.
// An input whose first tag comes before its first word is HTML, and only
// there do comments and raw-text elements apply: "<!--" starts a comment that
// ends at the next "-->" (as in HTML, "<!-->" and "<!--->" are empty
// comments), and after a <script> or <style> start tag everything up to the
// matching </script or </style end tag is dropped; a self-closing
// <script .../> drops nothing. An unterminated comment or script swallows the
// rest of such an input. In plain text (a man page that mentions "[<style>]")
// these are ordinary tags, so no text is lost. A '<' that does not start a
// tag is punctuation.
// An entity is '&' followed by up to [MaxEntityLen] bytes of '#' and ASCII
// letters and digits, optionally ended by ';'; it is decoded with
// html.UnescapeString and the decoded text goes through the word rules (but is
// never taken as markup), so "caf&eacute;" → "café" and "&amp;" separates.
//
// # Caveats
//
// A Tokenizer is reusable but not safe for concurrent use. The word slice
// passed to the callback is valid only during the call. The rules are
// versioned by [Version]: any change in the words produced for some input
// must bump it, because stored fingerprints depend on them.
package normalize
