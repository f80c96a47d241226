package http

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("GET", "/api/diagnostic/healthz/live", "", nil)
	e.expect(resp, body, 200)
	resp, body = e.do("GET", "/api/diagnostic/healthz/ready", "", nil)
	e.expect(resp, body, 200)
	m := e.json(body)
	if m["status"] != "ready" || m["checks"].(map[string]any)["database"].(map[string]any)["status"] != "ok" {
		t.Fatalf("ready body %s", body)
	}
	resp, body = e.do("GET", "/api/diagnostic/health", "", nil)
	e.expect(resp, body, 200)
	if m := e.json(body); m["status"] != "healthy" || m["version"] != "test" {
		t.Fatalf("health body %s", body)
	}
}

func TestHealthDegradedAndUnhealthy(t *testing.T) {
	t.Parallel()
	dbDown := false
	e := newTestEnv(t, nil, func(e *testEnv) {
		e.Server.AddHealthCheck(HealthCheck{Name: "queue", Check: func(context.Context) error { return fmt.Errorf("broker down") }})
		e.Server.AddHealthCheck(HealthCheck{Name: "db2", Critical: true, Check: func(context.Context) error {
			if dbDown {
				return fmt.Errorf("connection refused")
			}
			return nil
		}})
	})
	resp, body := e.do("GET", "/api/diagnostic/health", "", nil)
	e.expect(resp, body, 200)
	if e.json(body)["status"] != "degraded" {
		t.Fatalf("body %s", body)
	}
	dbDown = true
	resp, body = e.do("GET", "/api/diagnostic/health", "", nil)
	e.expect(resp, body, 503)
	if m := e.json(body); m["checks"].(map[string]any)["db2"].(map[string]any)["detail"] != "connection refused" {
		t.Fatalf("health behind auth keeps the detail: %s", body)
	}
	// The public probe says only ok or error: no database user, host or
	// driver message.
	resp, body = e.do("GET", "/api/diagnostic/healthz/ready", "", nil)
	e.expect(resp, body, 503)
	m := e.json(body)
	db2 := m["checks"].(map[string]any)["db2"].(map[string]any)
	if m["status"] != "not_ready" || db2["status"] != "error" || strings.Contains(string(body), "refused") || strings.Contains(string(body), "broker down") {
		t.Fatalf("body %s", body)
	}
}

func TestNotFoundAndMethodNotAllowedAreJSON(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("GET", "/api/nope", "", nil)
	e.expect(resp, body, 404)
	if e.json(body)["detail"] != "Not Found" {
		t.Fatalf("body %s", body)
	}
	resp, body = e.do("PUT", "/api/diagnostic/healthz/live", "", nil)
	e.expect(resp, body, 405)
	if e.json(body)["detail"] == nil {
		t.Fatalf("body %s", body)
	}
}

func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"})
	owner := e.token("alice")
	resp, body := e.do("POST", "/api/api-tokens/", owner, map[string]any{"name": "ci", "expires_in_days": 30})
	e.expect(resp, body, 201)
	tok := e.json(body)
	plain := tok["token"].(string)
	if !strings.HasPrefix(plain, "dfl_") || len(plain) != 44 || tok["token_prefix"] != plain[:12] || tok["expires_at"] == nil {
		t.Fatalf("token %s", body)
	}
	id := int(tok["id"].(float64))

	// The new token authenticates and the list never shows plaintext.
	resp, body = e.do("GET", "/api/api-tokens/", plain, nil)
	e.expect(resp, body, 200)
	if strings.Contains(string(body), plain) || strings.Contains(string(body), `"token":`) {
		t.Fatalf("list leaks token: %s", body)
	}
	// Revoke, then it no longer authenticates; delete; reactivate flow.
	resp, body = e.do("DELETE", fmt.Sprintf("/api/api-tokens/%d", id), owner, nil)
	e.expect(resp, body, 200)
	if e.json(body)["detail"] != "Token revoked" {
		t.Fatalf("revoke %s", body)
	}
	resp, body = e.do("GET", "/api/api-tokens/", plain, nil)
	e.expect(resp, body, 401)
	if e.json(body)["detail"] != "Invalid or expired token" || resp.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("revoked token: %s", body)
	}
	resp, body = e.do("POST", fmt.Sprintf("/api/api-tokens/%d/reactivate", id), owner, nil)
	e.expect(resp, body, 200)
	if m := e.json(body); m["is_active"] != true || m["revoked_at"] != nil {
		t.Fatalf("reactivate %s", body)
	}
	resp, body = e.do("GET", "/api/api-tokens/", plain, nil)
	e.expect(resp, body, 200)
	e.do("DELETE", fmt.Sprintf("/api/api-tokens/%d", id), owner, nil)
	resp, body = e.do("DELETE", fmt.Sprintf("/api/api-tokens/%d", id), owner, nil)
	e.expect(resp, body, 200)
	if e.json(body)["detail"] != "Token deleted" {
		t.Fatalf("delete %s", body)
	}
	resp, body = e.do("DELETE", fmt.Sprintf("/api/api-tokens/%d", id), owner, nil)
	e.expect(resp, body, 404)
}

