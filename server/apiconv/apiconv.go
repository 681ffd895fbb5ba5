package apiconv

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
)

// Pair returns the API form of p.
func Pair(p db.Pair) api.Pair {
	return api.Pair{A: p.A, B: p.B, Similarity: p.Similarity, Hamming: p.Hamming, Exact: p.Exact}
}

// Cluster returns the API form of c, the n-th cluster (from 1).
func Cluster(n int, c db.Cluster) api.Cluster {
	return api.Cluster{Cluster: n, Size: len(c.IDs), Pairs: c.Pairs, IDs: c.IDs, Keep: c.Keep, Drop: c.Drop,
		Center: c.Center, Cohesion: c.Cohesion}
}

// AddResult returns the API form of res, the outcome of the add of the
// document id.
func AddResult(id string, res *db.AddResult) api.AddResult {
	return api.AddResult{ID: id, Stored: res.Stored, Replaced: res.Replaced, Unchanged: res.Unchanged,
		Rejected: !res.Stored && !res.Unchanged, Matches: Matches(res.Matches)}
}

// Matches returns the API form of ms.
func Matches(ms []db.Match) []api.Match {
	out := make([]api.Match, len(ms))
	for i, m := range ms {
		out[i] = api.Match{ID: m.ID, Similarity: m.Similarity, Hamming: m.Hamming, Exact: m.Exact,
			QueryInDoc: m.QueryInDoc, DocInQuery: m.DocInQuery}
	}
	return out
}

// Doc returns the API form of a stored document d.
func Doc(d *db.Doc) api.Doc {
	return api.Doc{ID: d.ID, Source: d.Source, Size: d.Size, Words: d.Words, Shingles: d.Shingles,
		Added: d.Added.Format(time.RFC3339Nano), ContentHash: hex.EncodeToString(d.ContentHash[:]),
		Fingerprint: db.FormatFingerprint(d.Fingerprint)}
}

// Span returns the API form of s.
func Span(s db.Span) api.Span {
	return api.Span{Start: s.Start, End: s.End, Line: s.Line, Col: s.Col, EndLine: s.EndLine, EndCol: s.EndCol, Word: s.Word, Words: s.Words}
}

// Named names one side of a comparison: a file or text (Stored false) or a
// stored document's id.
type Named struct {
	Name   string
	Stored bool
}

// Comparison returns the API form of c, whose sides are a and b, for
// fingerprints of k bits.
func Comparison(c *db.Comparison, a, b Named, k int) api.Comparison {
	side := func(n Named, sd db.Side, f db.Format) api.CompareSide {
		return api.CompareSide{Name: n.Name, Stored: n.Stored, Format: f.String(), Bytes: sd.Bytes, Words: sd.Words, Shingles: sd.Shingles}
	}
	out := api.Comparison{
		A: side(a, c.A, c.FormatA), B: side(b, c.B, c.FormatB),
		Estimated: c.Estimated, Hamming: c.Hamming, K: k, Jaccard: c.Jaccard,
		ContainedA: c.ContainedA, ContainedB: c.ContainedB, Shared: c.Shared,
		Passages: make([]api.Passage, len(c.Passages)),
	}
	for i, p := range c.Passages {
		out.Passages[i] = api.Passage{A: Span(p.A), B: Span(p.B)}
	}
	return out
}

// FromComparison returns the db form of c, an answer that carries its
// texts (api.CompareRequest.Texts), for printing as "fpdb compare" prints
// its own. A passage that does not lie within its text is an error, so
// that a wrong answer cannot make the printing fail.
func FromComparison(c *api.Comparison) (*db.Comparison, error) {
	fa, errA := db.ParseFormat(c.A.Format)
	fb, errB := db.ParseFormat(c.B.Format)
	if err := errors.Join(errA, errB); err != nil {
		return nil, fmt.Errorf("comparison: %w", err)
	}
	// A side read as markup is shown as its readable text (report).
	side := func(s api.CompareSide, f db.Format) db.Side {
		return db.Side{Bytes: s.Bytes, Words: s.Words, Shingles: s.Shingles, Markup: f == db.FormatHTML}
	}
	out := &db.Comparison{
		Figures: db.Figures{A: side(c.A, fa), B: side(c.B, fb), Shared: c.Shared, Jaccard: c.Jaccard,
			ContainedA: c.ContainedA, ContainedB: c.ContainedB, Estimated: c.Estimated, Hamming: c.Hamming,
			Passages: make([]db.Passage, len(c.Passages))},
		TextA: []byte(c.TextA), TextB: []byte(c.TextB), FormatA: fa, FormatB: fb,
	}
	span := func(s api.Span, text string) (db.Span, error) {
		if s.Start < 0 || s.Start > s.End || s.End > int64(len(text)) {
			return db.Span{}, fmt.Errorf("comparison: passage [%d, %d) is not within its text of %d bytes", s.Start, s.End, len(text))
		}
		return db.Span{Start: s.Start, End: s.End, Word: s.Word, Words: s.Words, Line: s.Line, Col: s.Col, EndLine: s.EndLine, EndCol: s.EndCol}, nil
	}
	for i, p := range c.Passages {
		a, errA := span(p.A, c.TextA)
		b, errB := span(p.B, c.TextB)
		if err := errors.Join(errA, errB); err != nil {
			return nil, err
		}
		out.Passages[i] = db.Passage{A: a, B: b}
	}
	return out, nil
}

