package dedup

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"strings"

	"github.com/fpdb/fpdb/db"
)

// SkipReason names, in a few words, why a record or a document was
// skipped (for summaries that count them by reason): "id given twice",
// "binary or not UTF-8", "no words", "invalid id", "too long", "missing
// field", "not a string", "invalid UTF-8", "malformed", "wrong number of
// fields", "bad record", "refused in an earlier run", "not found",
// "permission denied" or "unreadable".
func SkipReason(err error) string {
	switch {
	case errors.Is(err, ErrDuplicateID), errors.Is(err, db.ErrDuplicateInBatch):
		return "id given twice"
	case errors.Is(err, db.ErrBinary):
		return "binary or not UTF-8"
	case errors.Is(err, db.ErrNoWords):
		return "no words"
	case errors.Is(err, db.ErrInvalidID):
		return "invalid id"
	case errors.Is(err, db.ErrTextTooLarge):
		return "too long"
	case errors.Is(err, errRefusedEarlier):
		return "refused in an earlier run"
	case errors.Is(err, fs.ErrNotExist):
		return "not found"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case !errors.Is(err, ErrBadRecord):
		return "unreadable"
	}
	msg := err.Error()
	for _, r := range []struct{ has, reason string }{
		{"missing field", "missing field"},
		{"is null", "missing field"},
		{"empty id", "invalid id"},
		{"not a string", "not a string"},
		{"invalid UTF-8", "invalid UTF-8"},
		{"too long", "too long"},
		{"malformed", "malformed"},
		{"fields", "wrong number of fields"},
	} {
		if strings.Contains(msg, r.has) {
			return r.reason
		}
	}
	return "bad record"
}

// jsonLines writes JSON values, one per line.
type jsonLines struct {
	w   *bufio.Writer
	enc *json.Encoder
}

func newJSONLines(w io.Writer) *jsonLines {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &jsonLines{w: bw, enc: enc}
}

func (j *jsonLines) write(v any) error { return j.enc.Encode(v) }

func (j *jsonLines) flush() error { return j.w.Flush() }
