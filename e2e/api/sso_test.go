package api_test

import (
	"context"
	"io"
	nethttp "net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport/oidcop"
	"docflow/streams"
)

// The SSO tests drive the whole browser flow against a real OpenID
// Connect provider (internal/testsupport/oidcop): /oauth-login, the
// provider's login form, the callback, the session.

const ssoAdminGroup = "docflow-admins"

var ssoUsers = []oidcop.User{
	{ID: "u-ann", Username: "ann", Password: "ann-secret-1", GivenName: "Ann", FamilyName: "Admin",
		Email: "Ann@Example.com", EmailVerified: true, Groups: []string{"staff", ssoAdminGroup}},
	{ID: "u-bob", Username: "bob", Password: "bob-secret-1", GivenName: "Bob", FamilyName: "Plain",
		Email: "bob@example.com", EmailVerified: true, Groups: []string{"staff"}},
	{ID: "u-eve", Username: "eve", Password: "eve-secret-1", GivenName: "Eve", FamilyName: "Unverified",
		Email: "eve@example.com", EmailVerified: false},
}

type ssoEnv struct {
	t     *testing.T
	app   *apptest.App
	op    *oidcop.Provider
	users []oidcop.User
}

// ssoOpts shape an SSO environment.
type ssoOpts struct {
	// env overrides the defaults (authentication and multi-user mode
	// on, ADMIN_PASSWORD local-admin-pw, ADMIN_GROUP_NAME ssoAdminGroup).
	env map[string]string
	// users are the provider's (default ssoUsers).
	users           []oidcop.User
	claimsInIDToken bool
	now             func() time.Time
}

// newSSOEnv starts docflow (authentication on) and a provider whose
// client is docflow's, then configures SSO.
func newSSOEnv(t *testing.T, claimsInIDToken ...bool) *ssoEnv {
	t.Helper()
	return newSSOEnvWith(t, ssoOpts{claimsInIDToken: len(claimsInIDToken) > 0 && claimsInIDToken[0]})
}

func newSSOEnvWith(t *testing.T, o ssoOpts) *ssoEnv {
	t.Helper()
	env := map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true", "ADMIN_PASSWORD": "local-admin-pw",
		"ADMIN_GROUP_NAME": ssoAdminGroup}
	for k, v := range o.env {
		env[k] = v
	}
	if o.users == nil {
		o.users = ssoUsers
	}
	a := apptest.New(t, apptest.Options{Role: "api", Env: env, Now: o.now})
	op, err := oidcop.Start(oidcop.Config{ClientID: "docflow", ClientSecret: "client-secret",
		RedirectURIs: []string{a.URL + "/oauth-callback"}, Users: o.users, ClaimsInIDToken: o.claimsInIDToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Close)
	a.SetEnv("OIDC_ISSUER", op.Issuer)
	a.SetEnv("OIDC_CLIENT_ID", "docflow")
	a.SetEnv("OIDC_CLIENT_SECRET", "client-secret")
	return &ssoEnv{t: t, app: a, op: op, users: o.users}
}

// browser is a client with cookies that follows redirects step by step.
type browser struct {
	t *testing.T
	c *nethttp.Client
}

func newBrowser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, c: &nethttp.Client{Jar: jar, Timeout: 60 * time.Second,
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }}}
}

type page struct {
	URL    *url.URL
	Status int
	Body   string
	// Location is where a redirect that was not followed points.
	Location string
	Header   nethttp.Header
}

// do sends one request (form: a POST of it) and reads the answer.
func (b *browser) do(method, u string, form url.Values, header ...string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
		header = append(header, "Content-Type", "application/x-www-form-urlencoded")
	}
	return b.send(method, u, body, header...)
}