// Template returns the API form of t.
func Template(t db.Template) api.Template {
	return api.Template{Name: t.Name, Shingles: t.Shingles, Format: t.Format.String(), Bytes: len(t.Text),
		Added: t.Added.Format(time.RFC3339)}
}

// KeepNames are the names of the keep policies, in the order the help
// gives them.
var KeepNames = []string{"oldest", "newest", "first", "longest", "shortest"}

// Keep returns the policy named s ("" is db.KeepNone) and whether s names
// one.
func Keep(s string) (db.Keep, bool) {
	switch s {
	case "":
		return db.KeepNone, true
	case "oldest":
		return db.KeepOldest, true
	case "newest":
		return db.KeepNewest, true
	case "first":
		return db.KeepFirst, true
	case "longest":
		return db.KeepLongest, true
	case "shortest":
		return db.KeepShortest, true
	}
	return 0, false
}

// ErrBadAge is returned by ParseAge.
var ErrBadAge = errors.New("want a positive duration (720h) or number of days (30d)")

// ParseAge parses an age: a positive Go duration ("720h") or a whole
// number of days ("30d", at most 100 000).
func ParseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 32)
		if err != nil || n == 0 || n > 100_000 {
			return 0, fmt.Errorf("%q: %w", s, ErrBadAge)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: %w", s, ErrBadAge)
	}
	return d, nil
}

// StorageStats returns the API form of a database's statistics and its
// storage statistics.
func StorageStats(st db.Stats, ss *db.StorageStats) api.StorageStats {
	p := st.Params
	js := api.StorageStats{
		Docs: st.Docs, K: p.K, M: len(p.GroupWidths), GroupWidths: p.GroupWidths, ShingleWidth: p.ShingleWidth,
		Seed: p.Seed, FormatVersion: p.FormatVersion, HashVersion: p.HashVersion, NormalizeVersion: p.NormalizeVersion,
		Merger: p.Merger, Created: p.Created.Format(time.RFC3339), DiskBytes: st.DiskBytes, Deferred: st.Deferred,
		ImportIncomplete: st.ImportIncomplete, KeepTexts: p.KeepTexts, Texts: ss.Texts, TextBytes: ss.TextBytes, TextRawBytes: ss.TextRawBytes,
		AuditLog: p.AuditLog, LogEntries: ss.LogEntries, LogBytes: ss.LogBytes,
		DeletedNotCompacted: ss.DeletedNotCompacted, BytesPerDoc: ss.BytesPerDoc, CompactionDebt: ss.CompactionDebt,
		PostingKeys: ss.PostingKeys, PostingIDs: ss.PostingIDs, MaxPosting: ss.MaxPosting,
		PostingLengths: []api.LengthBand{},
	}
	for _, b := range ss.PostingLengths {
		js.PostingLengths = append(js.PostingLengths, api.LengthBand{Min: b.Min, Max: b.Max, Keys: b.Keys})
	}
	return js
}

// reasons name the db package's errors in the API (api.Error.Reason), so
// that a client tells them apart without reading messages.
var reasons = []struct {
	name string
	err  error
}{
	{"not_found", db.ErrNotFound}, {"no_words", db.ErrNoWords}, {"binary", db.ErrBinary},
	{"invalid_id", db.ErrInvalidID}, {"text_too_large", db.ErrTextTooLarge}, {"infeasible_plan", db.ErrInfeasiblePlan},
	{"invalid_threshold", db.ErrInvalidThreshold}, {"empty_prefix", db.ErrEmptyPrefix}, {"no_log", db.ErrNoLog},
	{"no_text", db.ErrNoText}, {"bad_fingerprint", db.ErrBadFingerprint}, {"read_only", db.ErrReadOnly},
	{"invalid_options", db.ErrInvalidOptions}, {"bad_input", db.ErrBadInput}, {"no_template", db.ErrNoTemplate},
	// import_incomplete before not_empty: another export into an
	// unfinished import is both, and answered 403 as the former.
	{"template_needs_texts", db.ErrTemplateNeedsTexts}, {"import_incomplete", db.ErrImportIncomplete}, {"not_empty", db.ErrNotEmpty},
	{"bad_export", db.ErrBadExport}, {"import_running", db.ErrImportRunning},
	// Only in a batch's answer: a line skipped because an earlier line has
	// its id (api.BatchSkip.Reason).
	{"duplicate_in_batch", db.ErrDuplicateInBatch},
}

// Reason returns the API name of the first db error err wraps, or "".
func Reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return ""
}

// ReasonError returns the db error the API name stands for, or nil.
func ReasonError(name string) error {
	for _, r := range reasons {
		if r.name == name {
			return r.err
		}
	}
	return nil
}

// Message is an error's text without the repeated "fpdb: " of the errors
// it wraps: "fpdb: get \"a\": fpdb: document not found" becomes
// "fpdb: get \"a\": document not found". Quoted text (an id, as %q
// writes it) is left as it is.
func Message(err error) string {
	s := err.Error()
	const rep = ": fpdb: "
	var b strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\' && i+1 < len(s):
			b.WriteByte(c)
			i++
			b.WriteByte(s[i])
			continue
		case c == '"':
			quoted = !quoted
		case !quoted && strings.HasPrefix(s[i:], rep):
			b.WriteString(": ")
			i += len(rep) - 1
			for strings.HasPrefix(s[i+1:], "fpdb: ") { // "fpdb: fpdb: "
				i += len("fpdb: ")
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
