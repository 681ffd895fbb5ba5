package report

import (
	"math"
	"strconv"
)

// How shares in [0, 1] (resemblances, containments) are shown to people,
// on the terminal ("fpdb compare") and on the pages (WriteCompare,
// WriteReport): a fraction with 3 decimals (Fraction), a percentage with 1
// (Percent). A share strictly between 0 and 1 is never shown as 0 or 1
// (1.000, 100.0 %, 0.000, 0.0 %), which would read as identical texts,
// complete containment or nothing in common: it gets as many more decimals
// as it takes to differ (0.9997, 99.97 %), up to MaxDecimals decimals of
// the fraction (4 of the percentage); closer still, it shows as
// "> 0.999999" ("> 99.9999 %"), or "< 0.000001" ("< 0.0001 %"). Exactly
// 0 and 1 are shown as 0.000 and 1.000 (0.0 % and 100.0 %). JSON keeps the
// numbers whole.

// MaxDecimals is the most decimals Fraction shows (Percent: 2 fewer).
const MaxDecimals = 6

// Fraction formats the share x with 3 decimals, more when 3 would round a
// share strictly between 0 and 1 to 0 or 1 (see MaxDecimals).
func Fraction(x float64) string { return share(x, 1, 3, MaxDecimals) }

// Percent formats the share x as a percentage with 1 decimal and " %",
// more when 1 would round a share strictly between 0 and 1 to 0 or 100 %.
func Percent(x float64) string { return share(x, 100, 1, MaxDecimals-2) + " %" }

// share formats x·scale with decimals decimals, more (up to most) while a
// share x strictly between 0 and 1 would show as 0 or scale; at most
// decimals still too few, it says "> " the largest figure below scale, or
// "< " the smallest above 0, that most decimals can show.
func share(x, scale float64, decimals, most int) string {
	v := x * scale
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if !(x > 0 && x < 1) {
		return s
	}
	for d := decimals; ; d++ {
		s = strconv.FormatFloat(v, 'f', d, 64)
		shown, err := strconv.ParseFloat(s, 64)
		if err != nil || (shown != 0 && shown != scale) {
			return s
		}
		if d >= most {
			step := math.Pow10(-most) // one unit of the last decimal
			if shown == 0 {
				return "< " + strconv.FormatFloat(step, 'f', most, 64)
			}
			return "> " + strconv.FormatFloat(scale-step, 'f', most, 64)
		}
	}
}
