package evidence

import "testing"

// TestReadablePrefixedNames: a prefixed XML name or a custom element
// (a:p, q-btn, span-foo) is not the inline element its first letters
// name: it shows as a space, as the tokenizer separates words there.
func TestReadablePrefixedNames(t *testing.T) {
	for in, want := range map[string]string{
		"x<a:p>y":          "x y",
		"x<q-btn>y":        "x y",
		"x<span-foo>y":     "x y",
		"x<span>y":         "xy",
		"x<span class=z>y": "xy",
		"x<b/>y":           "xy",
	} {
		if got := Readable([]byte(in), true, [][2]int64{{0, int64(len(in))}})[0]; got != want {
			t.Errorf("Readable(%q) = %q, want %q", in, got, want)
		}
	}
}
