// Package api holds the JSON types of fpdb's HTTP API (/v1), shared by the
// server (package server, "fpdb serve") and its clients (package client,
// "fpdb --server", clients/python). It has no behaviour beyond the JSON
// form of a Doc's source (Doc.MarshalJSON) and imports no other part of
// fpdb, so that a client built on it stays small.
//
// # Basics
//
// Every request and response body is JSON (UTF-8, no unknown fields
// accepted; a request's keys are matched to the field names regardless of
// case, as Go's encoding/json matches them), except a document's text, which may also be sent as the
// request body itself (text/plain) or as a multipart file, and the
// streamed lists (pairs, clusters, the audit log, exports), which are JSON
// Lines (application/x-ndjson). An error is an Error object with an HTTP
// status of 4xx (the request's fault; the database is unchanged) or 5xx.
//
// # Caveats
//
// Field names are part of the API: they change only with its version
// (the /v1 in every path). New optional fields may be added.
package api
