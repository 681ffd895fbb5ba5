package server

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
)

// readBody reads the request body (bounded by the body limit and the
// request's deadline).
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	return b, nil
}

// decodeJSON decodes the JSON body into v strictly: valid UTF-8, one
// value, no unknown field.
func decodeJSON(body []byte, v any) error {
	if !utf8.Valid(body) {
		return badRequest("the JSON body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed JSON body: %v", err)
	}
	if dec.More() {
		return badRequest("malformed JSON body: more than one value")
	}
	return nil
}

// mediaType returns the request's content type without parameters ("" when
// absent).
func mediaType(r *http.Request) (string, map[string]string, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return "", nil, nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", nil, badRequest("Content-Type %q: %v", ct, err)
	}
	return mt, params, nil
}

// textOptions parses a text's format and encoding.
func textOptions(t api.TextInput) (db.TextOptions, error) {
	var to db.TextOptions
	if t.Format != "" {
		f, err := db.ParseFormat(t.Format)
		if err != nil {
			return to, err
		}
		to.Format = f
	}
	if t.Encoding != "" {
		if _, err := db.ParseEncoding(t.Encoding); err != nil {
			return to, err
		}
		to.Encoding = t.Encoding
	}
	return to, nil
}

// params reads typed values from form or query parameters, remembering
// the first error, which names the parameter.
type params struct {
	v   url.Values
	err error
}

// only fails unless every parameter is one of names.
func (p *params) only(names ...string) {
	for k := range p.v {
		known := false
		for _, n := range names {
			known = known || k == n
		}
		if !known && p.err == nil {
			p.err = badRequest("unknown parameter %q", k)
		}
	}
}

func (p *params) str(name string) string { return p.v.Get(name) }

func (p *params) float(name string) float64 {
	s := p.v.Get(name)
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && p.err == nil {
		p.err = badRequest("parameter %s=%q is not a number", name, s)
	}
	return f
}

func (p *params) int(name string) int {
	s := p.v.Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil && p.err == nil {
		p.err = badRequest("parameter %s=%q is not an integer", name, s)
	}
	return n
}

func (p *params) bool(name string) bool {
	s := p.v.Get(name)
	if s == "" {
		return false
	}
	b, err := strconv.ParseBool(s)
	if err != nil && p.err == nil {
		p.err = badRequest("parameter %s=%q is not true or false", name, s)
	}
	return b
}

// addParams are the parameters of an add sent as a plain body or a form.
var addParams = []string{"id", "source", "threshold", "reject", "replace", "limit", "format", "encoding"}

// addRequest reads an add: JSON, a plain-text body with its parameters in
// the query string, or a multipart form with a "file" part.
func addRequest(r *http.Request) (api.AddRequest, []byte, error) {
	var req api.AddRequest
	mt, _, err := mediaType(r)
	if err != nil {
		return req, nil, err
	}
	var p params
	var text []byte
	switch mt {
	case "application/json":
		body, err := readBody(r)
		if err != nil {
			return req, nil, err
		}
		if err := decodeJSON(body, &req); err != nil {
			return req, nil, err
		}
		if len(r.URL.Query()) > 0 {
			return req, nil, badRequest("an add sent as JSON takes no query parameters")
		}
		return req, []byte(req.Text), nil
	case "multipart/form-data":
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			return req, nil, fmt.Errorf("read the form: %w", asBadRequest(err))
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			return req, nil, badRequest("the form has no \"file\" part: %v", err)
		}
		defer f.Close()
		if text, err = io.ReadAll(f); err != nil {
			return req, nil, err
		}
		p.v = r.MultipartForm.Value
	case "", "text/plain", "application/octet-stream", "text/html", "application/x-www-form-urlencoded":
		// The last is what curl --data-binary sends: the body is the text.
		if text, err = readBody(r); err != nil {
			return req, nil, err
		}
		p.v = r.URL.Query()
		if mt == "text/html" && p.v.Get("format") == "" {
			p.v.Set("format", "html")
		}
	default:
		return req, nil, &httpError{status: http.StatusUnsupportedMediaType, code: api.CodeBadRequest,
			msg: fmt.Sprintf("Content-Type %q: send JSON, text/plain or multipart/form-data", mt)}
	}
	p.only(addParams...)
	req = api.AddRequest{ID: p.str("id"), Source: p.str("source"), Threshold: p.float("threshold"),
		Reject: p.bool("reject"), Replace: p.bool("replace"), Limit: p.int("limit"),
		TextInput: api.TextInput{Format: p.str("format"), Encoding: p.str("encoding")}}
	return req, text, p.err
}

