package http

import (
	"math"
	"strings"
	"sync"
	"time"

	"docflow"
)

// Failed credentials are limited apart from the request rate limits: they
// count failures only, so someone with the right password or token never
// meets them, and RATE_LIMITING_ENABLED does not switch them off.
//
//   - Sign-in per user name (loginThrottle): after LOGIN_FAILURES_BEFORE_DELAY
//     failures in a row, each further attempt for that name waits a delay
//     that doubles with every failure (1 s, 2 s, 4 s … up to
//     LOGIN_MAX_DELAY), whichever address it comes from. RATE_LIMIT_AUTH
//     limits attempts per address besides.
//   - Bearer tokens per client address: after TOKEN_FAILURE_LIMIT failed
//     tokens (unknown, revoked, expired, malformed) in its window, the
//     address gets 429 before any token of its is looked up.

// loginFailures is one user name's run of failed sign-ins.
type loginFailures struct {
	n     int       // failures in a row
	last  time.Time // the latest
	until time.Time // no attempt before this
}

// loginThrottle keeps the failed sign-ins per user name in memory (per
// process, like the rate limits).
type loginThrottle struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*loginFailures
}

// loginThrottleMax bounds the names remembered; past it, names whose run
// has ended are dropped first, then all.
const loginThrottleMax = 100_000

func newLoginThrottle(now func() time.Time) *loginThrottle {
	return &loginThrottle{now: now, m: map[string]*loginFailures{}}
}

func loginKey(username string) string { return strings.ToLower(strings.TrimSpace(username)) }

// wait is how long username must wait before its next attempt (0: none).
func (t *loginThrottle) wait(username string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[loginKey(username)]
	if f == nil {
		return 0
	}
	return max(0, f.until.Sub(t.now()))
}

// fail records a failed attempt; once there were free failures in a row,
// the next attempt waits 2^(failures-free) seconds, at most maxDelay. A run is
// forgotten once maxDelay (at least 15 minutes) passes without a failure.
func (t *loginThrottle) fail(username string, free int, maxDelay time.Duration) {
	now := t.now()
	k := loginKey(username)
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[k]
	if f != nil && now.Sub(f.last) > max(maxDelay, 15*time.Minute) {
		f = nil
	}
	if f == nil {
		if len(t.m) >= loginThrottleMax {
			t.sweep(now, maxDelay)
		}
		f = &loginFailures{}
		t.m[k] = f
	}
	f.n++
	f.last = now
	if over := f.n - free; over >= 0 {
		d := time.Duration(math.Pow(2, float64(min(over, 30)))) * time.Second
		f.until = now.Add(min(d, maxDelay))
	}
}

// succeed ends username's run of failures.
func (t *loginThrottle) succeed(username string) {
	t.mu.Lock()
	delete(t.m, loginKey(username))
	t.mu.Unlock()
}

func (t *loginThrottle) sweep(now time.Time, maxDelay time.Duration) {
	for k, f := range t.m {
		if now.Sub(f.last) > max(maxDelay, 15*time.Minute) {
			delete(t.m, k)
		}
	}
	if len(t.m) >= loginThrottleMax {
		clear(t.m)
	}
}

// loginDelayed refuses a sign-in for username while it waits after
// failures: 429 with Retry-After.
func (s *Server) loginDelayed(username string) error {
	d := s.auth.logins.wait(username)
	if d <= 0 {
		return nil
	}
	secs := int(math.Ceil(d.Seconds()))
	e := docflow.Errorf(docflow.ERATELIMIT, "Too many failed sign-ins for this user; try again in %d seconds", secs)
	e.RetryAfter = secs
	return e
}

// loginFailed records a failed sign-in for username.
func (s *Server) loginFailed(username string) {
	free := docflow.SettingInt(s.cfg.Settings, "LOGIN_FAILURES_BEFORE_DELAY", 5)
	maxDelay := docflow.SettingInt(s.cfg.Settings, "LOGIN_MAX_DELAY", 900)
	s.auth.logins.fail(username, max(free, 0), time.Duration(max(maxDelay, 1))*time.Second)
}

// tokenFailureRate is TOKEN_FAILURE_LIMIT (default 20/minute).
func (a *authenticator) tokenFailureRate() rate {
	r, err := a.failures.rate(a.cfg.Settings.Get("TOKEN_FAILURE_LIMIT"))
	if err != nil {
		r, _ = parseRate("20/minute")
	}
	return r
}

// tokenFailuresBlocked refuses an address whose failed tokens reached
// TOKEN_FAILURE_LIMIT, before its token is looked up.
func (a *authenticator) tokenFailuresBlocked(ip string) error {
	r := a.tokenFailureRate()
	if blocked, retry := a.failures.blocked("token|"+ip, r); blocked {
		e := docflow.Errorf(docflow.ERATELIMIT, "Too many invalid tokens from this address: %d per %s", r.N, r.Unit)
		e.RetryAfter = retry
		return e
	}
	return nil
}

// tokenFailed counts a failed token for the address.
func (a *authenticator) tokenFailed(ip string) {
	a.failures.add("token|"+ip, a.tokenFailureRate())
}
