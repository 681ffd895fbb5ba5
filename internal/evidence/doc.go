// Package evidence explains why two texts were found similar: the exact
// Jaccard resemblance and containments of their shingle sets, the
// resemblance their fingerprints estimate, and the passages they share,
// mapped back to byte offsets and line:column positions of each text.
//
// # Basics
//
// [Analyze] reads a text once (normalized words with their spans, the
// hash of every shingle, the fingerprint) into a [Doc]; [Compare] compares
// two Docs made with the same fingerprint.Params. Shingles are hashed
// exactly as fingerprints hash them, so the exact figures are those the
// fingerprints estimate.
//
// A shared passage is a maximal run of consecutive shingles of A that
// occur, consecutive and in the same order, in B (a diagonal of the
// shingle match matrix, as in MOSS, JPlag and Dolos). Runs are widened to
// the words they cover, merged where one goes on from the other in both
// texts, touching (or within Options.MaxGap words) in each, with the same
// words in both texts (or at most MaxGap words more in one at a join), and
// ranked by length; a passage inside a longer one in both texts is
// dropped. A passage found twice in A and once in B gives two passages,
// each copy of A against the one of B.
//
// A passage's offsets and positions are always in the text as given,
// markup included. What it says is shown by [Readable]: a text read as
// markup (HTML or XML, [Side].Markup) is shown as a reader sees it — tags
// removed (block-level ones as line breaks), character references
// decoded, script and style content hidden — by the tokenizer's markup
// rules, so that every word of a passage is shown in it; a plain text as
// it is. Every view of a comparison (a terminal, the compare page, a
// report) shows passages through it.
//
// # Caveats
//
// Offsets are in the UTF-8 text given to Analyze: for a text decoded from
// another charset, in the decoded text. A Doc holds every word span and
// shingle hash of its text and a set of its shingles (about 64 bytes per
// word, and as much again while it is built): a text of a million words
// takes about 200 MB. A shingle repeated more
// than Options.MaxRepeats times in B is matched at its first MaxRepeats
// places only, so passages of highly repetitive texts may be cut; the
// exact Jaccard and containments never are. Readable follows the markup
// rules of normalization version 3; under version 2, where every tag
// separates words, a passage's text may join two of its words across an
// inline tag, and under version 1, which removes tags from every text and
// script only from a text starting with a tag, a passage may show fewer or
// more characters than its words.
package evidence
