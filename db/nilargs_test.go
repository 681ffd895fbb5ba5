package db

import (
	"errors"
	"strings"
	"testing"
)

// TestNilCallbacks: a nil function, writer or reader is ErrInvalidOptions,
// not a panic, and the database stays usable.
func TestNilCallbacks(t *testing.T) {
	d := openTest(t, "", &Options{AuditLog: true})
	addBatch(t, d, []Input{{ID: "a", Text: []byte("one two three four five six")}})
	_, perr := d.Pairs(ctx, PairsOptions{Threshold: 0.8}, nil)
	_, eerr := d.Export(ctx, nil)
	_, werr := NewExportWriter(nil, d.Params(), 0)
	_, rerr := NewExportReader(nil)
	_, ierr := d.ImportInto(ctx, nil)
	_, serr := Salvage(ctx, t.TempDir(), nil, nil)
	for name, err := range map[string]error{
		"Docs": d.Docs(ctx, nil), "Log": d.Log(ctx, LogOptions{}, nil), "Pairs": perr, "Export": eerr,
		"NewExportWriter": werr, "NewExportReader": rerr, "ImportInto": ierr, "Salvage": serr,
	} {
		if !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s with nil: %v, want ErrInvalidOptions", name, err)
		}
	}
	if _, err := d.Get(ctx, "a"); err != nil {
		t.Fatal(err)
	}
}

// TestSuggestTemplateNamesBadFields: the error lists the fields at fault
// only.
func TestSuggestTemplateNamesBadFields(t *testing.T) {
	d := openTest(t, "", nil)
	_, err := d.SuggestTemplate(ctx, &BoilerplateOptions{MinShare: 2})
	if !errors.Is(err, ErrInvalidOptions) || !strings.HasSuffix(err.Error(), ": MinShare 2 (want (0, 1])") {
		t.Errorf("MinShare 2: %v", err)
	}
	_, err = d.SuggestTemplate(ctx, &BoilerplateOptions{MinWords: -1, Sample: -2})
	if err == nil || !strings.HasSuffix(err.Error(), ": MinWords -1 (want ≥ 1), Sample -2 (want ≥ 1)") {
		t.Errorf("MinWords -1, Sample -2: %v", err)
	}
}
