package http

import (
	"bytes"
	"mime"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// contentSecurityPolicy is sent with every response. Pages load scripts and
// styles only from this site's files, never inline; nothing may frame them.
// NOTE: no form-action: browsers apply it to the redirect after a form is
// posted, and the mobile sign-in form ends in a redirect to the app's scheme.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// docsContentSecurityPolicy is the /docs page's: its renderer sets styles
// inline; scripts are still this site's files only.
const docsContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// Headers of CORS answers to an origin listed in CORS_ALLOWED_ORIGINS.
const (
	corsAllowMethods  = "GET, POST, PUT, PATCH, DELETE"
	corsAllowHeaders  = "Authorization, Content-Type, X-Request-ID"
	corsExposeHeaders = "Content-Disposition, Retry-After, X-Request-ID"
)

// The security headers in canonical form (setSecurityHeaders).
var (
	hdrCSP            = []byte("Content-Security-Policy")
	valCSP            = []byte(contentSecurityPolicy)
	hdrNoSniff        = []byte("X-Content-Type-Options")
	valNoSniff        = []byte("nosniff")
	hdrFrameOptions   = []byte("X-Frame-Options")
	valDeny           = []byte("DENY")
	hdrReferrerPolicy = []byte("Referrer-Policy")
	valSameOrigin     = []byte("same-origin")
	hdrHSTS           = []byte("Strict-Transport-Security")
	valHSTS           = []byte("max-age=31536000")
)

// httpsSite reports whether BASE_URL is https (without BASE_URL the site
// is http on LISTEN_ADDR, BaseURL).
func (s *Server) httpsSite() bool {
	u := strings.TrimSpace(docflow.BaseURL.Get(s.cfg.Settings))
	return len(u) >= len("https://") && strings.EqualFold(u[:len("https://")], "https://")
}

// setSecurityHeaders adds the headers every response carries, and the CORS
// headers when the request comes from an allowed other origin.
// Every response carries them, so they are set in their canonical form
// (fasthttp then copies them as they are) and without allocating.
func (s *Server) setSecurityHeaders(c *fasthttp.RequestCtx) {
	h := &c.Response.Header
	h.SetCanonical(hdrCSP, valCSP)
	h.SetCanonical(hdrNoSniff, valNoSniff)
	h.SetCanonical(hdrFrameOptions, valDeny)
	h.SetCanonical(hdrReferrerPolicy, valSameOrigin)
	if s.httpsSite() {
		h.SetCanonical(hdrHSTS, valHSTS)
	}
	if origin := c.Request.Header.Peek("Origin"); len(origin) > 0 && s.corsAllowed(string(origin)) {
		h.Set("Access-Control-Allow-Origin", string(origin))
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		h.Add("Vary", "Origin")
	}
}

// preflight answers a CORS preflight from an allowed origin and reports
// whether it did. Preflights from other origins get no CORS headers, so
// the browser does not send the request.
func (s *Server) preflight(c *fasthttp.RequestCtx) bool {
	if !c.IsOptions() || len(c.Request.Header.Peek("Access-Control-Request-Method")) == 0 {
		return false
	}
	if !s.corsAllowed(string(c.Request.Header.Peek("Origin"))) {
		return false
	}
	h := &c.Response.Header
	h.Set("Access-Control-Allow-Methods", corsAllowMethods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", "600")
	c.SetStatusCode(fasthttp.StatusNoContent)
	return true
}

// origin is the scheme, host and port of an origin, lower-cased, without
// the scheme's default port.
type origin struct{ scheme, host, port string }

// parseOrigin parses an Origin header or a base URL (whose path is
// ignored). "null" and anything without a scheme and host do not parse.
func parseOrigin(raw string) (origin, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Hostname() == "" || u.User != nil {
		return origin{}, false
	}
	o := origin{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()), port: u.Port()}
	o.port = withoutDefaultPort(o.scheme, o.port)
	return o, true
}

func withoutDefaultPort(scheme, port string) string {
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return ""
	}
	return port
}

