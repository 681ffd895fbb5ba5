package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
)

// DefaultThreshold is a query's threshold when neither a threshold nor a
// containment is given (as "fpdb query").
const DefaultThreshold = 0.7

// addParams are the parameters of an add sent as a plain body or a form.
var addParams = []string{"id", "source", "threshold", "reject", "replace", "limit", "format", "encoding"}

// ReadAdd reads an add (POST /v1/documents): JSON (an api.AddRequest), a
// plain-text body with its parameters in the query string, or a multipart
// form with a "file" part. A body sent as FormType (curl -d's default) is
// the JSON when it is a JSON object that names an add's fields (FormJSON;
// its errors are then those of the JSON), else the text. It checks
// what every server checks: an id, a valid format and encoding, a
// threshold and a limit not negative, a threshold with reject. It returns the request and the document's input
// (its text, an empty one rather than nil, with the request's options;
// ReplaceUnchanged is the request's Replace).
func ReadAdd(r *http.Request) (api.AddRequest, db.Input, error) {
	req, text, err := readAdd(r)
	if err != nil {
		return req, db.Input{}, err
	}
	if req.ID == "" {
		return req, db.Input{}, BadRequest("the document needs an id")
	}
	to, err := TextOptions(req.TextInput)
	if err != nil {
		return req, db.Input{}, err
	}
	switch {
	case req.Threshold < 0:
		return req, db.Input{}, BadRequest("threshold %v must not be negative", req.Threshold)
	case req.Limit < 0:
		return req, db.Input{}, BadRequest("limit %d must not be negative", req.Limit)
	case req.Reject && req.Threshold == 0:
		return req, db.Input{}, BadRequest("reject needs a threshold")
	}
	if text == nil {
		text = []byte{}
	}
	return req, db.Input{ID: req.ID, Text: text, Source: req.Source, TextOptions: to, ReplaceUnchanged: req.Replace}, nil
}

// readAdd reads an add's request and text (see ReadAdd).
func readAdd(r *http.Request) (api.AddRequest, []byte, error) {
	var req api.AddRequest
	mt, err := MediaType(r)
	if err != nil {
		return req, nil, err
	}
	var p Params
	var text []byte
	switch {
	case mt == "application/json" || TextBody(mt):
		body, err := ReadBody(r)
		if err != nil {
			return req, nil, err
		}
		if mt == "application/json" {
			return readAddJSON(r, body)
		}
		if FormJSON(r, mt, body, addJSON{}) {
			req, text, err := readAddJSON(r, body)
			return req, text, formJSONError(err, "an add")
		}
		text = body
		p.Values = r.URL.Query()
		if mt == "text/html" && p.Values.Get("format") == "" {
			p.Values.Set("format", "html")
		}
	case mt == "multipart/form-data":
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			return req, nil, fmt.Errorf("read the form: %w", asBadRequest(err))
		}
		// The files of a large part are removed here: net/http removes
		// only those of the request it was given, and a handler's request
		// is a copy of it (with the request's context).
		defer func() { _ = r.MultipartForm.RemoveAll() }()
		// One file part, "file": a second would be silently ignored.
		for _, name := range slices.Sorted(maps.Keys(r.MultipartForm.File)) {
			switch n := len(r.MultipartForm.File[name]); {
			case name != "file":
				return req, nil, BadRequest("unknown file part %q: the form's one file part is \"file\"", name)
			case n > 1:
				return req, nil, BadRequest("the form has %d \"file\" parts: give one", n)
			}
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			return req, nil, BadRequest("the form has no \"file\" part: %v", err)
		}
		defer f.Close()
		if text, err = io.ReadAll(f); err != nil {
			return req, nil, err
		}
		// The parameters are the form's fields and the query string's,
		// as with a plain body; one given in both, or twice in either
		// (Params.Only), is refused rather than one of them silently
		// dropped.
		p.Values = url.Values{}
		for k, v := range r.MultipartForm.Value {
			p.Values[k] = v
		}
		for k, v := range r.URL.Query() {
			if _, ok := p.Values[k]; ok {
				return req, nil, BadRequest("parameter %q is both a form field and in the query string: give it once", k)
			}
			p.Values[k] = v
		}
	default:
		return req, nil, UnsupportedMedia(mt, "send JSON, text/plain or multipart/form-data")
	}
	p.Only(addParams...)
	req = api.AddRequest{ID: p.Str("id"), Source: p.Str("source"), Threshold: p.OptionalThreshold(),
		Reject: p.Bool("reject"), Replace: p.Bool("replace"), Limit: p.Int("limit"),
		TextInput: api.TextInput{Format: p.Str("format"), Encoding: p.Str("encoding")}}
	return req, text, p.Err
}

