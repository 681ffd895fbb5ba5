package server

import (
	"net/http"
	"strconv"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/server/httpapi"
)

// importExport is POST /v1/import: the body is an export (JSON Lines, as
// GET /v1/export and "fpdb export" write it), streamed into the served
// database, which must be empty and have the export's parameters.
func (s *Server) importExport(w http.ResponseWriter, r *http.Request) error {
	n, err := s.d.ImportInto(r.Context(), r.Body)
	if err != nil {
		if n > 0 {
			// Whole batches were stored: not a 4xx, which would say
			// nothing changed.
			return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable,
				Message: err.Error() + " (" + strconv.Itoa(n) + " documents were imported before it)"}
		}
		return err
	}
	return httpapi.WriteJSON(w, http.StatusOK, api.ImportResult{Imported: n})
}
