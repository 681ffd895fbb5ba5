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
// (db.ErrImportIncomplete): the same export posted again resumes it.
func (s *Server) importExport(w http.ResponseWriter, r *http.Request) error {
	body := &httpapi.ImportBody{R: r.Body}
	n, err := s.d.ImportInto(r.Context(), body)
	if err != nil && !errors.Is(err, db.ErrImportRunning) && s.d.Stats().ImportIncomplete {
		err = fmt.Errorf("%w; the database takes no other write until the same export, posted again, finishes the import", err)
	}
	return httpapi.WriteImport(w, body, api.ImportResult{Imported: n}, err)
}
