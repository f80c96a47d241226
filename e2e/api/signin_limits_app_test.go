package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dfhttp "docflow/http"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport/redirects"
)

// signInEnv is the API with the env admin, sign-in limits that the tests
// reach quickly, and X-Forwarded-For honoured from the loopback address,
// so one test presents many client addresses.
func signInEnv(t *testing.T, env map[string]string) *apptest.App {
	t.Helper()
	all := map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true", "ADMIN_USERNAME": "admin",
		"ADMIN_PASSWORD": "admin-password", "TRUSTED_PROXIES": "127.0.0.1", "LOGIN_FAILURES_BEFORE_DELAY": "5"}
	for k, v := range env {
		all[k] = v
	}
	return apptest.New(t, apptest.Options{Role: "api", Env: all})
}

// signIn posts a JSON sign-in as the client at addr (X-Forwarded-For).
func signIn(t *testing.T, base, addr, user, pw string) (int, string) {
	t.Helper()
	return newClient(t, base).do("POST", "/login", map[string]string{"username": user, "password": pw}, "X-Forwarded-For", addr)
}

// TestIPv6RotationSharesItsSlash64Budget: a client that rotates through the
// addresses of its IPv6 /64 has one RATE_LIMIT_AUTH budget and one
// TOKEN_FAILURE_LIMIT budget, not one per address; another /64 has its own.
func TestIPv6RotationSharesItsSlash64Budget(t *testing.T) {
	a := signInEnv(t, map[string]string{"RATE_LIMITING_ENABLED": "true", "RATE_LIMIT_AUTH": "5/minute",
		"TOKEN_FAILURE_LIMIT": "5/minute"})
	var statuses []int
	for i := range 12 {
		s, _ := signIn(t, a.URL, fmt.Sprintf("2001:db8:1:2::%x", i+1), fmt.Sprintf("nobody-%d", i), "guess")
		statuses = append(statuses, s)
	}
	if statuses[0] != 401 || statuses[len(statuses)-1] != 429 {
		t.Fatalf("sign-ins from rotating addresses of one /64: %v, want 401s then 429s", statuses)
	}
	if s, _ := signIn(t, a.URL, "2001:db8:1:3::1", "nobody", "guess"); s != 401 {
		t.Fatalf("another /64: %d, want 401", s)
	}

	c := newClient(t, a.URL)
	statuses = statuses[:0]
	for i := range 12 {
		s, _ := c.do("GET", "/api/api-tokens/", nil, "X-Forwarded-For", fmt.Sprintf("2001:db8:9:9:%x::1", i+1),
			"Authorization", "Bearer dfl_nosuchtoken00000000000000000000000000")
		statuses = append(statuses, s)
	}
	if statuses[0] != 401 || statuses[len(statuses)-1] != 429 {
		t.Fatalf("bad tokens from rotating addresses of one /64: %v, want 401s then 429s", statuses)
	}
}

// TestOwnerSignsInWhileNameUnderAttack: guesses at a name from one address
// delay that address only; the name's owner signs in from another address
// at once.
func TestOwnerSignsInWhileNameUnderAttack(t *testing.T) {
	a := signInEnv(t, nil)
	var last int
	for i := range 20 {
		last, _ = signIn(t, a.URL, "203.0.113.7", "admin", fmt.Sprintf("guess-%d", i))
	}
	if last != 429 {
		t.Fatalf("the guesser is not delayed: %d", last)
	}
	if s, b := signIn(t, a.URL, "203.0.113.7", "admin", "admin-password"); s != 429 {
		t.Fatalf("the guesser's address with the right password: %d %s, want 429", s, b)
	}
	t0 := time.Now()
	if s, b := signIn(t, a.URL, "198.51.100.20", "admin", "admin-password"); s != 200 {
		t.Fatalf("the owner from another address: %d %s", s, b)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("the owner waited %v", d)
	}
}

