package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/fpdb/fpdb/api"
	"github.com/fpdb/fpdb/db"
	"github.com/fpdb/fpdb/server/apiconv"
)

// Error is an error with its HTTP status and API error code (api.Code*):
// a handler returns one to be answered with exactly these.
type Error struct {
	// Status is the HTTP status of the answer.
	Status int
	// Code is the API error code of the answer (api.Error.Code).
	Code string
	// Message is the error's text (api.Error.Message).
	Message string
	// RetryAfter, when > 0, is sent as the answer's Retry-After (in
	// seconds): the cause passes (shutting down, a log or a shard
	// unavailable for now).
	RetryAfter int
}

// Error returns e's message.
func (e *Error) Error() string { return e.Message }

// BadRequest returns an *Error of status 400 and code api.CodeBadRequest,
// its message formatted as by fmt.Sprintf.
func BadRequest(format string, args ...any) error {
	return &Error{Status: http.StatusBadRequest, Code: api.CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

// UnsupportedMedia returns the 415 error of a body of media type mt that
// the route does not take; want says what to send instead.
func UnsupportedMedia(mt, want string) error {
	return &Error{Status: http.StatusUnsupportedMediaType, Code: api.CodeBadRequest,
		Message: fmt.Sprintf("Content-Type %q: %s", mt, want)}
}

// Class is a kind of error and its answer: an error that is (errors.Is)
// one of Errs, or for which As reports true, is answered with Status and
// Code.
type Class struct {
	// Status is the HTTP status of the class's errors.
	Status int
	// Code is their API error code.
	Code string
	// Errs are the errors of the class (matched with errors.Is).
	Errs []error
	// As, when not nil, also admits the errors it reports true for (an
	// errors.As of an error type).
	As func(error) bool
	// RetryAfter, when > 0, is sent as the answer's Retry-After (in
	// seconds), for a class whose cause passes.
	RetryAfter int
}

// InputErrors are the db errors of an input both servers refuse as a bad
// request (400): an invalid id, options, threshold, input or fingerprint,
// a text without words, a binary text, no text.
var InputErrors = []error{db.ErrInvalidID, db.ErrInvalidOptions, db.ErrInvalidThreshold, db.ErrBadInput,
	db.ErrBadFingerprint, db.ErrNoWords, db.ErrBinary, db.ErrNoText}

// Classify returns the status and code of err: an *Error's own; 413
// (api.CodeTooLarge) for a body over its limit (*http.MaxBytesError), a
// text too large (db.ErrTextTooLarge) or an export's line too long
// (*LineTooLongError); 408 (api.CodeTimeout) for a body
// slower than the request's time (*BodyTimeoutError) or a request past it
// (*RequestTimeoutError); else those of the
// first of classes err belongs to; else 500 (api.CodeInternal).
func Classify(err error, classes []Class) (int, string) {
	c := classify(err, classes)
	return c.Status, c.Code
}

// classify is Classify, with the class's RetryAfter.
func classify(err error, classes []Class) Class {
	var he *Error
	var mb *http.MaxBytesError
	var bt *BodyTimeoutError
	switch {
	case errors.As(err, &he):
		return Class{Status: he.Status, Code: he.Code, RetryAfter: he.RetryAfter}
	case errors.As(err, &mb), errors.Is(err, db.ErrTextTooLarge), errors.As(err, new(*LineTooLongError)):
		return Class{Status: http.StatusRequestEntityTooLarge, Code: api.CodeTooLarge}
	case errors.As(err, &bt), errors.As(err, new(*RequestTimeoutError)):
		return Class{Status: http.StatusRequestTimeout, Code: api.CodeTimeout}
	}
	for _, c := range classes {
		if c.As != nil && c.As(err) {
			return c
		}
		for _, e := range c.Errs {
			if errors.Is(err, e) {
				return c
			}
		}
	}
	return Class{Status: http.StatusInternalServerError, Code: api.CodeInternal}
}

// writeError answers err (of request id) with the API's error body, its
// status and code as Classify returns them, and Retry-After when the
// error's class has one.
// The message of a 500 does not tell its cause, which only the log line
// does; that of a body over the limit is the *BodyTooLargeError's alone,
// that of a body too slow the *BodyTimeoutError's, that of a request past
// its time the *RequestTimeoutError's;
// a 4xx carries the reason (apiconv.Reason) of the db error it wraps, if
// any, and a 503 of an import running says import_running.
func writeError(w http.ResponseWriter, id string, err error, classes []Class) {
	c := classify(err, classes)
	status, code := c.Status, c.Code
	msg := apiconv.Message(err)
	var tl *BodyTooLargeError
	var bt *BodyTimeoutError
	var rt *RequestTimeoutError
	switch {
	case status == http.StatusInternalServerError:
		msg = "internal error (see the server's log for request " + id + ")"
	case status == http.StatusRequestEntityTooLarge && errors.As(err, &tl):
		msg = tl.Error() // without what was being read ("read the request body: ")
	case status == http.StatusRequestTimeout && errors.As(err, &bt):
		msg = bt.Error() // as a body over the limit's
	case status == http.StatusRequestTimeout && errors.As(err, &rt):
		msg = rt.Error() // naming the limit, not "context deadline exceeded"
	}
	reason := ""
	if status < 500 {
		reason = apiconv.Reason(err)
	} else if status == http.StatusServiceUnavailable && errors.Is(err, db.ErrImportRunning) {
		reason = "import_running" // the only reason a 503 gives
	}
	if c.RetryAfter > 0 {
		// Unavailable for now (shutting down, a shard without a live
		// replica): a client may retry a read after that.
		w.Header().Set("Retry-After", strconv.Itoa(c.RetryAfter))
	}
	if status == http.StatusUnauthorized {
		// The scheme a 401 asks for (RFC 9110, 11.6.1).
		w.Header().Set("WWW-Authenticate", `Bearer realm="fpdb"`)
	}
	_ = WriteJSON(w, status, api.ErrorBody{Error: api.Error{Code: code, Message: msg, RequestID: id, Reason: reason}})
}

// WriteJSON answers v as JSON (Content-Type application/json, HTML
// characters not escaped) with the status.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
