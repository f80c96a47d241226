package http

import (
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// redirect answers with a redirect to path, a path on this site starting
// with "/" (safeNext: anything else goes to "/"). The Location is
// BASE_URL + path, or path alone when BASE_URL is unset: it is never built
// from the request's Host header, which the client chooses (a forged Host
// would send the browser elsewhere).
func (s *Server) redirect(c *fasthttp.RequestCtx, path string, status int) {
	c.Response.Header.Set("Location", s.siteURL(safeNext(path)))
	c.SetStatusCode(status)
}

// maxNext bounds a redirect target taken from a request.
const maxNext = 2048

// safeNext is next when it is a path on this site, else "/": the one check
// of a redirect target a request chose (the sign-in's next, single
// sign-on's, and every s.redirect). A browser reading a Location drops
// tabs and newlines, takes a backslash for a slash and "//host" for
// another site, and a later hop may decode the path again, so next must
// be printable ASCII without a backslash, parse as a path with no scheme
// or host, start with exactly one "/", and keep so however often its
// path is percent-decoded: no "//" at its start, no backslash, control
// character or dot segment ("." or "..") in it.
func safeNext(next string) string {
	if !sameOriginPath(next) {
		return "/"
	}
	return next
}

func sameOriginPath(p string) bool {
	if len(p) == 0 || len(p) > maxNext || p[0] != '/' || (len(p) > 1 && p[1] == '/') {
		return false
	}
	for i := 0; i < len(p); i++ {
		if b := p[i]; b <= ' ' || b >= 0x7f || b == '\\' {
			return false
		}
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return false
	}
	path := u.EscapedPath()
	for range 4 {
		if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "//") || strings.ContainsAny(path, "\\\x7f") || hasControl(path) || hasDotSegment(path) {
			return false
		}
		dec, err := url.PathUnescape(path)
		if err != nil {
			return false
		}
		if dec == path {
			return true
		}
		path = dec
	}
	// Still encoded after four rounds: nobody links like that.
	return false
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' {
			return true
		}
	}
	return false
}

func hasDotSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// siteURL is path on BASE_URL, or path itself when BASE_URL is unset.
func (s *Server) siteURL(path string) string {
	return s.siteBase() + path
}

func (s *Server) siteBase() string {
	return strings.TrimRight(strings.TrimSpace(docflow.BaseURL.Get(s.cfg.Settings)), "/")
}

// pinRedirect rewrites a Location that fasthttp made absolute from the
// request's Host header (RequestCtx.Redirect does, and the router's
// fixed-path redirects use it) into the same path on BASE_URL.
func (s *Server) pinRedirect(c *fasthttp.RequestCtx) {
	if st := c.Response.StatusCode(); st < 300 || st > 399 {
		return
	}
	loc := string(c.Response.Header.Peek("Location"))
	if loc == "" {
		return
	}
	base := s.siteBase()
	if base != "" && (loc == base || strings.HasPrefix(loc, base+"/")) {
		return
	}
	u, err := url.Parse(loc)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, string(c.Host())) {
		return
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	c.Response.Header.Set("Location", base+safeNext(p))
}
