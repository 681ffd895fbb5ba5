// Package plot draws line charts in two forms: a self-contained SVG
// document and a compact plain-ASCII rendering for a terminal. It exists
// to show the two curves that matter when choosing a threshold: the
// detection curve (the probability that a pair is reported against its
// true resemblance, with the chosen threshold marked) and precision and
// recall against the threshold.
//
// # Basics
//
// A [Chart] holds a title, axis labels, optional axis ranges, one or more
// [Series] (points joined by straight lines, in the order given) and any
// number of [Mark]s (labelled vertical lines, such as "threshold 0.700").
// [Chart.Validate] reports what is wrong with a chart; [Chart.SVG] and
// [Chart.Text] validate before drawing and never write a partial result
// for an invalid chart.
//
// An axis range whose minimum equals its maximum (the zero value) is taken
// from the data: the smallest and largest X (including the Marks) or Y of
// all series. Ticks fall on multiples of a "nice" step (1, 2, 2.5 or 5
// times a power of ten), and tick labels carry as many decimals as the
// step needs.
//
// Series are told apart by colour in SVG (a fixed colour-blind-friendly
// palette, the Okabe–Ito colours, reused in order once exhausted) and by
// character in text ('*', 'o', '+', 'x', ... by series index). Both forms
// have a legend listing the named series.
//
// Output is deterministic: the same chart gives the same bytes.
//
// # Caveats
//
//   - Parts of a series outside the axis ranges are cut off at the edge of
//     the plot area (the lines are clipped geometrically), so in SVG a
//     series that leaves the plot area and comes back is drawn as more than
//     one polyline. A series entirely outside the ranges is not drawn at all,
//     though it still appears in the legend.
//   - SVG layout estimates text widths (about 7 pixels a character) because
//     no font metrics are available; very long labels may overflow.
//   - Labels of Marks that are close together may overlap; the SVG form
//     staggers them vertically, the text form lists them only in the legend.
//   - In text, each point is rounded to the nearest character cell. Where
//     series cross, the later series wins the cell, and every series is drawn
//     over the Marks. Dashed series are drawn solid.
//   - Control characters in labels are replaced by spaces in the text form;
//     other non-ASCII characters are kept as given.
//   - Extreme ranges (a width near the largest float64, or a width tiny
//     compared with the values) are accepted but may give crowded or
//     repeated tick labels.
package plot
