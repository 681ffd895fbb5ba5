package httpapi

import (
	"bytes"
	"fmt"
	"io"

	"github.com/fpdb/fpdb/db"
)

// jsonEscaped is the most bytes a JSON string may spend on one byte of
// what it holds: a control character written \u00XX.
const jsonEscaped = 6

// ImportSourceRoom is the length of a document's source (a path, a URL)
// that the bound of an export's line leaves room for, besides the longest
// text: written twice when it is not UTF-8 (escaped, and in base64). The
// database sets no bound on a source: a line with a longer one must be
// imported some other way (with "fpdb import" on a server's machine).
const ImportSourceRoom = 1 << 20

// LineLimits are the bounds of the lines of an export that POST
// /v1/import reads: Header for its first line, Line for the others (a
// document's, or an audit-log entry's), each in bytes without the end of
// line; TextSize and TemplateText are what they leave room for, for the
// error's message.
type LineLimits struct {
	Header, Line           int64
	TextSize, TemplateText int64
}

// ImportLineLimits returns the bounds of the lines of an export imported into
// a database whose longest text is maxText bytes (DB.MaxTextSize: a
// database that keeps texts refuses a longer one).
//
// A document's line holds its text, JSON-escaped (up to jsonEscaped bytes
// per byte), its id (at most db.MaxIDLen bytes, escaped), its fingerprint
// (db.MaxK bits in hex), its content hash, its source (room for
// ImportSourceRoom bytes: in both forms, escaped and base64), numbers,
// times and field names; a log entry's line holds no text, but the ids of
// up to db.MaxLogMatches matches. The header holds the creation
// parameters (the group widths: at most two bytes per bit of db.MaxK)
// and the export's templates. Their texts are bounded one by one
// (db.MaxTemplateSize each), not in all: the bound assumes that they
// total at most max(maxText, db.MaxTemplateSize) bytes, escaped, with 1
// MiB for the templates' names, formats and times and the other fields.
// An export whose templates hold more text (several templates of the
// largest size, say) is refused, and must be imported some other way
// ("fpdb import" on a server's machine bounds no line).
func ImportLineLimits(maxText int64) LineLimits {
	const (
		id     = jsonEscaped * db.MaxIDLen
		fields = 1 << 10 // names, numbers, times, hash, format
		source = jsonEscaped*ImportSourceRoom + (ImportSourceRoom+2)/3*4
		record = id + db.MaxK/4 + source + fields
		entry  = id + jsonEscaped*ImportSourceRoom + db.MaxLogMatches*(id+fields) + fields
		header = 2*db.MaxK + 1<<20
	)
	templates := max(maxText, db.MaxTemplateSize)
	return LineLimits{
		Header:       jsonEscaped*templates + header,
		Line:         jsonEscaped*maxText + max(record, entry),
		TextSize:     maxText,
		TemplateText: templates,
	}
}

// LineTooLongError is the error of an export's line longer than its bound
// (ImportLineLimits): a 413.
type LineTooLongError struct {
	// Line is the line's number (from 1, counting the lines that are not
	// empty, as the import does).
	Line int
	// Limit is the bound that the line passes, in bytes.
	Limit int64
	// Lim are the bounds, for the message.
	Lim LineLimits
	// Reader names what reads the export ("this server"), and Instead
	// says what to do with such an export ("must be imported with …"),
	// for the message.
	Reader, Instead string
}

func (e *LineTooLongError) Error() string {
	if e.Line == 1 {
		return fmt.Sprintf("line 1 (the export's header) is longer than %d bytes, the most %s reads of a header: "+
			"room for templates whose texts total at most %d bytes (the larger of the database's longest text and the longest template), "+
			"JSON-escaped, and the other fields; an export whose templates hold more text %s",
			e.Limit, e.Reader, e.Lim.TemplateText, e.Instead)
	}
	return fmt.Sprintf("line %d is longer than %d bytes, the most %s reads of a line of an export: "+
		"room for a text of %d bytes (the database's longest), JSON-escaped, a source of %d bytes and the document's other fields; "+
		"an export with a longer line %s",
		e.Line, e.Limit, e.Reader, e.Lim.TextSize, ImportSourceRoom, e.Instead)
}

// LineLimiter reads an export from R and fails with a *LineTooLongError
// (then every time) once a line passes its bound: Lim.Header for the
// first line that is not empty, Lim.Line for the others. It holds no
// line: it counts the bytes of the current one as they pass, and gives
// none past the bound, so that the import reading it never reads more of
// a line than that. Reader and Instead go into the error's message.
type LineLimiter struct {
	R               io.Reader
	Lim             LineLimits
	Reader, Instead string
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
func (l *LineLimiter) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.R.Read(p)
	for i := 0; i < n; {
		seg := p[i:n]
		nl := bytes.IndexByte(seg, '\n')
		if nl >= 0 {
			seg = seg[:nl]
		}
		limit := l.Lim.Line
		if l.lines == 0 {
			limit = l.Lim.Header
		}
		if l.cur+int64(len(seg)) > limit {
			l.err = &LineTooLongError{Line: l.lines + 1, Limit: limit, Lim: l.Lim, Reader: l.Reader, Instead: l.Instead}
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
