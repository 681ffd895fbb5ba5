// Package textenc turns a document's raw bytes into UTF-8 for fpdb's text
// normalizer (package normalize), so a Latin-1 file, a UTF-16 file with a
// byte-order mark or an HTML page that declares its charset is read as text
// instead of being rejected as binary.
//
// # Basics
//
// [NewReader] wraps an io.Reader and returns a reader of its text as UTF-8
// together with an [Info] that says which encoding is decoded and how it was
// chosen. [Options].Encoding forces an encoding by its WHATWG label ("utf-8",
// "latin1", "windows-1252", "shift_jis", "utf-16le", ...; see
// https://encoding.spec.whatwg.org/#names-and-labels); "" or "auto" detects
// it. [Lookup] checks a label without reading any input, so a command line
// can refuse a bad --encoding before it starts; an unknown label gives an
// error that wraps [ErrUnknownEncoding] and names the label.
//
// Detection ("" or "auto") looks at no more than the first 1024 bytes and
// applies these rules in order:
//
//  1. A byte-order mark wins: a UTF-8 byte-order mark is stripped and the
//     rest decoded as UTF-8 by rule 3's decoder; a UTF-16LE (FF FE) or
//     UTF-16BE (FE FF) byte-order mark is stripped and the rest decoded as
//     UTF-16 of that byte order (Info.How "bom").
//  2. If Options.Markup is set, a declaration in the first 1024 bytes is
//     honoured (Info.How "declared"): first the encoding pseudo-attribute of
//     an XML declaration (<?xml version="1.0" encoding="ISO-8859-1"?>) at the
//     start of the input (after optional white space), then the first <meta>
//     element that declares an encoding, found by the prescan browsers use
//     (as golang.org/x/net/html/charset does it): <meta charset="...">, or
//     <meta http-equiv="Content-Type" content="text/html; charset=...">. A
//     declared "utf-8" or ASCII ("us-ascii", "ascii", "ansi_x3.4-1968")
//     takes the UTF-8 path of rule 3, with its fallback. A declared
//     "x-user-defined" is decoded as windows-1252, as browsers do. A declared
//     UTF-16 is ignored (a byte stream without byte-order mark is not UTF-16;
//     browsers ignore it too), and so are the labels of the WHATWG
//     "replacement" encoding ("iso-2022-kr", "hz-gb-2312", ...), which would
//     turn the whole text into one U+FFFD; rule 3 applies then. An XML
//     declaration that names such an encoding, or none that is known, is
//     passed over for the <meta> prescan; the prescan skips a <meta> whose
//     label is unknown and stops at the first one with a known label.
//  3. Otherwise UTF-8 with a fallback (Info.Encoding "utf-8", Info.How
//     "utf-8 with windows-1252 fallback"): valid UTF-8 sequences pass through
//     unchanged byte for byte; every byte that is not part of a valid UTF-8
//     sequence is decoded as that byte in Windows-1252. So a Latin-1 or
//     Windows-1252 file decodes correctly, and a mostly UTF-8 file with a
//     stray Latin-1 byte keeps its valid parts. The five bytes Windows-1252
//     leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) decode to the C1
//     controls U+0081, U+008D, U+008F, U+0090 and U+009D. Decoding streams:
//     a sequence split across reads is still recognized, and memory stays
//     bounded for any input size.
//  4. The output, of detection and of any forced decoder, is always valid
//     UTF-8. NUL bytes are passed through (the normalizer rejects them as
//     binary; this package does no binary detection). UTF-16 text decoded
//     from a byte-order mark has no NULs unless it encodes U+0000.
//
// With a forced Encoding, "utf-8" (or any of its labels, such as "utf8") is a
// strict pass-through: a leading UTF-8 byte-order mark is stripped and
// everything else, invalid bytes included, is passed through unchanged, so
// the normalizer rejects a file that is not UTF-8 after all. Any other label
// decodes with that encoding, and a byte-order mark at the start is stripped
// if it is the mark of that encoding ("utf-16le" strips FF FE). Invalid input
// decodes to U+FFFD. Windows-1252 (which "latin1" and "iso-8859-1" name, as
// in browsers) is decoded like rule 3's fallback, with the undefined bytes as
// C1 controls.
//
// # Caveats
//
//   - Only the first 1024 bytes are examined: a declaration further on is not
//     seen, and a file that is Windows-1252 except for sequences that happen
//     to be valid UTF-8 (such as "Ã©") keeps those as UTF-8. Rule 3 is a
//     per-byte rule, not a statistical guess: a file in some other 8-bit or
//     multi-byte encoding (ISO-8859-5, Shift_JIS, GBK, ...) without a
//     declaration decodes as Windows-1252 mojibake; force its encoding.
//   - Info is decided before the text is read: Info.How "utf-8 with
//     windows-1252 fallback" does not mean the fallback was needed.
//   - The declared encoding of rule 2 comes from the markup alone; there is
//     no HTTP Content-Type here. Options.Markup has no effect with a forced
//     Encoding.
//   - The reader returned by NewReader buffers its input (up to 4 KiB, plus
//     the decoder's buffers): after using it, do not read the underlying
//     reader, which is past the point reached.
//   - A read error while the start of the input is examined is returned by
//     NewReader; later errors are returned by the reader.
package textenc
