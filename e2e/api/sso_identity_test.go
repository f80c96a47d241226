package api_test

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"docflow/internal/testsupport/oidcop"
)

// An SSO identity is the provider's subject: these tests are the attacks
// on it, each against the real server and the real provider.

// json sends v as a JSON body.
func (b *browser) json(method, u string, v any) page {
	b.t.Helper()
	raw, _ := json.Marshal(v)
	return b.send(method, u, strings.NewReader(string(raw)), "Content-Type", "application/json")
}

// admin is a browser signed in as the local admin (ADMIN_USERNAME).
func (e *ssoEnv) admin() *browser {
	e.t.Helper()
	b := newBrowser(e.t)
	if p := b.do("POST", e.app.URL+"/login", url.Values{"username": {"admin"}, "password": {"local-admin-pw"}}); p.Status != 303 {
		e.t.Fatalf("admin login: %d %s", p.Status, p.Body)
	}
	return b
}

// localAccount creates a local account and returns its id.
func (e *ssoEnv) localAccount(admin *browser, email string, isAdmin bool) int64 {
	e.t.Helper()
	p := admin.json("POST", e.app.URL+"/api/admin/users/local", map[string]any{"email": email, "username": strings.Split(email, "@")[0],
		"password": "local-password-1", "is_admin": isAdmin})
	if p.Status != 201 {
		e.t.Fatalf("create %s: %d %s", email, p.Status, p.Body)
	}
	var u struct {
		ID int64 `json:"id"`
	}
	json.Unmarshal([]byte(p.Body), &u) //nolint:errcheck
	return u.ID
}

// isAdminNow says whether b's session has admin rights.
func (e *ssoEnv) isAdminNow(b *browser) bool {
	e.t.Helper()
	p := b.do("GET", e.app.URL+"/api/admin/audit-log?per_page=1", nil)
	if p.Status != 200 && p.Status != 403 {
		e.t.Fatalf("audit log: %d %s", p.Status, p.Body)
	}
	return p.Status == 200
}

// audited counts audit entries of action whose target or detail holds words.
func (e *ssoEnv) audited(action, words string) int {
	return e.count(`SELECT count(*) FROM audit_log WHERE action=$1 AND (target LIKE $2 OR detail LIKE $2)`, action, "%"+words+"%")
}

// TestSSOUnverifiedAddressNotTrusted: an address the provider does not
// say is verified (email_verified false, or no email_verified at all, as
// Entra ID and some self-hosted providers send) is not the user: a user
// who sets their address to a local administrator's signs in as their
// own subject, with no rights of that account. OIDC_TRUST_UNVERIFIED_EMAIL
// believes an absent claim, and then the address is a local account's,
// which needs an administrator's link.
func TestSSOUnverifiedAddressNotTrusted(t *testing.T) {
	e := newSSOEnvWith(t, ssoOpts{users: []oidcop.User{
		{ID: "u-mal1", Username: "mal1", Password: "mal-secret-1", Email: "boss@example.com", EmailVerified: false},
		{ID: "u-mal2", Username: "mal2", Password: "mal-secret-2", Email: "Boss@Example.com", NoEmailVerified: true},
	}})
	e.localAccount(e.admin(), "boss@example.com", true)
	for _, user := range []string{"mal1", "mal2"} {
		b := newBrowser(t)
		if p := e.signIn(b, "/oauth-login", user); p.Status != 303 {
			t.Fatalf("%s: %d %s", user, p.Status, p.Body)
		}
		if e.isAdminNow(b) {
			t.Fatalf("%s signed in with an unverified address is an administrator", user)
		}
		if n := e.count(`SELECT count(*) FROM sessions WHERE user_id ILIKE 'boss@example.com'`); n != 0 {
			t.Fatalf("%s got a session as the local account", user)
		}
		if n := e.count(`SELECT count(*) FROM sso_users WHERE user_id=$1`, "u-"+user); n != 1 {
			t.Fatalf("%s is not its subject", user)
		}
	}
	e.app.SetEnv("OIDC_TRUST_UNVERIFIED_EMAIL", "true")
	// mal2 is bound to its subject already; a new identity with the
	// same claims meets the local account, which is not linked.
	e.op.AddUser(oidcop.User{ID: "u-mal3", Username: "mal3", Password: "mal-secret-3", Email: "boss@example.com", NoEmailVerified: true})
	e.users = append(e.users, oidcop.User{Username: "mal3", Password: "mal-secret-3"})
	p := e.signIn(newBrowser(t), "/oauth-login", "mal3")
	if p.Status != 403 || !strings.Contains(p.Body, "administrator must link it") {
		t.Fatalf("trusted address of an unlinked local account: %d %s", p.Status, p.Body)
	}
	// An explicit false is never trusted.
	if p := e.signIn(newBrowser(t), "/oauth-login", "mal1"); p.Status != 303 {
		t.Fatalf("mal1 with the opt-out: %d %s", p.Status, p.Body)
	}
	if n := e.count(`SELECT count(*) FROM sessions WHERE user_id ILIKE 'boss@example.com'`); n != 0 {
		t.Fatal("a session as the local account")
	}
}

