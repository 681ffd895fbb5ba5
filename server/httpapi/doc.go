// Package httpapi is the HTTP plumbing of the fpdb API that does not
// depend on what serves it: the single-node server (package server, over
// a *db.DB) and a cluster node (package cluster) both mount their
// handlers with it, so that they answer the same requests the same way.
//
// It holds:
//
//   - the API's route table: Handlers, one field per endpoint, whose
//     Routes method gives each its path, access and limits;
//   - NewMux, which serves Routes through what every request goes
//     through: a request id (the X-Request-ID header, echoed or made; see
//     RequestID), the bearer token check (Tokens, read by ParseTokens and
//     LoadTokens), a limit of requests at once (429), a body limit (413,
//     BodyTooLargeError), a deadline, the error answer (api.ErrorBody, with
//     the status and code of Classify) and one log line;
//   - Error, an error with its HTTP status and API code, and WriteJSON;
//   - the reading of requests: bodies (ReadBody, DecodeJSON, ReadJSON,
//     ReadJSONBody), media types (MediaType, TextBody, UnsupportedMedia;
//     JSONOnly, the one rule of the endpoints that take only JSON, and
//     FormJSON, which tells when a body sent as FormType — curl -d's
//     default — to an add or a query is its JSON request), query and form
//     parameters (Params, ReadFlag), and the requests both servers parse
//     alike: adds (ReadAdd), queries (ReadQuery), batches (ReadBatch),
//     deletes (ReadDelete, ReadDeleteOne), pairs (ReadPairs) and clusters
//     (ReadClusters);
//   - NDJSON, the writer of streamed responses (JSON lines).
//
// What a server decides on its own stays with it: its handlers, which of
// its errors are which status (the Classes of Options.Errors), the
// options it refuses, its defaults.
package httpapi