func TestTokenBadInput(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "MAX_REQUEST_BODY_SIZE": "1024"})
	owner := e.token("alice")
	for _, tc := range []struct {
		body   any
		status int
	}{
		{`{"name": "x", "expires_in_days": 0}`, 422},
		{`{"name": "x", "expires_in_days": 3651}`, 422},
		{`{"name": "x", "expires_in_days": "ten"}`, 422},
		{`{"name": 5}`, 422},
		{`{"name": "x"`, 422},
		{`{}`, 422},
		{`[1,2]`, 422},
		{"{\"name\": \"\xff\"}", 422},
		{`{"name": "` + strings.Repeat("a", 2000) + `"}`, 413},
	} {
		resp, body := e.do("POST", "/api/api-tokens/", owner, tc.body)
		e.expect(resp, body, tc.status)
		if e.json(body)["detail"] == nil {
			t.Fatalf("no detail: %s", body)
		}
	}
	// Missing, malformed, unknown tokens.
	for _, h := range []string{"", "Bearer", "Bearer nope", "Bearer dfl_unknown", "Basic abc"} {
		resp, body := e.do("GET", "/api/api-tokens/", "", nil, "Authorization", h)
		e.expect(resp, body, 401)
	}
	// Another user's token id is 404.
	other := e.token("bob")
	resp, body := e.do("POST", "/api/api-tokens/", other, map[string]any{"name": "b"})
	e.expect(resp, body, 201)
	id := int(e.json(body)["id"].(float64))
	resp, body = e.do("DELETE", fmt.Sprintf("/api/api-tokens/%d", id), owner, nil)
	e.expect(resp, body, 404)
	resp, body = e.do("POST", fmt.Sprintf("/api/api-tokens/%d/reactivate", id), owner, nil)
	e.expect(resp, body, 404)
}

func TestExpiredTokenIsRejected(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"})
	plain := e.token("alice")
	_, err := e.DB.Pool.Exec(t.Context(), `UPDATE api_tokens SET expires_at = now() - interval '1 second'`)
	if err != nil {
		t.Fatal(err)
	}
	e.Server.auth.forget(HashToken(plain))
	resp, body := e.do("GET", "/api/api-tokens/", plain, nil)
	e.expect(resp, body, 401)
}

func TestConcurrentTokenCreation(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"})
	owner := e.token("alice")
	const n = 1000
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	sem := make(chan struct{}, 64)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			resp, body := e.do("POST", "/api/api-tokens/", owner, map[string]any{"name": fmt.Sprintf("t%d", i)})
			if resp.StatusCode != 201 {
				t.Errorf("status %d: %s", resp.StatusCode, body)
				return
			}
			mu.Lock()
			seen[e.json(body)["token"].(string)] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d distinct tokens, want %d", len(seen), n)
	}
	resp, body := e.do("GET", "/api/api-tokens/", owner, nil)
	e.expect(resp, body, 200)
	if got := strings.Count(string(body), `"token_prefix"`); got != n+1 {
		t.Fatalf("listed %d tokens, want %d", got, n+1)
	}
}

func TestTokenLastUseRecorded(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"})
	plain := e.token("alice")
	resp, body := e.do("GET", "/api/api-tokens/", plain, nil)
	e.expect(resp, body, 200)
	e.Server.auth.flush(t.Context())
	resp, body = e.do("GET", "/api/api-tokens/", plain, nil)
	if !strings.Contains(string(body), `"last_used_ip":"127.0.0.1"`) {
		t.Fatalf("last use not recorded: %s", body)
	}
}

func TestSingleUserModeNeedsNoCredentials(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	resp, body := e.do("POST", "/api/api-tokens/", "", map[string]any{"name": "local"})
	e.expect(resp, body, 201)
	resp, body = e.do("GET", "/api/api-tokens/", "", nil)
	e.expect(resp, body, 200)
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "RATE_LIMITING_ENABLED": "true", "RATE_LIMIT_DEFAULT": "5/minute"})
	a, b := e.token("alice"), e.token("bob")
	for i := 0; i < 5; i++ {
		resp, body := e.do("GET", "/api/api-tokens/", a, nil)
		e.expect(resp, body, 200)
	}
	resp, body := e.do("GET", "/api/api-tokens/", a, nil)
	e.expect(resp, body, 429)
	if resp.Header.Get("Retry-After") == "" || e.json(body)["detail"] != "Rate limit exceeded: 5 per minute" {
		t.Fatalf("429 %v %s", resp.Header, body)
	}
	// Per user: bob still has his budget.
	resp, body = e.do("GET", "/api/api-tokens/", b, nil)
	e.expect(resp, body, 200)
}

