package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
)

// readJSON reads the request's JSON body into v (see decodeJSON).
func readJSON(r *http.Request, v any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeJSON(body, v)
}

// batchChunk is the number of documents of a batch written per atomic
// db.AddBatch.
const batchChunk = 1000

// batchLine is a document of a batch and the body line it came from.
type batchLine struct {
	line int
	in   db.Input
}

// parseBatch reads a batch's body: one api.AddRequest per line (blank
// lines skipped). Any bad line fails the whole batch, naming the line.
func parseBatch(body []byte) ([]batchLine, error) {
	var out []batchLine
	for n, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var req api.AddRequest
		if err := decodeJSON(line, &req); err != nil {
			return nil, badRequest("line %d: %v", n+1, err)
		}
		switch {
		case req.ID == "":
			return nil, badRequest("line %d: the document needs an id", n+1)
		case req.Threshold != 0 || req.Reject || req.Limit != 0:
			return nil, badRequest("line %d (id %q): threshold, reject and limit are not allowed in a batch, which checks nothing (add it with POST /v1/documents)", n+1, req.ID)
		}
		to, err := textOptions(req.TextInput)
		if err != nil {
			return nil, badRequest("line %d (id %q): %v", n+1, req.ID, err)
		}
		out = append(out, batchLine{line: n + 1, in: db.Input{ID: req.ID, Text: []byte(req.Text), Source: req.Source,
			TextOptions: to, ReplaceUnchanged: req.Replace}})
	}
	return out, nil
}

