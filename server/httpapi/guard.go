package httpapi

import (
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/fpdb/fpdb/api"
)

// crossOrigin returns the 403 of a request a web page of another site
// sent. Browsers send such requests without asking (a form's POST, fetch
// with mode no-cors): without this check, any page a user of the machine
// opens could add, delete or back up through a server on 127.0.0.1 that
// has no tokens. A browser says where a request comes from in
// Sec-Fetch-Site, which pages cannot set: same-origin (the server's own
// page, also behind a reverse proxy) and none (typed by the user) are
// served, same-site and cross-site refused. A browser that does not send
// it sends Origin: it must name the request's host (Host, or the
// X-Forwarded-Host a reverse proxy sets, which a page cannot set without
// the server's consent); "null" (a sandboxed frame, a local file) is
// refused. Clients that are not browsers send neither header.
func crossOrigin(r *http.Request) error {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "same-origin", "none":
		return nil
	case "same-site", "cross-site":
		return forbiddenOrigin("the browser marks it " + site)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err == nil && u.Host != "" {
		if strings.EqualFold(u.Host, r.Host) {
			return nil
		}
		if fh, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Host"), ","); fh != "" && strings.EqualFold(u.Host, strings.TrimSpace(fh)) {
			return nil
		}
	}
	return forbiddenOrigin("its Origin " + origin + " is not this server (" + r.Host + ")")
}

func forbiddenOrigin(why string) error {
	return &Error{Status: http.StatusForbidden, Code: api.CodeForbidden,
		Message: "a request sent by a web page of another site is refused: " + why + " (the server's own page at / may use the API)"}
}

// LoopbackHosts wraps h, the handler of a server that listens on a
// loopback address only, so that it answers only requests that name a
// loopback host (localhost, 127.0.0.1, [::1], …) or one of allowed (host
// names, any port; "*": any host) in their Host header, else 421: a web
// page whose domain an attacker points at 127.0.0.1 (DNS rebinding) names
// its own domain there, and must not read the database. A reverse proxy
// that passes on its public Host needs that name allowed ("fpdb serve
// --allow-host"). The health checks (/healthz, /readyz) answer any host.
// A refused request gets a request id, as the API's do (in X-Request-ID
// and the error body), and a line in logger's log (nil: none), which
// names the host asked for: a rebinding attempt shows there.
func LoopbackHosts(h http.Handler, allowed []string, logger *slog.Logger) http.Handler {
	if slices.Contains(allowed, "*") {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) && !allowedHost(r.Host, allowed) && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			id := requestID(r)
			w.Header().Set("X-Request-ID", id)
			if r.Body != nil && r.Body != http.NoBody {
				closeUnread(w, http.NewResponseController(w))
			}
			err := &Error{Status: http.StatusMisdirectedRequest, Code: api.CodeBadRequest,
				Message: "this server listens on a loopback address and answers only requests to localhost, a loopback IP address or a host allowed by --allow-host, not to " + r.Host}
			writeError(w, id, err, nil)
			if logger != nil {
				logger.Warn("request", "request_id", id, "method", r.Method, "path", r.URL.Path, "status", err.Status,
					"host", r.Host, "remote", r.RemoteAddr, "error", err.Message)
			}
			return
		}
		h.ServeHTTP(w, r)
	})
}

// hostName returns the name or address of a Host header (or an
// --allow-host name): without its port, the brackets of an IPv6 address
// and a final dot.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.Trim(host, "[]"), ".")
}

// allowedHost reports whether host (a Host header) names one of allowed.
func allowedHost(host string, allowed []string) bool {
	host = hostName(host)
	return slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(host, hostName(a)) })
}

// loopbackHost reports whether host (a Host header: name or address,
// with or without a port) is localhost or a loopback IP address.
func loopbackHost(host string) bool {
	host = hostName(host)
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
