package server

import (
	"io"

	"github.com/fpdb/fpdb/server/httpapi"
)

// ErrBadTokens is returned by ParseTokens and LoadTokens for a token file
// that is not valid.
var ErrBadTokens = httpapi.ErrBadTokens

// MinTokenLen is the shortest token accepted.
const MinTokenLen = httpapi.MinTokenLen

// Tokens are the bearer tokens a server accepts. Each is read-only ("ro")
// or read-write ("rw"). Tokens are compared in constant time, as SHA-256
// digests, so that neither their content nor their length leaks through
// timing. They are those of package httpapi, which a cluster node's HTTP
// handler (cluster.HTTPOptions) takes as well.
type Tokens = httpapi.Tokens

// LoadTokens reads a token file (see ParseTokens).
func LoadTokens(path string) (*Tokens, error) { return httpapi.LoadTokens(path) }

// ParseTokens reads tokens, one per line: "rw TOKEN" or "ro TOKEN"; blank
// lines and lines starting with # are ignored. A token has at least
// MinTokenLen characters, none of them white space. There must be at
// least one token.
func ParseTokens(r io.Reader) (*Tokens, error) { return httpapi.ParseTokens(r) }
