package http

import (
	"context"
	"io"
	"net"
	nethttp "net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
)

// clientFrom returns an HTTP client whose connections come from the
// loopback address ip (127.0.0.2, 127.0.0.3, …: another client address).
func clientFrom(ip string) *nethttp.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &nethttp.Client{Timeout: 30 * time.Second, Transport: &nethttp.Transport{DialContext: d.DialContext}}
}

// doFrom sends a request from the loopback address ip.
func doFrom(e *testEnv, ip, method, path, token, body string) (*nethttp.Response, string) {
	e.t.Helper()
	req, err := nethttp.NewRequest(method, e.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := clientFrom(ip).Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

// countingTokens counts the token lookups by hash.
type countingTokens struct {
	docflow.TokenService
	lookups atomic.Int64
}

func (c *countingTokens) FindTokenByHash(ctx context.Context, hash string) (*docflow.APIToken, error) {
	c.lookups.Add(1)
	return c.TokenService.FindTokenByHash(ctx, hash)
}

// TestFailedTokensLimitedPerAddress: after TOKEN_FAILURE_LIMIT failed bearer
// tokens an address gets 429 with Retry-After, before any lookup, even for
// a good token; other addresses are served. RATE_LIMITING_ENABLED=false
// does not switch it off.
func TestFailedTokensLimitedPerAddress(t *testing.T) {
	counter := &countingTokens{}
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "TOKEN_FAILURE_LIMIT": "5/minute"}, func(e *testEnv) {
		counter.TokenService = e.Tokens
		e.Server.auth.cfg.Tokens = counter
	})
	good := e.token("alice")
	bogus := []string{docflow.TokenPrefix + "nosuchtoken0000000000000000000000000000", "not-even-a-token", docflow.TokenPrefix + "x"}
	for i := 0; i < 5; i++ {
		resp, body := doFrom(e, "127.0.0.2", "GET", "/api/api-tokens/", bogus[i%len(bogus)], "")
		if resp.StatusCode != 401 {
			t.Fatalf("bogus token %d: %d %s", i, resp.StatusCode, body)
		}
	}
	before := counter.lookups.Load()
	for _, tok := range []string{bogus[0], good} {
		resp, body := doFrom(e, "127.0.0.2", "GET", "/api/api-tokens/", tok, "")
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "Too many invalid tokens") {
			t.Fatalf("after 5 failures: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	if n := counter.lookups.Load() - before; n != 0 {
		t.Fatalf("%d token lookups for a blocked address", n)
	}
	// Another address is served, and public routes stay open.
	if resp, body := doFrom(e, "127.0.0.3", "GET", "/api/api-tokens/", good, ""); resp.StatusCode != 200 {
		t.Fatalf("other address: %d %s", resp.StatusCode, body)
	}
	if resp, body := doFrom(e, "127.0.0.2", "GET", "/api/diagnostic/healthz/live", bogus[0], ""); resp.StatusCode != 200 {
		t.Fatalf("public route from the blocked address: %d %s", resp.StatusCode, body)
	}
}

// TestLoginDelayPerUsername: failed sign-ins for one user name, from any
// address, make its next attempts wait a delay that doubles with each
// failure, up to LOGIN_MAX_DELAY; a success ends the run; other names are
// not delayed.
func TestLoginDelayPerUsername(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "pw",
		"LOGIN_FAILURES_BEFORE_DELAY": "3", "LOGIN_MAX_DELAY": "3"}, func(e *testEnv) {
		e.Server.auth.logins.now = clock
	})
	addrs := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	attempt := func(i int, user, pw string, status int, retryAfter string) {
		t.Helper()
		resp, body := doFrom(e, addrs[i%len(addrs)], "POST", "/login", "", `{"username":"`+user+`","password":"`+pw+`"}`)
		if resp.StatusCode != status || resp.Header.Get("Retry-After") != retryAfter {
			t.Fatalf("attempt %d for %s: %d Retry-After %q %s; want %d %q", i, user, resp.StatusCode, resp.Header.Get("Retry-After"), body, status, retryAfter)
		}
	}
	for i := 0; i < 3; i++ {
		attempt(i, "admin", "wrong", 401, "")
	}
	attempt(3, "Admin", "pw", 429, "1") // the right password waits too
	attempt(4, "bob", "wrong", 401, "") // another name is not delayed
	advance(time.Second)
	attempt(5, "admin", "wrong", 401, "")
	attempt(6, "admin", "wrong", 429, "2")
	advance(2 * time.Second)
	attempt(7, "admin", "wrong", 401, "")
	attempt(8, "admin", "pw", 429, "3") // 4 s, capped at LOGIN_MAX_DELAY
	advance(3 * time.Second)
	attempt(9, "admin", "pw", 200, "")
	// A success ends the run.
	attempt(10, "admin", "wrong", 401, "")
	attempt(11, "admin", "pw", 200, "")
}
