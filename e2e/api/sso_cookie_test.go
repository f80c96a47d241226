package api_test

import (
	"context"
	nethttp "net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"docflow/internal/app/apptest"
)

// TestSSOCallbackShowsNoProviderText: whatever error and
// error_description a link to the callback carries, the genuine login
// page shows a fixed message per error code, never their words.
func TestSSOCallbackShowsNoProviderText(t *testing.T) {
	t.Parallel()
	e := newSSOEnv(t)
	b := newBrowser(t)
	for _, c := range []struct{ query, want string }{
		{"error=access_denied&error_description=" + url.QueryEscape("Your account is locked. Call support at +1 555 0100"), "cancelled or refused"},
		{"error=" + url.QueryEscape("Call_support_at_555_0100") + "&error_description=x", "The sign-in provider refused the sign-in"},
		{"error=temporarily_unavailable&error_description=" + url.QueryEscape("<b>Call support</b>"), "try again later"},
	} {
		for _, accept := range []string{"text/html", "application/json"} {
			p := b.do("GET", e.app.URL+"/oauth-callback?"+c.query+"&state=whatever", nil, "Accept", accept)
			if p.Status != 401 || !strings.Contains(p.Body, c.want) || strings.Contains(p.Body, "555") ||
				strings.Contains(strings.ToLower(p.Body), "call") || strings.Contains(p.Body, "locked") {
				t.Fatalf("%s (%s): %d %s", c.query, accept, p.Status, p.Body)
			}
		}
	}
	if n := e.count(`SELECT count(*) FROM audit_log WHERE action='sso.failed' AND detail LIKE '%555%'`); n != 0 {
		t.Fatal("provider text in the audit log")
	}
}

// TestSSOBindingCookieFresh: the browser binding is made fresh at every
// sign-in; a value planted in the browser (by a sibling subdomain) is
// never the binding, so an attempt started with it cannot be completed
// by a victim whose browser carries it (login CSRF by cookie tossing).
func TestSSOBindingCookieFresh(t *testing.T) {
	t.Parallel()
	e := newSSOEnv(t)
	planted := strings.Repeat("P", 43)
	appURL, _ := url.Parse(e.app.URL)
	plant := func(b *browser) {
		b.c.Jar.SetCookies(appURL, []*nethttp.Cookie{{Name: "docflow_sso", Value: planted, Path: "/"}})
	}
	attacker := newBrowser(t)
	plant(attacker)
	start := attacker.do("GET", e.app.URL+"/oauth-login", nil)
	set := start.Header.Get("Set-Cookie")
	if start.Status != 302 || !strings.HasPrefix(set, "docflow_sso=") || strings.Contains(set, planted) {
		t.Fatalf("binding cookie: %d %q", start.Status, set)
	}
	form := attacker.follow("GET", start.Location, nil, nil)
	cb := e.loginAtProvider(attacker, form.URL.Query().Get("authRequestID"), "bob", "bob-secret-1")
	victim := newBrowser(t)
	plant(victim)
	if p := victim.do("GET", cb, nil); p.Status != 400 || !strings.Contains(p.Body, "another browser") {
		t.Fatalf("victim with the planted cookie: %d %s", p.Status, p.Body)
	}
	if got := victim.do("GET", e.app.URL+"/api/files", nil); got.Status != 401 {
		t.Fatalf("victim signed in as the attacker: %d", got.Status)
	}
	// The browser that started a sign-in completes it.
	b := newBrowser(t)
	plant(b)
	if p := e.signIn(b, "/oauth-login", "bob"); p.Status != 303 {
		t.Fatalf("own sign-in: %d %s", p.Status, p.Body)
	}
}

