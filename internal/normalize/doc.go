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
// # Versions
//
// The rules are versioned ([Version], the newest, down to [MinVersion]):
// a database records the version it was created with and fingerprints
// every text with it, so its stored fingerprints stay comparable. The
// sections "Word rules" and "Markup" below describe version 1; version 2
// differs as follows, and version 3 from version 2 as said after.
//
//   - Markup is removed only from markup ([Format]): with [FormatAuto] the
//     first [SniffLen] bytes decide ([Sniff]: an XML declaration, a
//     comment, a doctype or a common HTML element first, or an <html>,
//     <head> or <body> tag anywhere in them); callers also use
//     [FormatOfName] (.html, .htm, .xhtml, .shtml, .xml, .svg, .rss, .atom).
//     Everything else is plain text, where '<' and '&' are punctuation and
//     entities are not decoded: C sources, e-mail with <addresses>,
//     Markdown (its inline HTML tags become words), text extracted from
//     PDF. In markup, the version 1 rules for tags, comments, script and
//     style and entities apply from the first byte.
//   - Every non-ASCII character is replaced by its compatibility
//     decomposition (NFKD) before the word rules see it: ligatures (ﬁ →
//     fi), full-width and half-width forms, circled and superscript digits,
//     "™" → "tm" and "½" → "1", "2" (the fraction slash separates).
//   - Every default-ignorable code point (the Unicode property
//     Default_Ignorable_Code_Point: zero-width space and joiners, word
//     joiner, soft hyphen, BOM, variation selectors, bidi controls, tag
//     characters, Hangul fillers, …) is removed: it neither joins nor
//     splits words.
//   - A word holding a non-ASCII character is case-folded (full Unicode
//     case folding: "Straße" → "strasse", final sigma → σ, Cherokee to its
//     capitals), Cyrillic and Greek letters that look like Latin ones are
//     replaced by them (а → a, е → e, о → o, р → p, с → c, ο → o, ν → v, …;
//     a fixed subset of Unicode's confusables, so "pаypal" with a Cyrillic
//     а is "paypal"), and the word is composed (NFC). Composed and
//     decomposed accents are therefore the same word. Greek and Cyrillic
//     texts stay comparable with each other (the mapping is the same for
//     every document); a few of their words may collide with Latin words
//     that look the same, which only matters across languages.
//
// Version 3 differs from version 2 in markup only: the start and end tags
// of the elements a browser shows inline ([JoiningElements]: span, b, i,
// em, strong, a, sub, sup, wbr, …, and script and style, whose content is
// dropped) and comments join the text on both sides, as the page shows
// it, instead of separating words: "P<span></span>layful", "pla<!-- x
// -->yful" and "super<wbr>cali" are single words, where version 2 read two
// (a copy could be hidden from the fingerprint that way). Every other tag
// (p, div, br, li, td, img, an unknown or custom element, a declaration or
// processing instruction) still separates words, and so does a '<' that
// does not start a tag.
//
// End-of-line hyphenation in PDF-extracted text ("docu-\nment") is not
// undone: it cannot be told from a real hyphen at the end of a line.
//
// # Word rules (version 1)
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
// # Markup (version 1)
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
