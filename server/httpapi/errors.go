package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

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
}

// InputErrors are the db errors of an input both servers refuse as a bad
// request (400): an invalid id, options, threshold, input or fingerprint,
// a text without words, a binary text, no text.
var InputErrors = []error{db.ErrInvalidID, db.ErrInvalidOptions, db.ErrInvalidThreshold, db.ErrBadInput,
	db.ErrBadFingerprint, db.ErrNoWords, db.ErrBinary, db.ErrNoText}

// Classify returns the status and code of err: an *Error's own; 413
// (api.CodeTooLarge) for a body over its limit (*http.MaxBytesError) or a
// text too large (db.ErrTextTooLarge); else those of the first of classes
// err belongs to; else 500 (api.CodeInternal).
func Classify(err error, classes []Class) (int, string) {
	var he *Error
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		return he.Status, he.Code
	case errors.As(err, &mb), errors.Is(err, db.ErrTextTooLarge):
		return http.StatusRequestEntityTooLarge, api.CodeTooLarge
	}
	for _, c := range classes {
		if c.As != nil && c.As(err) {
			return c.Status, c.Code
		}
		for _, e := range c.Errs {
			if errors.Is(err, e) {
				return c.Status, c.Code
			}
		}
	}
	return http.StatusInternalServerError, api.CodeInternal
}

// writeError answers err (of request id) with the API's error body, its
// status and code as Classify returns them; a 503 also with Retry-After: 1.
// The message of a 500 does not tell its cause, which only the log line
// does; a 4xx carries the reason (apiconv.Reason) of the db error it
// wraps, if any.
func writeError(w http.ResponseWriter, id string, err error, classes []Class) {
	status, code := Classify(err, classes)
	msg := apiconv.Message(err)
	if status == http.StatusInternalServerError {
		msg = "internal error (see the server's log for request " + id + ")"
	}
	reason := ""
	if status < 500 {
		reason = apiconv.Reason(err)
	}
	if status == http.StatusServiceUnavailable {
		// Unavailable for now (shutting down, a shard without a live
		// replica): a client may retry a read after a second.
		w.Header().Set("Retry-After", "1")
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
