// Package redirects models how a browser reads a Location header, and
// lists redirect targets that try to leave the site: for the tests of
// every place that redirects to a target a request names.
package redirects

import (
	"net/url"
	"strings"
)

// Landing is where a browser on base goes when it reads the
// Location loc (the WHATWG URL parser): leading and trailing spaces and
// control characters, and every tab and newline, are dropped, a backslash
// is a slash, and the rest is resolved against base. nil when it does not
// parse.
func Landing(base, loc string) *url.URL {
	clean := strings.Trim(loc, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	clean = strings.NewReplacer("\t", "", "\n", "", "\r", "", `\`, "/").Replace(clean)
	b, err := url.Parse(base)
	if err != nil {
		return nil
	}
	u, err := url.Parse(clean)
	if err != nil {
		return nil
	}
	return b.ResolveReference(u)
}

// StaysOnSite says why a browser on base reading the Location loc would
// leave the site or land on a path that a later hop could decode into
// another site's address; "" when it stays.
func StaysOnSite(base, loc string) string {
	b, _ := url.Parse(base)
	r := Landing(base, loc)
	switch {
	case r == nil:
		return "does not parse"
	case r.Scheme != b.Scheme || r.Host != b.Host || r.User != nil:
		return "leaves for " + r.Scheme + "://" + r.Host
	}
	p := r.EscapedPath()
	for range 4 {
		if strings.HasPrefix(p, "//") || strings.Contains(p, `\`) {
			return "lands on the path " + r.EscapedPath()
		}
		d, err := url.PathUnescape(p)
		if err != nil || d == p {
			break
		}
		p = d
	}
	return ""
}

// Tricks are next values that try to leave the site, written as
// the value a form field carries (decoded).
var Tricks = []string{
	"/\t/evil.example", "/\t\t//evil.example", "//\t/evil.example", `/\evil.example`, `\\evil.example`,
	"//evil.example", "///evil.example", "/%2F%2Fevil.example", "/%2f/evil.example", "/%5Cevil.example",
	"/%5C%5Cevil.example", "/%252F%252Fevil.example", "/%09/evil.example", "https://evil.example",
	"http:/evil.example", "HTTPS://evil.example/", "javascript:alert(1)", "JaVaScRiPt:alert(1)",
	"data:text/html,<script>alert(1)</script>", "/\r\n/evil.example", "/\n/evil.example",
	"/%0d%0aLocation:%20https://evil.example", " //evil.example", "\t//evil.example", "/./evil.example/../..//evil.example",
	"/.//evil.example", "/%2e%2e//evil.example", "/%2e/%2fevil.example", "//evil.example@docs", "/\x00/evil.example",
	"/\u3000/evil.example", "/\uff0f/evil.example", "/" + strings.Repeat("a", 3000),
}
