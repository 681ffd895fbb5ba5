// Package report renders evidence as self-contained HTML: one file with
// its styles and its few lines of script inline, no network access and no
// external assets, so that it opens from a USB stick on any laptop.
//
// # Basics
//
// [WriteCompare] renders one comparison ([Pair]): the figures (estimated
// and exact resemblance, containment both ways), the list of shared
// passages, and both texts side by side with every passage highlighted and
// numbered; clicking a passage in one text scrolls the other to it. The
// page is readable without the script.
//
// [WriteReport] renders a near-duplicate [Report] of a database: its
// clusters, a heat map (inline SVG) of each cluster's resemblances, and
// each pair in a <details> element with the same figures and passage table
// as the compare page ([NewEvidence] keeps only the excerpts of a
// comparison). The same Report gives the same bytes.
//
// A text read as markup (HTML or XML: evidence.Side.Markup) is shown as
// a reader sees it, in the passage tables and whole on the compare page:
// tags removed, character references decoded, no script
// (evidence.Readable); the positions printed stay line:column positions
// in the text as it is. [Excerpts] makes the same excerpts for a terminal.
//
// # Caveats
//
// Both texts are written whole into the page: comparing two books makes a
// page of their size. Offsets are byte offsets into the texts given, which
// must be the texts the comparison was made on.
package report
