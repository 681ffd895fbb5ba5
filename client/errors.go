package client

import (
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/fpdb/fpdb/api"
)

// Sentinels of the API's error codes: errors.Is(err, ErrNotFound) holds
// for an *Error whose Code is api.CodeNotFound, and so on.
var (
	// ErrBadRequest: the request was at fault (a bad id, a text without
	// words, a malformed parameter); the database is unchanged.
	ErrBadRequest = errors.New("fpdb server: bad request")
	// ErrNotFound: no document (or template) of that name.
	ErrNotFound = errors.New("fpdb server: not found")
	// ErrUnauthorized: the server needs a token, or did not know the one
	// sent.
	ErrUnauthorized = errors.New("fpdb server: unauthorized")
	// ErrForbidden: the token may only read, or the database is read-only.
	ErrForbidden = errors.New("fpdb server: forbidden")
	// ErrTooLarge: the body was larger than the server accepts.
	ErrTooLarge = errors.New("fpdb server: request too large")
	// ErrTimeout: the request took longer than the server allows.
	ErrTimeout = errors.New("fpdb server: request timed out")
	// ErrTooManyRequests: the server was serving as many requests as it
	// may; retry later.
	ErrTooManyRequests = errors.New("fpdb server: too many requests")
	// ErrUnavailable: the server is shutting down or its database closed.
	ErrUnavailable = errors.New("fpdb server: unavailable")
	// ErrInternal: the server failed; its log says why (see
	// Error.RequestID).
	ErrInternal = errors.New("fpdb server: internal error")
	// ErrOutcomeUnknown: a cluster node sent the write to its log and got
	// no answer, so it may or may not be done (status 504). It is not
	// retried on its own: sending the same write again is safe (an add
	// finds its document unchanged), or Get tells which.
	ErrOutcomeUnknown = errors.New("fpdb server: outcome unknown")
	// ErrUnreachable: no server answered at the URL (see
	// *UnreachableError).
	ErrUnreachable = errors.New("fpdb server: unreachable")
)

// codeErrors maps the API's error codes to the sentinels.
var codeErrors = map[string]error{
	api.CodeBadRequest:      ErrBadRequest,
	api.CodeNotFound:        ErrNotFound,
	api.CodeUnauthorized:    ErrUnauthorized,
	api.CodeForbidden:       ErrForbidden,
	api.CodeTooLarge:        ErrTooLarge,
	api.CodeTimeout:         ErrTimeout,
	api.CodeTooManyRequests: ErrTooManyRequests,
	api.CodeUnavailable:     ErrUnavailable,
	api.CodeInternal:        ErrInternal,
	api.CodeOutcomeUnknown:  ErrOutcomeUnknown,
}

// Error is an answer of the server with an error status.
type Error struct {
	// Status is the HTTP status, e.g. 404.
	Status int
	// Code is the API's error code (api.CodeNotFound, ...); empty when
	// the answer was not the API's error body (a proxy's page, a server
	// of another version without the endpoint).
	Code string
	// Message is the server's message, which names the input at fault.
	Message string
	// RequestID identifies the request in the server's log.
	RequestID string
	// Reason names the database's error behind a 4xx, when there is one
	// (api.Error.Reason).
	Reason string
	// RetryAfter is the wait the server asked for before a retry (its
	// Retry-After header, in seconds), 0 when it asked none.
	RetryAfter time.Duration
}

// Error returns the server's message.
func (e *Error) Error() string { return e.Message }

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	s, ok := codeErrors[e.Code]
	return ok && s == target
}

// UnreachableError is a request that reached no server: nothing listens
// at the URL, the host is unknown or the connection could not be made.
type UnreachableError struct {
	// URL is the server's base URL.
	URL string
	// Err is the cause, from the network.
	Err error
}

// Error says "no fpdb server at URL: connection refused".
func (e *UnreachableError) Error() string {
	return "no fpdb server at " + e.URL + ": " + reason(e.Err)
}

// Unwrap returns the cause.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Is reports ErrUnreachable.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// reason says briefly why a connection failed.
func reason(err error) string {
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	case errors.As(err, &dns):
		return "unknown host " + dns.Name
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}

// isDialError reports whether err means that no connection was made.
func isDialError(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &dns)
}

// statusError returns the error of a response with an error status and
// its body b: the API's error body when it is one, else the status.
func statusError(method, path string, status int, b []byte, requestID string) *Error {
	var body api.ErrorBody
	if err := jsonUnmarshal(b, &body); err == nil && body.Error.Code != "" {
		e := &Error{Status: status, Code: body.Error.Code, Message: body.Error.Message, RequestID: body.Error.RequestID, Reason: body.Error.Reason}
		if e.RequestID == "" {
			e.RequestID = requestID
		}
		return e
	}
	return &Error{Status: status, RequestID: requestID,
		Message: method + " " + path + ": the server answered " + http.StatusText(status) +
			" (" + itoa(status) + ") without an fpdb error; is it an fpdb server of this version?"}
}