// readAddJSON reads an add sent as JSON, its body (as application/json,
// or as FormType: FormJSON).
func readAddJSON(r *http.Request, body []byte) (api.AddRequest, []byte, error) {
	var v addJSON
	if err := DecodeJSON(body, &v); err != nil {
		return v.AddRequest, nil, err
	}
	req := v.AddRequest
	var err error
	if req.Threshold, err = jsonThreshold(v.Threshold, "leave it out for no check"); err != nil {
		return req, nil, err
	}
	if len(r.URL.Query()) > 0 {
		err = BadRequest("an add sent as JSON takes no query parameters (give id and the other fields in the JSON object)")
		return req, nil, err
	}
	return req, []byte(req.Text), nil
}

// addJSON is an add sent as JSON (and a line of a batch). Its Threshold
// shadows the request's (encoding/json decodes into the shallower of two
// fields of one name), so that an explicit 0 is told from an absent one.
type addJSON struct {
	api.AddRequest
	Threshold *float64 `json:"threshold"`
}

// queryJSON is a query sent as JSON, its Threshold a pointer as addJSON's.
type queryJSON struct {
	api.QueryRequest
	Threshold   *float64 `json:"threshold"`
	Containment *float64 `json:"containment"`
}

// jsonThreshold returns the threshold of a request sent as JSON, 0 when
// absent: given, it is a resemblance in (0, 1], as in the query string (an
// explicit 0 would otherwise read as absent). absent says, in the error,
// what leaving the field out does.
func jsonThreshold(th *float64, absent string) (float64, error) {
	switch {
	case th == nil:
		return 0, nil
	case !(*th > 0 && *th <= 1):
		return 0, fmt.Errorf("field threshold %v: %w: want a resemblance in (0, 1] (%s)", *th, db.ErrInvalidThreshold, absent)
	}
	return *th, nil
}

// formJSONError adds to err, a 400 of a body of FormType read as the JSON
// of what (FormJSON), why the body was read so and how to send a text that
// is JSON: the client may not know that curl -d declares FormType.
func formJSONError(err error, what string) error {
	var he *Error
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest {
		return err
	}
	c := *he
	c.Message += " (the body came as " + FormType + ", curl -d's default, and is a JSON object naming a field of " + what +
		" request, so it was read as one; send a text that is JSON as text/plain)"
	return &c
}

// asBadRequest makes a form-parsing error a 400, keeping a body-size error
// (a 413) and a body that came too slowly (a 408, as for every other
// body).
func asBadRequest(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return BadRequest("%v", err)
}

// queryParams are the parameters of a query sent as a plain body.
var queryParams = []string{"threshold", "containment", "limit", "plan", "tau", "recall", "explain", "format", "encoding"}

// ReadQuery reads a query (POST /v1/query): JSON (an api.QueryRequest),
// or a plain-text body with its parameters in the query string. A body
// sent as FormType (curl -d's default) is the JSON when it is a JSON
// object that names a query's fields (FormJSON; its errors are then those
// of the JSON), else the text. The request has a text or a
// fingerprint, not both.
func ReadQuery(r *http.Request) (api.QueryRequest, error) {
	req, err := readQuery(r)
	if err == nil && (req.Text == "") == (req.Fingerprint == "") {
		err = BadRequest("give a text or a fingerprint (one of them)")
	}
	return req, err
}

// readQuery reads a query's request (see ReadQuery).
func readQuery(r *http.Request) (api.QueryRequest, error) {
	var req api.QueryRequest
	mt, err := MediaType(r)
	if err != nil {
		return req, err
	}
	body, err := ReadBody(r)
	if err != nil {
		return req, err
	}
	if mt == "application/json" {
		return readQueryJSON(r, body)
	}
	if FormJSON(r, mt, body, queryJSON{}) {
		req, err := readQueryJSON(r, body)
		return req, formJSONError(err, "a query")
	}
	if !TextBody(mt) {
		return req, &Error{Status: http.StatusUnsupportedMediaType, Code: api.CodeBadRequest,
			Message: "Content-Type " + mt + ": send JSON or the text as text/plain"}
	}
	p := Params{Values: r.URL.Query()}
	p.Only(queryParams...)
	req = api.QueryRequest{Text: string(body), Threshold: p.OptionalThreshold(), Containment: p.OptionalContainment(),
		Limit: p.Int("limit"), Plan: p.Str("plan"), Recall: p.Float("recall"), Explain: p.Bool("explain"),
		TextInput: api.TextInput{Format: p.Str("format"), Encoding: p.Str("encoding")}}
	if mt == "text/html" && req.Format == "" {
		req.Format = "html"
	}
	if p.Str("tau") != "" {
		tau := p.Int("tau")
		req.Tau = &tau
	}
	return req, p.Err
}

