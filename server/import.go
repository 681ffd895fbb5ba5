package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/httpapi"
)

// importExport is POST /v1/import: the body is an export (JSON Lines, as
// GET /v1/export and "fpdb export" write it), streamed into the served
// database, which must be empty and have the export's parameters. One
// that stops after storing documents leaves the database unfinished
// (db.ErrImportIncomplete): the same export posted again resumes it,
// unless it stopped at a line longer than this server reads.
//
// What can be refused before the body is read is: another import running,
// a database that refuses every import (read-only, closed), one that is
// not empty (and holds no unfinished import, which the same export
// resumes). Each line of the body is then read up to its bound (see
// importLimits), never further: a longer one is refused (413). Before any
// refusal the rest of the body is read and discarded
// (httpapi.WriteImport), so that a client that sends it all before it
// reads gets the answer.
func (s *Server) importExport(w http.ResponseWriter, r *http.Request) error {
	body := &httpapi.ImportBody{R: r.Body, Raw: r.Body}
	if !s.importing.CompareAndSwap(false, true) {
		return httpapi.WriteImport(w, body, api.ImportResult{}, fmt.Errorf("fpdb: import: %w", db.ErrImportRunning))
	}
	// Released before the answer: reading what is left of a refused
	// body is no import, and another may begin meanwhile.
	running := true
	release := func() {
		if running {
			running = false
			s.importing.Store(false)
		}
	}
	defer release()
	if err := s.d.CheckImport(r.Context()); err != nil {
		release()
		return httpapi.WriteImport(w, body, api.ImportResult{}, err) // the body unread by the import
	}
	body.R = &lineLimiter{r: r.Body, lim: importLimits(s.d.MaxTextSize())}
	n, err := s.d.ImportInto(r.Context(), body)
	if err != nil && !errors.Is(err, db.ErrImportRunning) && s.d.Stats().ImportIncomplete {
		if errors.As(err, new(*lineTooLongError)) {
			// The same export would stop at the same line.
			err = fmt.Errorf("%w; the database takes no other write until the import is finished, which this server cannot do "+
				"(the same export, posted again, stops at the same line): stop the server and finish the import with "+
				"\"fpdb --db %s import FILE\" on the server's machine (it resumes after the documents stored)", err, s.d.Dir())
		} else {
			err = fmt.Errorf("%w; the database takes no other write until the same export, posted again, finishes the import", err)
		}
	}
	release()
	return httpapi.WriteImport(w, body, api.ImportResult{Imported: n}, err)
}

// jsonEscaped is the most bytes a JSON string may spend on one byte of
// what it holds: a control character written \u00XX.
const jsonEscaped = 6

// importSourceRoom is the length of a document's source (a path, a URL)
// that the bound of an export's line leaves room for, besides the longest
// text: written twice when it is not UTF-8 (escaped, and in base64). The
// database sets no bound on a source: a line with a longer one must be
// imported with "fpdb import" on the server's machine.
const importSourceRoom = 1 << 20

// lineLimits are the bounds of the lines of an export that POST
// /v1/import reads: header for its first line, line for the others (a
// document's, or an audit-log entry's), each in bytes without the end of
// line; textSize and templateText are what they leave room for, for the
// error's message.
type lineLimits struct {
	header, line           int64
	textSize, templateText int64
}

