// Package client is a Go client of the HTTP API that "fpdb serve" serves
// (package server): add documents with the near-duplicate check, query,
// get, delete one document or many, read the statistics, and stream every
// pair or cluster of near duplicates.
//
//	c, err := client.New("http://127.0.0.1:7700", &client.Options{Token: tok})
//	res, err := c.Add(ctx, api.AddRequest{ID: "a.txt", Text: text, Threshold: 0.8, Reject: true})
//	err = c.Pairs(ctx, 0.9, func(p api.Pair) error { fmt.Println(p.A, p.B); return nil })
//
// The requests and answers are the JSON types of package api. A text is
// sent as it is (the body of the request), so texts in any encoding reach
// the server byte for byte; the server reads and fingerprints them.
//
// An answer with an error status is returned as an *Error, which carries
// the HTTP status, the API's error code, the server's message and the
// request id; errors.Is matches it against ErrNotFound, ErrForbidden and
// the other sentinels of its code. A server that cannot be reached (no
// process listening, an unknown host) is an *UnreachableError, which
// errors.Is matches against ErrUnreachable: "no fpdb server at URL:
// connection refused".
//
// A request the server could not take for now is sent again
// (Options.Retries, default 3, with backoff and the server's Retry-After):
// when the connection was refused, on a 429, and on a 503 to a call that
// changes nothing (Get, Query, Stats, StorageStats, and Pairs and Clusters
// before their first line). A write answered 503 is not sent again: a
// cluster may have logged it.
//
// A Client is safe for concurrent use and holds no global state.
package client