// batch is POST /v1/batch: many documents, one JSON api.AddRequest per line
// (application/x-ndjson), stored without a near-duplicate check in atomic
// chunks of batchChunk documents. Every line is read and checked before the
// first is stored: a malformed line stores nothing.
func (s *Server) batch(w http.ResponseWriter, r *http.Request) error {
	mt, _, err := mediaType(r)
	if err != nil {
		return err
	}
	switch mt {
	case "", "application/x-ndjson", "application/jsonl", "application/json", "text/plain":
	default:
		return &httpError{status: http.StatusUnsupportedMediaType, code: api.CodeBadRequest,
			msg: fmt.Sprintf("Content-Type %q: send JSON lines (application/x-ndjson)", mt)}
	}
	if len(r.URL.Query()) > 0 {
		return badRequest("a batch takes no query parameters")
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if !utf8.Valid(body) {
		return badRequest("the body is not valid UTF-8")
	}
	lines, err := parseBatch(body)
	if err != nil {
		return err
	}
	res := api.BatchResult{Skipped: []api.BatchSkip{}}
	// An id given twice: the later lines are skipped, as db.AddBatch does
	// within one chunk.
	seen := make(map[string]bool, len(lines))
	docs := lines[:0]
	for _, l := range lines {
		if seen[l.in.ID] {
			res.Skipped = append(res.Skipped, api.BatchSkip{Line: l.line, ID: l.in.ID, Error: db.ErrDuplicateInBatch.Error()})
			continue
		}
		seen[l.in.ID] = true
		docs = append(docs, l)
	}
	for lo := 0; lo < len(docs); lo += batchChunk {
		chunk := docs[lo:min(lo+batchChunk, len(docs))]
		ins := make([]db.Input, len(chunk))
		for i, l := range chunk {
			ins[i] = l.in
		}
		br, err := s.d.AddBatch(r.Context(), ins)
		if err != nil {
			if lo == 0 {
				return err
			}
			// Earlier chunks are stored: not a 4xx, which would say that
			// nothing changed.
			return &httpError{status: http.StatusServiceUnavailable, code: api.CodeUnavailable,
				msg: fmt.Sprintf("the batch stopped at line %d, after %d documents stored (lines before it are done): %v", chunk[0].line, res.Stored, err)}
		}
		res.Stored += br.Stored
		res.Replaced += br.Replaced
		res.Unchanged += br.Unchanged
		for _, sk := range br.Skipped {
			res.Skipped = append(res.Skipped, api.BatchSkip{Line: chunk[sk.Index].line, ID: sk.ID, Error: sk.Err.Error()})
		}
	}
	slices.SortFunc(res.Skipped, func(a, b api.BatchSkip) int { return a.Line - b.Line })
	return writeJSON(w, http.StatusOK, res)
}

// deleteMany is POST /v1/delete: the documents of an id list, an id prefix
// or an age (exactly one), or with dry_run how many there are.
func (s *Server) deleteMany(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var req api.DeleteRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	// Which selectors are present, an empty one included.
	var given struct {
		IDs       *[]string `json:"ids"`
		Prefix    *string   `json:"prefix"`
		OlderThan *string   `json:"older_than"`
	}
	_ = json.Unmarshal(body, &given)
	var sel []string
	for name, set := range map[string]bool{"ids": given.IDs != nil, "prefix": given.Prefix != nil, "older_than": given.OlderThan != nil} {
		if set {
			sel = append(sel, name)
		}
	}
	slices.Sort(sel)
	if len(sel) != 1 {
		return badRequest("give exactly one of ids, prefix and older_than (got %d: %s)", len(sel), strings.Join(sel, ", "))
	}
	if req.Forget && given.IDs == nil {
		return badRequest("forget goes with ids, not with %s", sel[0])
	}
	ctx := r.Context()
	var cutoff time.Time
	switch {
	case given.IDs != nil && len(req.IDs) == 0:
		return badRequest("ids is empty")
	case given.Prefix != nil && req.Prefix == "":
		return fmt.Errorf("prefix: %w (it would delete every document)", db.ErrEmptyPrefix)
	case given.OlderThan != nil:
		age, err := apiconv.ParseAge(req.OlderThan)
		if err != nil {
			return badRequest("older_than %v", err)
		}
		cutoff = time.Now().Add(-age)
	}
	if req.DryRun {
		res, err := s.dryRunDelete(r, req, cutoff)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, res)
	}
	res := api.DeleteResult{}
	switch {
	case req.Forget:
		fr, err := s.d.Forget(ctx, req.IDs)
		if err != nil {
			return err
		}
		res.Deleted, res.NotFound, res.Erased, res.Redacted = fr.Deleted, fr.NotFound, &fr.Erased, &fr.Redacted
	case req.IDs != nil:
		dr, err := s.d.DeleteMany(ctx, req.IDs)
		if err != nil {
			return err
		}
		res.Deleted, res.NotFound = dr.Deleted, dr.NotFound
	case req.Prefix != "":
		if res.Deleted, err = s.d.DeletePrefix(ctx, req.Prefix); err != nil {
			return err
		}
	default:
		if res.Deleted, err = s.d.DeleteOlderThan(ctx, cutoff); err != nil {
			return err
		}
	}
	return writeJSON(w, http.StatusOK, res)
}

// dryRunDelete counts the documents a delete would remove (and, by prefix
// or age, lists them).
func (s *Server) dryRunDelete(r *http.Request, req api.DeleteRequest, cutoff time.Time) (api.DeleteResult, error) {
	ctx := r.Context()
	res := api.DeleteResult{DryRun: true}
	if req.IDs == nil {
		err := s.d.Docs(ctx, func(doc db.Doc) error {
			if (req.Prefix != "" && strings.HasPrefix(doc.ID, req.Prefix)) || (req.Prefix == "" && doc.Added.Before(cutoff)) {
				res.Deleted++
				res.IDs = append(res.IDs, doc.ID)
			}
			return nil
		})
		return res, err
	}
	seen := make(map[string]bool, len(req.IDs))
	for _, id := range req.IDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		has, err := s.d.Has(ctx, id)
		if err != nil {
			return res, err
		}
		if has {
			res.Deleted++
		} else {
			res.NotFound = append(res.NotFound, id)
		}
	}
	return res, nil
}
