package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
)

// ChunkLimit bounds a chunk of a checked batch: at most Lines lines (more
// than 0), and
// when Size is set, lines whose sizes add up to at most Bytes (one line at
// least).
type ChunkLimit struct {
	Lines int
	Bytes int
	Size  func(BatchLine) int
}

// SkipDuplicates splits the lines of a batch without a check into those
// stored (the first line of each id) and those skipped: a line whose id an
// earlier line has, skipped with the error and the reason
// (duplicate_in_batch, as apiconv.Reason names db.ErrDuplicateInBatch)
// that db.AddBatch gives it within one chunk.
func SkipDuplicates(lines []BatchLine) (kept []BatchLine, skipped []api.BatchSkip) {
	seen := make(map[string]bool, len(lines))
	kept = make([]BatchLine, 0, len(lines))
	for _, l := range lines {
		if l.Input.ID != "" && seen[l.Input.ID] { // an empty id is the database's to refuse (invalid_id)
			skipped = append(skipped, api.BatchSkip{Line: l.Line, ID: l.Input.ID, Error: db.ErrDuplicateInBatch.Error(),
				Reason: apiconv.Reason(db.ErrDuplicateInBatch)})
			continue
		}
		seen[l.Input.ID] = true
		kept = append(kept, l)
	}
	return kept, skipped
}

// CheckedBatch runs a checked batch (POST /v1/batch?threshold=R) over
// lines, a chunk at a time: a chunk is lines with distinct ids within
// limit (a line whose id an earlier line has starts the next chunk, so
// that it replaces that line's document as a later add would). add checks and
// stores one chunk and returns the outcome of each line it checked (Line
// set) and the lines it skipped. The result lists them, the skipped ones
// by line, and counts the outcomes. When a chunk after the first fails,
// the error is a 503 that says where the batch stopped (BatchStopped).
func CheckedBatch(lines []BatchLine, limit ChunkLimit, add func(chunk []BatchLine) ([]api.AddResult, []api.BatchSkip, error)) (*api.BatchResult, error) {
	res := &api.BatchResult{Skipped: []api.BatchSkip{}, Results: []api.AddResult{}}
	for lo := 0; lo < len(lines); {
		hi, size := lo, 0
		ids := map[string]bool{}
		for hi < len(lines) && hi-lo < limit.Lines && !ids[lines[hi].Input.ID] {
			if limit.Size != nil {
				if size += limit.Size(lines[hi]); size > limit.Bytes && hi > lo {
					break
				}
			}
			ids[lines[hi].Input.ID] = true
			hi++
		}
		chunk := lines[lo:hi]
		outs, skipped, err := add(chunk)
		if err != nil {
			return nil, BatchStopped(lo, chunk[0].Line, res.Stored, err)
		}
		res.Skipped = append(res.Skipped, skipped...)
		for _, out := range outs {
			res.Results = append(res.Results, out)
			switch {
			case out.Stored:
				res.Stored++
				if out.Replaced {
					res.Replaced++
				}
			case out.Unchanged:
				res.Unchanged++
			default:
				res.Rejected++
			}
		}
		lo = hi
	}
	slices.SortFunc(res.Skipped, func(a, b api.BatchSkip) int { return a.Line - b.Line })
	return res, nil
}

// BatchStopped is the error of a batch whose chunk starting at line (the
// chunk of its lo-th document) failed with err, after stored documents:
// err itself for the first chunk, which stored nothing; else a 503, not a
// 4xx, which would say that nothing changed.
func BatchStopped(lo, line, stored int, err error) error {
	if lo == 0 {
		return err
	}
	return &Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable,
		Message: fmt.Sprintf("the batch stopped at line %d, after %d documents stored (lines before it are done): %v", line, stored, err)}
}

// importDrain is the most of a refused import's body read before the
// answer: a client that sends its whole body before it reads (Python's
// urllib, Go's http.Client, which reads the answer only once it has
// written the body or failed to) sees the answer, not a connection reset
// under it (net/http, answering a request whose body was not read,
// discards at most 256 KiB of it and then closes the connection, unread
// bytes and all: the client's system resets it).
const importDrain = 1 << 30

// ImportBody is the body of an import (POST /v1/import): R is what the
// import reads, and Raw, when not nil, the request's body under it (R may
// end before the body does, as a reader that refuses a line too long
// does; nil: R is the request's body). It keeps the error of a body over
// the limit, which the import, reading it line by line, may report only
// as a line cut short.
type ImportBody struct {
	R        io.Reader
	Raw      io.Reader
	tooLarge *BodyTooLargeError
}

// Read reads the body, noting whether it passed the limit.
func (b *ImportBody) Read(p []byte) (int, error) {
	n, err := b.R.Read(p)
	if tl := (*BodyTooLargeError)(nil); errors.As(err, &tl) {
		b.tooLarge = tl
	}
	return n, err
}

// WriteImport answers an import whose body is body: 200 with res, or err
// — as a 503 that gives the count when res.Imported documents were stored
// before it (not a 4xx, which would say nothing changed). An error of an
// import whose body passed the limit is that (a 413 when nothing was
// stored), whatever the import made of the body cut there.
//
// Before an error it reads what is left of the request's body (Raw, not
// R), up to importDrain bytes, within the request's time, whether the
// import read some of it or was refused before it began: a client that
// writes its whole body before it reads the answer then reads it. A
// client that waits to be asked for the body (Expect: 100-continue) is
// asked too: one that stops waiting and sends it anyway (net/http's
// Transport does after its ExpectContinueTimeout) would otherwise lose
// the answer to a connection closed under its body.
func WriteImport(w http.ResponseWriter, body *ImportBody, res api.ImportResult, err error) error {
	if err == nil {
		return WriteJSON(w, http.StatusOK, res)
	}
	if tl := (*BodyTooLargeError)(nil); body.tooLarge != nil && !errors.As(err, &tl) {
		err = fmt.Errorf("%w: %v", body.tooLarge, err)
	}
	raw := body.Raw
	if raw == nil {
		raw = body.R
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(raw, importDrain))
	return Partial(err, res.Imported, "documents were imported")
}

// Partial is the error of a write that failed with err after it made n
// changes (atomic batches of them), what saying which ("documents were
// imported"): a 503 that gives the count, not a 4xx, which would say that
// nothing changed; err itself when n is 0.
func Partial(err error, n int, what string) error {
	if n == 0 {
		return err
	}
	return &Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable,
		Message: fmt.Sprintf("%v (%d %s before it)", err, n, what)}
}
