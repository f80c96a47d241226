package http

import (
	"io"
	nethttp "net/http"
	"net/url"
	"strings"
	"testing"
)

// doHost sends a request with a forged Host header.
func doHost(e *testEnv, method, path, host string, body string, headers ...string) *nethttp.Response {
	e.t.Helper()
	req, err := nethttp.NewRequest(method, e.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestRedirectsUseBaseURL: no redirect takes its host from the request's
// Host header: they point into BASE_URL, or stay relative when it is unset.
func TestRedirectsUseBaseURL(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "pw", "BASE_URL": "https://docs.example.test/"})
	const evil = "evil.example"
	form := url.Values{"username": {"admin"}, "password": {"pw"}, "next": {"/api/files?page=2"}}.Encode()
	check := func(resp *nethttp.Response, status int, want string) {
		t.Helper()
		if resp.StatusCode != status || resp.Header.Get("Location") != want {
			t.Fatalf("%s %s: %d %q, want %d %q", resp.Request.Method, resp.Request.URL, resp.StatusCode, resp.Header.Get("Location"), status, want)
		}
	}
	check(doHost(e, "POST", "/login", evil, form, "Content-Type", "application/x-www-form-urlencoded"), 303, "https://docs.example.test/api/files?page=2")
	check(doHost(e, "POST", "/logout", evil, "", "Accept", "text/html"), 303, "https://docs.example.test/login")
	// The router's fixed-path redirect (case, doubled slashes).
	check(doHost(e, "GET", "/API/Api-Tokens?x=1", evil, ""), 301, "https://docs.example.test/api/api-tokens?x=1")
	check(doHost(e, "GET", "/api//api-tokens", evil, ""), 301, "https://docs.example.test/api/api-tokens")

	e.SetEnv("BASE_URL", "")
	check(doHost(e, "POST", "/login", evil, form, "Content-Type", "application/x-www-form-urlencoded"), 303, "/api/files?page=2")
	check(doHost(e, "POST", "/logout", evil, "", "Accept", "text/html"), 303, "/login")
	check(doHost(e, "GET", "/API/Api-Tokens", evil, ""), 301, "/api/api-tokens")
}
