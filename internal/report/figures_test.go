package report

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

func TestFractionPercent(t *testing.T) {
	for _, tc := range []struct {
		x                 float64
		fraction, percent string
	}{
		{1, "1.000", "100.0 %"},
		{0, "0.000", "0.0 %"},
		{0.5, "0.500", "50.0 %"},
		{0.79, "0.790", "79.0 %"},
		{0.9994, "0.999", "99.9 %"},
		// 2997 of 2998 shingles shared: one word added to 3000.
		{2997.0 / 2998, "0.9997", "99.97 %"},
		{0.9995, "0.9995", "99.95 %"},
		{0.99996, "0.99996", "99.996 %"},
		{1 - 3e-6, "0.999997", "99.9997 %"},
		{1 - 4e-7, "> 0.999999", "> 99.9999 %"},
		{1 - 1e-12, "> 0.999999", "> 99.9999 %"},
		{0.0004, "0.0004", "0.04 %"},
		{0.00004, "0.00004", "0.004 %"},
		{1e-9, "< 0.000001", "< 0.0001 %"},
		{0.0005, "0.001", "0.1 %"},
		// Outside (0, 1): as given.
		{-0.25, "-0.250", "-25.0 %"},
	} {
		if got := Fraction(tc.x); got != tc.fraction {
			t.Errorf("Fraction(%v) = %q, want %q", tc.x, got, tc.fraction)
		}
		if got := Percent(tc.x); got != tc.percent {
			t.Errorf("Percent(%v) = %q, want %q", tc.x, got, tc.percent)
		}
	}
	// Every share n/d strictly between 0 and 1 differs from 0 and 1 as
	// shown.
	for d := 2; d <= 100000; d = d*3 + 1 {
		for _, n := range []int{1, 2, d / 2, d - 2, d - 1} {
			if n <= 0 || n >= d {
				continue
			}
			x := float64(n) / float64(d)
			for _, f := range []struct {
				s   string
				top float64
			}{{Fraction(x), 1}, {strings.TrimSuffix(Percent(x), " %"), 100}} {
				if v, err := strconv.ParseFloat(f.s, 64); err == nil && (v == 0 || v == f.top) {
					t.Errorf("%d/%d shows as %q", n, d, f.s)
				}
			}
		}
	}
}

// TestPagesNeverRoundToOne: the compare page and the report show a share
// just below 1 with the digits that tell it from 1; exactly 1 stays 1.000.
func TestPagesNeverRoundToOne(t *testing.T) {
	c := *comparison(t)
	c.Estimated, c.Jaccard, c.ContainedA, c.ContainedB = 0.99961, 2997.0/2998, 1, 2997.0/2998
	var buf bytes.Buffer
	if err := WriteCompare(&buf, Pair{NameA: "n1.txt", NameB: "n2.txt", TextA: []byte(textA), TextB: []byte(textB),
		Figures: &c, K: 4096, Generated: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"estimated": "0.9996", "jaccard": "0.9997", "contained-a": "100.0 %", "contained-b": "99.97 %"}
	for id, w := range want {
		if got := textOf(byID(t, doc, id)); got != w {
			t.Errorf("compare page: #%s shows %q, want %q", id, got, w)
		}
	}

	ev, err := NewEvidence([]byte(textA), []byte(textB), &c, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := Report{Database: "db", Threshold: 0.9, K: 4096, ShingleWidth: 4, Documents: 2, MinWords: 8,
		Clusters: []Cluster{{Members: []string{"n1.txt", "n2.txt"}, Center: "n1.txt", Cohesion: 0.99961, TotalPairs: 1,
			Matrix: [][]float64{{1, 0.996}, {0.996, 1}},
			Pairs:  []ClusterPair{{A: "n1.txt", B: "n2.txt", Similarity: 0.99961, Hamming: 1, Evidence: ev}}}}}
	page, rdoc := render(t, r)
	for id, w := range map[string]string{"c1-cohesion": "0.9996", "c1-p1-similarity": "0.9996", "c1-p1-estimated": "0.9996",
		"c1-p1-jaccard": "0.9997", "c1-p1-contained-a": "100.0 %", "c1-p1-contained-b": "99.97 %"} {
		if got := text(t, rdoc, id); got != w {
			t.Errorf("report: #%s shows %q, want %q", id, got, w)
		}
	}
	sum := strings.Join(strings.Fields(textOf(find(byClass(rdoc, "details", "pair")[0], func(n *html.Node) bool { return n.Data == "summary" })[0])), " ")
	if !strings.Contains(sum, "estimated resemblance 0.9996, exact 0.9997, A in B 100.0 %, B in A 99.97 %") {
		t.Errorf("report: pair summary %q", sum)
	}
	// The picture's cells (2 decimals) and their titles.
	if !strings.Contains(page, ">0.996</text>") || strings.Contains(page, ">1.00</text>") {
		t.Errorf("report: a cell of 0.996 does not show 0.996")
	}
	if !strings.Contains(page, "estimated resemblance 0.996</title>") {
		t.Errorf("report: a cell's title does not show 0.996")
	}
}