// send sends one request with body (nil: none) and reads the answer.
func (b *browser) send(method, u string, body io.Reader, header ...string) page {
	b.t.Helper()
	req, err := nethttp.NewRequest(method, u, body)
	if err != nil {
		b.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return page{URL: req.URL, Status: resp.StatusCode, Body: string(raw), Location: resp.Header.Get("Location"), Header: resp.Header}
}

// follow requests u and follows redirects (GET) until an answer that is
// not one, a redirect out of http(s) (the mobile app's scheme), or a URL
// stop accepts (returned unrequested, as Location).
func (b *browser) follow(method, u string, form url.Values, stop func(*url.URL) bool) page {
	b.t.Helper()
	p := b.do(method, u, form)
	for i := 0; i < 20 && p.Status >= 300 && p.Status < 400; i++ {
		next, err := p.URL.Parse(p.Location)
		if err != nil {
			b.t.Fatalf("redirect to %q: %v", p.Location, err)
		}
		if (next.Scheme != "http" && next.Scheme != "https") || (stop != nil && stop(next)) {
			return p
		}
		p = b.do("GET", next.String(), nil)
	}
	return p
}

func isCallback(u *url.URL) bool { return u.Path == "/oauth-callback" }

// toProvider starts a sign-in at docflow (path: /oauth-login?…) and stops
// on the provider's login form, returning the auth request id.
func (e *ssoEnv) toProvider(b *browser, path string) string {
	e.t.Helper()
	p := b.follow("GET", e.app.URL+path, nil, nil)
	id := p.URL.Query().Get("authRequestID")
	if p.Status != 200 || id == "" || !strings.HasPrefix(p.URL.String(), e.op.Issuer) {
		e.t.Fatalf("provider login form: %d at %s: %.300s", p.Status, p.URL, p.Body)
	}
	return id
}

// loginAtProvider posts the provider's form and stops before docflow's
// callback, returning its URL.
func (e *ssoEnv) loginAtProvider(b *browser, authRequestID, username, password string) string {
	e.t.Helper()
	p := b.follow("POST", e.op.Issuer+"login/username", url.Values{"id": {authRequestID}, "username": {username},
		"password": {password}}, isCallback)
	if p.Location == "" || !strings.Contains(p.Location, "/oauth-callback?") {
		e.t.Fatalf("provider login: %d at %s: %.300s", p.Status, p.URL, p.Body)
	}
	cb, _ := p.URL.Parse(p.Location)
	return cb.String()
}

// signIn runs the whole flow for a user from path and returns the last
// page: docflow's redirect after the callback.
func (e *ssoEnv) signIn(b *browser, path, user string) page {
	e.t.Helper()
	pw := ""
	for _, u := range e.users {
		if u.Username == user {
			pw = u.Password
		}
	}
	cb := e.loginAtProvider(b, e.toProvider(b, path), user, pw)
	return b.do("GET", cb, nil)
}

func (e *ssoEnv) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.app.DB.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// signups counts the user.signup events of userID in the outbox.
func (e *ssoEnv) signups(userID string) int {
	e.t.Helper()
	rows, err := e.app.DB.Pool.Query(context.Background(), `SELECT payload FROM outbox WHERE topic=$1 AND key=$2`,
		streams.TopicEvents, "user:"+userID)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var payload []byte
		if err := rows.Scan(&payload); err != nil {
			e.t.Fatal(err)
		}
		if _, ev, err := streams.Decode[streams.Event](payload); err == nil && ev.Name == docflow.EventUserSignup &&
			ev.Data["user_id"] == userID && ev.Data["source"] == "sso" {
			n++
		}
	}
	return n
}

