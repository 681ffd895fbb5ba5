package httpapi

// Handlers are the handlers of the API's endpoints, one field each, named
// for what it serves. A server leaves nil those it does not serve (see
// Routes).
type Handlers struct {
	Healthz        HandlerFunc // GET /healthz: the process answers
	Readyz         HandlerFunc // GET /readyz: ready to serve
	OpenAPI        HandlerFunc // GET /v1/openapi.json: the API's OpenAPI document
	Page           HandlerFunc // GET /: the review page; every path no other route takes
	Asset          HandlerFunc // GET /web/{file}: the page's style sheet and script
	Add            HandlerFunc // POST /v1/documents
	Get            HandlerFunc // GET /v1/documents/{id...}
	DeleteOne      HandlerFunc // DELETE /v1/documents/{id...}
	Query          HandlerFunc // POST /v1/query
	Stats          HandlerFunc // GET /v1/stats
	Pairs          HandlerFunc // GET /v1/pairs (a stream)
	Clusters       HandlerFunc // GET /v1/clusters (a stream)
	Batch          HandlerFunc // POST /v1/batch
	DeleteMany     HandlerFunc // POST /v1/delete
	Compare        HandlerFunc // POST /v1/compare
	Export         HandlerFunc // GET /v1/export (a stream)
	Log            HandlerFunc // GET /v1/log (a stream)
	Templates      HandlerFunc // GET /v1/templates
	AddTemplate    HandlerFunc // POST /v1/templates
	RemoveTemplate HandlerFunc // DELETE /v1/templates/{name}
	Backup         HandlerFunc // POST /v1/backup
	Import         HandlerFunc // POST /v1/import (a stream; its body is an export)
	Metrics        HandlerFunc // GET /metrics: Prometheus metrics
}

// Routes returns the API's routes (those the OpenAPI document of package
// server describes), with their access and limits, each served by its
// handler of h. A route whose handler is nil is served by missing(route)
// or, when missing is nil, left out.
func (h *Handlers) Routes(missing func(Route) HandlerFunc) []Route {
	all := []Route{
		{Method: "GET", Pattern: "/healthz", Access: Public, Handle: h.Healthz},
		{Method: "GET", Pattern: "/readyz", Access: Public, Handle: h.Readyz},
		{Method: "GET", Pattern: "/v1/openapi.json", Access: Public, Handle: h.OpenAPI},
		{Method: "GET", Pattern: "/", Access: Public, Handle: h.Page}, // every other unrouted path: 404
		{Method: "GET", Pattern: "/web/{file}", Access: Public, Handle: h.Asset},
		{Method: "POST", Pattern: "/v1/documents", Access: Write, Handle: h.Add},
		{Method: "GET", Pattern: "/v1/documents/{id...}", Access: Read, Handle: h.Get},
		{Method: "DELETE", Pattern: "/v1/documents/{id...}", Access: Write, Handle: h.DeleteOne},
		{Method: "POST", Pattern: "/v1/query", Access: Read, Handle: h.Query},
		{Method: "GET", Pattern: "/v1/stats", Access: Read, Handle: h.Stats},
		{Method: "GET", Pattern: "/v1/pairs", Access: Read, Stream: true, Handle: h.Pairs},
		{Method: "GET", Pattern: "/v1/clusters", Access: Read, Stream: true, Handle: h.Clusters},
		{Method: "POST", Pattern: "/v1/batch", Access: Write, Handle: h.Batch},
		{Method: "POST", Pattern: "/v1/delete", Access: Write, Handle: h.DeleteMany},
		{Method: "POST", Pattern: "/v1/compare", Access: Read, Handle: h.Compare},
		{Method: "GET", Pattern: "/v1/export", Access: Read, Stream: true, Handle: h.Export},
		{Method: "GET", Pattern: "/v1/log", Access: Read, Stream: true, Handle: h.Log},
		{Method: "GET", Pattern: "/v1/templates", Access: Read, Handle: h.Templates},
		{Method: "POST", Pattern: "/v1/templates", Access: Write, Handle: h.AddTemplate},
		{Method: "DELETE", Pattern: "/v1/templates/{name}", Access: Write, Handle: h.RemoveTemplate},
		{Method: "POST", Pattern: "/v1/backup", Access: Write, Handle: h.Backup},
		{Method: "POST", Pattern: "/v1/import", Access: Write, Stream: true, Import: true, Handle: h.Import},
		{Method: "GET", Pattern: "/metrics", Access: Public, Handle: h.Metrics},
	}
	out := all[:0]
	for _, rt := range all {
		if rt.Handle == nil {
			if missing == nil {
				continue
			}
			rt.Handle = missing(rt)
		}
		out = append(out, rt)
	}
	return out
}
