package server

import (
	"context"
	"errors"
	"net/http"
	"os"
	"slices"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/httpapi"
)

// routes are the server's endpoints, every one of the API's; the OpenAPI
// document (openapi.json) must describe exactly these
// (TestOpenAPIMatchesRoutes). A handler returns an error to answer with
// (see errorClasses) or nil once it has written its response.
func (s *Server) routes() []httpapi.Route {
	h := httpapi.Handlers{
		Healthz: s.healthz, Readyz: s.readyz, OpenAPI: s.openapi,
		Page: s.page, Asset: s.asset, // the review page (web.go)
		Add: s.add, Get: s.get, DeleteOne: s.deleteOne, Query: s.query, Stats: s.stats,
		Pairs: s.pairs, Clusters: s.clusters, Batch: s.batch, DeleteMany: s.deleteMany, Compare: s.compare,
		Export: s.export, Log: s.log, Templates: s.templates, AddTemplate: s.addTemplate, RemoveTemplate: s.removeTemplate,
		Backup: s.backup, Import: s.importExport, Metrics: s.metricsPage,
	}
	return h.Routes(nil)
}

// errorClasses are the statuses and codes of the db's errors, beyond those
// of every httpapi.Classify (an *httpapi.Error's own, 413 for a body, a
// text or an export's line too large): the first that matches.
var errorClasses = []httpapi.Class{
	{Status: http.StatusRequestTimeout, Code: api.CodeTimeout, Errs: []error{os.ErrDeadlineExceeded, context.DeadlineExceeded}},
	{Status: http.StatusNotFound, Code: api.CodeNotFound, Errs: []error{db.ErrNotFound, db.ErrNoTemplate}},
	{Status: http.StatusForbidden, Code: api.CodeForbidden, Errs: []error{db.ErrReadOnly, db.ErrImportIncomplete}},
	{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Errs: []error{db.ErrClosed, context.Canceled, db.ErrImportRunning}, RetryAfter: 1},
	{Status: http.StatusBadRequest, Code: api.CodeBadRequest,
		Errs: slices.Concat(httpapi.InputErrors, []error{db.ErrInfeasiblePlan, db.ErrEmptyPrefix, db.ErrTemplateNeedsTexts,
			db.ErrNoLog, db.ErrBadExport, db.ErrNotEmpty}),
		As: func(err error) bool { return errors.As(err, new(*db.ParamsError)) }},
}
