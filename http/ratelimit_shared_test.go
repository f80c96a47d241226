package http

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"docflow/internal/ratelimit"
	"docflow/storage/postgres"
)

// sharedLimits gives the server the rate limits kept in db.
func sharedLimits(db *postgres.DB) func(*testEnv) {
	return func(e *testEnv) {
		e.Server.cfg.SharedLimits = ratelimit.New(postgres.NewRateLimitStore(db), zerolog.Nop())
	}
}

// TestTwoServersShareTheRateLimit: two servers whose limits are kept in
// one database admit a client address RATE_LIMIT_DEFAULT's requests
// together, then answer 429 with Retry-After and the usual detail.
func TestTwoServersShareTheRateLimit(t *testing.T) {
	t.Parallel()
	limits, cleanup, err := postgres.OpenTestDB(context.Background(), "limits")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	env := map[string]string{"RATE_LIMITING_ENABLED": "true", "RATE_LIMIT_DEFAULT": "6/day"}
	servers := []*testEnv{newTestEnv(t, env, sharedLimits(limits)), newTestEnv(t, env, sharedLimits(limits))}
	admitted := 0
	for i := range 12 {
		e := servers[i%2]
		resp, body := e.do("GET", "/api/api-tokens/", "", nil)
		switch resp.StatusCode {
		case 200:
			admitted++
		case 429:
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "Rate limit exceeded: 6 per day") {
				t.Fatalf("429 with Retry-After %q and %s", resp.Header.Get("Retry-After"), body)
			}
		default:
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	// Leases of one permit at a limit of 6: at most one fewer, never more.
	if admitted > 6 || admitted < 5 {
		t.Fatalf("two servers admitted %d of 12 under 6/day, want 6", admitted)
	}
}

// TestRateLimitFailsOpenToTheProcess: with the shared limits' database
// unreachable, requests are neither refused nor failed for it: the
// server limits in memory, as one process alone.
func TestRateLimitFailsOpenToTheProcess(t *testing.T) {
	t.Parallel()
	limits, cleanup, err := postgres.OpenTestDB(context.Background(), "limits")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	limits.Close()
	e := newTestEnv(t, map[string]string{"RATE_LIMITING_ENABLED": "true", "RATE_LIMIT_DEFAULT": "3/minute"}, sharedLimits(limits))
	for range 3 {
		resp, body := e.do("GET", "/api/api-tokens/", "", nil)
		e.expect(resp, body, 200)
	}
	resp, body := e.do("GET", "/api/api-tokens/", "", nil)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "Rate limit exceeded: 3 per minute") {
		t.Fatalf("fourth request with the limits' database down: %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}
