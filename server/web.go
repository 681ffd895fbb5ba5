package server

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/server/httpapi"
)

// The review page: GET / serves web/index.html (an html/template) and
// GET /web/{file} its style sheet and script. Neither holds any data (the
// script calls the /v1 API, with the token the reader gives), so both are
// public. Every URL in them is relative, so that the page works where
// Handler is mounted under a prefix.

//go:embed web
var webFiles embed.FS

// pageCSP is the page's Content-Security-Policy: its own script, style
// and API only; nothing inline, no frame, no other origin.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// pageData prefills the page's form from its query parameters:
// ?id=ID&threshold=R&containment=C&view=query|clusters.
type pageData struct {
	ID          string
	Threshold   string
	Containment string
	View        string
}

// pageParams reads the page's parameters; a value out of range is
// replaced by the default rather than refused (the page is for people).
func pageParams(r *http.Request) pageData {
	q := r.URL.Query()
	d := pageData{ID: q.Get("id"), Threshold: strconv.FormatFloat(httpapi.DefaultThreshold, 'f', -1, 64), View: "query"}
	if x, err := strconv.ParseFloat(q.Get("threshold"), 64); err == nil && x > 0 && x <= 1 {
		d.Threshold = strconv.FormatFloat(x, 'f', -1, 64)
	}
	if x, err := strconv.ParseFloat(q.Get("containment"), 64); err == nil && x > 0 && x <= 1 {
		d.Containment = strconv.FormatFloat(x, 'f', -1, 64)
	}
	if q.Get("view") == "clusters" {
		d.View = "clusters"
	}
	return d
}

// page is GET /: the review page.
func (s *Server) page(w http.ResponseWriter, r *http.Request) error { return ServePage(w, r) }

// asset is GET /web/{file}: the page's style sheet and script.
func (s *Server) asset(w http.ResponseWriter, r *http.Request) error { return ServeAsset(w, r) }

// ServePage serves GET / (the review page; it holds no data: its script
// calls the /v1 API) for the single-node server and a cluster node. As the
// pattern "/" matches every path no other route takes, any other path is
// answered 404.
func ServePage(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Path != "/" {
		return &httpapi.Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: "no such path: " + r.URL.Path}
	}
	t, err := template.ParseFS(webFiles, "web/index.html")
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, pageParams(r)); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("Cache-Control", "no-cache")
	return writeStatic(w, r, "text/html; charset=utf-8", buf.Bytes())
}

// webType returns the content type of an asset of the page, by its
// extension ("" for a file that is not one).
func webType(name string) string {
	switch path.Ext(name) {
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	}
	return ""
}

// ServeAsset serves GET /web/{file}: the review page's style sheet and
// script.
func ServeAsset(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("file")
	ctype := webType(name)
	if ctype == "" || !fs.ValidPath(name) {
		return &httpapi.Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: "no such file: " + name}
	}
	b, err := webFiles.ReadFile("web/" + name)
	if err != nil {
		return &httpapi.Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: "no such file: " + name}
	}
	w.Header().Set("Cache-Control", "no-cache")
	return writeStatic(w, r, ctype, b)
}

// writeStatic answers b with an ETag of its content: 304 when the client
// holds it already.
func writeStatic(w http.ResponseWriter, r *http.Request, ctype string, b []byte) error {
	sum := sha256.Sum256(b)
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	_, err := w.Write(b)
	return err
}