func bearerGet(t *testing.T, u, token string) int {
	t.Helper()
	req, _ := nethttp.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSSOSignIn: a member of ADMIN_GROUP_NAME signs in as an
// administrator, a plain user as a user (admin routes 403); the first
// sign-in creates the profile and one user.signup, the second neither; an
// address the provider has not verified is not the user id (sub is).
func TestSSOSignIn(t *testing.T) {
	e := newSSOEnv(t)
	b := newBrowser(t)
	login := b.do("GET", e.app.URL+"/login?next=/api/files", nil)
	if login.Status != 200 || !strings.Contains(login.Body, "Sign in with SSO") ||
		!strings.Contains(login.Body, `href="/oauth-login?next=%2Fapi%2Ffiles"`) {
		t.Fatalf("login page: %d %s", login.Status, login.Body)
	}

	p := e.signIn(b, "/oauth-login?next=/api/files", "ann")
	if p.Status != 303 || !strings.HasSuffix(p.Location, "/api/files") {
		t.Fatalf("callback: %d %q %s", p.Status, p.Location, p.Body)
	}
	if got := b.do("GET", e.app.URL+"/api/admin/audit-log?action=sso.succeeded", nil); got.Status != 200 ||
		!strings.Contains(got.Body, `"actor":"ann@example.com"`) {
		t.Fatalf("admin's audit log: %d %s", got.Status, got.Body)
	}
	if got := b.do("GET", e.app.URL+"/api/files", nil); got.Status != 200 {
		t.Fatalf("files: %d %s", got.Status, got.Body)
	}

	for i := 0; i < 2; i++ {
		bb := newBrowser(t)
		if p := e.signIn(bb, "/oauth-login", "bob"); p.Status != 303 || !strings.HasSuffix(p.Location, "/") {
			t.Fatalf("bob's sign-in %d: %d %q %s", i, p.Status, p.Location, p.Body)
		}
		if got := bb.do("GET", e.app.URL+"/api/admin/audit-log", nil); got.Status != 403 {
			t.Fatalf("plain user's audit log: %d %s", got.Status, got.Body)
		}
		if got := bb.do("GET", e.app.URL+"/api/files", nil); got.Status != 200 {
			t.Fatalf("plain user's files: %d %s", got.Status, got.Body)
		}
	}
	if n := e.count(`SELECT count(*) FROM user_profiles WHERE user_id='bob@example.com' AND display_name='Bob Plain'`); n != 1 {
		t.Fatalf("bob's profiles: %d", n)
	}
	if n := e.signups("bob@example.com"); n != 1 {
		t.Fatalf("bob's user.signup events: %d", n)
	}
	if n := e.signups("ann@example.com"); n != 1 {
		t.Fatalf("ann's user.signup events: %d", n)
	}

	// eve's address is not verified: she is her subject.
	if p := e.signIn(newBrowser(t), "/oauth-login", "eve"); p.Status != 303 {
		t.Fatalf("eve: %d %s", p.Status, p.Body)
	}
	if n := e.count(`SELECT count(*) FROM user_profiles WHERE user_id='u-eve'`); n != 1 {
		t.Fatalf("eve's profile by subject: %d", n)
	}
	if n := e.count(`SELECT count(*) FROM user_profiles WHERE user_id='eve@example.com'`); n != 0 {
		t.Fatalf("eve's unverified address became a user id")
	}
	if n := e.count(`SELECT count(*) FROM audit_log WHERE action='sso.succeeded'`); n != 4 {
		t.Fatalf("sso.succeeded entries: %d", n)
	}
	// The ID token had only the groups: the rest came from the user info.
	if n := e.op.UserInfoCalls(); n != 4 {
		t.Fatalf("user info read %d times, want 4", n)
	}
}

// TestSSOClaimsFromIDToken: a provider that puts the e-mail and the groups
// in the ID token is not asked for the user info.
func TestSSOClaimsFromIDToken(t *testing.T) {
	e := newSSOEnv(t, true)
	b := newBrowser(t)
	if p := e.signIn(b, "/oauth-login", "ann"); p.Status != 303 {
		t.Fatalf("callback: %d %s", p.Status, p.Body)
	}
	if got := b.do("GET", e.app.URL+"/api/admin/audit-log", nil); got.Status != 200 {
		t.Fatalf("admin's audit log: %d %s", got.Status, got.Body)
	}
	if n := e.count(`SELECT count(*) FROM user_profiles WHERE user_id='ann@example.com' AND display_name='Ann Admin'`); n != 1 {
		t.Fatalf("ann's profile: %d", n)
	}
	if n := e.op.UserInfoCalls(); n != 0 {
		t.Fatalf("user info read %d times", n)
	}
}

// TestSSOMobileLogin: the mobile login goes through SSO: the login page's
// SSO button keeps redirect_uri, the callback hands a token to the app,
// and the token of an SSO administrator has admin rights (a plain
// user's does not).
func TestSSOMobileLogin(t *testing.T) {
	e := newSSOEnv(t)
	b := newBrowser(t)
	login := b.do("GET", e.app.URL+"/login?mobile=1&redirect_uri="+url.QueryEscape("docflow://callback"), nil)
	want := `href="/oauth-login?mobile=1&amp;redirect_uri=docflow%3A%2F%2Fcallback"`
	if login.Status != 200 || !strings.Contains(login.Body, want) {
		t.Fatalf("mobile login page: %d %s", login.Status, login.Body)
	}
	token := func(user string) string {
		t.Helper()
		p := e.signIn(newBrowser(t), "/oauth-login?mobile=1&redirect_uri="+url.QueryEscape("docflow://callback"), user)
		if p.Status != 303 || !strings.HasPrefix(p.Location, "docflow://callback?token=dfl_") {
			t.Fatalf("mobile callback: %d %q %s", p.Status, p.Location, p.Body)
		}
		u, _ := url.Parse(p.Location)
		return u.Query().Get("token")
	}
	ann, bob := token("ann"), token("bob")
	if st := bearerGet(t, e.app.URL+"/api/api-tokens/", ann); st != 200 {
		t.Fatalf("ann's token: %d", st)
	}
	if st := bearerGet(t, e.app.URL+"/api/admin/audit-log", ann); st != 200 {
		t.Fatalf("ann's token on an admin route: %d", st)
	}
	if st := bearerGet(t, e.app.URL+"/api/admin/audit-log", bob); st != 403 {
		t.Fatalf("bob's token on an admin route: %d", st)
	}
	if n := e.count(`SELECT count(*) FROM api_tokens WHERE owner_id='ann@example.com' AND name LIKE 'Mobile App – %'`); n != 1 {
		t.Fatalf("ann's mobile tokens: %d", n)
	}
	// A refusal shows the login page again, still for the app.
	mb := newBrowser(t)
	cb := e.loginAtProvider(mb, e.toProvider(mb, "/oauth-login?mobile=1&redirect_uri="+url.QueryEscape("docflow://callback")), "bob", "bob-secret-1")
	cu, _ := url.Parse(cb)
	p := mb.do("GET", e.app.URL+"/oauth-callback?error=access_denied&state="+url.QueryEscape(cu.Query().Get("state")), nil, "Accept", "text/html")
	if p.Status != 401 || !strings.Contains(p.Body, "cancelled or refused at the sign-in provider") || !strings.Contains(p.Body, want) ||
		!strings.Contains(p.Body, `name="redirect_uri" value="docflow://callback"`) {
		t.Fatalf("refusal page: %d %s", p.Status, p.Body)
	}
	// A redirect_uri the password login refuses is refused here too.
	if p := b.do("GET", e.app.URL+"/oauth-login?mobile=1&redirect_uri="+url.QueryEscape("https://evil.example/cb"), nil); p.Status != 400 {
		t.Fatalf("foreign redirect_uri: %d %s", p.Status, p.Body)
	}
}

// TestSSORefusals: forged, reused or foreign state, a forged nonce, the
// provider's refusal and a provider that went down are refused with a
// clear message, and audited.
func TestSSORefusals(t *testing.T) {
	e := newSSOEnv(t)
	b := newBrowser(t)
	detail := func(p page, status int, words string) {
		t.Helper()
		if p.Status != status || !strings.Contains(p.Body, words) {
			t.Fatalf("want %d with %q, got %d %s", status, words, p.Status, p.Body)
		}
	}

	// A forged state.
	detail(b.do("GET", e.app.URL+"/oauth-callback?code=x&state=forged", nil), 400, "unknown, expired or was already used")
	// A browser sees the login page with the message.
	detail(b.do("GET", e.app.URL+"/oauth-callback?code=x&state=forged", nil, "Accept", "text/html"), 400, "Sign in with SSO")

	// A callback replayed, and one taken to another browser.
	cb := e.loginAtProvider(b, e.toProvider(b, "/oauth-login"), "bob", "bob-secret-1")
	other := newBrowser(t)
	detail(other.do("GET", cb, nil), 400, "another browser")
	// The other browser used up the state.
	detail(b.do("GET", cb, nil), 400, "already used")
	cb = e.loginAtProvider(b, e.toProvider(b, "/oauth-login"), "bob", "bob-secret-1")
	if p := b.do("GET", cb, nil); p.Status != 303 {
		t.Fatalf("sign-in: %d %s", p.Status, p.Body)
	}
	detail(b.do("GET", cb, nil), 400, "already used")

	// A forged nonce: the authorization request is changed on its way to
	// the provider, whose ID token then carries another nonce.
	nb := newBrowser(t)
	start := nb.do("GET", e.app.URL+"/oauth-login", nil)
	authz, err := url.Parse(start.Location)
	if err != nil || start.Status != 302 || authz.Query().Get("nonce") == "" || authz.Query().Get("code_challenge_method") != "S256" {
		t.Fatalf("authorization request: %d %q", start.Status, start.Location)
	}
	q := authz.Query()
	q.Set("nonce", "forged-nonce")
	authz.RawQuery = q.Encode()
	form := nb.follow("GET", authz.String(), nil, nil)
	cb = e.loginAtProvider(nb, form.URL.Query().Get("authRequestID"), "bob", "bob-secret-1")
	detail(nb.do("GET", cb, nil), 401, "nonce")

	// The provider refused (the user cancelled).
	cb = e.loginAtProvider(b, e.toProvider(b, "/oauth-login"), "bob", "bob-secret-1")
	cu, _ := url.Parse(cb)
	refused := e.app.URL + "/oauth-callback?error=access_denied&error_description=User+cancelled&state=" + url.QueryEscape(cu.Query().Get("state"))
	detail(b.do("GET", refused, nil), 401, "The sign-in was cancelled or refused at the sign-in provider")
	// Its state is spent.
	detail(b.do("GET", cb, nil), 400, "already used")

	// The provider goes down between the login form and the callback:
	// the code cannot be exchanged.
	cb = e.loginAtProvider(b, e.toProvider(b, "/oauth-login"), "bob", "bob-secret-1")
	e.op.Close()
	detail(b.do("GET", cb, nil), 502, "cannot be reached")
	// A provider that cannot be discovered.
	e.app.SetEnv("OIDC_ISSUER", strings.TrimSuffix(e.op.Issuer, "/")+"/gone/")
	detail(b.do("GET", e.app.URL+"/oauth-login", nil), 502, "cannot be reached")

	if n := e.count(`SELECT count(*) FROM audit_log WHERE action='sso.failed'`); n < 9 {
		t.Fatalf("sso.failed entries: %d", n)
	}
	if n := e.count(`SELECT count(*) FROM audit_log WHERE action='sso.failed' AND detail LIKE '%nonce%'`); n != 1 {
		t.Fatalf("nonce refusal audited %d times", n)
	}
}
