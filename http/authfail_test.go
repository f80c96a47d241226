package http

import (
	"context"
	"io"
	"net"
	nethttp "net/http"
	"strconv"
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
	docflow.TokenStore
	lookups atomic.Int64
}

func (c *countingTokens) FindTokenByHash(ctx context.Context, hash string) (*docflow.APIToken, error) {
	c.lookups.Add(1)
	return c.TokenStore.FindTokenByHash(ctx, hash)
}

// TestFailedTokensLimitedPerAddress: after TOKEN_FAILURE_LIMIT failed bearer
// tokens an address gets 429 with Retry-After, before any lookup, even for
// a good token; other addresses are served. RATE_LIMITING_ENABLED=false
// does not switch it off.
func TestFailedTokensLimitedPerAddress(t *testing.T) {
	t.Parallel()
	counter := &countingTokens{}
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "TOKEN_FAILURE_LIMIT": "5/minute"}, func(e *testEnv) {
		counter.TokenStore = e.Tokens
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

// TestLoginDelayPerUsernameAndAddress: failed sign-ins for one user name
// from one address make that address's next attempts for the name wait a
// delay that doubles with each failure, up to LOGIN_MAX_DELAY; a success
// ends the run; other names, and the same name from another address, are
// not delayed.
func TestLoginDelayPerUsernameAndAddress(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "pw",
		"LOGIN_FAILURES_BEFORE_DELAY": "3", "LOGIN_MAX_DELAY": "3"}, func(e *testEnv) {
		e.Server.auth.logins.now = clock
	})
	attempt := func(i int, addr, user, pw string, status int, retryAfter string) {
		t.Helper()
		resp, body := doFrom(e, addr, "POST", "/login", "", `{"username":"`+user+`","password":"`+pw+`"}`)
		if resp.StatusCode != status || resp.Header.Get("Retry-After") != retryAfter {
			t.Fatalf("attempt %d for %s from %s: %d Retry-After %q %s; want %d %q", i, user, addr, resp.StatusCode, resp.Header.Get("Retry-After"), body, status, retryAfter)
		}
	}
	const guesser, owner = "127.0.0.2", "127.0.0.3"
	for i := 0; i < 3; i++ {
		attempt(i, guesser, "admin", "wrong", 401, "")
	}
	attempt(3, guesser, "Admin", "pw", 429, "1") // the right password waits too
	attempt(4, guesser, "bob", "wrong", 401, "") // another name is not delayed
	attempt(5, owner, "admin", "wrong", 401, "") // nor the name from elsewhere
	advance(time.Second)
	attempt(6, guesser, "admin", "wrong", 401, "")
	attempt(7, guesser, "admin", "wrong", 429, "2")
	advance(2 * time.Second)
	attempt(8, guesser, "admin", "wrong", 401, "")
	attempt(9, guesser, "admin", "pw", 429, "3") // 4 s, capped at LOGIN_MAX_DELAY
	attempt(10, owner, "admin", "pw", 200, "")
	advance(3 * time.Second)
	attempt(11, guesser, "admin", "pw", 200, "")
	// A success ends the run.
	attempt(12, guesser, "admin", "wrong", 401, "")
	attempt(13, guesser, "admin", "pw", 200, "")
}

// TestLoginThrottleEvictsFreeRunsFirst: a full throttle forgets the runs
// still in their free failures, oldest first, before any run that delays
// attempts, so failing many names does not end a delay.
func TestLoginThrottleEvictsFreeRunsFirst(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	th := newLoginThrottle(func() time.Time { return now }, 100)
	const maxDelay = 15 * time.Minute
	for range 6 {
		th.fail("victim", "203.0.113.7", 5, maxDelay)
	}
	if th.wait("victim", "203.0.113.7") <= 0 {
		t.Fatal("six failures do not delay")
	}
	for i := range 1000 {
		now = now.Add(time.Millisecond)
		th.fail("spray-"+strconv.Itoa(i), "203.0.113.7", 5, maxDelay)
	}
	if len(th.m) > th.max {
		t.Fatalf("%d runs kept, at most %d", len(th.m), th.max)
	}
	if th.wait("victim", "203.0.113.7") <= 0 {
		t.Fatal("spraying names ended the victim's delay")
	}
	// The newest free runs are kept, the oldest went.
	if th.m[loginKey("spray-999", "203.0.113.7")] == nil || th.m[loginKey("spray-0", "203.0.113.7")] != nil {
		t.Fatal("eviction is not oldest first")
	}
	// Only delaying runs left: the oldest of them goes.
	th.max = 2
	th.fail("other", "203.0.113.8", 0, maxDelay)
	th.fail("third", "203.0.113.8", 0, maxDelay)
	if len(th.m) != 2 || th.m[loginKey("victim", "203.0.113.7")] != nil || th.m[loginKey("third", "203.0.113.8")] == nil {
		t.Fatalf("runs after shrinking: %d, victim kept: %v", len(th.m), th.m[loginKey("victim", "203.0.113.7")] != nil)
	}
	// Runs end after maxDelay (at least 15 minutes) without a failure.
	now = now.Add(16 * time.Minute)
	th.fail("late", "203.0.113.9", 5, maxDelay)
	if len(th.m) != 1 {
		t.Fatalf("%d runs after they ended, want 1", len(th.m))
	}
}
