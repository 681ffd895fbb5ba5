package db

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"
)

// compareTexts are an old text and a new one that copies its middle
// paragraph.
const (
	compareOld = "Title of the old proposal\n\n" +
		"We propose to measure the migration of alpine swifts over three seasons with light loggers fitted at four colonies.\n\n" +
		"The budget covers travel, loggers and one technician."
	compareNew = "A new proposal about bats.\n" +
		"Our method: we propose to measure the migration of alpine swifts over three seasons with light loggers fitted at four colonies.\n" +
		"Nothing else is shared."
	comparePassage = "propose to measure the migration of alpine swifts over three seasons with light loggers fitted at four colonies"
)

func TestCompare(t *testing.T) {
	d := openTest(t, t.TempDir(), &Options{KeepTexts: true})
	if _, err := d.Add(ctx, Input{ID: "old", Text: []byte(compareOld)}, nil); err != nil {
		t.Fatal(err)
	}
	c, err := d.Compare(ctx, CompareInput{Text: []byte(compareNew), Name: "new.txt"}, CompareInput{ID: "old"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Passages) != 1 {
		t.Fatalf("%d passages, want 1: %+v", len(c.Passages), c.Passages)
	}
	p := c.Passages[0]
	// "We"/"we": the passage starts at the first shared shingle.
	if got := string(c.TextA[p.A.Start:p.A.End]); !strings.HasSuffix(got, comparePassage) {
		t.Fatalf("passage in the new text %q", got)
	}
	if got := string(c.TextB[p.B.Start:p.B.End]); !strings.HasSuffix(got, comparePassage) || p.B.Line != 3 {
		t.Fatalf("passage in the stored text %q at line %d", got, p.B.Line)
	}
	if string(c.TextB) != compareOld || c.FormatB != FormatText {
		t.Fatalf("stored text %q (%v)", c.TextB, c.FormatB)
	}
	if !(c.ContainedA > 0.5 && c.ContainedB > 0.5 && c.Jaccard < c.ContainedA) {
		t.Fatalf("figures %+v", c.Figures)
	}

	// The estimate is the one a query gives.
	res, err := d.Query(ctx, []byte(compareNew), QueryOptions{Threshold: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 || res.Matches[0].Hamming != c.Hamming || res.Matches[0].Similarity != c.Estimated {
		t.Fatalf("query %+v, comparison Hamming %d estimate %.3f", res.Matches, c.Hamming, c.Estimated)
	}

	// Without a database, from the same texts: the same figures.
	c2, err := CompareTexts(ctx, CompareInput{Reader: strings.NewReader(compareNew)}, CompareInput{Text: []byte(compareOld)}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Jaccard != c.Jaccard || c2.Hamming != c.Hamming || len(c2.Passages) != 1 || c2.Passages[0] != p {
		t.Fatalf("CompareTexts %+v, Compare %+v", c2.Figures, c.Figures)
	}

	// A text in another encoding: offsets in the decoded text.
	latin, err := charmap.ISO8859_1.NewEncoder().Bytes([]byte("Café noir. " + compareNew))
	if err != nil {
		t.Fatal(err)
	}
	c3, err := d.Compare(ctx, CompareInput{Text: latin, TextOptions: TextOptions{Encoding: "iso-8859-1"}}, CompareInput{ID: "old"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p3 := c3.Passages[0]
	if !bytes.HasPrefix(c3.TextA, []byte("Café")) || !strings.HasSuffix(string(c3.TextA[p3.A.Start:p3.A.End]), comparePassage) {
		t.Fatalf("decoded text %q, passage %q", c3.TextA, c3.TextA[p3.A.Start:p3.A.End])
	}
}

func TestCompareErrors(t *testing.T) {
	d := openTest(t, t.TempDir(), &Options{KeepTexts: true})
	if _, err := d.Add(ctx, Input{ID: "old", Text: []byte(compareOld)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Add(ctx, Input{ID: "fp", Fingerprint: make([]uint64, 8)}, nil); err != nil {
		t.Fatal(err)
	}
	text := CompareInput{Text: []byte(compareNew)}
	for _, tc := range []struct {
		in   CompareInput
		want error
		name string
	}{
		{CompareInput{ID: "missing"}, ErrNotFound, `"missing"`},
		{CompareInput{ID: "fp"}, ErrNoText, `"fp"`},
		{CompareInput{}, ErrBadInput, "text"},
		{CompareInput{ID: "old", Text: []byte("x")}, ErrBadInput, `"old"`},
		{CompareInput{Text: []byte(" ... "), Name: "empty.txt"}, ErrNoWords, "empty.txt"},
		{CompareInput{Text: []byte("a\x00b"), Name: "bin"}, ErrBinary, "bin"},
		{CompareInput{Text: []byte("x"), TextOptions: TextOptions{Encoding: "klingon"}}, ErrInvalidOptions, "text"},
	} {
		_, err := d.Compare(ctx, text, tc.in, nil)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("Compare(%+v): %v, want %v naming %s", tc.in, err, tc.want, tc.name)
		}
	}
	if _, err := CompareTexts(ctx, text, CompareInput{ID: "old"}, nil, nil); !errors.Is(err, ErrBadInput) {
		t.Errorf("CompareTexts with an id: %v", err)
	}

	plain := openTest(t, t.TempDir(), nil)
	if _, err := plain.Add(ctx, Input{ID: "old", Text: []byte(compareOld)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Compare(ctx, text, CompareInput{ID: "old"}, nil); !errors.Is(err, ErrNoText) {
		t.Errorf("Compare with an id in a database without texts: %v", err)
	}
	if _, err := plain.Compare(ctx, text, CompareInput{Text: []byte(compareOld)}, nil); err != nil {
		t.Errorf("Compare of two texts in a database without texts: %v", err)
	}
}

func TestContainmentRefusesApproximatePlans(t *testing.T) {
	d := openTest(t, t.TempDir(), nil)
	for _, k := range []PlanKind{PlanApprox, PlanProbe} {
		if _, err := d.Query(ctx, []byte(compareNew), QueryOptions{Containment: 0.5, Plan: Plan{Kind: k, Tau: 1}}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("plan %v with Containment: %v", k, err)
		}
	}
}

// TestCompareStoredTooLarge: a stored text longer than MaxCompareText (a
// database whose MaxTextSize allows it) is refused by Compare as a text of
// that length is, not analyzed at its memory cost.
func TestCompareStoredTooLarge(t *testing.T) {
	d := openTest(t, "", &Options{KeepTexts: true, MaxTextSize: MaxCompareText + 1<<20})
	var b strings.Builder
	for i := 0; b.Len() <= MaxCompareText; i++ {
		fmt.Fprintf(&b, "w%d ", i%100000)
	}
	if _, err := d.Add(ctx, Input{ID: "huge", Text: []byte(b.String())}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := d.Compare(ctx, CompareInput{ID: "huge"}, CompareInput{Text: []byte(compareOld)}, nil)
	if !errors.Is(err, ErrTextTooLarge) || !strings.Contains(err.Error(), `"huge"`) {
		t.Fatalf("compare of a stored text of %d bytes: %v, want ErrTextTooLarge naming it", b.Len(), err)
	}
	_, err = d.Compare(ctx, CompareInput{Text: []byte(b.String())}, CompareInput{Text: []byte(compareOld)}, nil)
	if !errors.Is(err, ErrTextTooLarge) {
		t.Fatalf("compare of a text of %d bytes: %v, want ErrTextTooLarge", b.Len(), err)
	}
}