// readQueryJSON reads a query sent as JSON, its body (as
// application/json, or as FormType: FormJSON).
func readQueryJSON(r *http.Request, body []byte) (api.QueryRequest, error) {
	var v queryJSON
	err := DecodeJSON(body, &v)
	if err == nil && len(r.URL.Query()) > 0 {
		err = BadRequest("a query sent as JSON takes no query parameters (give threshold and the other fields in the JSON object)")
	}
	if err != nil {
		return v.QueryRequest, err
	}
	req := v.QueryRequest
	if c := v.Containment; c != nil {
		if !(*c > 0 && *c <= 1) {
			return req, BadRequest("field containment %v: want a share of the text in (0, 1] (leave it out for none)", *c)
		}
		req.Containment = *c
	}
	req.Threshold, err = jsonThreshold(v.Threshold, "leave it out for the default 0.7, or for none with a containment")
	return req, err
}

// BatchLine is a document of a batch and the body line it came from.
type BatchLine struct {
	// Line is the line's number, from 1.
	Line int
	// Input is the document (ReplaceUnchanged is the line's Replace).
	Input db.Input
}

// ReadBatch reads a batch (POST /v1/batch): JSON lines (of a media type
// JSONOnly accepts, curl -d's FormType among them), one api.AddRequest per
// line, blank lines skipped, and the batch's check, from
// the query parameters threshold (in (0, 1]), reject and limit (≥ 0),
// which need threshold: opts is nil for a batch without a check. A line
// without an id is passed on (the database skips it); no line may have a
// threshold, reject or limit of its own;
// check, when not nil, is then called for it, and its error fails the
// batch. Any bad line fails the whole batch, naming the line: every line
// is read and checked before the first is stored.
func ReadBatch(r *http.Request, check func(line int, req api.AddRequest) error) (_ []BatchLine, opts *db.AddOptions, _ error) {
	if err := checkJSONOnly(r, "send JSON lines (application/x-ndjson)"); err != nil {
		return nil, nil, err
	}
	opts, err := readBatchCheck(r)
	if err != nil {
		return nil, nil, err
	}
	lines, err := readBatchLines(r, check)
	return lines, opts, err
}

// readBatchCheck reads the check of a batch from its query parameters
// (ReadBatch).
func readBatchCheck(r *http.Request) (*db.AddOptions, error) {
	p := Params{Values: r.URL.Query()}
	p.Only("threshold", "reject", "limit")
	o := &db.AddOptions{Threshold: p.Float("threshold"), Reject: p.Bool("reject"), Limit: p.Int("limit")}
	switch {
	case p.Err != nil:
		return nil, p.Err
	case p.Values.Has("threshold") && p.Str("threshold") == "":
		return nil, BadRequest("parameter threshold is empty: want a resemblance in (0, 1]")
	case p.Str("threshold") == "" && len(p.Values) > 0:
		return nil, BadRequest("parameters reject and limit need threshold (a batch without it checks nothing)")
	case p.Str("threshold") == "":
		return nil, nil
	case !(o.Threshold > 0 && o.Threshold <= 1):
		return nil, BadRequest("parameter threshold=%s: want a resemblance in (0, 1]", p.Str("threshold"))
	case o.Limit < 0:
		return nil, BadRequest("parameter limit=%d: want 0 (all matches) or more", o.Limit)
	}
	return o, nil
}

// readBatchLines reads the lines of a batch (ReadBatch).
func readBatchLines(r *http.Request, check func(line int, req api.AddRequest) error) ([]BatchLine, error) {
	body, err := ReadBody(r)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(body) {
		return nil, BadRequest("the body is not valid UTF-8")
	}
	var out []BatchLine
	for n, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' && json.Valid(line) {
			return nil, BadRequest("line %d: each line must be a JSON object of one document's fields, not %s", n+1, jsonValueKind(line[0]))
		}
		var v addJSON
		if err := DecodeJSON(line, &v); err != nil {
			return nil, BadRequest("line %d: %v", n+1, err)
		}
		req := v.AddRequest
		// A line without an id goes on to the database, which skips it
		// (reason invalid_id), as it skips an id with a NUL byte and as
		// "fpdb add --bulk" skips such a record.
		switch {
		case v.Threshold != nil || req.Reject || req.Limit != 0:
			return nil, BadRequest("line %d (id %q): threshold, reject and limit are not allowed on a line of a batch (check the whole batch with POST /v1/batch?threshold=R, or add the document with POST /v1/documents)", n+1, req.ID)
		}
		if check != nil {
			if err := check(n+1, req); err != nil {
				return nil, err
			}
		}
		to, err := TextOptions(req.TextInput)
		if err != nil {
			return nil, BadRequest("line %d (id %q): %v", n+1, req.ID, err)
		}
		out = append(out, BatchLine{Line: n + 1, Input: db.Input{ID: req.ID, Text: []byte(req.Text), Source: req.Source,
			TextOptions: to, ReplaceUnchanged: req.Replace}})
	}
	return out, nil
}