// TestSSOLocalAccountNeedsLink: a verified address that is a local
// (administrator's) account signs in only once an administrator linked
// them, never while the account is deactivated, and no more once
// unlinked; each step is audited.
func TestSSOLocalAccountNeedsLink(t *testing.T) {
	e := newSSOEnvWith(t, ssoOpts{users: []oidcop.User{
		{ID: "u-boss", Username: "boss", Password: "boss-secret-1", GivenName: "Big", FamilyName: "Boss", Email: "boss@example.com", EmailVerified: true},
		{ID: "u-gone", Username: "gone", Password: "gone-secret-1", Email: "gone@example.com", EmailVerified: true},
	}})
	admin := e.admin()
	boss := e.localAccount(admin, "boss@example.com", true)
	gone := e.localAccount(admin, "gone@example.com", false)
	if p := admin.json("PATCH", e.app.URL+"/api/admin/users/local/"+strconv.FormatInt(gone, 10), map[string]any{"is_active": false}); p.Status != 200 {
		t.Fatalf("deactivate: %d %s", p.Status, p.Body)
	}
	refused := func(user, words string) {
		t.Helper()
		b := newBrowser(t)
		p := e.signIn(b, "/oauth-login", user)
		if p.Status != 403 || !strings.Contains(p.Body, words) {
			t.Fatalf("%s: want 403 %q, got %d %s", user, words, p.Status, p.Body)
		}
		if got := b.do("GET", e.app.URL+"/api/files", nil); got.Status != 401 {
			t.Fatalf("%s has a session after a refusal: %d", user, got.Status)
		}
	}
	refused("boss", "administrator must link it")
	refused("gone", "deactivated")
	if n := e.audited("sso.failed", "not linked"); n != 1 {
		t.Fatalf("refusal audited %d times", n)
	}

	link := e.app.URL + "/api/admin/users/local/" + strconv.FormatInt(boss, 10) + "/sso-link"
	if p := newBrowser(t).json("PUT", link, map[string]any{}); p.Status != 401 {
		t.Fatalf("link without an administrator: %d", p.Status)
	}
	if p := admin.json("PUT", link, map[string]any{}); p.Status != 200 || !strings.Contains(p.Body, `"subject":""`) ||
		!strings.Contains(p.Body, `"issuer":"`+e.op.Issuer+`"`) {
		t.Fatalf("link: %d %s", p.Status, p.Body)
	}
	b := newBrowser(t)
	if p := e.signIn(b, "/oauth-login", "boss"); p.Status != 303 {
		t.Fatalf("linked sign-in: %d %s", p.Status, p.Body)
	}
	if !e.isAdminNow(b) {
		t.Fatal("the linked local administrator is no administrator over SSO")
	}
	if p := admin.do("GET", link, nil); p.Status != 200 || !strings.Contains(p.Body, `"subject":"u-boss"`) {
		t.Fatalf("bound link: %d %s", p.Status, p.Body)
	}
	if n := e.audited("sso.link", "bound by the next sign-in"); n != 1 {
		t.Fatalf("link audited %d times", n)
	}

	// Deactivated: refused even though linked.
	if p := admin.json("PATCH", e.app.URL+"/api/admin/users/local/"+strconv.FormatInt(boss, 10), map[string]any{"is_active": false}); p.Status != 200 {
		t.Fatalf("deactivate: %d %s", p.Status, p.Body)
	}
	refused("boss", "deactivated")
	if p := admin.json("PATCH", e.app.URL+"/api/admin/users/local/"+strconv.FormatInt(boss, 10), map[string]any{"is_active": true}); p.Status != 200 {
		t.Fatalf("reactivate: %d %s", p.Status, p.Body)
	}
	// Unlinked: refused again, and the SSO session is over.
	b = newBrowser(t)
	if p := e.signIn(b, "/oauth-login", "boss"); p.Status != 303 {
		t.Fatalf("linked sign-in: %d %s", p.Status, p.Body)
	}
	if p := admin.do("DELETE", link, nil); p.Status != 200 {
		t.Fatalf("unlink: %d %s", p.Status, p.Body)
	}
	if got := b.do("GET", e.app.URL+"/api/files", nil); got.Status != 401 {
		t.Fatalf("session after unlink: %d", got.Status)
	}
	refused("boss", "administrator must link it")
	if n := e.audited("sso.unlink", "u-boss"); n != 1 {
		t.Fatalf("unlink audited %d times", n)
	}
	// A linked account deleted: its SSO identity does not go on under its id.
	if p := admin.json("PUT", link, map[string]any{"subject": "u-boss"}); p.Status != 200 {
		t.Fatalf("link by subject: %d %s", p.Status, p.Body)
	}
	if p := e.signIn(newBrowser(t), "/oauth-login", "boss"); p.Status != 303 {
		t.Fatalf("linked by subject: %d %s", p.Status, p.Body)
	}
	if p := admin.do("DELETE", e.app.URL+"/api/admin/users/local/"+strconv.FormatInt(boss, 10), nil); p.Status != 204 {
		t.Fatalf("delete: %d %s", p.Status, p.Body)
	}
	refused("boss", "no longer exists")
}

