package http

import (
	"encoding/json"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"docflow/internal/testsupport"
	"docflow/storage/postgres"
	"docflow/streams"
)

func mountSSO(timeout time.Duration) func(*testEnv) {
	return func(e *testEnv) {
		c, err := postgres.NewCipher(strings.Repeat("k", 40))
		if err != nil {
			e.t.Fatal(err)
		}
		e.Server.MountSSO(SSODeps{Store: postgres.NewSSOStore(e.DB, c), Signups: postgres.NewProfileStore(e.DB, streams.EncodeEvent),
			Timeout: timeout})
	}
}

// TestSSONotConfigured: without OIDC_ISSUER and OIDC_CLIENT_ID the SSO
// routes are 404 and /login shows no SSO button.
func TestSSONotConfigured(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "OIDC_ISSUER": "https://idp.example/"}, mountSSO(0))
	for _, p := range []string{"/oauth-login", "/oauth-callback?state=x&code=y"} {
		resp, body := e.do("GET", p, "", nil)
		e.expect(resp, body, 404)
	}
	resp, body := e.do("GET", "/login", "", nil)
	e.expect(resp, body, 200)
	if strings.Contains(string(body), "oauth-login") {
		t.Fatalf("SSO button without a client id: %s", body)
	}
}

// TestSSOProviderTimeout: a provider that accepts connections and never
// answers holds a sign-in no longer than the SSO timeout, then 502; a
// failed discovery is remembered for a moment, so the next attempts do
// not ask the provider again.
func TestSSOProviderTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			held = append(held, c)
		}
	}()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "OIDC_ISSUER": "http://" + ln.Addr().String() + "/",
		"OIDC_CLIENT_ID": "docflow"}, mountSSO(300*time.Millisecond))
	// The provider never answers: the 502 at all shows the timeout (the
	// client gives up after 30 s, a sign-in waiting on the provider would
	// never answer).
	var asked int64
	for i := 0; i < 3; i++ {
		resp, body := e.do("GET", "/oauth-login", "", nil)
		e.expect(resp, body, 502)
		if !strings.Contains(string(body), "cannot be reached") {
			t.Fatalf("body %s", body)
		}
		if i == 0 {
			testsupport.WaitFor(t, time.Minute, "the provider asked", func() bool { return accepted.Load() > 0 })
			asked = accepted.Load()
		} else if n := accepted.Load(); n != asked {
			t.Fatalf("attempt %d asked the provider again (%d connections, %d after the first)", i, n, asked)
		}
	}
}

// TestSSOClaims: the address counts only when the provider says it is
// verified (true, as a boolean or a string; an absent claim only with
// OIDC_TRUST_UNVERIFIED_EMAIL); the groups claim is a list or one string,
// and ADMIN_GROUP_NAME matches exactly ("Admins", "/admins" and a group
// object do not); the display name falls back from name to
// preferred_username to the address to the subject.
func TestSSOClaims(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		claims      string
		trustAbsent bool
		email, name string
		admin       bool
	}{
		{`{"email":"Ann@Example.com","email_verified":true,"name":"Ann","groups":["x","admins"]}`, false, "ann@example.com", "Ann", true},
		{`{"email":"ann@example.com","email_verified":"true","preferred_username":"ann","groups":"admins"}`, false, "ann@example.com", "ann", true},
		{`{"email":"ann@example.com","preferred_username":"ann","groups":"admins"}`, false, "", "ann", true},
		{`{"email":"ann@example.com","preferred_username":"ann"}`, true, "ann@example.com", "ann", false},
		{`{"email":"ann@example.com","email_verified":null}`, false, "", "sub-1", false},
		{`{"email":"ann@example.com","email_verified":false,"groups":["/admins"]}`, true, "", "sub-1", false},
		{`{"email":"ann@example.com","email_verified":"false","groups":[{"name":"admins"}]}`, true, "", "sub-1", false},
		{`{"email":"not-an-address","email_verified":true,"groups":["Admins"]}`, false, "", "sub-1", false},
		{`{"email":"bob@example.com","email_verified":true,"groups":["admins "]}`, false, "bob@example.com", "bob@example.com", false},
	} {
		var cl ssoClaims
		if err := json.Unmarshal([]byte(c.claims), &cl); err != nil {
			t.Fatal(err)
		}
		u := cl.user("sub-1", ssoPolicy{adminGroup: "admins", trustAbsent: c.trustAbsent})
		if u.Email != c.email || u.DisplayName != c.name || u.IsAdmin != c.admin || u.Subject != "sub-1" {
			t.Errorf("%s (trust absent %v): %+v", c.claims, c.trustAbsent, u)
		}
	}
	var cl ssoClaims
	json.Unmarshal([]byte(`{"email":"a@example.com","email_verified":true,"groups":["admins"]}`), &cl) //nolint:errcheck
	if u := cl.user("s", ssoPolicy{}); u.IsAdmin {
		t.Fatal("an empty ADMIN_GROUP_NAME made an admin")
	}
}

// TestSSOAllowLists: OIDC_ALLOWED_DOMAINS wants a verified address in a
// listed domain (exactly), OIDC_ALLOWED_GROUPS a listed group (exactly);
// both apply when both are set.
func TestSSOAllowLists(t *testing.T) {
	t.Parallel()
	p := ssoPolicy{domains: []string{"example.com"}, groups: []string{"staff"}}
	for _, c := range []struct {
		u  ssoUser
		ok bool
	}{
		{ssoUser{Email: "ann@example.com", Groups: []string{"staff"}}, true},
		{ssoUser{Email: "ann@sub.example.com", Groups: []string{"staff"}}, false},
		{ssoUser{Email: "ann@example.com.evil.test", Groups: []string{"staff"}}, false},
		{ssoUser{Email: "", Groups: []string{"staff"}}, false},
		{ssoUser{Email: "ann@example.com", Groups: []string{"Staff", "/staff"}}, false},
		{ssoUser{Email: "ann@example.com"}, false},
	} {
		if got := p.refusal(c.u) == ""; got != c.ok {
			t.Errorf("%+v: allowed %v, want %v (%s)", c.u, got, c.ok, p.refusal(c.u))
		}
	}
	if why := (ssoPolicy{}).refusal(ssoUser{Subject: "x"}); why != "" {
		t.Fatalf("no allow-list refused: %s", why)
	}
}