func TestLoginSessionAndAdmin(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_USERNAME": "root", "ADMIN_PASSWORD": "correct horse battery"})
	resp, body := e.do("GET", "/login", "", nil)
	e.expect(resp, body, 200)
	if !strings.Contains(string(body), `name="password"`) {
		t.Fatalf("login page: %s", body)
	}
	form := url.Values{"username": {"root"}, "password": {"wrong"}}
	resp, body = e.do("POST", "/login", "", []byte(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	e.expect(resp, body, 401)
	form.Set("password", "correct horse battery")
	resp, body = e.do("POST", "/login", "", []byte(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	e.expect(resp, body, 303)
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "session" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode {
		t.Fatalf("cookie %+v", resp.Header)
	}
	resp, body = e.do("GET", "/api/api-tokens/", "", nil, "Cookie", "session="+cookie.Value)
	e.expect(resp, body, 200)
	// A tampered cookie is not a session.
	resp, body = e.do("GET", "/api/api-tokens/", "", nil, "Cookie", "session="+cookie.Value+"x")
	e.expect(resp, body, 401)
	resp, body = e.do("POST", "/logout", "", nil, "Cookie", "session="+cookie.Value)
	e.expect(resp, body, 200)
	resp, body = e.do("GET", "/api/api-tokens/", "", nil, "Cookie", "session="+cookie.Value)
	e.expect(resp, body, 401)
}

func TestLoginRateLimited(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "RATE_LIMITING_ENABLED": "true", "RATE_LIMIT_AUTH": "3/minute", "ADMIN_PASSWORD": "x"})
	var last int
	for i := 0; i < 4; i++ {
		resp, _ := e.do("POST", "/login", "", `{"username":"admin","password":"bad"}`)
		last = resp.StatusCode
	}
	if last != 429 {
		t.Fatalf("4th login attempt: %d, want 429", last)
	}
}

func TestAdminRouteForbidsNonAdmin(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_USERNAME": "root"}, func(e *testEnv) {
		e.Server.Handle("GET", "/api/test-admin", Route{Auth: AuthAdmin}, func(c *fasthttp.RequestCtx) error {
			writeJSON(c, 200, Detail{Detail: "ok"})
			return nil
		})
	})
	resp, body := e.do("GET", "/api/test-admin", e.token("alice"), nil)
	e.expect(resp, body, 403)
	resp, body = e.do("GET", "/api/test-admin", e.token("root"), nil)
	e.expect(resp, body, 200)
}

func TestMobileLoginRejectsForeignRedirect(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "pw"})
	resp, body := e.do("GET", "/login?mobile=1&redirect_uri="+url.QueryEscape("https://evil.example/cb"), "", nil)
	e.expect(resp, body, 400)
	form := url.Values{"username": {"admin"}, "password": {"pw"}, "mobile": {"1"}, "redirect_uri": {"docflow://callback"}}
	resp, body = e.do("POST", "/login", "", []byte(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	e.expect(resp, body, 303)
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "docflow://callback?token=dfl_") {
		t.Fatalf("location %q", loc)
	}
}

func TestPanicBecomes500(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, func(e *testEnv) {
		e.Server.Handle("GET", "/api/test-panic", Route{}, func(c *fasthttp.RequestCtx) error { panic("boom") })
	})
	resp, body := e.do("GET", "/api/test-panic", "", nil)
	e.expect(resp, body, 500)
	if e.json(body)["detail"] != "Internal server error" {
		t.Fatalf("body %s", body)
	}
	resp, body = e.do("GET", "/api/diagnostic/healthz/live", "", nil)
	e.expect(resp, body, 200)
}

// TestRestartKeepsTokensAndSessions: a new server process on the same
// database accepts the tokens and sessions the old one issued.
func TestRestartKeepsTokensAndSessions(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "pw"})
	resp, body := e.do("POST", "/api/api-tokens/", e.token("admin"), map[string]any{"name": "keep"})
	e.expect(resp, body, 201)
	plain := e.json(body)["token"].(string)
	resp, body = e.do("POST", "/login", "", `{"username":"admin","password":"pw"}`)
	e.expect(resp, body, 200)
	cookie := resp.Header.Get("Set-Cookie")
	cookie = cookie[:strings.Index(cookie, ";")]

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Server.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	e.Server = NewServer(Config{Log: e.Server.log, Settings: e.Settings, Tokens: e.Tokens, Sessions: e.Sessions,
		Version: "test", SessionSecret: strings.Repeat("s", 40)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.URL = "http://" + ln.Addr().String()
	go e.Server.Serve(ln) //nolint:errcheck
	resp, body = e.do("GET", "/api/api-tokens/", plain, nil)
	e.expect(resp, body, 200)
	resp, body = e.do("GET", "/api/api-tokens/", "", nil, "Cookie", cookie)
	e.expect(resp, body, 200)
}
