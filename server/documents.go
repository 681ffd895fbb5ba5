package server

import (
	"fmt"
	"net/http"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
	"github.com/fpdb/fpdb/server/httpapi"
)

// add is POST /v1/documents.
func (s *Server) add(w http.ResponseWriter, r *http.Request) error {
	req, in, err := httpapi.ReadAdd(r)
	if err != nil {
		return err
	}
	res, err := s.d.Add(r.Context(), in, &db.AddOptions{Threshold: req.Threshold, Reject: req.Reject, Limit: req.Limit})
	if err != nil {
		return err
	}
	out := apiconv.AddResult(req.ID, res)
	status := http.StatusOK
	if res.Stored {
		status = http.StatusCreated
	}
	return httpapi.WriteJSON(w, status, out)
}

// get is GET /v1/documents/{id...}.
func (s *Server) get(w http.ResponseWriter, r *http.Request) error {
	doc, err := s.d.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return httpapi.WriteJSON(w, http.StatusOK, apiconv.Doc(doc))
}

// deleteOne is DELETE /v1/documents/{id...}: ?dry_run=true reports without
// deleting; ?forget=true also erases the document's audit-log entries,
// also those of a document deleted before (then deleted is 0), and is a
// 404 only for an id neither stored nor in the log.
func (s *Server) deleteOne(w http.ResponseWriter, r *http.Request) error {
	dry, forget, err := httpapi.ReadDeleteOne(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if dry {
		has, err := s.d.Has(r.Context(), id)
		if err != nil {
			return err
		}
		if !has {
			return fmt.Errorf("%q: %w", id, db.ErrNotFound)
		}
		return httpapi.WriteJSON(w, http.StatusOK, api.DeleteResult{Deleted: 1, DryRun: true})
	}
	if forget {
		res, err := s.d.Forget(r.Context(), []string{id})
		if err != nil {
			return err
		}
		if len(res.NotFound) > 0 {
			// Neither stored nor in the audit log: nothing changed.
			return fmt.Errorf("%q: %w", id, db.ErrNotFound)
		}
		// A document deleted before still has log entries to erase: a
		// success (deleted 0), since the log changed.
		return httpapi.WriteJSON(w, http.StatusOK, api.DeleteResult{Deleted: res.Deleted, Erased: &res.Erased, Redacted: &res.Redacted})
	}
	if err := s.d.Delete(r.Context(), id); err != nil {
		return err
	}
	return httpapi.WriteJSON(w, http.StatusOK, api.DeleteResult{Deleted: 1})
}