// TestSSOSubjectChanged: a second identity of the provider with a known
// address (a user deleted and recreated, or an address reassigned) is not
// the first: refused and audited, until an administrator releases the
// address.
func TestSSOSubjectChanged(t *testing.T) {
	e := newSSOEnvWith(t, ssoOpts{users: []oidcop.User{
		{ID: "u-ann", Username: "ann", Password: "ann-secret-1", Email: "ann@example.com", EmailVerified: true, Groups: []string{ssoAdminGroup}},
		{ID: "u-ann-2", Username: "ann2", Password: "ann-secret-2", Email: "ann@example.com", EmailVerified: true},
	}})
	if p := e.signIn(newBrowser(t), "/oauth-login", "ann"); p.Status != 303 {
		t.Fatalf("ann: %d %s", p.Status, p.Body)
	}
	b := newBrowser(t)
	if p := e.signIn(b, "/oauth-login", "ann2"); p.Status != 403 || !strings.Contains(p.Body, "belongs to another single sign-on account") {
		t.Fatalf("another subject: %d %s", p.Status, p.Body)
	}
	if got := b.do("GET", e.app.URL+"/api/files", nil); got.Status != 401 {
		t.Fatalf("session after the refusal: %d", got.Status)
	}
	if n := e.count(`SELECT count(*) FROM audit_log WHERE action='sso.subject_changed' AND target='user:ann@example.com' AND detail LIKE '%u-ann-2%'`); n != 1 {
		t.Fatalf("subject change audited %d times", n)
	}
	if n := e.count(`SELECT count(*) FROM sso_users WHERE user_id='ann@example.com' AND subject='u-ann'`); n != 1 {
		t.Fatal("the stored subject changed")
	}
	admin := e.admin()
	identity := e.app.URL + "/api/admin/users/" + url.PathEscape("ann@example.com") + "/sso-identity"
	if p := admin.do("GET", identity, nil); p.Status != 200 || !strings.Contains(p.Body, `"subject":"u-ann"`) || strings.Contains(p.Body, "refresh") {
		t.Fatalf("identity: %d %s", p.Status, p.Body)
	}
	if p := admin.do("DELETE", identity, nil); p.Status != 200 {
		t.Fatalf("release: %d %s", p.Status, p.Body)
	}
	if p := e.signIn(newBrowser(t), "/oauth-login", "ann2"); p.Status != 303 {
		t.Fatalf("after the release: %d %s", p.Status, p.Body)
	}
	if n := e.audited("sso.forget", "u-ann"); n != 1 {
		t.Fatalf("release audited %d times", n)
	}
}

