package http

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestSecurityHeadersOnEveryResponse: pages, JSON and errors carry the
// security headers; HSTS only when BASE_URL is https.
func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	for _, path := range []string{"/login", "/api/diagnostic/healthz/live", "/api/nope", "/static/docflow.css", "/"} {
		resp, body := e.do("GET", path, "", nil)
		h := resp.Header
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Fatalf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Fatalf("%s: CSP allows inline code: %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") == "" || h.Get("X-Frame-Options") != "DENY" {
			t.Fatalf("%s: headers %v (%s)", path, h, body)
		}
		if h.Get("Strict-Transport-Security") != "" {
			t.Fatalf("%s: HSTS over http: %v", path, h)
		}
	}
	e.SetEnv("BASE_URL", "https://docs.example.com")
	resp, _ := e.do("GET", "/api/diagnostic/healthz/live", "", nil)
	if hsts := resp.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(hsts, "max-age=") {
		t.Fatalf("HSTS with an https BASE_URL: %q", hsts)
	}
}

// inlineCode finds what a CSP without 'unsafe-inline' would block.
var inlineCode = regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]|<style|\sstyle=|\son[a-z]+=|javascript:`)

// TestPagesWorkUnderTheCSP: the server's pages use no inline script or
// style, and what they link is served.
func TestPagesWorkUnderTheCSP(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	for _, path := range []string{"/login", "/", "/docs", "/status", "/files/1"} {
		resp, body := e.do("GET", path, "", nil)
		e.expect(resp, body, 200)
		if m := inlineCode.FindString(string(body)); m != "" {
			t.Fatalf("%s has inline code %q", path, m)
		}
		for _, m := range regexp.MustCompile(`(?:href|src)="(/static/[^"]+)"`).FindAllStringSubmatch(string(body), -1) {
			resp, css := e.do("GET", m[1], "", nil)
			e.expect(resp, css, 200)
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/css") && !strings.Contains(ct, "javascript") {
				t.Fatalf("%s: content type %q", m[1], ct)
			}
		}
	}
	resp, body := e.do("GET", "/static/../go.mod", "", nil)
	if resp.StatusCode != 404 {
		t.Fatalf("static traversal: %d %s", resp.StatusCode, body)
	}
}

