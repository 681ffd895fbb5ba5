package plot

import (
	"math"
	"strconv"
	"strings"
)

// ticks are the tick positions of one axis and the number of decimals
// their labels need.
type ticks struct {
	values   []float64
	decimals int
}

// niceTicks returns at most maxTicks (at least 2) ticks within [lo, hi] on
// multiples of the smallest step of the form {1, 2, 2.5, 5} × 10^k that is
// at least (hi-lo)/(maxTicks-1). An unusable range gives no ticks.
func niceTicks(lo, hi float64, maxTicks int) ticks {
	maxTicks = max(maxTicks, 2)
	span := hi - lo
	if !finite(lo) || !finite(hi) || !finite(span) || span <= 0 {
		return ticks{}
	}
	raw := span / float64(maxTicks-1)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range [...]float64{1, 2, 2.5, 5} {
		if s := m * mag; s >= raw*(1-1e-9) {
			step = s
			break
		}
	}
	if !finite(step) || step <= 0 {
		return ticks{}
	}
	dec := decimalsFor(step)
	eps := step * 1e-9
	first := math.Ceil((lo - eps) / step)
	last := math.Floor((hi + eps) / step)
	n := last - first + 1
	if !(n >= 1 && n <= float64(maxTicks)+1) {
		return ticks{values: []float64{lo, hi}, decimals: dec}
	}
	scale := math.Pow(10, float64(dec))
	vals := make([]float64, 0, int(n))
	for i := 0; i < int(n); i++ {
		v := (first + float64(i)) * step
		// Snap to the decimals of the step, where that is exact enough,
		// so that 3 × 0.1 is 0.3.
		if r := v * scale; dec <= 15 && math.Abs(r) < 1<<52 {
			v = math.Round(r) / scale
		}
		if v == 0 {
			v = 0 // no negative zero
		}
		if v < lo-eps || v > hi+eps || (len(vals) > 0 && v <= vals[len(vals)-1]) {
			continue
		}
		vals = append(vals, v)
	}
	return ticks{values: vals, decimals: dec}
}

// decimalsFor returns the number of decimals needed to write multiples of
// step exactly (up to 15).
func decimalsFor(step float64) int {
	for d := 0; d < 15; d++ {
		s := step * math.Pow(10, float64(d))
		if math.Abs(s-math.Round(s)) <= 1e-6*s {
			return d
		}
	}
	return 15
}

// label formats a tick value with the given number of decimals, falling
// back to six significant digits for very large values or very fine steps.
func label(v float64, decimals int) string {
	var s string
	if decimals > 12 || math.Abs(v) >= 1e12 {
		s = strconv.FormatFloat(v, 'g', 6, 64)
	} else {
		s = strconv.FormatFloat(v, 'f', decimals, 64)
	}
	if strings.HasPrefix(s, "-") && strings.Trim(s, "-0.") == "" {
		s = s[1:] // "-0.00" → "0.00"
	}
	return s
}

// labels formats all tick values of t.
func (t ticks) labels() []string {
	out := make([]string, len(t.values))
	for i, v := range t.values {
		out[i] = label(v, t.decimals)
	}
	return out
}
