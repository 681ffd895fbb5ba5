// Package server serves an fpdb database over HTTP: the /v1 JSON API that
// "fpdb serve" runs, described by the OpenAPI 3 document it serves at
// /v1/openapi.json (openapi.json in this package), plus /healthz and
// /readyz.
//
// # Basics
//
// New wraps an open *db.DB; Handler returns an http.Handler to mount in
// another server, Serve runs one on a listener until its context is done
// and then shuts down gracefully. One process owns the database, so many
// clients share it: adds with a threshold and reject are check-then-add
// exactly as in the db package (writes are serialized), so no two near
// duplicates can both be stored, whatever the number of clients.
//
// Beyond single documents and queries the API lists (pairs, clusters, the
// audit log and exports, streamed as JSON lines while they are found and
// stopped when the client goes away), adds in bulk (/v1/batch: every line
// checked before the first is stored), deletes by ids, prefix or age,
// compares two texts (JSON or the HTML page), manages templates, makes
// backups (into a directory on the server's machine: anywhere the
// server's user may write, or inside Options.BackupRoot), imports exports
// (each line read up to a bound made from the database's longest text,
// db.DB.MaxTextSize, never held whole beyond it; the rest of a refused
// import's body read and discarded before the answer), and exports
// Prometheus metrics at /metrics from a registry of the Server's own.
//
// Every request gets a request id (the X-Request-ID header, echoed or
// made), one log line (log/slog) and the limits of Options: a body size
// (413, whose message names the limit and the flag of "fpdb serve" that
// sets it), a time to read the body and answer (408), a number of
// requests at once (429). With Options.Tokens every /v1 request needs a
// bearer token; read-only tokens may read, read-write tokens also write.
//
// Content types: the endpoints that take only JSON (/v1/delete,
// /v1/compare, /v1/templates, /v1/backup; /v1/batch, JSON Lines) read a
// body sent with no type, a JSON type, text/plain or
// application/x-www-form-urlencoded (what curl -d sends when given no
// type) as such, and answer 415 to another (httpapi.JSONOnly). An add or a
// query reads an application/x-www-form-urlencoded body sent with no query
// parameters that is a JSON object naming a field of its request as that
// request (its errors, an unknown field or a threshold of 0, refused as in
// application/json), any other as the text; a text/plain body is always
// the text (httpapi.FormJSON).
//
// The HTTP plumbing that does not depend on the database (routes, request
// ids, tokens, limits, error answers, request parsing, streams) is in
// package server/httpapi, which a cluster node's handler (package cluster)
// uses as well.
//
// # Caveats
//
// A request that fails with a 4xx leaves the database unchanged; a write
// that fails with a 5xx may or may not have been made (each write is
// atomic: whole or absent). The server binds where it is told: "fpdb serve"
// binds to 127.0.0.1 by default, and without TLS a token crosses the
// network in clear.
package server
