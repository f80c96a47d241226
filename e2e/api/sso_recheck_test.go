package api_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"docflow/internal/testsupport/oidcop"
)

// An SSO administrator's rights are read when used: the status the
// provider gave holds for SSO_ADMIN_RECHECK, then the provider is asked
// again with the refresh token kept at sign-in.

func (e *ssoEnv) mobileToken(user string) string {
	e.t.Helper()
	p := e.signIn(newBrowser(e.t), "/oauth-login?mobile=1&redirect_uri="+url.QueryEscape("docflow://callback"), user)
	u, err := url.Parse(p.Location)
	if p.Status != 303 || err != nil || u.Query().Get("token") == "" {
		e.t.Fatalf("mobile sign-in: %d %q %s", p.Status, p.Location, p.Body)
	}
	return u.Query().Get("token")
}

// expire makes the stored admin status due for a check: SSO_ADMIN_RECHECK
// becomes 1 s, and that second passes.
func (e *ssoEnv) expire() {
	e.app.SetEnv("SSO_ADMIN_RECHECK", "1s")
	time.Sleep(1100 * time.Millisecond)
}

// TestSSOAdminRecheck: an administrator removed from the admin group at
// the provider keeps the status only until SSO_ADMIN_RECHECK has passed;
// then the provider, asked with the refresh token (once), says so, and
// the session and the API token lose admin rights; a member added back
// regains them at the next check; a user the provider refuses (its
// refresh token refused) is disabled.
func TestSSOAdminRecheck(t *testing.T) {
	e := newSSOEnvWith(t, ssoOpts{env: map[string]string{"OIDC_SCOPES": "openid,email,profile,offline_access", "SSO_ADMIN_RECHECK": "1h"}})
	b := newBrowser(t)
	if p := e.signIn(b, "/oauth-login", "ann"); p.Status != 303 {
		t.Fatalf("sign-in: %d %s", p.Status, p.Body)
	}
	token := e.mobileToken("ann")
	if !e.isAdminNow(b) || bearerGet(t, e.app.URL+"/api/admin/audit-log", token) != 200 {
		t.Fatal("ann is no administrator")
	}
	if n := e.count(`SELECT count(*) FROM sso_users WHERE user_id='ann@example.com' AND refresh_token IS NOT NULL`); n != 1 {
		t.Fatal("no refresh token kept")
	}
	e.op.SetGroups("u-ann", "staff")
	// Within SSO_ADMIN_RECHECK the stored status holds, and the provider
	// is not asked.
	if !e.isAdminNow(b) {
		t.Fatal("the status changed before SSO_ADMIN_RECHECK")
	}
	if n := e.op.RefreshCalls(); n != 0 {
		t.Fatalf("provider asked %d times within SSO_ADMIN_RECHECK", n)
	}
	e.expire()
	if e.isAdminNow(b) {
		t.Fatal("a session kept admin rights the provider took away")
	}
	// The answer holds for the next SSO_ADMIN_RECHECK.
	e.app.SetEnv("SSO_ADMIN_RECHECK", "1h")
	time.Sleep(2100 * time.Millisecond) // the token lookup's cache
	if st := bearerGet(t, e.app.URL+"/api/admin/audit-log", token); st != 403 {
		t.Fatalf("a token kept admin rights the provider took away: %d", st)
	}
	if st := bearerGet(t, e.app.URL+"/api/files", token); st != 200 {
		t.Fatalf("the token of a user still allowed: %d", st)
	}
	if n := e.op.RefreshCalls(); n != 1 {
		t.Fatalf("provider asked %d times, want once", n)
	}
	e.op.SetGroups("u-ann", ssoAdminGroup)
	if e.isAdminNow(b) {
		t.Fatal("the status changed before SSO_ADMIN_RECHECK")
	}
	e.expire()
	if !e.isAdminNow(b) {
		t.Fatal("a member added back is no administrator after the check")
	}

	// The provider refuses the user: disabled, its session and its token
	// stop working.
	e.op.Disable("u-ann")
	e.expire()
	if p := b.do("GET", e.app.URL+"/api/files", nil); p.Status != 401 {
		t.Fatalf("the session of a user the provider refused: %d %s", p.Status, p.Body)
	}
	if st := bearerGet(t, e.app.URL+"/api/files", token); st != 401 {
		t.Fatalf("the token of a user the provider refused: %d", st)
	}
	p := e.admin().do("GET", e.app.URL+"/api/admin/users/"+url.PathEscape("ann@example.com")+"/sso-identity", nil)
	if p.Status != 200 || strings.Contains(p.Body, `"disabled_at":null`) || !strings.Contains(p.Body, "invalid_grant") {
		t.Fatalf("identity of a refused user: %d %s", p.Status, p.Body)
	}
	if n := e.count(`SELECT count(*) FROM sso_users WHERE user_id='ann@example.com' AND refresh_token IS NULL AND NOT is_admin`); n != 1 {
		t.Fatal("a refused user kept its refresh token or admin status")
	}
}

// TestSSOAdminRecheckImpossible: without a refresh token (the provider
// gave none: no offline_access), or with the provider unreachable, an SSO
// administrator is no administrator once SSO_ADMIN_RECHECK has passed,
// until it signs in again; its ordinary rights stay.
func TestSSOAdminRecheckImpossible(t *testing.T) {
	e := newSSOEnvWith(t, ssoOpts{env: map[string]string{"SSO_ADMIN_RECHECK": "1h"}})
	b := newBrowser(t)
	if p := e.signIn(b, "/oauth-login", "ann"); p.Status != 303 {
		t.Fatalf("sign-in: %d %s", p.Status, p.Body)
	}
	if !e.isAdminNow(b) {
		t.Fatal("ann is no administrator")
	}
	e.expire()
	if e.isAdminNow(b) {
		t.Fatal("an administrator that cannot be checked kept admin rights")
	}
	if got := b.do("GET", e.app.URL+"/api/files", nil); got.Status != 200 {
		t.Fatalf("ordinary rights: %d", got.Status)
	}
	if p := e.signIn(b, "/oauth-login", "ann"); p.Status != 303 {
		t.Fatalf("sign-in again: %d %s", p.Status, p.Body)
	}
	if !e.isAdminNow(b) {
		t.Fatal("a new sign-in did not restore the status")
	}

	// With a refresh token, and the provider gone.
	e2 := newSSOEnvWith(t, ssoOpts{env: map[string]string{"OIDC_SCOPES": "openid,email,profile,offline_access", "SSO_ADMIN_RECHECK": "1h"},
		users: []oidcop.User{ssoUsers[0]}})
	b2 := newBrowser(t)
	if p := e2.signIn(b2, "/oauth-login", "ann"); p.Status != 303 {
		t.Fatalf("sign-in: %d %s", p.Status, p.Body)
	}
	e2.op.Close()
	e2.expire()
	start := time.Now()
	if e2.isAdminNow(b2) {
		t.Fatal("an administrator that cannot be checked kept admin rights")
	}
	// The failure is remembered: the next request does not wait for the
	// provider again.
	mid := time.Now()
	if e2.isAdminNow(b2) {
		t.Fatal("admin rights came back")
	}
	if d := time.Since(mid); d > time.Second {
		t.Fatalf("second request took %v (first %v)", d, mid.Sub(start))
	}
	if n := e2.count(`SELECT count(*) FROM sso_users WHERE user_id='ann@example.com' AND disabled_at IS NULL`); n != 1 {
		t.Fatal("an unreachable provider disabled the user")
	}
}