// importLimits returns the bounds of the lines of an export imported into
// a database whose longest text is maxText bytes (DB.MaxTextSize: a
// database that keeps texts refuses a longer one).
//
// A document's line holds its text, JSON-escaped (up to jsonEscaped bytes
// per byte), its id (at most db.MaxIDLen bytes, escaped), its fingerprint
// (db.MaxK bits in hex), its content hash, its source (room for
// importSourceRoom bytes: in both forms, escaped and base64), numbers,
// times and field names; a log entry's line holds no text, but the ids of
// up to db.MaxLogMatches matches. The header holds the creation
// parameters (the group widths: at most two bytes per bit of db.MaxK)
// and the export's templates. Their texts are bounded one by one
// (db.MaxTemplateSize each), not in all: the bound assumes that they
// total at most max(maxText, db.MaxTemplateSize) bytes, escaped, with 1
// MiB for the templates' names, formats and times and the other fields.
// An export whose templates hold more text (several templates of the
// largest size, say) is refused here, and must be imported with "fpdb
// import" on the server's machine, which bounds no line.
func importLimits(maxText int64) lineLimits {
	const (
		id     = jsonEscaped * db.MaxIDLen
		fields = 1 << 10 // names, numbers, times, hash, format
		source = jsonEscaped*importSourceRoom + (importSourceRoom+2)/3*4
		record = id + db.MaxK/4 + source + fields
		entry  = id + jsonEscaped*importSourceRoom + db.MaxLogMatches*(id+fields) + fields
		header = 2*db.MaxK + 1<<20
	)
	templates := max(maxText, db.MaxTemplateSize)
	return lineLimits{
		header:       jsonEscaped*templates + header,
		line:         jsonEscaped*maxText + max(record, entry),
		textSize:     maxText,
		templateText: templates,
	}
}

// lineTooLongError is the error of an export's line longer than its bound
// (importLimits): a 413.
type lineTooLongError struct {
	// line is the line's number (from 1, counting the lines that are not
	// empty, as the import does).
	line int
	// limit is the bound that the line passes, in bytes.
	limit int64
	// lim are the bounds, for the message.
	lim lineLimits
}

func (e *lineTooLongError) Error() string {
	if e.line == 1 {
		return fmt.Sprintf("line 1 (the export's header) is longer than %d bytes, the most this server reads of a header: "+
			"room for templates whose texts total at most %d bytes (the larger of the database's longest text and the longest template), "+
			"JSON-escaped, and the other fields; an export whose templates hold more text must be imported with \"fpdb import\" on the server's machine",
			e.limit, e.lim.templateText)
	}
	return fmt.Sprintf("line %d is longer than %d bytes, the most this server reads of a line of an export: "+
		"room for a text of %d bytes (the database's longest), JSON-escaped, a source of %d bytes and the document's other fields; "+
		"an export with a longer line must be imported with \"fpdb import\" on the server's machine",
		e.line, e.limit, e.lim.textSize, importSourceRoom)
}

// lineLimiter reads an export from r and fails with a *lineTooLongError
// (then every time) once a line passes its bound: lim.header for the
// first line that is not empty, lim.line for the others. It holds no
// line: it counts the bytes of the current one as they pass, and gives
// none past the bound, so that the import reading it never reads more of
// a line than that.
type lineLimiter struct {
	r   io.Reader
	lim lineLimits
	// lines is the number of lines ended that were not empty (the import
	// skips empty ones, and lines made of "\r" alone).
	lines int
	// cur is the length of the current line so far; content is set once
	// it holds a byte other than '\r'.
	cur     int64
	content bool
	err     error
}

// Read reads from r, up to the end of the bound of the current line.
func (l *lineLimiter) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	for i := 0; i < n; {
		seg := p[i:n]
		nl := bytes.IndexByte(seg, '\n')
		if nl >= 0 {
			seg = seg[:nl]
		}
		limit := l.lim.line
		if l.lines == 0 {
			limit = l.lim.header
		}
		if l.cur+int64(len(seg)) > limit {
			l.err = &lineTooLongError{line: l.lines + 1, limit: limit, lim: l.lim}
			return i + int(limit-l.cur), l.err
		}
		l.cur += int64(len(seg))
		if !l.content && len(bytes.Trim(seg, "\r")) > 0 {
			l.content = true
		}
		if nl < 0 {
			break
		}
		if l.content {
			l.lines++
		}
		l.cur, l.content = 0, false
		i += nl + 1
	}
	return n, err
}
