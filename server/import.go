package server

import (
	"net/http"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/server/httpapi"
)

// importExport is POST /v1/import: the body is an export (JSON Lines, as
// GET /v1/export and "fpdb export" write it), streamed into the served
// database, which must be empty and have the export's parameters.
func (s *Server) importExport(w http.ResponseWriter, r *http.Request) error {
	body := &httpapi.ImportBody{R: r.Body}
	n, err := s.d.ImportInto(r.Context(), body)
	return httpapi.WriteImport(w, body, api.ImportResult{Imported: n}, err)
}
