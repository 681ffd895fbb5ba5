package server

import (
	_ "embed"
	"net/http"
	"time"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/fpdb/fpdb/server/httpapi"
)

//go:embed openapi.json
var openapiDoc []byte

// healthz is GET /healthz: the process answers.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err := w.Write([]byte("ok\n"))
	return err
}

// readyz is GET /readyz: the database is open and the server is not
// shutting down.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	select {
	case <-s.ready:
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "shutting down", RetryAfter: 1}
	default:
	}
	if _, err := s.d.Has(r.Context(), "readyz"); err != nil {
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "database: " + err.Error()}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err := w.Write([]byte("ready\n"))
	return err
}

// openapi is GET /v1/openapi.json.
func (s *Server) openapi(w http.ResponseWriter, r *http.Request) error { return ServeOpenAPI(w, r) }

// ServeOpenAPI serves GET /v1/openapi.json: the API's OpenAPI document,
// which a cluster node serves too (the routes it does not serve answer
// 501).
func ServeOpenAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openapiDoc)
	return err
}

// stats is GET /v1/stats; with ?storage=true the storage statistics too
// (api.StorageStats, as "fpdb stats --json" prints them).
func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	storage, err := httpapi.ReadFlag(r, "storage")
	if err != nil {
		return err
	}
	st := s.d.Stats()
	if storage {
		ss, err := s.d.StorageStats(r.Context())
		if err != nil {
			return err
		}
		return httpapi.WriteJSON(w, http.StatusOK, apiconv.StorageStats(st, ss))
	}
	ps := st.Params
	return httpapi.WriteJSON(w, http.StatusOK, api.Stats{Docs: st.Docs, DiskBytes: st.DiskBytes, Deferred: st.Deferred, ImportIncomplete: st.ImportIncomplete,
		FormatVersion: ps.FormatVersion, K: ps.K, GroupWidths: ps.GroupWidths, ShingleWidth: ps.ShingleWidth, Seed: ps.Seed,
		NormalizeVersion: ps.NormalizeVersion, KeepTexts: ps.KeepTexts, AuditLog: ps.AuditLog, Created: ps.Created.Format(time.RFC3339)})
}