// TestSSOSecureCookieName: a Secure binding cookie is a __Host- cookie
// (Path /, no Domain), which a sibling subdomain cannot set; the session
// cookie keeps its usual name.
func TestSSOSecureCookieName(t *testing.T) {
	t.Parallel()
	e := newSSOEnvWith(t, ssoOpts{env: map[string]string{"SESSION_COOKIE_SECURE": "true"}})
	p := newBrowser(t).do("GET", e.app.URL+"/oauth-login", nil)
	set := p.Header.Get("Set-Cookie")
	if p.Status != 302 || !strings.HasPrefix(set, "__Host-docflow_sso=") || !strings.Contains(set, "; secure") ||
		!strings.Contains(set, "; path=/") || strings.Contains(strings.ToLower(set), "domain=") {
		t.Fatalf("binding cookie: %d %q", p.Status, set)
	}
	login := newBrowser(t).do("POST", e.app.URL+"/login", url.Values{"username": {"admin"}, "password": {"local-admin-pw"}})
	if !strings.HasPrefix(login.Header.Get("Set-Cookie"), "session=") {
		t.Fatalf("session cookie: %q", login.Header.Get("Set-Cookie"))
	}
}

// TestSSONotices: SSO on with no allow-list, with the default admin
// group name, or with multi-user mode off is logged at every start and
// shown to administrators on /; a careful configuration shows none.
func TestSSONotices(t *testing.T) {
	t.Parallel()
	home := func(env map[string]string) string {
		t.Helper()
		base := map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "local-admin-pw",
			"OIDC_ISSUER": "https://idp.example/", "OIDC_CLIENT_ID": "docflow"}
		for k, v := range env {
			base[k] = v
		}
		a := apptest.New(t, apptest.Options{Role: "api", Env: base})
		e := &ssoEnv{t: t, app: a}
		p := e.admin().do("GET", a.URL+"/status", nil, "Accept", "text/html")
		if p.Status != 200 {
			t.Fatalf("home: %d %s", p.Status, p.Body)
		}
		return p.Body
	}
	body := home(nil)
	for _, want := range []string{"no allow-list", "ADMIN_GROUP_NAME", "MULTI_USER_ENABLED is false"} {
		if !strings.Contains(body, want) {
			t.Errorf("notice %q missing: %s", want, body)
		}
	}
	careful := map[string]string{"OIDC_ALLOWED_DOMAINS": "example.com", "ADMIN_GROUP_NAME": "docflow-admins", "MULTI_USER_ENABLED": "true"}
	body = home(careful)
	if strings.Contains(body, "Single sign-on") || strings.Contains(body, "single sign-on") {
		t.Errorf("notices for a careful configuration: %s", body)
	}
}

// TestSSONoticeOfOldMerges: a local account an SSO identity signed in as
// before identities were bound (kept by address only) is named to the
// administrators at start, until it is linked or released.
func TestSSONoticeOfOldMerges(t *testing.T) {
	t.Parallel()
	env := map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "local-admin-pw", "MULTI_USER_ENABLED": "true",
		"OIDC_ISSUER": "https://idp.example/", "OIDC_CLIENT_ID": "docflow", "OIDC_ALLOWED_GROUPS": "staff"}
	first := apptest.New(t, apptest.Options{Role: "api", Env: env})
	e := &ssoEnv{t: t, app: first}
	id := e.localAccount(e.admin(), "merged@example.com", true)
	if _, err := first.DB.Pool.Exec(context.Background(), `INSERT INTO sso_users (user_id, issuer, subject, is_admin, first_sign_in_at, last_sign_in_at, verified_at)
		VALUES ('merged@example.com', 'https://idp.example/', 'sub-9', FALSE, now(), now(), now())`); err != nil {
		t.Fatal(err)
	}
	restart := func() string {
		t.Helper()
		a := apptest.New(t, apptest.Options{Role: "api", Env: env, DB: first.DB})
		p := (&ssoEnv{t: t, app: a}).admin().do("GET", a.URL+"/status", nil, "Accept", "text/html")
		return p.Body
	}
	if body := restart(); !strings.Contains(body, "merged@example.com") || !strings.Contains(body, "sso-link") {
		t.Fatalf("no notice of the old merge: %s", body)
	}
	if p := e.admin().json("PUT", first.URL+"/api/admin/users/local/"+strconv.FormatInt(id, 10)+"/sso-link", map[string]any{}); p.Status != 200 {
		t.Fatalf("link: %d %s", p.Status, p.Body)
	}
	if body := restart(); strings.Contains(body, "merged@example.com") {
		t.Fatalf("notice of a linked account: %s", body)
	}
}