// TestCrossSiteRequestsAreRefused: in single-user mode a page on another
// site must not be able to act for the user, e.g. delete a file.
func TestCrossSiteRequestsAreRefused(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	id := fe.mustUpload("keep.pdf", pdf("keep"))
	ids := fmt.Sprintf("[%d]", id)
	exists := func() bool { return fe.count(`SELECT count(*) FROM files WHERE id=$1`, id) == 1 }

	// What a form or fetch() on evil.example can send without a preflight.
	for name, headers := range map[string][]string{
		"origin":                {"Origin", "https://evil.example", "Content-Type", "text/plain"},
		"origin with JSON":      {"Origin", "https://evil.example", "Content-Type", "application/json"},
		"null origin":           {"Origin", "null", "Content-Type", "text/plain"},
		"sibling port":          {"Origin", "http://127.0.0.1:1", "Content-Type", "application/json"},
		"sec-fetch-site only":   {"Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain"},
		"basic auth is ambient": {"Origin", "https://evil.example", "Authorization", "Basic YTpi", "Content-Type", "application/json"},
	} {
		resp, body := fe.do("POST", "/api/files/bulk-delete", "", []byte(ids), headers...)
		fe.expect(resp, body, 403)
		if !strings.Contains(fe.json(body)["detail"].(string), "Cross-site") {
			t.Fatalf("%s: detail %s", name, body)
		}
	}
	resp, body := fe.do("DELETE", fmt.Sprintf("/api/files/%d", id), "", nil, "Origin", "https://evil.example")
	fe.expect(resp, body, 403)
	resp, body = fe.do("POST", "/login", "", []byte("username=admin&password=x"), "Origin", "https://evil.example",
		"Content-Type", "application/x-www-form-urlencoded")
	fe.expect(resp, body, 403)
	if !exists() {
		t.Fatal("a cross-site request deleted the file")
	}
	// Reading is not state-changing.
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d", id), "", nil, "Origin", "https://evil.example")
	fe.expect(resp, body, 200)
	// The same origin (this host, or BASE_URL) may.
	resp, body = fe.do("POST", "/api/files/bulk-reprocess", "", ids, "Origin", fe.URL, "Sec-Fetch-Site", "same-origin")
	fe.expect(resp, body, 200)
	fe.SetEnv("BASE_URL", "https://docs.example.com")
	resp, body = fe.do("POST", "/api/files/bulk-reprocess", "", ids, "Origin", "https://docs.example.com")
	fe.expect(resp, body, 200)
	// A listed origin may, and is told so by CORS headers, preflight included.
	fe.SetEnv("CORS_ALLOWED_ORIGINS", "https://app.example, https://tools.example:8443")
	resp, body = fe.do("OPTIONS", "/api/files/bulk-delete", "", nil, "Origin", "https://tools.example:8443",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type")
	fe.expect(resp, body, 204)
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://tools.example:8443" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "content-type") {
		t.Fatalf("preflight %v", resp.Header)
	}
	resp, body = fe.do("OPTIONS", "/api/files/bulk-delete", "", nil, "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	if resp.StatusCode == 204 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from an unlisted origin: %d %v", resp.StatusCode, resp.Header)
	}
	resp, body = fe.do("POST", "/api/files/bulk-delete", "", ids, "Origin", "https://evil.example")
	fe.expect(resp, body, 403)
	// An API client with a bearer token and no Origin keeps working.
	resp, body = fe.do("POST", "/api/files/bulk-reprocess", "", ids, "Authorization", "Bearer "+fe.token("admin"))
	fe.expect(resp, body, 200)
	if !exists() {
		t.Fatal("file gone before the allowed delete")
	}
	resp, body = fe.do("POST", "/api/files/bulk-delete", "", ids, "Origin", "https://app.example")
	fe.expect(resp, body, 200)
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("CORS headers %v", resp.Header)
	}
	if exists() {
		t.Fatal("the allowed origin's delete did nothing")
	}
}

// TestJSONRoutesRequireJSONContentType: a JSON body must say it is JSON,
// which a cross-site form cannot.
func TestJSONRoutesRequireJSONContentType(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	body := []byte(`{"name": "x"}`)
	for _, ct := range []string{"", "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonp"} {
		var headers []string
		if ct != "" {
			headers = []string{"Content-Type", ct}
		}
		resp, out := e.do("POST", "/api/api-tokens/", "", body, headers...)
		e.expect(resp, out, 415)
		if !strings.Contains(e.json(out)["detail"].(string), "application/json") {
			t.Fatalf("%q: detail %s", ct, out)
		}
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", "application/merge-patch+json"} {
		resp, out := e.do("POST", "/api/api-tokens/", "", body, "Content-Type", ct)
		e.expect(resp, out, 201)
	}
}

// TestNULIsRefusedAs422: PostgreSQL cannot store U+0000; a JSON string, a
// query parameter or a form field carrying it is a client error, not a 500.
func TestNULIsRefusedAs422(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	for _, body := range []string{`{"name": "a\u0000b"}`, `{"name": "ok", "x\u0000": 1}`, `{"name": "\\\u0000"}`} {
		resp, out := fe.do("POST", "/api/api-tokens/", "", body)
		fe.expect(resp, out, 422)
	}
	// An escaped backslash followed by u0000 is just text.
	resp, out := fe.do("POST", "/api/api-tokens/", "", `{"name": "a\\u0000b"}`)
	fe.expect(resp, out, 201)
	if fe.json(out)["name"] != `a\u0000b` {
		t.Fatalf("name %s", out)
	}
	for _, q := range []string{"search=%00", "search=a%00b", "tags=x%00", "status=pending&%00=1"} {
		resp, out := fe.do("GET", "/api/files?"+q, "", nil)
		fe.expect(resp, out, 422)
	}
	form := url.Values{"username": {"ad\x00min"}, "password": {"x"}}
	resp, out = fe.do("POST", "/login", "", []byte(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	fe.expect(resp, out, 422)
}
