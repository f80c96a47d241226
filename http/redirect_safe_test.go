package http_test

import (
	nethttp "net/http"
	"net/url"
	"strings"
	"testing"

	dfhttp "docflow/http"
)

// browserLanding is where a browser on base goes when it reads the
// Location loc (the WHATWG URL parser): leading and trailing spaces and
// control characters, and every tab and newline, are dropped, a backslash
// is a slash, and the rest is resolved against base. nil when it does not
// parse.
func browserLanding(base, loc string) *url.URL {
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

// staysOnSite says why a browser on base reading the Location loc would
// leave the site or land on a path that a later hop could decode into
// another site's address; "" when it stays.
func staysOnSite(base, loc string) string {
	b, _ := url.Parse(base)
	r := browserLanding(base, loc)
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

// redirectTricks are next values that try to leave the site, written as
// the value a form field carries (decoded).
var redirectTricks = []string{
	"/\t/evil.example", "/\t\t//evil.example", "//\t/evil.example", `/\evil.example`, `\\evil.example`,
	"//evil.example", "///evil.example", "/%2F%2Fevil.example", "/%2f/evil.example", "/%5Cevil.example",
	"/%5C%5Cevil.example", "/%252F%252Fevil.example", "/%09/evil.example", "https://evil.example",
	"http:/evil.example", "HTTPS://evil.example/", "javascript:alert(1)", "JaVaScRiPt:alert(1)",
	"data:text/html,<script>alert(1)</script>", "/\r\n/evil.example", "/\n/evil.example",
	"/%0d%0aLocation:%20https://evil.example", " //evil.example", "\t//evil.example", "/./evil.example/../..//evil.example",
	"/.//evil.example", "/%2e%2e//evil.example", "/%2e/%2fevil.example", "//evil.example@docs", "/\x00/evil.example",
	"/\u3000/evil.example", "/\uff0f/evil.example", "/" + strings.Repeat("a", 3000),
}

// TestSafeNext: every trick becomes "/"; ordinary paths are kept as they
// are.
func TestSafeNext(t *testing.T) {
	for _, next := range redirectTricks {
		if got := dfhttp.SafeNext(next); got != "/" {
			t.Errorf("SafeNext(%q) = %q, want /", next, got)
		}
	}
	for _, next := range []string{"/", "/ops", "/api/files?page=2&sort=name", "/api/files/12/preview?version=original",
		"/search?q=a%20b%2Fc", "/caf%C3%A9", "/a/b/", "/#top", "/api/files?next=//elsewhere"} {
		if got := dfhttp.SafeNext(next); got != next {
			t.Errorf("SafeNext(%q) = %q, want it kept", next, got)
		}
	}
}

// FuzzSafeNext: whatever next is, what SafeNext keeps leads a browser to a
// path on this site.
func FuzzSafeNext(f *testing.F) {
	for _, s := range redirectTricks {
		f.Add(s)
	}
	f.Add("/api/files?page=2")
	f.Fuzz(func(t *testing.T, next string) {
		got := dfhttp.SafeNext(next)
		if got != "/" && got != next {
			t.Fatalf("SafeNext(%q) = %q: neither next nor /", next, got)
		}
		// The Location is the path alone (BASE_URL unset) or BASE_URL and
		// the path.
		const base = "https://docs.example.test"
		for _, loc := range []string{got, base + got} {
			if why := staysOnSite(base+"/some/page", loc); why != "" {
				t.Fatalf("SafeNext(%q) = %q: a browser reading %q %s", next, got, loc, why)
			}
		}
	})
}

// TestSignInRedirectStaysOnSite: after a password sign-in whose next is
// any of the tricks, the browser lands on a path of this site, with
// BASE_URL unset (a relative Location) and set (an absolute one); the
// login page carries none of them into its form; an ordinary next is
// kept.
func TestSignInRedirectStaysOnSite(t *testing.T) {
	a := signInEnv(t, nil)
	c := newClient(t, a.URL)
	signInTo := func(next string) (int, string) {
		t.Helper()
		req, _ := nethttp.NewRequest("POST", a.URL+"/login", strings.NewReader(url.Values{
			"username": {"admin"}, "password": {"admin-password"}, "next": {next}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		// NOTE: a round trip, not a client, which would refuse a Location
		// it cannot parse before showing it.
		resp, err := nethttp.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location")
	}
	for _, base := range []string{"", "https://docs.example.test"} {
		a.SetEnv("BASE_URL", base)
		page := a.URL + "/login"
		if base != "" {
			page = base + "/login"
		}
		for _, next := range redirectTricks {
			status, loc := signInTo(next)
			if status == 422 && loc == "" && strings.Contains(next, "\x00") {
				continue // NUL is refused before anything else
			}
			if status != 303 {
				t.Fatalf("BASE_URL %q, next %q: %d", base, next, status)
			}
			if why := staysOnSite(page, loc); why != "" || (base != "" && !strings.HasPrefix(loc, base+"/")) {
				t.Errorf("BASE_URL %q, next %q: Location %q: a browser %s", base, next, loc, why)
			}
			s, body := c.do("GET", "/login?next="+url.QueryEscape(next), nil)
			if s != 200 || strings.Contains(body, "evil") {
				t.Errorf("BASE_URL %q: the login page for next %q: %d, carries it on", base, next, s)
			}
		}
		if _, loc := signInTo("/api/files?page=2"); loc != base+"/api/files?page=2" {
			t.Errorf("BASE_URL %q: an ordinary next went to %q", base, loc)
		}
	}
}
