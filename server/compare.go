package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/internal/evidence"
	"github.com/fpdb/fpdb/internal/report"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/fpdb/fpdb/server/httpapi"
)

// compareInput returns the db's input for one side of a comparison and
// how the answer names it; which is "a" or "b", for errors.
func compareInput(which string, t api.CompareText) (db.CompareInput, apiconv.Named, error) {
	given := 0
	for _, set := range []bool{t.ID != "", t.Text != "", len(t.Bytes) > 0} {
		if set {
			given++
		}
	}
	if given != 1 {
		return db.CompareInput{}, apiconv.Named{}, httpapi.BadRequest("%s: give the id of a stored document, a text or bytes that are not empty (one of them)", which)
	}
	if t.ID != "" {
		if t.Format != "" || t.Encoding != "" {
			return db.CompareInput{}, apiconv.Named{}, httpapi.BadRequest("%s: format and encoding go with a text, not a stored id", which)
		}
		return db.CompareInput{ID: t.ID}, apiconv.Named{Name: t.ID, Stored: true}, nil
	}
	to, err := httpapi.TextOptions(t.TextInput)
	if err != nil {
		return db.CompareInput{}, apiconv.Named{}, httpapi.BadRequest("%s: %v", which, err)
	}
	name := t.Name
	if name == "" {
		name = "text " + which // errors say which side is at fault
	}
	text := t.Bytes // read as an upload is
	if text == nil {
		text = []byte(t.Text)
	}
	return db.CompareInput{Text: text, Name: name, TextOptions: to}, apiconv.Named{Name: t.Name}, nil
}

// compare is POST /v1/compare: how similar two texts or stored documents
// are and the passages they share, as "fpdb compare --json" prints it, or
// with ?html=true the page "fpdb compare --html" writes.
func (s *Server) compare(w http.ResponseWriter, r *http.Request) error {
	return ServeCompare(w, r, s.d.Params().K, s.compareSlots.Limit(s.d.Compare))
}

// Comparer compares two inputs, as db.DB.Compare does.
type Comparer func(ctx context.Context, a, b db.CompareInput, opts *db.CompareOptions) (*db.Comparison, error)

// CompareSlots bound the comparisons a server runs at once: a comparison
// of long texts holds memory many times their size (the shingles and
// positions of both), so that requests up to the server's concurrency
// limit, all comparing texts near the body limit, could exhaust it. Make
// them with NewCompareSlots.
type CompareSlots chan struct{}

// NewCompareSlots returns slots for as many comparisons at once as Go
// runs goroutines in parallel (GOMAXPROCS): comparing is CPU-bound, so
// more at once would not finish sooner.
func NewCompareSlots() CompareSlots { return make(CompareSlots, max(1, runtime.GOMAXPROCS(0))) }

// Limit returns cmp run in one of the slots: a comparison waits for a free
// slot, up to its request's deadline.
func (s CompareSlots) Limit(cmp Comparer) Comparer {
	return func(ctx context.Context, a, b db.CompareInput, opts *db.CompareOptions) (*db.Comparison, error) {
		select {
		case s <- struct{}{}:
			defer func() { <-s }()
		case <-ctx.Done():
			return nil, fmt.Errorf("fpdb: compare: waiting for one of the %d comparisons running at once to end: %w", cap(s), ctx.Err())
		}
		return cmp(ctx, a, b, opts)
	}
}

// ServeCompare serves POST /v1/compare (the request and answer of package
// api) with cmp, for fingerprints of k bits: the single-node server
// compares with its database, a cluster node with its own comparer.
func ServeCompare(w http.ResponseWriter, r *http.Request, k int, cmp Comparer) error {
	html, err := httpapi.ReadFlag(r, "html")
	if err != nil {
		return err
	}
	var req api.CompareRequest
	if err := httpapi.ReadJSON(r, &req); err != nil {
		return err
	}
	a, na, err := compareInput("a", req.A)
	if err != nil {
		return err
	}
	b, nb, err := compareInput("b", req.B)
	if err != nil {
		return err
	}
	// As "fpdb compare": min_words 8 unless given, 0 for every passage.
	opts := &db.CompareOptions{MaxGap: req.Gap, MaxPassages: req.Passages}
	if req.MinWords != nil {
		if opts.MinWords = *req.MinWords; opts.MinWords == 0 {
			opts.MinWords = -1
		}
	}
	if (req.MinWords != nil && *req.MinWords < 0) || req.Gap < 0 || req.Passages < 0 {
		return httpapi.BadRequest("min_words, gap and passages must not be negative")
	}
	if req.Passages > api.MaxComparePassages {
		return httpapi.BadRequest("passages %d: at most %d", req.Passages, api.MaxComparePassages)
	}
	// All passages: the longest MaxComparePassages, and one more to tell
	// whether there are more.
	all := opts.MaxPassages == 0
	if all {
		opts.MaxPassages = api.MaxComparePassages + 1
	}
	c, err := cmp(r.Context(), a, b, opts)
	if err != nil {
		return err
	}
	more := all && len(c.Passages) > api.MaxComparePassages
	if more {
		c.Passages = c.Passages[:api.MaxComparePassages]
	}
	page := func() ([]byte, error) {
		var b bytes.Buffer
		err := report.WriteCompare(&b, report.Pair{NameA: pageName(na, "A"), NameB: pageName(nb, "B"),
			TextA: c.TextA, TextB: c.TextB, Figures: &c.Figures, K: k, Generated: time.Now()})
		return b.Bytes(), err
	}
	if !html {
		out := apiconv.Comparison(c, na, nb, k)
		out.MorePassages = more
		if req.Texts {
			out.TextA, out.TextB = string(c.TextA), string(c.TextB)
			readable(&out, c)
		}
		if req.Page {
			p, err := page()
			if err != nil {
				return err
			}
			out.Page = string(p)
		}
		return httpapi.WriteJSON(w, http.StatusOK, out)
	}
	p, err := page()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err = w.Write(p)
	return err
}

// readable gives each passage of a side read as markup its readable text
// (api.Span.Readable).
func readable(out *api.Comparison, c *db.Comparison) {
	for _, side := range []struct {
		markup bool
		text   []byte
		span   func(p *api.Passage) *api.Span
	}{
		{c.A.Markup, c.TextA, func(p *api.Passage) *api.Span { return &p.A }},
		{c.B.Markup, c.TextB, func(p *api.Passage) *api.Span { return &p.B }},
	} {
		if !side.markup {
			continue
		}
		ranges := make([][2]int64, len(out.Passages))
		for i := range out.Passages {
			sp := side.span(&out.Passages[i])
			ranges[i] = [2]int64{sp.Start, sp.End}
		}
		for i, r := range evidence.Readable(side.text, true, ranges) {
			side.span(&out.Passages[i]).Readable = r
		}
	}
}

// pageName names a side on the HTML page, as "fpdb compare" does.
func pageName(n apiconv.Named, side string) string {
	switch {
	case n.Stored:
		return "stored " + report.ShownID(n.Name)
	case n.Name != "":
		return report.ShownID(n.Name)
	}
	return "text " + side
}
