package api_test

import (
	"encoding/json"
	"io"
	nethttp "net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"docflow/internal/app/apptest"
)

// TestThousandFailedSignIns: 1,000 failed sign-ins in a row for one local
// account from one address are slowed by the per-user-name delay, every
// one is in the audit log under the account with its client address, and
// another user signs in at once; past RATE_LIMIT_AUTH an address is
// refused while another address is not.
func TestThousandFailedSignIns(t *testing.T) {
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{
		"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true", "ADMIN_USERNAME": "admin", "ADMIN_PASSWORD": "admin-password",
		"RATE_LIMITING_ENABLED": "true", "RATE_LIMIT_AUTH": "5000/minute", "TRUSTED_PROXIES": "127.0.0.1",
		"LOGIN_FAILURES_BEFORE_DELAY": "5"}})
	admin := newClient(t, a.URL)
	if s, _ := admin.do("POST", "/login", map[string]string{"username": "admin", "password": "admin-password"}, "X-Forwarded-For", "192.0.2.1"); s != 200 {
		t.Fatalf("admin sign-in: %d", s)
	}
	for _, u := range []string{"victim", "bob"} {
		admin.must(201, "POST", "/api/admin/users/local", map[string]any{"email": u + "@example.com", "username": u, "password": u + "-password"})
	}

	attacker := newClient(t, a.URL)
	counts := map[int]int{}
	start := time.Now()
	for i := range 1000 {
		s, b := attacker.do("POST", "/login", map[string]string{"username": "victim", "password": "guess-" + string(rune('a'+i%26))}, "X-Forwarded-For", "203.0.113.7")
		counts[s]++
		if s == 429 && !strings.Contains(b, "Too many failed sign-ins") {
			t.Fatalf("attempt %d: 429 %s", i, b)
		}
	}
	t.Logf("1,000 failed sign-ins in %v: %v", time.Since(start), counts)
	// 5 free failures, then one try per doubling delay (1 s, 2 s, 4 s…).
	if counts[401] > 10 || counts[401]+counts[429] != 1000 {
		t.Fatalf("statuses %v: want at most 10 verified, the rest delayed", counts)
	}

	// Another user signs in at once, from another address.
	bob := newClient(t, a.URL)
	t0 := time.Now()
	if s, _ := bob.do("POST", "/login", map[string]string{"username": "bob", "password": "bob-password"}, "X-Forwarded-For", "198.51.100.4"); s != 200 {
		t.Fatalf("bob: %d", s)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("bob waited %v", d)
	}

	var log struct {
		Total   int `json:"total"`
		Entries []struct {
			Actor    string `json:"actor"`
			ClientIP string `json:"client_ip"`
			Detail   string `json:"detail"`
		} `json:"entries"`
	}
	// Under the account's user id (its e-mail), as its successful
	// sign-ins are.
	body := admin.must(200, "GET", "/api/admin/audit-log?actor=victim@example.com&action=login.failed&per_page=200", nil)
	json.Unmarshal([]byte(body), &log) //nolint:errcheck
	if log.Total != 1000 || log.Entries[0].ClientIP != "203.0.113.7" {
		t.Fatalf("audit: %d entries, first %+v", log.Total, log.Entries[0])
	}
	body = admin.must(200, "GET", "/api/admin/audit-log?actor=bob@example.com&action=login.succeeded", nil)
	if !strings.Contains(body, `"client_ip":"198.51.100.4"`) {
		t.Fatalf("bob's sign-in is not audited: %s", body)
	}

	// RATE_LIMIT_AUTH per address.
	a.SetEnv("RATE_LIMIT_AUTH", "20/minute")
	var statuses []int
	for range 30 {
		s, _ := attacker.do("POST", "/login", map[string]string{"username": "nobody-" + time.Now().Format("150405.000000"), "password": "x"}, "X-Forwarded-For", "203.0.113.8")
		statuses = append(statuses, s)
	}
	if !slices.Contains(statuses, 429) || statuses[0] != 401 {
		t.Fatalf("RATE_LIMIT_AUTH not applied: %v", statuses)
	}
	if s, _ := newClient(t, a.URL).do("POST", "/login", map[string]string{"username": "bob", "password": "bob-password"}, "X-Forwarded-For", "198.51.100.5"); s != 200 {
		t.Fatalf("another address is limited too: %d", s)
	}
}

// TestSelfServiceAnswersAlike: a known and an unknown address get the same
// answer in the same time (within noise): the work is done after it.
func TestSelfServiceAnswersAlike(t *testing.T) {
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{
		"AUTH_ENABLED": "true", "ADMIN_USERNAME": "admin", "ADMIN_PASSWORD": "admin-password"}})
	admin := newClient(t, a.URL)
	admin.login("admin", "admin-password")
	admin.must(201, "POST", "/api/admin/users/local", map[string]any{"email": "known@example.com", "username": "known", "password": "known-password"})
	anon := newClient(t, a.URL)
	for _, path := range []string{"/api/auth/request-password-reset", "/api/auth/forgot-username"} {
		var known, unknown []time.Duration
		var bodies []string
		for i := range 40 {
			for _, email := range []string{"known@example.com", "unknown@example.com"} {
				t0 := time.Now()
				body := anon.must(200, "POST", path, map[string]string{"email": email})
				d := time.Since(t0)
				if i == 0 {
					bodies = append(bodies, body)
				}
				if email == "known@example.com" {
					known = append(known, d)
				} else {
					unknown = append(unknown, d)
				}
			}
		}
		if bodies[0] != bodies[1] {
			t.Fatalf("%s: answers differ: %q / %q", path, bodies[0], bodies[1])
		}
		slices.Sort(known)
		slices.Sort(unknown)
		mk, mu := known[len(known)/2], unknown[len(unknown)/2]
		t.Logf("%s: median %v known, %v unknown", path, mk, mu)
		if diff := (mk - mu).Abs(); diff > 5*time.Millisecond && diff > max(mk, mu)/2 {
			t.Fatalf("%s: median %v for a known address, %v for an unknown one", path, mk, mu)
		}
	}
	if s, b := anon.do("POST", "/api/auth/request-password-reset", map[string]string{"email": "not an address"}); s != 422 || !strings.Contains(b, `"field":"email"`) {
		t.Fatalf("malformed address: %d %s", s, b)
	}

	// The pages: sign-in links the self-service form, which answers alike.
	if s, b := anon.do("GET", "/login", nil); s != 200 || !strings.Contains(b, `href="/forgot-password"`) {
		t.Fatalf("login page: %d %s", s, b)
	}
	if s, b := anon.do("GET", "/forgot-password", nil); s != 200 || !strings.Contains(b, `type="email"`) || strings.Contains(b, "<script") {
		t.Fatalf("forgot page: %d %s", s, b)
	}
	form := func(body string) (int, string) {
		req, _ := nethttp.NewRequest("POST", a.URL+"/forgot-password", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := anon.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	s1, b1 := form("email=known%40example.com&what=username")
	s2, b2 := form("email=unknown%40example.com&what=password")
	if s1 != 200 || b1 != b2 || !strings.Contains(b1, "a message is on its way") {
		t.Fatalf("forgot form: %d %s / %d %s", s1, b1, s2, b2)
	}
	if s, _ := form("email=not+an+address"); s != 422 {
		t.Fatalf("forgot form, malformed address: %d", s)
	}
}
