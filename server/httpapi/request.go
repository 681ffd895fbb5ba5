package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
)

// ReadBody reads the request body (bounded by the body limit and the
// request's deadline of NewMux).
func ReadBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	return b, nil
}

// DecodeJSON decodes body into v strictly: valid UTF-8 (no escaped lone
// surrogate either), one value, no unknown field, every member named
// exactly as its field (names are case-sensitive) and none twice. Its
// errors are 400s.
func DecodeJSON(body []byte, v any) error {
	if !utf8.Valid(body) {
		return BadRequest("the JSON body is not valid UTF-8")
	}
	if loneSurrogate(body) {
		return BadRequest("the JSON body is not valid UTF-8: it escapes half of a UTF-16 surrogate pair (\\uD800 to \\uDFFF without its other half)")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			// Named by its JSON path, not by the Go structs it fills.
			return BadRequest("malformed JSON body: %q must be %s, not %s", jsonPath(te.Field), jsonKind(te.Type), withArticle(te.Value))
		case errors.As(err, &te):
			// The value itself (an array where an object is wanted), not
			// the Go type it would fill.
			return BadRequest("malformed JSON body: it must be %s, not %s", jsonKindValue(te.Type), withArticle(te.Value))
		}
		return BadRequest("malformed JSON body: %v", err)
	}
	// More misses a stray ] or } after the value: the rest of the body
	// must be white space.
	if rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return BadRequest("malformed JSON body: more than one value")
	}
	return strictKeys(body, reflect.TypeOf(v))
}

// ReadJSON reads the JSON body of a request to an endpoint that takes
// only JSON into v: its media type must be one JSONOnly accepts (else a
// 415), its body one value (see DecodeJSON).
func ReadJSON(r *http.Request, v any) error {
	body, err := ReadJSONBody(r, "send JSON (application/json)")
	if err != nil {
		return err
	}
	return DecodeJSON(body, v)
}

// FormType is application/x-www-form-urlencoded: the type curl -d and
// --data-binary (and Python's urllib) send when given no other, so that of
// a client that declared no real type. No endpoint reads a body of this
// type as a form: an endpoint that takes only JSON reads it as its JSON
// (JSONOnly), an add or a query as its JSON when it is a JSON object that
// names the request's fields and else as the text (FormJSON).
const FormType = "application/x-www-form-urlencoded"

// JSONOnly reports whether an endpoint that takes only JSON (POST
// /v1/delete, /v1/compare, /v1/templates and /v1/backup), or JSON Lines
// (POST /v1/batch), reads a body of media type mt as such: no type,
// application/json, application/x-ndjson, application/jsonl, text/plain or
// FormType (what curl -d sends). A body of another type is refused (415):
// it says it is something else (a multipart form, HTML, bytes).
// This is the one rule of every such endpoint.
func JSONOnly(mt string) bool {
	switch mt {
	case "", "application/json", "application/x-ndjson", "application/jsonl", "text/plain", FormType:
		return true
	}
	return false
}

// ReadJSONBody reads the body of a request to an endpoint that takes only
// JSON (or JSON Lines): a 415 that says to want unless JSONOnly accepts its
// media type (checked before the body is read).
func ReadJSONBody(r *http.Request, want string) ([]byte, error) {
	if err := checkJSONOnly(r, want); err != nil {
		return nil, err
	}
	return ReadBody(r)
}

// checkJSONOnly returns the 415 of a request whose media type JSONOnly
// refuses, a 400 for a malformed one, else nil; want says what to send.
func checkJSONOnly(r *http.Request, want string) error {
	mt, err := MediaType(r)
	if err != nil {
		return err
	}
	if !JSONOnly(mt) {
		return UnsupportedMedia(mt, want)
	}
	return nil
}

// FormJSON reports whether body, of media type mt, is the JSON of an add
// or a query (POST /v1/documents, /v1/query) though its type is not
// application/json: its type is FormType (a client that declared no real
// type, as curl -d), the request has no query parameters (with them, the
// body is the text and they are its fields), and the body is a JSON
// object one of whose members names a field of the endpoint's request,
// of the struct type of req (an add's "id" or "text", a query's "text" or
// "threshold", …). The caller then reads it as that request, its errors
// (an unknown field, a threshold of 0) a 400 as for application/json. A
// text that is a JSON object without such a member ({"title": ...,
// "body": ...}) stays a text; a text/plain (or other text type) body is
// always the text.
func FormJSON(r *http.Request, mt string, body []byte, req any) bool {
	if mt != FormType || r.URL.RawQuery != "" {
		return false
	}
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return false
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(b, &members) != nil {
		return false
	}
	t := reflect.TypeOf(req)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	fields := jsonFields(t)
	for name := range members {
		if _, ok := fields[name]; ok {
			return true
		}
	}
	return false
}

// MediaType returns the request's content type without its parameters
// ("" when absent); a malformed one is a 400.
func MediaType(r *http.Request) (string, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return "", nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", BadRequest("Content-Type %q: %v", ct, err)
	}
	return mt, nil
}

