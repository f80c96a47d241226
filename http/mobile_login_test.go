package http

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func mobileLogin(e *testEnv, redirectURI string) (int, string) {
	e.t.Helper()
	form := url.Values{"username": {"admin"}, "password": {"pw"}, "mobile": {"1"}, "redirect_uri": {redirectURI}}
	resp, _ := e.do("POST", "/login", "", []byte(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	return resp.StatusCode, resp.Header.Get("Location")
}

// TestMobileLoginRedirectTargets: docflow:// is always accepted; exp://
// (the development client) only when MOBILE_DEV_CLIENT_ENABLED is on, and
// then only for loopback and private-network hosts. A refused target gets
// no token.
func TestMobileLoginRedirectTargets(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "pw"})
	refused := func(uri string) {
		t.Helper()
		resp, body := e.do("GET", "/login?mobile=1&redirect_uri="+url.QueryEscape(uri), "", nil)
		if resp.StatusCode != 400 {
			t.Fatalf("GET /login with %s: %d %s", uri, resp.StatusCode, body)
		}
		if status, loc := mobileLogin(e, uri); status != 400 || loc != "" {
			t.Fatalf("POST /login with %s: %d %q", uri, status, loc)
		}
	}
	accepted := func(uri string) {
		t.Helper()
		resp, body := e.do("GET", "/login?mobile=1&redirect_uri="+url.QueryEscape(uri), "", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("GET /login with %s: %d %s", uri, resp.StatusCode, body)
		}
		status, loc := mobileLogin(e, uri)
		if status != 303 || !strings.HasPrefix(loc, uri) || !strings.Contains(loc, "token=dfl_") {
			t.Fatalf("POST /login with %s: %d %q", uri, status, loc)
		}
	}
	accepted("docflow://callback")
	accepted("docflow://auth/callback?state=x")
	// The development client is off by default.
	for _, uri := range []string{"exp://evil.example:19000/--/cb", "exp://127.0.0.1:8081/--/cb", "exp://192.168.1.20:8081/--/cb",
		"https://evil.example/cb", "javascript:alert(1)", "docflow:", ""} {
		refused(uri)
	}
	e.SetEnv("MOBILE_DEV_CLIENT_ENABLED", "true")
	for _, uri := range []string{"exp://127.0.0.1:8081/--/cb", "exp://localhost:19000/--/cb", "exp://192.168.1.20:8081/--/cb",
		"exp://10.0.0.5:8081", "exp://172.16.3.4:8081/--/cb", "exp://[::1]:8081/--/cb", "exp://[fd00::1]:8081/--/cb"} {
		accepted(uri)
	}
	for _, uri := range []string{"exp://evil.example:19000/--/cb", "exp://8.8.8.8:19000/--/cb", "exp://u.exp.direct:80/--/cb",
		"exp://evil.example@127.0.0.1:8081/--/cb", "exp://127.0.0.1.evil.example/--/cb", "exp://localhost.evil.example/cb",
		"exp://[2001:db8::1]:8081/cb", "exp://0.0.0.0:8081/cb", "exp://169.254.169.254/cb"} {
		refused(uri)
	}
	// Nothing was minted for a refused target: only the accepted logins' tokens exist.
	if n := countRows(e, `SELECT count(*) FROM api_tokens`); n != 2+7 {
		t.Fatalf("%d tokens minted, want 9", n)
	}
}

// TestMobileTokenExpiresAndIsRevocable: the token a mobile login hands over
// expires after MOBILE_TOKEN_LIFETIME_DAYS, is in its owner's token list and
// stops working once revoked there.
func TestMobileTokenExpiresAndIsRevocable(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "pw"})
	check := func(days int) string {
		t.Helper()
		status, loc := mobileLogin(e, "docflow://callback")
		if status != 303 {
			t.Fatalf("mobile login %d", status)
		}
		u, err := url.Parse(loc)
		if err != nil {
			t.Fatal(err)
		}
		token := u.Query().Get("token")
		resp, body := e.do("GET", "/api/api-tokens/", token, nil)
		e.expect(resp, body, 200)
		var list []struct {
			ID        int64      `json:"id"`
			Name      string     `json:"name"`
			ExpiresAt *time.Time `json:"expires_at"`
		}
		decode(t, body, &list)
		if len(list) == 0 || !strings.HasPrefix(list[0].Name, "Mobile App – ") || list[0].ExpiresAt == nil {
			t.Fatalf("token list %s", body)
		}
		want := time.Now().Add(time.Duration(days) * 24 * time.Hour)
		if d := list[0].ExpiresAt.Sub(want); d < -time.Minute || d > time.Minute {
			t.Fatalf("mobile token expires %v, want about %v", list[0].ExpiresAt, want)
		}
		return token
	}
	check(365)
	e.SetEnv("MOBILE_TOKEN_LIFETIME_DAYS", "7")
	token := check(7)
	resp, body := e.do("GET", "/api/api-tokens/", token, nil)
	var list []struct {
		ID int64 `json:"id"`
	}
	decode(t, body, &list)
	resp, body = e.do("DELETE", "/api/api-tokens/"+itoa(list[0].ID), e.token("admin"), nil)
	e.expect(resp, body, 200)
	resp, body = e.do("GET", "/api/api-tokens/", token, nil)
	e.expect(resp, body, 401)
}
