package http

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"docflow/storage/postgres"
	"docflow/streams"
)

func mountSSO(timeout time.Duration) func(*testEnv) {
	return func(e *testEnv) {
		e.Server.MountSSO(SSODeps{Store: postgres.NewSSOStore(e.DB), Signups: postgres.NewProfileService(e.DB, streams.EncodeEvent),
			Timeout: timeout})
	}
}

// TestSSONotConfigured: without OIDC_ISSUER and OIDC_CLIENT_ID the SSO
// routes are 404 and /login shows no SSO button.
func TestSSONotConfigured(t *testing.T) {
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
// not wait again.
func TestSSOProviderTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
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
			held = append(held, c)
		}
	}()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "OIDC_ISSUER": "http://" + ln.Addr().String() + "/",
		"OIDC_CLIENT_ID": "docflow"}, mountSSO(300*time.Millisecond))
	for i := 0; i < 3; i++ {
		start := time.Now()
		resp, body := e.do("GET", "/oauth-login", "", nil)
		e.expect(resp, body, 502)
		if !strings.Contains(string(body), "cannot be reached") {
			t.Fatalf("body %s", body)
		}
		if d := time.Since(start); d > 3*time.Second || (i > 0 && d > 200*time.Millisecond) {
			t.Fatalf("attempt %d took %v", i, d)
		}
	}
}

// TestSSOClaims: the user id is the e-mail unless the provider says it is
// not verified (boolean or string); the groups claim is a list or one
// string, "/group" (a group path) counts; the display name falls back from
// name to preferred_username to the address to the subject.
func TestSSOClaims(t *testing.T) {
	for _, c := range []struct {
		claims   string
		id, name string
		admin    bool
	}{
		{`{"email":"Ann@Example.com","email_verified":true,"name":"Ann","groups":["x","admins"]}`, "ann@example.com", "Ann", true},
		{`{"email":"ann@example.com","preferred_username":"ann","groups":"admins"}`, "ann@example.com", "ann", true},
		{`{"email":"ann@example.com","email_verified":false,"groups":["/admins"]}`, "sub-1", "sub-1", true},
		{`{"email":"ann@example.com","email_verified":"false","groups":[{"name":"admins"}]}`, "sub-1", "sub-1", false},
		{`{"email":"not-an-address","groups":["Admins"]}`, "sub-1", "sub-1", false},
		{`{"email":"bob@example.com"}`, "bob@example.com", "bob@example.com", false},
	} {
		var cl ssoClaims
		if err := json.Unmarshal([]byte(c.claims), &cl); err != nil {
			t.Fatal(err)
		}
		u := cl.user("sub-1", "admins")
		if u.UserID != c.id || u.DisplayName != c.name || u.IsAdmin != c.admin || u.Subject != "sub-1" {
			t.Errorf("%s: %+v", c.claims, u)
		}
	}
	var cl ssoClaims
	json.Unmarshal([]byte(`{"email":"a@example.com","groups":["admins"]}`), &cl) //nolint:errcheck
	if u := cl.user("s", ""); u.IsAdmin {
		t.Fatal("an empty ADMIN_GROUP_NAME made an admin")
	}
}