// TextBody reports whether a body of media type mt sent to an add or a
// query may be the text itself: no type, text/plain, text/html,
// application/octet-stream, or FormType (what curl -d and --data-binary
// send) — a FormType body that is a JSON object is the request's JSON
// instead (FormJSON).
func TextBody(mt string) bool {
	switch mt {
	case "", "text/plain", "application/octet-stream", "text/html", FormType:
		return true
	}
	return false
}

// TextOptions parses a text's format and encoding.
func TextOptions(t api.TextInput) (db.TextOptions, error) {
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

// Params reads typed values from query or form parameters, remembering
// the first error (a 400 that names the parameter) in Err. An absent
// parameter is the zero value.
type Params struct {
	// Values are the parameters.
	Values url.Values
	// Err is the first error met, nil if none.
	Err error
}

// fail records err unless an error came first.
func (p *Params) fail(err error) {
	if p.Err == nil {
		p.Err = err
	}
}

// Only fails unless every parameter is one of names, given once: a
// parameter given twice (?dry_run=false&dry_run=true) is refused, naming
// it, rather than one of its values silently used.
func (p *Params) Only(names ...string) {
	for _, k := range slices.Sorted(maps.Keys(p.Values)) {
		switch {
		case !slices.Contains(names, k):
			p.fail(BadRequest("unknown parameter %q", k))
		case len(p.Values[k]) > 1:
			p.fail(BadRequest("parameter %s is given %d times: give it once", k, len(p.Values[k])))
		}
	}
}

// Str returns the parameter name.
func (p *Params) Str(name string) string { return p.Values.Get(name) }

// Float returns the parameter name, a number.
func (p *Params) Float(name string) float64 {
	return param(p, name, "a number", func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
}

// Int returns the parameter name, an integer.
func (p *Params) Int(name string) int { return param(p, name, "an integer", strconv.Atoi) }

// Bool returns the parameter name, true or false (as strconv.ParseBool
// reads them).
func (p *Params) Bool(name string) bool { return param(p, name, "true or false", strconv.ParseBool) }

// param returns the parameter name of p as parse reads it (the zero value
// when absent); a value parse refuses is not what the parameter is.
func param[T any](p *Params, name, is string, parse func(string) (T, error)) T {
	s := p.Values.Get(name)
	if s == "" {
		var zero T
		return zero
	}
	v, err := parse(s)
	if err != nil {
		p.fail(BadRequest("parameter %s=%q is not %s", name, s, is))
	}
	return v
}

// OptionalThreshold returns the parameter "threshold" of an add or a
// query, 0 when absent: given, it is a resemblance in (0, 1], as on the
// command line (an explicit 0 would otherwise read as absent: no check for
// an add, the default threshold for a query).
func (p *Params) OptionalThreshold() float64 {
	th := p.Float("threshold")
	if p.Values.Get("threshold") != "" && p.Err == nil && !(th > 0 && th <= 1) {
		p.fail(fmt.Errorf("parameter threshold=%s: %w: want a resemblance in (0, 1]", p.Values.Get("threshold"), db.ErrInvalidThreshold))
	}
	return th
}

// OptionalContainment returns the parameter "containment", 0 when absent:
// given, it is a share in (0, 1] (an explicit 0 would otherwise read as
// absent, and the query take the default threshold).
func (p *Params) OptionalContainment() float64 {
	c := p.Float("containment")
	if p.Values.Get("containment") != "" && p.Err == nil && !(c > 0 && c <= 1) {
		p.fail(BadRequest("parameter containment=%s: want a share of the text in (0, 1] (leave it out for none)", p.Values.Get("containment")))
	}
	return c
}

// Threshold returns the parameter "threshold", which is required (the
// least resemblance of pairs and clusters). When check is not nil it
// validates the threshold read; its error is the parameters'.
func (p *Params) Threshold(check func(float64) error) float64 {
	if p.Str("threshold") == "" {
		p.fail(BadRequest("parameter threshold is required: the least resemblance, in (0, 1]"))
		return 0
	}
	th := p.Float("threshold")
	if check != nil && p.Err == nil {
		p.Err = check(th)
	}
	return th
}

// ReadFlag reads the parameters of a request whose only parameter is the
// flag name, true or false (false when absent).
func ReadFlag(r *http.Request, name string) (bool, error) {
	p := Params{Values: r.URL.Query()}
	p.Only(name)
	v := p.Bool(name)
	return v, p.Err
}

// jsonPath is the JSON path of an UnmarshalTypeError's field without the
// names of the embedded Go structs in it (the API's keys are lower case).
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	keep := parts[:0]
	for _, p := range parts {
		if p != "" && !unicode.IsUpper(rune(p[0])) {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		return field
	}
	return strings.Join(keep, ".")
}

// withArticle returns the JSON value named by an UnmarshalTypeError's
// Value ("array", "number 1.5") after its indefinite article.
func withArticle(value string) string {
	if value != "" && strings.ContainsRune("aeiou", rune(value[0])) {
		return "an " + value
	}
	return "a " + value
}

// jsonKindValue is jsonKind, an object named a JSON object.
func jsonKindValue(t reflect.Type) string {
	if k := jsonKind(t); k != "an object" {
		return k
	}
	return "a JSON object"
}

// jsonKind names in words the JSON values that fill a Go value of type t.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another type"
}