// jsonValueKind names in words the JSON value that begins with byte c.
func jsonValueKind(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	}
	return "a number"
}

// ReadDelete reads a delete of many documents (POST /v1/delete): an
// api.DeleteRequest (of a media type JSONOnly accepts) with exactly one of
// its selectors, which by names:
// "ids", "prefix" or "older_than" (given, even empty).
func ReadDelete(r *http.Request) (req api.DeleteRequest, by string, err error) {
	body, err := ReadJSONBody(r, "send JSON (application/json)")
	if err != nil {
		return req, "", err
	}
	if err := DecodeJSON(body, &req); err != nil {
		return req, "", err
	}
	// Which selectors are present, an empty one included.
	var given struct {
		IDs       *[]string `json:"ids"`
		Prefix    *string   `json:"prefix"`
		OlderThan *string   `json:"older_than"`
	}
	_ = json.Unmarshal(body, &given)
	var sel []string
	for name, set := range map[string]bool{"ids": given.IDs != nil, "prefix": given.Prefix != nil, "older_than": given.OlderThan != nil} {
		if set {
			sel = append(sel, name)
		}
	}
	slices.Sort(sel)
	if len(sel) != 1 {
		return req, "", BadRequest("give exactly one of ids, prefix and older_than (got %d: %s)", len(sel), strings.Join(sel, ", "))
	}
	return req, sel[0], nil
}

// ReadDeleteOne reads the parameters of a delete of one document (DELETE
// /v1/documents/{id...}): dry_run (report without deleting) and forget
// (erase the document's audit-log entries too).
func ReadDeleteOne(r *http.Request) (dryRun, forget bool, err error) {
	p := Params{Values: r.URL.Query()}
	p.Only("dry_run", "forget")
	dryRun, forget = p.Bool("dry_run"), p.Bool("forget")
	return dryRun, forget, p.Err
}

// ReadPairs reads the parameters of GET /v1/pairs: the threshold, required
// (see Params.Threshold for check).
func ReadPairs(r *http.Request, check func(float64) error) (float64, error) {
	p := Params{Values: r.URL.Query()}
	p.Only("threshold")
	th := p.Threshold(check)
	return th, p.Err
}

// ClustersParams are the parameters of GET /v1/clusters.
type ClustersParams struct {
	// Threshold is the least resemblance of the pairs (required).
	Threshold float64
	// Centers asks for clusters around centers (db.ClusterCenters).
	Centers bool
	// Keep is the keep policy (db.KeepNone when not given).
	Keep db.Keep
	// MaxSize is the largest cluster around a center (0: no limit).
	MaxSize int
}

// ReadClusters reads the parameters of GET /v1/clusters: threshold
// (required; see Params.Threshold for check), centers, keep (oldest,
// newest, first, longest or shortest) and max_size (0, or at least 2 with
// centers).
func ReadClusters(r *http.Request, check func(float64) error) (ClustersParams, error) {
	p := Params{Values: r.URL.Query()}
	p.Only("threshold", "centers", "keep", "max_size")
	c := ClustersParams{Threshold: p.Threshold(check), MaxSize: p.Int("max_size"), Centers: p.Bool("centers")}
	if p.Err != nil {
		return c, p.Err
	}
	keep, ok := apiconv.Keep(p.Str("keep"))
	switch {
	case !ok:
		return c, BadRequest("parameter keep=%q: want oldest, newest, first, longest or shortest", p.Str("keep"))
	case c.MaxSize < 0 || c.MaxSize == 1:
		return c, BadRequest("parameter max_size=%d: want 0 (no limit) or at least 2", c.MaxSize)
	case c.MaxSize > 0 && !c.Centers:
		return c, BadRequest("parameter max_size needs centers=true (a chain of near duplicates cannot be cut)")
	}
	c.Keep = keep
	return c, nil
}