// TestSprayingNamesKeepsTheDelay: failing more names than the sign-in
// throttle remembers (with empty passwords, which cost no hashing) does
// not make it forget the failures of a name under guessing. The server's
// throttle remembers 500 runs here instead of 100,000, so that a spray of
// twice its size takes a thousand requests.
func TestSprayingNamesKeepsTheDelay(t *testing.T) {
	const runs = 500
	all := map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true", "ADMIN_USERNAME": "admin",
		"ADMIN_PASSWORD": "admin-password", "TRUSTED_PROXIES": "127.0.0.1", "LOGIN_FAILURES_BEFORE_DELAY": "5"}
	a := apptest.New(t, apptest.Options{Role: "api", Env: all, HTTP: func(c *dfhttp.Config) { c.LoginThrottleRuns = runs }})
	const attacker = "203.0.113.7"
	for i := range 6 {
		signIn(t, a.URL, attacker, "admin", fmt.Sprintf("guess-%d", i))
	}
	if s, _ := signIn(t, a.URL, attacker, "admin", "guess"); s != 429 {
		t.Fatalf("six failures: %d, want 429", s)
	}

	const names, workers = 2*runs + 5, 8
	hc := &nethttp.Client{Timeout: 30 * time.Second, Transport: &nethttp.Transport{MaxIdleConnsPerHost: workers}}
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > names {
					return
				}
				req, _ := nethttp.NewRequest("POST", a.URL+"/login", strings.NewReader(fmt.Sprintf(`{"username":"spray-%d","password":""}`, i)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Forwarded-For", attacker)
				resp, err := hc.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body) //nolint:errcheck
				resp.Body.Close()
				if resp.StatusCode != 401 {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d names sprayed in %v", names, time.Since(start))
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d spray sign-ins were not answered 401", n)
	}
	// Once the delay of the run's sixth failure is over (the server says
	// when: Retry-After), the run goes on: its next failure delays the
	// one after, where a forgotten run would give five free guesses.
	attempt := func(pw string) (int, string, string) {
		t.Helper()
		req, _ := nethttp.NewRequest("POST", a.URL+"/login", strings.NewReader(fmt.Sprintf(`{"username":"admin","password":%q}`, pw)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", attacker)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
	}
	s1, retry, b := attempt("guess-after-1")
	for i := 0; s1 == 429 && i < 3; i++ {
		secs, err := strconv.Atoi(retry)
		if err != nil || secs < 1 || secs > 4 {
			t.Fatalf("delayed with Retry-After %q: %s", retry, b)
		}
		time.Sleep(time.Duration(secs) * time.Second)
		s1, retry, b = attempt("guess-after-1")
	}
	if s1 != 401 {
		t.Fatalf("after the spray and the delay: %d %s, want 401", s1, b)
	}
	if s2, _, b := attempt("guess-after-2"); s2 != 429 {
		t.Fatalf("after the spray: 401 then %d %s, want the second delayed (429): the run was forgotten", s2, b)
	}
}

const scrapeToken = "scrape-token-0123456789abcdef"

// passwordHashes reads docflow_password_hashes_total (or another series
// of the hasher) from /metrics.
func passwordHashes(t *testing.T, a *apptest.App, name string) float64 {
	t.Helper()
	status, mfs := scrape(t, &nethttp.Client{Timeout: 20 * time.Second}, a.URL, "Bearer "+scrapeToken)
	if status != 200 {
		t.Fatalf("/metrics: %d", status)
	}
	m := find(mfs, name, nil)
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	return m.GetCounter().GetValue()
}

// TestResetWithJunkTokenCostsNoHash: a reset with a token that is no
// reset token is refused before the new password is hashed; a failed
// sign-in, for comparison, costs one hash verification.
func TestResetWithJunkTokenCostsNoHash(t *testing.T) {
	a := signInEnv(t, map[string]string{"METRICS_TOKEN": scrapeToken})
	anon := newClient(t, a.URL)
	before := passwordHashes(t, a, "docflow_password_hashes_total")
	for i := range 20 {
		s, b := anon.do("POST", "/api/auth/reset-password", map[string]string{"token": fmt.Sprintf("junk-token-%d", i),
			"new_password": "a-new-password", "new_password_confirm": "a-new-password"})
		if s != 400 || !strings.Contains(b, "Invalid or expired reset token") {
			t.Fatalf("junk token: %d %s", s, b)
		}
	}
	if d := passwordHashes(t, a, "docflow_password_hashes_total") - before; d != 0 {
		t.Fatalf("20 resets with junk tokens cost %v password hashes, want 0", d)
	}
	if s, _ := signIn(t, a.URL, "192.0.2.9", "nobody", "some-password"); s != 401 {
		t.Fatalf("sign-in of an unknown name: %d", s)
	}
	if d := passwordHashes(t, a, "docflow_password_hashes_total") - before; d != 1 {
		t.Fatalf("a failed sign-in cost %v password hashes, want 1", d)
	}
}

// TestHashQueueFullIs429: with one hash at a time and one waiting, a burst
// of sign-ins gets 429 with Retry-After for those beyond the queue, at
// once, and 401 for the others.
func TestHashQueueFullIs429(t *testing.T) {
	a := signInEnv(t, map[string]string{"METRICS_TOKEN": scrapeToken,
		"PASSWORD_HASH_CONCURRENCY": "1", "PASSWORD_HASH_QUEUE": "1"})
	const burst = 40
	type answer struct {
		status     int
		retryAfter string
		body       string
	}
	answers := make(chan answer, burst)
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := nethttp.NewRequest("POST", a.URL+"/login", strings.NewReader(fmt.Sprintf(`{"username":"user-%d","password":"a-password"}`, i)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("192.0.2.%d", i+1))
			resp, err := (&nethttp.Client{Timeout: 30 * time.Second}).Do(req)
			if err != nil {
				answers <- answer{body: err.Error()}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			answers <- answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}
		}()
	}
	wg.Wait()
	close(answers)
	counts := map[int]int{}
	for ans := range answers {
		counts[ans.status]++
		switch ans.status {
		case 401:
		case 429:
			if ans.retryAfter != "1" || !strings.Contains(ans.body, "Too many sign-ins at once") {
				t.Fatalf("429 without Retry-After or with another detail: %+v", ans)
			}
		default:
			t.Fatalf("unexpected answer %+v", ans)
		}
	}
	t.Logf("a burst of %d sign-ins: %v", burst, counts)
	if counts[429] == 0 || counts[401] < 2 {
		t.Fatalf("a burst of %d sign-ins with one hash at a time: %v, want some 429", burst, counts)
	}
	if r := passwordHashes(t, a, "docflow_password_hashes_refused_total"); int(r) != counts[429] {
		t.Fatalf("refused counter %v, %d answered 429", r, counts[429])
	}
}

// TestFailedSignInNameNotAudited: a failed sign-in whose name is no
// account's (here a password typed into the name field) leaves no trace
// of the name in the audit log, not even a prefix; it is recorded as an
// unknown user with a key that is the same for the same name. A failed
// sign-in for an account is recorded under the account.
func TestFailedSignInNameNotAudited(t *testing.T) {
	a := signInEnv(t, nil)
	admin := newClient(t, a.URL)
	if s := admin.login("admin", "admin-password"); s != 200 {
		t.Fatalf("admin sign-in: %d", s)
	}
	admin.must(201, "POST", "/api/admin/users/local", map[string]any{"email": "carol@example.com", "username": "carol", "password": "carol-password"})

	const secret = "Tr0ub4dor&3-Horse"
	for range 2 {
		if s, _ := signIn(t, a.URL, "192.0.2.50", secret, "whatever"); s != 401 {
			t.Fatalf("sign-in with a password for a name: %d", s)
		}
	}
	for range 8 { // on into the delay: refused attempts are audited too
		signIn(t, a.URL, "192.0.2.51", secret+"!", "")
	}
	if s, _ := signIn(t, a.URL, "192.0.2.52", "Carol", "wrong-password"); s != 401 {
		t.Fatalf("wrong password for carol: %d", s)
	}

	var log struct {
		Entries []struct {
			Actor, Action, Detail, Target string
		} `json:"entries"`
	}
	body := admin.must(200, "GET", "/api/admin/audit-log?action=login.failed&per_page=200", nil)
	if err := json.Unmarshal([]byte(body), &log); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{secret, secret[:5], "Tr0ub", "4dor", "Horse"} {
		if strings.Contains(body, part) {
			t.Fatalf("the audit log holds %q of the name typed:\n%s", part, body)
		}
	}
	var unknown []string
	carol := 0
	for _, e := range log.Entries {
		switch e.Actor {
		case "unknown user":
			unknown = append(unknown, e.Detail)
		case "carol@example.com":
			carol++
		default:
			t.Fatalf("failed sign-in recorded under %q: %+v", e.Actor, e)
		}
	}
	if len(unknown) != 10 || carol != 1 {
		t.Fatalf("%d entries of an unknown user, %d of carol; want 10 and 1:\n%s", len(unknown), carol, body)
	}
	// Newest first: the two tries of the first name carry one key, the
	// other name another.
	key := func(detail string) string {
		if m := regexp.MustCompile(`; name key ([0-9a-f]{8})$`).FindStringSubmatch(detail); m != nil {
			return m[1]
		}
		t.Fatalf("no name key in %q", detail)
		return ""
	}
	if k1, k2, other := key(unknown[len(unknown)-1]), key(unknown[len(unknown)-2]), key(unknown[0]); k1 != k2 || k1 == other {
		t.Fatalf("keys of the unknown names: %q", unknown)
	}
	if !slices.ContainsFunc(unknown, func(d string) bool { return strings.HasPrefix(d, "throttled after failed sign-ins") }) {
		t.Fatalf("the delayed attempts are not audited: %q", unknown)
	}
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
		for _, next := range redirects.Tricks {
			status, loc := signInTo(next)
			if status == 422 && loc == "" && strings.Contains(next, "\x00") {
				continue // NUL is refused before anything else
			}
			if status != 303 {
				t.Fatalf("BASE_URL %q, next %q: %d", base, next, status)
			}
			if why := redirects.StaysOnSite(page, loc); why != "" || (base != "" && !strings.HasPrefix(loc, base+"/")) {
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
