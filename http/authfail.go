package http

import (
	"container/list"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// Failed credentials are limited apart from the request rate limits: they
// count failures only, so someone with the right password or token never
// meets them, and RATE_LIMITING_ENABLED does not switch them off.
//
//   - Sign-in per user name and client address (loginThrottle): after
//     LOGIN_FAILURES_BEFORE_DELAY failures in a row for a name from one
//     address (an IPv6 /64 counts as one), each further attempt for that
//     name from that address waits a delay that doubles with every failure
//     (1 s, 2 s, 4 s … up to LOGIN_MAX_DELAY). The owner of a name signing
//     in from elsewhere is not held up by someone guessing at it.
//     RATE_LIMIT_AUTH limits attempts per address besides.
//   - Bearer tokens per client address: after TOKEN_FAILURE_LIMIT failed
//     tokens (unknown, revoked, expired, malformed) in its window, the
//     address gets 429 before any token of its is looked up.

// loginFailures is one run of failed sign-ins for a name from an address.
type loginFailures struct {
	key   string
	n     int       // failures in a row
	last  time.Time // the latest
	until time.Time // no attempt before this
	// delaying says the run reached its delays; elem is its place in the
	// throttle's list of such runs, or of the others.
	delaying bool
	elem     *list.Element
}

// loginThrottle keeps the runs of failed sign-ins per user name and client
// address in memory (per process, like the rate limits). It holds at most
// max runs: past it, the run that failed least recently among those still
// in their free failures is forgotten first, and one that is delaying
// attempts only when every run is. Failing many names therefore forgets
// nothing but other runs' free failures: forgetting a delaying run takes
// as many runs pushed into their delays, each costing its free failures.
type loginThrottle struct {
	now func() time.Time
	max int
	mu  sync.Mutex
	m   map[string]*loginFailures
	// free and delaying list the runs by their latest failure, oldest at
	// the front.
	free, delaying list.List
}

// loginThrottleMax bounds the runs remembered unless Config says otherwise.
const loginThrottleMax = 100_000

// newLoginThrottle remembers at most max runs (0: loginThrottleMax).
func newLoginThrottle(now func() time.Time, max int) *loginThrottle {
	if max <= 0 {
		max = loginThrottleMax
	}
	return &loginThrottle{now: now, max: max, m: map[string]*loginFailures{}}
}

// loginKey is the run of failures username's attempts from the client
// address addr count in.
func loginKey(username, addr string) string {
	return strings.ToLower(strings.TrimSpace(username)) + "\x00" + addr
}

// forgetAfter is how long a run lasts after its latest failure.
func forgetAfter(maxDelay time.Duration) time.Duration { return max(maxDelay, 15*time.Minute) }

// wait is how long username must wait before its next attempt from addr
// (0: none).
func (t *loginThrottle) wait(username, addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[loginKey(username, addr)]
	if f == nil {
		return 0
	}
	return max(0, f.until.Sub(t.now()))
}

// fail records a failed attempt; once there were free failures in a row,
// the next attempt waits 2^(failures-free) seconds, at most maxDelay. A run is
// forgotten once maxDelay (at least 15 minutes) passes without a failure.
func (t *loginThrottle) fail(username, addr string, free int, maxDelay time.Duration) {
	now := t.now()
	k := loginKey(username, addr)
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[k]
	if f != nil && now.Sub(f.last) > forgetAfter(maxDelay) {
		t.remove(f)
		f = nil
	}
	if f == nil {
		t.expire(now, maxDelay)
		for len(t.m) >= t.max {
			t.evict()
		}
		f = &loginFailures{key: k}
		t.m[k] = f
	} else {
		t.unlist(f)
	}
	f.n++
	f.last = now
	if over := f.n - free; over >= 0 {
		d := time.Duration(math.Pow(2, float64(min(over, 30)))) * time.Second
		f.until = now.Add(min(d, maxDelay))
		f.delaying = true
	}
	if f.delaying {
		f.elem = t.delaying.PushBack(f)
	} else {
		f.elem = t.free.PushBack(f)
	}
}

// succeed ends the run of failures of username from addr.
func (t *loginThrottle) succeed(username, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.m[loginKey(username, addr)]; f != nil {
		t.remove(f)
	}
}

// expire forgets the runs that ended (both lists are in the order of their
// latest failure, so they end from the front).
func (t *loginThrottle) expire(now time.Time, maxDelay time.Duration) {
	for _, l := range []*list.List{&t.free, &t.delaying} {
		for e := l.Front(); e != nil; e = l.Front() {
			if f := e.Value.(*loginFailures); now.Sub(f.last) > forgetAfter(maxDelay) {
				t.remove(f)
				continue
			}
			break
		}
	}
}

// evict forgets one run: the least recent of those still in their free
// failures, else the least recent delaying one.
func (t *loginThrottle) evict() {
	e := t.free.Front()
	if e == nil {
		e = t.delaying.Front()
	}
	if e != nil {
		t.remove(e.Value.(*loginFailures))
	}
}

func (t *loginThrottle) unlist(f *loginFailures) {
	if f.delaying {
		t.delaying.Remove(f.elem)
	} else {
		t.free.Remove(f.elem)
	}
}

func (t *loginThrottle) remove(f *loginFailures) {
	t.unlist(f)
	delete(t.m, f.key)
}

// loginDelayed refuses a sign-in for username from the request's client
// while that pair waits after failures: 429 with Retry-After.
func (s *Server) loginDelayed(c *fasthttp.RequestCtx, username string) error {
	d := s.auth.logins.wait(username, s.auth.clientKey(c))
	if d <= 0 {
		return nil
	}
	secs := int(math.Ceil(d.Seconds()))
	e := docflow.Errorf(docflow.ERATELIMIT, "Too many failed sign-ins for this user; try again in %d seconds", secs)
	e.RetryAfter = secs
	return e
}

// loginFailed records a failed sign-in for username from the request's
// client.
func (s *Server) loginFailed(c *fasthttp.RequestCtx, username string) {
	free := docflow.LoginFailuresBeforeDelay.Get(s.cfg.Settings)
	maxDelay := max(docflow.LoginMaxDelay.Get(s.cfg.Settings), time.Second)
	s.auth.logins.fail(username, s.auth.clientKey(c), max(free, 0), maxDelay)
}

// loginSucceeded ends the run of failures of username from the request's
// client.
func (s *Server) loginSucceeded(c *fasthttp.RequestCtx, username string) {
	s.auth.logins.succeed(username, s.auth.clientKey(c))
}

// unknownLogin is the audit log's actor of a failed sign-in whose name is
// no account's.
const unknownLogin = "unknown user"

// auditLoginFailed records a failed sign-in (why: the detail). The actor
// is the account the typed name belongs to (the local admin, or a local
// account by user name or e-mail: Config.LoginOwner), so an attack on an
// account shows under it; a name that is no account's is never recorded,
// since people type their password into the name field: the actor is
// "unknown user", and the detail carries a key of the name (the first 8
// hex digits of its HMAC-SHA256 under the session secret) by which
// repeated tries of one name can be told apart, and which gives nothing
// of the name to whoever reads the log.
func (s *Server) auditLoginFailed(c *fasthttp.RequestCtx, username, why string) {
	actor := s.loginOwner(c, username)
	if actor == "" {
		actor = unknownLogin
		if username != "" {
			m := hmac.New(sha256.New, []byte(s.cfg.SessionSecret))
			m.Write([]byte("audit login name\x00" + strings.ToLower(username)))
			why += "; name key " + hex.EncodeToString(m.Sum(nil))[:8]
		}
	}
	s.audit(c, docflow.AuditEntry{Actor: actor, Action: docflow.AuditLoginFailed, Detail: why})
}

// loginOwner is the user id of the account username names, or "".
func (s *Server) loginOwner(c *fasthttp.RequestCtx, username string) string {
	if username == "" {
		return ""
	}
	if admin := docflow.AdminUserID(s.cfg.Settings); strings.EqualFold(username, admin) && docflow.AdminPassword.Get(s.cfg.Settings) != "" {
		return admin
	}
	if s.cfg.LoginOwner == nil {
		return ""
	}
	id, err := s.cfg.LoginOwner(RequestContext(c), username)
	if err != nil {
		if docflow.ErrorCode(err) != docflow.ENOTFOUND {
			s.log.Warn().Err(err).Msg("look up the account of a failed sign-in")
		}
		return ""
	}
	return id
}

// tokenFailureRate is TOKEN_FAILURE_LIMIT (default 20/minute).
func (a *authenticator) tokenFailureRate() rate {
	r, err := a.failures.rate(docflow.TokenFailureLimit.Get(a.cfg.Settings))
	if err != nil {
		r, _ = parseRate("20/minute")
	}
	return r
}

// tokenFailuresBlocked refuses a client (its clientKey) whose failed tokens
// reached TOKEN_FAILURE_LIMIT, before its token is looked up.
func (a *authenticator) tokenFailuresBlocked(key string) error {
	r := a.tokenFailureRate()
	if blocked, retry := a.failures.blocked("token|"+key, r); blocked {
		e := docflow.Errorf(docflow.ERATELIMIT, "Too many invalid tokens from this address: %d per %s", r.N, r.Unit)
		e.RetryAfter = retry
		return e
	}
	return nil
}

// tokenFailed counts a failed token for the client (its clientKey).
func (a *authenticator) tokenFailed(key string) {
	a.failures.add("token|"+key, a.tokenFailureRate())
}
