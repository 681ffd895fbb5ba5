package httpapi

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/fpdb/fpdb/api"
)

// ErrBadTokens is returned by ParseTokens and LoadTokens for a token file
// that is not valid. (Its text names the server package, where token files
// were first read.)
var ErrBadTokens = errors.New("server: invalid token file")

// MinTokenLen is the shortest token accepted.
const MinTokenLen = 16

// Tokens are the bearer tokens a server accepts. Each is read-only ("ro")
// or read-write ("rw"). Tokens are compared in constant time, as SHA-256
// digests, so that neither their content nor their length leaks through
// timing. A nil *Tokens accepts every request.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	sum   [sha256.Size]byte
	write bool
}

// LoadTokens reads a token file (see ParseTokens).
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseTokens reads tokens, one per line: "rw TOKEN" or "ro TOKEN"; blank
// lines and lines starting with # are ignored. A token has at least
// MinTokenLen characters, none of them white space. There must be at
// least one token.
func ParseTokens(r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || (f[0] != "ro" && f[0] != "rw") {
			return nil, fmt.Errorf("%w: line %d: want \"ro TOKEN\" or \"rw TOKEN\"", ErrBadTokens, n)
		}
		if len(f[1]) < MinTokenLen {
			return nil, fmt.Errorf("%w: line %d: a token of %d characters, want at least %d", ErrBadTokens, n, len(f[1]), MinTokenLen)
		}
		t.entries = append(t.entries, tokenEntry{sum: sha256.Sum256([]byte(f[1])), write: f[0] == "rw"})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.entries) == 0 {
		return nil, fmt.Errorf("%w: no token", ErrBadTokens)
	}
	return t, nil
}

// Check accepts r when it carries one of the tokens in the header
// "Authorization: Bearer TOKEN" (one that may write when write is set);
// a nil *Tokens accepts every request. It refuses with an *Error: 401
// without a token or with an unknown one, 403 for a read-only token when
// write is set.
func (t *Tokens) Check(r *http.Request, write bool) error {
	if t == nil {
		return nil
	}
	// The scheme's name is case-insensitive (RFC 9110, 11.1).
	scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return &Error{Status: http.StatusUnauthorized, Code: api.CodeUnauthorized,
			Message: "this server needs a token: send the header Authorization: Bearer TOKEN"}
	}
	sum := sha256.Sum256([]byte(tok))
	found, canWrite := 0, 0
	for _, e := range t.entries { // every entry, so that the time does not tell which matched
		m := subtle.ConstantTimeCompare(sum[:], e.sum[:])
		found |= m
		if e.write {
			canWrite |= m
		}
	}
	switch {
	case found == 0:
		return &Error{Status: http.StatusUnauthorized, Code: api.CodeUnauthorized, Message: "unknown token"}
	case write && canWrite == 0:
		return &Error{Status: http.StatusForbidden, Code: api.CodeForbidden, Message: "this token may only read"}
	}
	return nil
}
