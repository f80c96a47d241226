package http

import (
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"
)

// redirect answers with a redirect to path, a path on this site starting
// with "/". The Location is BASE_URL + path, or path alone when BASE_URL
// is unset: it is never built from the request's Host header, which the
// client chooses (a forged Host would send the browser elsewhere).
func (s *Server) redirect(c *fasthttp.RequestCtx, path string, status int) {
	c.Response.Header.Set("Location", s.siteURL(path))
	c.SetStatusCode(status)
}

// siteURL is path on BASE_URL, or path itself when BASE_URL is unset.
func (s *Server) siteURL(path string) string {
	return s.siteBase() + path
}

func (s *Server) siteBase() string {
	return strings.TrimRight(strings.TrimSpace(s.cfg.Settings.Get("BASE_URL")), "/")
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
	c.Response.Header.Set("Location", base+p)
}
