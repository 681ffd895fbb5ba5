package httpapi

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/fpdb/fpdb/api"
)

// crossOrigin returns the 403 of a request a web page of another origin
// sent: one whose Origin header names another host than the request's
// Host, or "null" (a sandboxed frame, a local file), or whose
// Sec-Fetch-Site says cross-site. Browsers send such requests without
// asking (a form's POST, fetch with mode no-cors): without this check,
// any page a user of the machine opens could add, delete or back up
// through a server on 127.0.0.1 that has no tokens. Clients that are not
// browsers send neither header.
func crossOrigin(r *http.Request) error {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return forbiddenOrigin("the browser marks it cross-site")
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
		return forbiddenOrigin("its Origin " + origin + " is not this server (" + r.Host + ")")
	}
	return nil
}

func forbiddenOrigin(why string) error {
	return &Error{Status: http.StatusForbidden, Code: api.CodeForbidden,
		Message: "a request sent by a web page of another site is refused: " + why + " (the server's own page at / may use the API)"}
}

// LoopbackHosts wraps h, the handler of a server that listens on a
// loopback address only, so that it answers only requests that name a
// loopback host (localhost, 127.0.0.1, [::1], …) in their Host header,
// else 421: a web page whose domain an attacker points at 127.0.0.1 (DNS
// rebinding) names its own domain there, and must not read the database.
func LoopbackHosts(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			writeError(w, r.Header.Get("X-Request-ID"), &Error{Status: http.StatusMisdirectedRequest, Code: api.CodeBadRequest,
				Message: "this server listens on a loopback address and answers only requests to localhost or a loopback IP address, not to " + r.Host}, nil)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether host (a Host header: name or address,
// with or without a port) is localhost or a loopback IP address.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopback reports whether a listener's address is a loopback one.
func IsLoopback(addr net.Addr) bool {
	if a, ok := addr.(*net.TCPAddr); ok {
		return a.IP.IsLoopback()
	}
	return false
}
