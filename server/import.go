package server

import (
	"errors"
	"fmt"
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
// httpapi.ImportLineLimits), never further: a longer one is refused (413). Before any
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
	body.R = &httpapi.LineLimiter{R: r.Body, Lim: httpapi.ImportLineLimits(s.d.MaxTextSize()),
		Reader: "this server", Instead: `must be imported with "fpdb import" on the server's machine`}
	n, err := s.d.ImportInto(r.Context(), body)
	if err != nil && !errors.Is(err, db.ErrImportRunning) && s.d.Stats().ImportIncomplete {
		if errors.As(err, new(*httpapi.LineTooLongError)) {
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