// asBadRequest makes a form-parsing error a 400, keeping a body-size error.
func asBadRequest(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return err
	}
	return badRequest("%v", err)
}

// add is POST /v1/documents.
func (s *Server) add(w http.ResponseWriter, r *http.Request) error {
	req, text, err := addRequest(r)
	if err != nil {
		return err
	}
	if req.ID == "" {
		return badRequest("the document needs an id")
	}
	to, err := textOptions(req.TextInput)
	if err != nil {
		return err
	}
	if req.Threshold < 0 || req.Limit < 0 {
		return badRequest("threshold %v and limit %d must not be negative", req.Threshold, req.Limit)
	}
	if req.Reject && req.Threshold == 0 {
		return badRequest("reject needs a threshold")
	}
	if text == nil {
		text = []byte{}
	}
	in := db.Input{ID: req.ID, Text: text, Source: req.Source, TextOptions: to, ReplaceUnchanged: req.Replace}
	res, err := s.d.Add(r.Context(), in, &db.AddOptions{Threshold: req.Threshold, Reject: req.Reject, Limit: req.Limit})
	if err != nil {
		return err
	}
	out := api.AddResult{ID: req.ID, Stored: res.Stored, Replaced: res.Replaced, Unchanged: res.Unchanged,
		Rejected: !res.Stored && !res.Unchanged, Matches: matches(res.Matches)}
	status := http.StatusOK
	if res.Stored {
		status = http.StatusCreated
	}
	return writeJSON(w, status, out)
}

// matches returns the API form of ms.
func matches(ms []db.Match) []api.Match {
	out := make([]api.Match, len(ms))
	for i, m := range ms {
		out[i] = api.Match{ID: m.ID, Similarity: m.Similarity, Hamming: m.Hamming, Exact: m.Exact,
			QueryInDoc: m.QueryInDoc, DocInQuery: m.DocInQuery}
	}
	return out
}

// get is GET /v1/documents/{id...}.
func (s *Server) get(w http.ResponseWriter, r *http.Request) error {
	doc, err := s.d.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.Doc{ID: doc.ID, Source: doc.Source, Size: doc.Size, Words: doc.Words,
		Shingles: doc.Shingles, Added: doc.Added.Format(time.RFC3339Nano), ContentHash: hex.EncodeToString(doc.ContentHash[:]),
		Fingerprint: db.FormatFingerprint(doc.Fingerprint)})
}

// deleteOne is DELETE /v1/documents/{id...}: ?dry_run=true reports without
// deleting; ?forget=true also erases the document's audit-log entries.
func (s *Server) deleteOne(w http.ResponseWriter, r *http.Request) error {
	p := params{v: r.URL.Query()}
	p.only("dry_run", "forget")
	dry, forget := p.bool("dry_run"), p.bool("forget")
	if p.err != nil {
		return p.err
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
		return writeJSON(w, http.StatusOK, api.DeleteResult{Deleted: 1, DryRun: true})
	}
	if forget {
		res, err := s.d.Forget(r.Context(), []string{id})
		if err != nil {
			return err
		}
		if res.Deleted == 0 {
			return fmt.Errorf("%q: %w", id, db.ErrNotFound)
		}
		return writeJSON(w, http.StatusOK, api.DeleteResult{Deleted: res.Deleted})
	}
	if err := s.d.Delete(r.Context(), id); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.DeleteResult{Deleted: 1})
}
