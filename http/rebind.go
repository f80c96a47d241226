package http

import (
	"net"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// DNS rebinding. In single-user mode (AUTH_ENABLED false) the API answers
// without credentials, and a listener on loopback is no protection by
// itself: a page on evil.example can have its name re-resolved to
// 127.0.0.1, and the browser then sends its requests here as same-origin
// requests to evil.example, reading the answers. Such a request names the
// attacker's host in its Host header, so in single-user mode only these
// hosts are served: an IP address (which no DNS answer can rebind),
// localhost and its subdomains, BASE_URL's host, and ALLOWED_HOSTS.
// With authentication on, a rebound page has no session cookie (the
// cookie belongs to the real host) and no token, so nothing is checked.
//
// The liveness and readiness probes answer for any host: orchestrators
// call them by a service or container name, and they reveal nothing.

// hostRefused reports whether c names a host single-user mode does not
// serve, after answering it 403.
func (s *Server) hostRefused(c *fasthttp.RequestCtx) bool {
	if docflow.AuthEnabled.Get(s.cfg.Settings) || s.hostAllowed(string(c.Host())) ||
		strings.HasPrefix(string(c.Path()), "/api/diagnostic/healthz/") {
		return false
	}
	writeError(c, docflow.Errorf(docflow.EFORBIDDEN,
		"Host not served: without authentication this service answers only requests addressed to an IP address, localhost or BASE_URL's host; add the name to ALLOWED_HOSTS or turn AUTH_ENABLED on"))
	return true
}

// hostAllowed applies the rule above to a Host header.
func (s *Server) hostAllowed(hostport string) bool {
	host := strings.ToLower((&url.URL{Host: hostport}).Hostname())
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if b, ok := parseOrigin(s.BaseURL()); ok && b.host == host {
		return true
	}
	for _, h := range docflow.AllowedHosts.Get(s.cfg.Settings) {
		if strings.EqualFold(strings.TrimSuffix(strings.TrimSpace(h), "."), host) {
			return true
		}
	}
	return false
}