// sameOrigin reports whether raw is this service's origin: that of
// BASE_URL, or the host the request was sent to. A browser sets Host to
// the site it sends to, so a page elsewhere cannot make its Origin match.
func (s *Server) sameOrigin(c *fasthttp.RequestCtx, raw string) bool {
	o, ok := parseOrigin(raw)
	if !ok {
		return false
	}
	if b, ok := parseOrigin(s.BaseURL()); ok && b == o {
		return true
	}
	h := &url.URL{Host: string(c.Host())}
	return o.host == strings.ToLower(h.Hostname()) && o.port == withoutDefaultPort(o.scheme, h.Port())
}

// corsAllowed reports whether raw is listed in CORS_ALLOWED_ORIGINS.
func (s *Server) corsAllowed(raw string) bool {
	o, ok := parseOrigin(raw)
	if !ok {
		return false
	}
	for _, item := range docflow.CORSAllowedOrigins.Get(s.cfg.Settings) {
		if a, ok := parseOrigin(item); ok && a == o {
			return true
		}
	}
	return false
}

var errCrossSite = docflow.Errorf(docflow.EFORBIDDEN, "Cross-site request refused")

// checkCrossSite refuses a state-changing request that a page on another
// site made the browser send (its Origin, or Sec-Fetch-Site when there is
// no Origin, says so), unless that origin is in CORS_ALLOWED_ORIGINS. In
// single-user mode such a request needs no credentials at all, and with
// auth on it would carry the session cookie.
// NOTE: a request with a bearer token is let through: browsers never add
// one on their own, and a page elsewhere can set the header only after a
// preflight that only allowed origins pass. Browser extensions send one
// from their own origin. HTTP Basic credentials are sent by the browser
// unasked, so they do not count.
func (s *Server) checkCrossSite(c *fasthttp.RequestCtx) error {
	if c.IsGet() || c.IsHead() || c.IsOptions() || c.IsTrace() || bearerToken(c) != "" {
		return nil
	}
	if o := string(c.Request.Header.Peek("Origin")); o != "" {
		if s.sameOrigin(c, o) || s.corsAllowed(o) {
			return nil
		}
		if len(o) > 200 {
			o = o[:200]
		}
		return docflow.Errorf(docflow.EFORBIDDEN, "Cross-site request refused: origin %q is not allowed (CORS_ALLOWED_ORIGINS)", o)
	}
	if strings.EqualFold(string(c.Request.Header.Peek("Sec-Fetch-Site")), "cross-site") {
		return errCrossSite
	}
	return nil
}

// checkNULInURL refuses U+0000 in the path or a query parameter:
// PostgreSQL cannot store it, so it is a client error before it reaches
// a query.
func checkNULInURL(c *fasthttp.RequestCtx) error {
	if bytes.IndexByte(c.Path(), 0) >= 0 {
		return invalid("path", "The path must not contain a NUL character")
	}
	return checkNULArgs(c.QueryArgs())
}

// checkNULInForm refuses U+0000 in a URL-encoded form body.
func checkNULInForm(c *fasthttp.RequestCtx) error {
	if !bytes.HasPrefix(c.Request.Header.ContentType(), []byte("application/x-www-form-urlencoded")) {
		return nil
	}
	return checkNULArgs(c.PostArgs())
}

func checkNULArgs(args *fasthttp.Args) error {
	for k, v := range args.All() {
		if bytes.IndexByte(k, 0) >= 0 || bytes.IndexByte(v, 0) >= 0 {
			name := strings.ReplaceAll(string(k), "\x00", "%00")
			return invalid(name, "%s must not contain a NUL character", name)
		}
	}
	return nil
}

// requireJSON refuses a body that does not say it is JSON
// (application/json or a +json type): a page on another site can post
// text/plain or a form without a preflight, but not JSON.
func requireJSON(c *fasthttp.RequestCtx) error {
	mt, _, err := mime.ParseMediaType(string(c.Request.Header.ContentType()))
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return docflow.Errorf(docflow.EUNSUPPORTED, "Content-Type must be application/json")
}

// hasEscapedNUL reports whether a JSON text holds the escape \u0000 (a raw
// NUL byte is not valid JSON at all). An escaped backslash before "u0000"
// is text, not the escape.
func hasEscapedNUL(body []byte) bool {
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if i+5 < len(body) && body[i+1] == 'u' && string(body[i+2:i+6]) == "0000" {
			return true
		}
		i++ // skip the escaped character
	}
	return false
}