// TestSSOAllowLists: OIDC_ALLOWED_DOMAINS and OIDC_ALLOWED_GROUPS keep
// everyone else out (the message does not show the lists); without them
// any account at the provider signs in.
func TestSSOAllowLists(t *testing.T) {
	e := newSSOEnvWith(t, ssoOpts{users: []oidcop.User{
		{ID: "u-in", Username: "in", Password: "in-secret-1", Email: "in@example.com", EmailVerified: true, Groups: []string{"staff"}},
		{ID: "u-out", Username: "out", Password: "out-secret-1", Email: "out@gmail.test", EmailVerified: true, Groups: []string{"staff"}},
		{ID: "u-sub", Username: "sub", Password: "sub-secret-1", Email: "sub@evil.example.com", EmailVerified: true, Groups: []string{"staff"}},
		{ID: "u-unv", Username: "unv", Password: "unv-secret-1", Email: "unv@example.com", EmailVerified: false, Groups: []string{"staff"}},
		{ID: "u-nogroup", Username: "nogroup", Password: "nog-secret-1", Email: "nogroup@example.com", EmailVerified: true, Groups: []string{"Staff", "/staff"}},
	}})
	if p := e.signIn(newBrowser(t), "/oauth-login", "out"); p.Status != 303 {
		t.Fatalf("no allow-list: %d %s", p.Status, p.Body)
	}
	e.app.SetEnv("OIDC_ALLOWED_DOMAINS", "example.com")
	e.app.SetEnv("OIDC_ALLOWED_GROUPS", "staff")
	for _, user := range []string{"out", "sub", "unv", "nogroup"} {
		b := newBrowser(t)
		p := e.signIn(b, "/oauth-login", user)
		if p.Status != 403 || !strings.Contains(p.Body, "not allowed to sign in here") || strings.Contains(p.Body, "example.com") ||
			strings.Contains(p.Body, "staff") {
			t.Fatalf("%s: %d %s", user, p.Status, p.Body)
		}
		if got := b.do("GET", e.app.URL+"/api/files", nil); got.Status != 401 {
			t.Fatalf("%s has a session: %d", user, got.Status)
		}
	}
	if p := e.signIn(newBrowser(t), "/oauth-login", "in"); p.Status != 303 {
		t.Fatalf("allowed user: %d %s", p.Status, p.Body)
	}
	if n := e.audited("sso.failed", "not in OIDC_ALLOWED_DOMAINS"); n != 2 {
		t.Fatalf("domain refusals audited %d times", n)
	}
	if n := e.audited("sso.failed", "no group in OIDC_ALLOWED_GROUPS"); n != 1 {
		t.Fatalf("group refusals audited %d times", n)
	}
}

// TestSSOAdminGroupExact: ADMIN_GROUP_NAME (default admin) is matched
// exactly: a group a user made themselves named "Admins", "/admin" or
// "admin " gives no admin rights.
func TestSSOAdminGroupExact(t *testing.T) {
	e := newSSOEnvWith(t, ssoOpts{env: map[string]string{"ADMIN_GROUP_NAME": "admin"}, users: []oidcop.User{
		{ID: "u-a", Username: "a", Password: "a-secret-1", Email: "a@example.com", EmailVerified: true, Groups: []string{"admin"}},
		{ID: "u-b", Username: "b", Password: "b-secret-1", Email: "b@example.com", EmailVerified: true, Groups: []string{"Admins"}},
		{ID: "u-c", Username: "c", Password: "c-secret-1", Email: "c@example.com", EmailVerified: true, Groups: []string{"/admin"}},
		{ID: "u-d", Username: "d", Password: "d-secret-1", Email: "d@example.com", EmailVerified: true, Groups: []string{"admin ", "ADMIN"}},
	}})
	for _, c := range []struct {
		user  string
		admin bool
	}{{"a", true}, {"b", false}, {"c", false}, {"d", false}} {
		b := newBrowser(t)
		if p := e.signIn(b, "/oauth-login", c.user); p.Status != 303 {
			t.Fatalf("%s: %d %s", c.user, p.Status, p.Body)
		}
		if got := e.isAdminNow(b); got != c.admin {
			t.Errorf("%s: admin %v, want %v", c.user, got, c.admin)
		}
	}
}
