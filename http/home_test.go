package http

import (
	"net/url"
	"strings"
	"testing"
)

// TestLoginLandsOnAUsablePage: the page a login redirects to (the
// documents page) answers 200, and /status shows who is signed in, the
// links and the health summary.
func TestLoginLandsOnAUsablePage(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_USERNAME": "root", "ADMIN_PASSWORD": "correct horse battery"})
	// Not signed in: sent to sign in, and back here afterwards.
	resp, body := e.do("GET", "/", "", nil, "Accept", "text/html")
	e.expect(resp, body, 303)
	if loc := resp.Header.Get("Location"); loc != "/login?next=%2F" {
		t.Fatalf("location %q", loc)
	}
	form := url.Values{"username": {"root"}, "password": {"correct horse battery"}, "next": {"/"}}
	resp, body = e.do("POST", "/login", "", []byte(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	e.expect(resp, body, 303)
	landing, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	var session string
	for _, c := range resp.Cookies() {
		if c.Name == SessionCookie {
			session = c.Value
		}
	}
	// The landing page is the documents page: the application's page, or
	// the page saying how to build it.
	resp, body = e.do("GET", landing.Path, "", nil, "Cookie", SessionCookie+"="+session, "Accept", "text/html")
	e.expect(resp, body, 200)
	if landing.Path != "/" || !(strings.Contains(string(body), `<meta name="docflow-session"`) || strings.Contains(string(body), "make web")) {
		t.Fatalf("landed on %q:\n%s", landing.Path, body)
	}
	// The status page shows who is signed in, the links and the health.
	resp, body = e.do("GET", "/status", "", nil, "Cookie", SessionCookie+"="+session, "Accept", "text/html")
	e.expect(resp, body, 200)
	page := string(body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("content type %q", ct)
	}
	for _, want := range []string{
		`<meta name="viewport"`, `<html lang="en">`, `<main`,
		"root", "administrator",
		`href="/docs"`, `href="/api/diagnostic/health"`,
		`<form method="post" action="/logout">`, `>Sign out</button>`,
		"database", "ok",
	} {
		if !strings.Contains(page, want) {
			t.Fatalf("status page lacks %q:\n%s", want, page)
		}
	}
	// Signing out from the page goes back to the login form.
	resp, body = e.do("POST", "/logout", "", []byte{}, "Cookie", SessionCookie+"="+session, "Accept", "text/html",
		"Origin", e.URL, "Content-Type", "application/x-www-form-urlencoded")
	e.expect(resp, body, 303)
	resp, body = e.do("GET", "/", "", nil, "Cookie", SessionCookie+"="+session)
	e.expect(resp, body, 303)
}

// TestLandingPageInSingleUserMode: without authentication the page says so
// and offers no sign-out.
func TestLandingPageInSingleUserMode(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("GET", "/status", "", nil)
	e.expect(resp, body, 200)
	page := string(body)
	for _, want := range []string{"Single-user mode", `href="/docs"`, "database"} {
		if !strings.Contains(page, want) {
			t.Fatalf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "Sign out") {
		t.Fatalf("sign-out offered without a session:\n%s", page)
	}
	// The API reference it links to renders /openapi.json (or, without
	// the renderer built in, lists the routes), which has every route.
	resp, body = e.do("GET", "/docs", "", nil)
	e.expect(resp, body, 200)
	if !strings.Contains(string(body), `id="swagger-ui"`) && !strings.Contains(string(body), "/api/api-tokens") {
		t.Fatalf("reference neither renders the document nor lists the routes:\n%s", body)
	}
	resp, body = e.do("GET", "/openapi.json", "", nil)
	e.expect(resp, body, 200)
	for _, want := range []string{`"/api/api-tokens"`, `"/api/diagnostic/health"`, `"post"`, `"delete"`, `"openapi":"3.1.0"`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/openapi.json lacks %q:\n%.2000s", want, body)
		}
	}
}
