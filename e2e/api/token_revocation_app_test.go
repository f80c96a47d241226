package api_test

import (
	"context"
	"encoding/json"
	nethttp "net/http"
	"strconv"
	"strings"
	"testing"

	"docflow/internal/app/apptest"
)

// accountsEnv is a built API with authentication on, its admin signed in.
type accountsEnv struct {
	t     *testing.T
	a     *apptest.App
	admin *client
}

func newAccountsEnv(t *testing.T) *accountsEnv {
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true",
		"ADMIN_USERNAME": "admin", "ADMIN_PASSWORD": "admin-password"}})
	admin := newClient(t, a.URL)
	if s := admin.login("admin", "admin-password"); s != 200 {
		t.Fatalf("admin sign-in: %d", s)
	}
	return &accountsEnv{t: t, a: a, admin: admin}
}

// account creates a local account through the admin API and returns its
// id and a client signed in as it.
func (e *accountsEnv) account(email, password string, admin bool) (int64, *client) {
	e.t.Helper()
	body := e.admin.must(201, "POST", "/api/admin/users/local", map[string]any{"email": email,
		"username": strings.Split(email, "@")[0], "password": password, "is_admin": admin})
	var u struct {
		ID int64 `json:"id"`
	}
	json.Unmarshal([]byte(body), &u) //nolint:errcheck
	c := newClient(e.t, e.a.URL)
	if s := c.login(email, password); s != 200 {
		e.t.Fatalf("sign-in of %s: %d", email, s)
	}
	return u.ID, c
}

// token makes an API token through c's session and returns it and its id.
func (e *accountsEnv) token(c *client, name string) (string, int64) {
	e.t.Helper()
	var tok struct {
		ID    int64  `json:"id"`
		Token string `json:"token"`
	}
	json.Unmarshal([]byte(c.must(201, "POST", "/api/api-tokens/", map[string]any{"name": name})), &tok) //nolint:errcheck
	if tok.Token == "" {
		e.t.Fatal("no token made")
	}
	return tok.Token, tok.ID
}

// bearer sends a request with an API token only (no cookie).
func (e *accountsEnv) bearer(token, method, path string, body any) (int, string) {
	e.t.Helper()
	return newClient(e.t, e.a.URL).do(method, path, body, "Authorization", "Bearer "+token)
}

