package server

import (
	_ "embed"
	"net/http"
	"time"

	"github.com/fpdb/fpdb/api"
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
		return &httpError{status: http.StatusServiceUnavailable, code: api.CodeUnavailable, msg: "shutting down"}
	default:
	}
	if _, err := s.d.Has(r.Context(), "readyz"); err != nil {
		return &httpError{status: http.StatusServiceUnavailable, code: api.CodeUnavailable, msg: "database: " + err.Error()}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err := w.Write([]byte("ready\n"))
	return err
}

// openapi is GET /v1/openapi.json.
func (s *Server) openapi(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openapiDoc)
	return err
}

// stats is GET /v1/stats.
func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	st := s.d.Stats()
	p := st.Params
	return writeJSON(w, http.StatusOK, api.Stats{Docs: st.Docs, DiskBytes: st.DiskBytes, Deferred: st.Deferred,
		FormatVersion: p.FormatVersion, K: p.K, GroupWidths: p.GroupWidths, ShingleWidth: p.ShingleWidth, Seed: p.Seed,
		NormalizeVersion: p.NormalizeVersion, KeepTexts: p.KeepTexts, AuditLog: p.AuditLog, Created: p.Created.Format(time.RFC3339)})
}
