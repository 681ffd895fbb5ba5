package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/fpdb/fpdb/server/httpapi"
)

// batchChunk is the number of documents of a batch written per atomic
// db.AddBatch.
const batchChunk = 1000

// batch is POST /v1/batch: many documents, one JSON api.AddRequest per line
// (application/x-ndjson), stored without a near-duplicate check in atomic
// chunks of batchChunk documents (with ?threshold=R, checkedBatch). Every
// line is read and checked before the first is stored: a malformed line
// stores nothing.
func (s *Server) batch(w http.ResponseWriter, r *http.Request) error {
	lines, opts, err := httpapi.ReadBatch(r, nil)
	if err != nil {
		return err
	}
	if opts != nil {
		return s.checkedBatch(w, r, lines, opts)
	}
	// An id given twice: the later lines are skipped, as db.AddBatch does
	// within one chunk.
	docs, dups := httpapi.SkipDuplicates(lines)
	res := api.BatchResult{Skipped: append([]api.BatchSkip{}, dups...)}
	for lo := 0; lo < len(docs); lo += batchChunk {
		chunk := docs[lo:min(lo+batchChunk, len(docs))]
		br, err := s.d.AddBatch(r.Context(), inputsOf(chunk))
		if err != nil {
			return httpapi.BatchStopped(lo, chunk[0].Line, res.Stored, err)
		}
		res.Stored += br.Stored
		res.Replaced += br.Replaced
		res.Unchanged += br.Unchanged
		for _, sk := range br.Skipped {
			res.Skipped = append(res.Skipped, skipOf(chunk, sk))
		}
	}
	slices.SortFunc(res.Skipped, func(a, b api.BatchSkip) int { return a.Line - b.Line })
	return httpapi.WriteJSON(w, http.StatusOK, res)
}

// inputsOf returns the documents of lines.
func inputsOf(lines []httpapi.BatchLine) []db.Input {
	ins := make([]db.Input, len(lines))
	for i, l := range lines {
		ins[i] = l.Input
	}
	return ins
}

// skipOf returns the API form of sk, a document of chunk skipped.
func skipOf(chunk []httpapi.BatchLine, sk db.BatchSkip) api.BatchSkip {
	return api.BatchSkip{Line: chunk[sk.Index].Line, ID: sk.ID, Error: sk.Err.Error(), Reason: apiconv.Reason(sk.Err)}
}

// checkedBatch is POST /v1/batch?threshold=R: each document checked as
// POST /v1/documents with the batch's threshold, reject and limit checks
// it, in line order — against the stored documents and the lines before
// it — and stored in atomic chunks of up to batchChunk documents
// (db.AddEach, one sync each). A line whose id an earlier line has
// replaces that line's document, as a later add would (it starts the next
// chunk). The answer lists each document's outcome.
func (s *Server) checkedBatch(w http.ResponseWriter, r *http.Request, lines []httpapi.BatchLine, opts *db.AddOptions) error {
	res, err := httpapi.CheckedBatch(lines, httpapi.ChunkLimit{Lines: batchChunk}, func(chunk []httpapi.BatchLine) ([]api.AddResult, []api.BatchSkip, error) {
		er, err := s.d.AddEach(r.Context(), inputsOf(chunk), opts)
		if err != nil {
			return nil, nil, err
		}
		var outs []api.AddResult
		var skipped []api.BatchSkip
		for _, sk := range er.Skipped {
			skipped = append(skipped, skipOf(chunk, sk))
		}
		for i, x := range er.Results {
			if x != nil {
				out := apiconv.AddResult(chunk[i].Input.ID, x)
				out.Line = chunk[i].Line
				outs = append(outs, out)
			}
		}
		return outs, skipped, nil
	})
	if err != nil {
		return err
	}
	return httpapi.WriteJSON(w, http.StatusOK, res)
}

// deleteMany is POST /v1/delete: the documents of an id list, an id prefix
// or an age (exactly one), or with dry_run how many there are.
func (s *Server) deleteMany(w http.ResponseWriter, r *http.Request) error {
	req, by, err := httpapi.ReadDelete(r)
	if err != nil {
		return err
	}
	if req.Forget && by != "ids" {
		return httpapi.BadRequest("forget goes with ids, not with %s", by)
	}
	ctx := r.Context()
	var cutoff time.Time
	switch {
	case by == "ids" && len(req.IDs) == 0:
		return httpapi.BadRequest("ids is empty")
	case by == "prefix" && req.Prefix == "":
		return fmt.Errorf("prefix: %w (it would delete every document)", db.ErrEmptyPrefix)
	case by == "older_than":
		age, err := apiconv.ParseAge(req.OlderThan)
		if err != nil {
			return httpapi.BadRequest("older_than %v", err)
		}
		cutoff = time.Now().Add(-age)
	}
	if req.DryRun {
		res, err := s.dryRunDelete(r, req, cutoff)
		if err != nil {
			return err
		}
		return httpapi.WriteJSON(w, http.StatusOK, res)
	}
	// A delete is written in atomic batches: one cut short (its time over,
	// the server shutting down) after some of them answers what they
	// deleted, as a 503 (httpapi.Partial).
	res := api.DeleteResult{}
	switch {
	case req.Forget:
		fr, err := s.d.Forget(ctx, req.IDs)
		if err != nil {
			if fr != nil && fr.Deleted == 0 && fr.Erased+fr.Redacted > 0 {
				return httpapi.Partial(err, fr.Erased+fr.Redacted, "audit-log entries were erased or redacted")
			}
			if fr != nil {
				return httpapi.Partial(err, fr.Deleted, "documents were deleted")
			}
			return err
		}
		res.Deleted, res.NotFound, res.Erased, res.Redacted = fr.Deleted, fr.NotFound, &fr.Erased, &fr.Redacted
	case req.IDs != nil:
		dr, err := s.d.DeleteMany(ctx, req.IDs)
		if err != nil {
			if dr != nil {
				return httpapi.Partial(err, dr.Deleted, "documents were deleted")
			}
			return err
		}
		res.Deleted, res.NotFound = dr.Deleted, dr.NotFound
	case req.Prefix != "":
		if res.Deleted, err = s.d.DeletePrefix(ctx, req.Prefix); err != nil {
			return httpapi.Partial(err, res.Deleted, "documents were deleted")
		}
	default:
		if res.Deleted, err = s.d.DeleteOlderThan(ctx, cutoff); err != nil {
			return httpapi.Partial(err, res.Deleted, "documents were deleted")
		}
	}
	return httpapi.WriteJSON(w, http.StatusOK, res)
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