// resetLinkFor makes a reset link's token for the account, as the mail
// would carry it.
func (e *accountsEnv) resetLinkFor(id int64) string {
	e.t.Helper()
	tok, _, err := e.a.Accounts.CreateResetToken(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

func (e *accountsEnv) reset(link, password string) int {
	e.t.Helper()
	s, _ := newClient(e.t, e.a.URL).do("POST", "/api/auth/reset-password",
		map[string]string{"token": link, "new_password": password, "new_password_confirm": password})
	return s
}

// A local account's tokens work only while it may sign in: deactivating
// it revokes them (and spends its reset links, and ends its sessions) in
// the same step; reactivating the account does not bring them back (its
// owner may reactivate one); deleting the account deletes them.
func TestTokensDieWithTheirAccount(t *testing.T) {
	e := newAccountsEnv(t)
	id, zoe := e.account("zoe@example.com", "zoe-password-1", false)
	tok, tokID := e.token(zoe, "phone")
	if s, b := e.bearer(tok, "GET", "/api/api-tokens/", nil); s != 200 {
		t.Fatalf("token before: %d %s", s, b)
	}
	link := e.resetLinkFor(id)
	local := "/api/admin/users/local/" + strconv.FormatInt(id, 10)

	e.admin.must(200, "PATCH", local, map[string]any{"is_active": false})
	if s, b := e.bearer(tok, "GET", "/api/api-tokens/", nil); s != 401 {
		t.Errorf("token of a deactivated account: %d %s", s, b)
	}
	if s, _ := zoe.do("GET", "/api/api-tokens/", nil); s != 401 {
		t.Errorf("session of a deactivated account: %d", s)
	}
	if s := e.reset(link, "zoe-password-2"); s != 400 {
		t.Errorf("reset link of a deactivated account: %d", s)
	}
	var list []map[string]any
	json.Unmarshal([]byte(e.admin.must(200, "GET", "/api/admin/users/zoe@example.com/tokens", nil)), &list) //nolint:errcheck
	if len(list) != 1 || list[0]["is_active"] != false || list[0]["revoked_at"] == nil || list[0]["name"] != "phone" {
		t.Errorf("the deactivated account's tokens: %v", list)
	}

	e.admin.must(200, "PATCH", local, map[string]any{"is_active": true})
	if s, _ := e.bearer(tok, "GET", "/api/api-tokens/", nil); s != 401 {
		t.Errorf("a revoked token after the account's reactivation: %d", s)
	}
	if s := zoe.login("zoe@example.com", "zoe-password-1"); s != 200 {
		t.Fatalf("sign-in after reactivation: %d", s)
	}
	zoe.must(200, "POST", "/api/api-tokens/"+strconv.FormatInt(tokID, 10)+"/reactivate", nil)
	if s, _ := e.bearer(tok, "GET", "/api/api-tokens/", nil); s != 200 {
		t.Errorf("token its owner reactivated: %d", s)
	}

	e.admin.must(204, "DELETE", local, nil)
	if s, b := e.bearer(tok, "GET", "/api/api-tokens/", nil); s != 401 {
		t.Errorf("token of a deleted account: %d %s", s, b)
	}
	if b := e.admin.must(200, "GET", "/api/admin/users/zoe@example.com/tokens", nil); strings.TrimSpace(b) != "[]" {
		t.Errorf("the deleted account's tokens: %s", b)
	}
	// A new account with the same address starts with no tokens.
	e.account("zoe@example.com", "zoe-password-3", false)
	if s, _ := e.bearer(tok, "GET", "/api/api-tokens/", nil); s != 401 {
		t.Errorf("the old token for the new account: %d", s)
	}
}

// A new password, set by an administrator or through a reset link, ends
// the account's tokens, sessions and outstanding reset links at once; an
// e-mail change spends the links mailed to the old address.
func TestPasswordChangesEndTokensAndLinks(t *testing.T) {
	e := newAccountsEnv(t)
	id, zoe := e.account("zoe@example.com", "zoe-password-1", false)
	local := "/api/admin/users/local/" + strconv.FormatInt(id, 10)

	tok, _ := e.token(zoe, "laptop")
	link := e.resetLinkFor(id)
	e.admin.must(200, "POST", local+"/set-password", map[string]any{"password": "zoe-password-2"})
	if s, _ := e.bearer(tok, "GET", "/api/api-tokens/", nil); s != 401 {
		t.Errorf("token after set-password: %d", s)
	}
	if s, _ := zoe.do("GET", "/api/api-tokens/", nil); s != 401 {
		t.Errorf("session after set-password: %d", s)
	}
	if s := e.reset(link, "zoe-password-x"); s != 400 {
		t.Errorf("reset link after set-password: %d", s)
	}

	if s := zoe.login("zoe@example.com", "zoe-password-2"); s != 200 {
		t.Fatalf("sign-in with the new password: %d", s)
	}
	tok, _ = e.token(zoe, "laptop again")
	first, second := e.resetLinkFor(id), e.resetLinkFor(id)
	if s := e.reset(first, "zoe-password-3"); s != 200 {
		t.Fatalf("reset: %d", s)
	}
	if s, _ := e.bearer(tok, "GET", "/api/api-tokens/", nil); s != 401 {
		t.Errorf("token after a reset: %d", s)
	}
	if s, _ := zoe.do("GET", "/api/api-tokens/", nil); s != 401 {
		t.Errorf("session after a reset: %d", s)
	}
	if s := e.reset(second, "zoe-password-4"); s != 400 {
		t.Errorf("the other reset link after a reset: %d", s)
	}

	if s := zoe.login("zoe@example.com", "zoe-password-3"); s != 200 {
		t.Fatalf("sign-in after the reset: %d", s)
	}
	tok, _ = e.token(zoe, "kept")
	old := e.resetLinkFor(id)
	e.admin.must(200, "PATCH", local, map[string]any{"email": "zoe@new.example.com"})
	if s := e.reset(old, "zoe-password-5"); s != 400 {
		t.Errorf("a link mailed to the old address after the e-mail change: %d", s)
	}
	if s, b := e.bearer(tok, "GET", "/api/api-tokens/", nil); s != 200 {
		t.Errorf("a token moves with the e-mail change: %d %s", s, b)
	}
}

// An administrator lists any user's tokens in the token list's shape and
// revokes one (then deletes it, as the owner's DELETE does); a token that
// is not that user's is 404; a user cannot. Token actions are audited.
func TestAdminManagesUsersTokens(t *testing.T) {
	e := newAccountsEnv(t)
	_, zoe := e.account("zoe@example.com", "zoe-password-1", false)
	tok, tokID := e.token(zoe, "phone")
	_, adminTokID := e.token(e.admin, "admin's own")
	path := "/api/admin/users/zoe@example.com/tokens"

	if s, _ := zoe.do("GET", "/api/admin/users/admin/tokens", nil); s != 403 {
		t.Errorf("a user lists the admin's tokens: %d", s)
	}
	if s, _ := e.bearer(tok, "DELETE", "/api/admin/users/admin/tokens/"+strconv.FormatInt(adminTokID, 10), nil); s != 403 {
		t.Errorf("a user's token revokes the admin's: %d", s)
	}
	body := e.admin.must(200, "GET", path, nil)
	var list []map[string]any
	if json.Unmarshal([]byte(body), &list) != nil || len(list) != 1 || list[0]["id"] != float64(tokID) ||
		list[0]["name"] != "phone" || list[0]["is_active"] != true || strings.Contains(body, `"token"`) || strings.Contains(body, "hash") {
		t.Fatalf("admin's list of zoe's tokens: %s", body)
	}
	for _, k := range []string{"token_prefix", "last_used_at", "last_used_ip", "created_at", "revoked_at", "expires_at"} {
		if _, ok := list[0][k]; !ok {
			t.Errorf("list item without %s: %s", k, body)
		}
	}
	if s, b := e.admin.do("DELETE", path+"/"+strconv.FormatInt(adminTokID, 10), nil); s != 404 {
		t.Errorf("revoke the admin's token under zoe: %d %s", s, b)
	}
	if b := e.admin.must(200, "DELETE", path+"/"+strconv.FormatInt(tokID, 10), nil); !strings.Contains(b, "Token revoked") {
		t.Errorf("revoke: %s", b)
	}
	if s, _ := e.bearer(tok, "GET", "/api/api-tokens/", nil); s != 401 {
		t.Errorf("token an admin revoked: %d", s)
	}
	e.admin.must(200, "POST", "/api/api-tokens/"+strconv.FormatInt(tokID, 10)+"/reactivate", nil)
	if s, _ := e.bearer(tok, "GET", "/api/api-tokens/", nil); s != 200 {
		t.Errorf("token an admin reactivated: %d", s)
	}
	e.admin.must(200, "DELETE", path+"/"+strconv.FormatInt(tokID, 10), nil)
	if b := e.admin.must(200, "DELETE", path+"/"+strconv.FormatInt(tokID, 10), nil); !strings.Contains(b, "Token deleted") {
		t.Errorf("delete: %s", b)
	}
	if b := e.admin.must(200, "GET", path, nil); strings.TrimSpace(b) != "[]" {
		t.Errorf("after delete: %s", b)
	}

	target := "api_token:" + strconv.FormatInt(tokID, 10)
	for _, w := range []struct {
		action, actor, target string
		n                     int
	}{
		{"api_token.create", "zoe@example.com", target, 1},
		{"api_token.create", "admin", "api_token:" + strconv.FormatInt(adminTokID, 10), 1},
		{"api_token.revoke", "admin", target, 2},
		{"api_token.reactivate", "admin", target, 1},
		{"api_token.delete", "admin", target, 1},
	} {
		var log struct {
			Entries []struct{ Actor, Action, Target, Detail string }
		}
		json.Unmarshal([]byte(e.admin.must(200, "GET", "/api/admin/audit-log?per_page=200&action="+w.action, nil)), &log) //nolint:errcheck
		n := 0
		for _, en := range log.Entries {
			if en.Actor == w.actor && en.Target == w.target {
				n++
				if w.target == target && (!strings.Contains(en.Detail, "owner=zoe@example.com") || !strings.Contains(en.Detail, `name="phone"`) ||
					strings.Contains(en.Detail, tok)) {
					t.Errorf("%s detail: %q", w.action, en.Detail)
				}
			}
		}
		if n != w.n {
			t.Errorf("%s by %s on %s: %d entries, want %d (%+v)", w.action, w.actor, w.target, n, w.n, log.Entries)
		}
	}
}

// A local administrator's rights are read when used: once demoted, its
// session and its token are a user's on the next request (still signed
// in), and promoted again, an administrator's.
func TestDemotedLocalAdminLosesAdminAtOnce(t *testing.T) {
	e := newAccountsEnv(t)
	id, bob := e.account("bob@example.com", "bob-password-1", true)
	tok, _ := e.token(bob, "ci")
	local := "/api/admin/users/local/" + strconv.FormatInt(id, 10)
	check := func(when string, want int) {
		t.Helper()
		if s, _ := bob.do("GET", "/api/admin/users/local", nil); s != want {
			t.Errorf("%s: bob's session on an admin route: %d, want %d", when, s, want)
		}
		if s, _ := e.bearer(tok, "GET", "/api/admin/users/local", nil); s != want {
			t.Errorf("%s: bob's token on an admin route: %d, want %d", when, s, want)
		}
		if s, _ := bob.do("GET", "/api/api-tokens/", nil); s != nethttp.StatusOK {
			t.Errorf("%s: bob's session on a user route: %d", when, s)
		}
		if s, _ := e.bearer(tok, "GET", "/api/api-tokens/", nil); s != nethttp.StatusOK {
			t.Errorf("%s: bob's token on a user route: %d", when, s)
		}
	}
	check("an admin", 200)
	e.admin.must(200, "PATCH", local, map[string]any{"is_admin": false})
	check("demoted", 403)
	e.admin.must(200, "PATCH", local, map[string]any{"is_admin": true})
	check("promoted again", 200)
}
