package api_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The mobile hand-off with PKCE: an app that sends a code_challenge gets
// a one-time code in the redirect, never a token, and exchanges it with
// its verifier at POST /api/mobile/token.

func pkce(t *testing.T) (verifier, challenge string) {
	t.Helper()
	b := make([]byte, 48)
	rand.Read(b) //nolint:errcheck
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// passwordHandOff signs the local admin in for the app with form's extra
// mobile fields and returns the redirect's Location.
func (e *ssoEnv) passwordHandOff(extra url.Values) page {
	e.t.Helper()
	form := url.Values{"username": {"admin"}, "password": {"local-admin-pw"}, "mobile": {"1"}, "redirect_uri": {"docflow://cb"}}
	for k, v := range extra {
		form[k] = v
	}
	return newBrowser(e.t).do("POST", e.app.URL+"/login", form)
}

func codeOf(t *testing.T, p page) string {
	t.Helper()
	u, err := url.Parse(p.Location)
	if p.Status != 303 || err != nil || !strings.HasPrefix(p.Location, "docflow://") || u.Query().Get("code") == "" || u.Query().Has("token") {
		t.Fatalf("hand-off with a challenge: %d %q %s", p.Status, p.Location, p.Body)
	}
	return u.Query().Get("code")
}

func (e *ssoEnv) exchange(code, verifier string, more ...string) page {
	e.t.Helper()
	body := map[string]string{"code": code, "code_verifier": verifier}
	for i := 0; i+1 < len(more); i += 2 {
		body[more[i]] = more[i+1]
	}
	return newBrowser(e.t).json("POST", e.app.URL+"/api/mobile/token", body)
}

// TestMobileCodeExchange: with a challenge (password or SSO sign-in) the
// redirect carries a code, no token is minted until the exchange, and
// the code gives a token once, within 60 s, only for the verifier of its
// challenge; a wrong verifier spends it.
func TestMobileCodeExchange(t *testing.T) {
	var skew atomic.Int64
	e := newSSOEnvWith(t, ssoOpts{now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	verifier, challenge := pkce(t)
	withChallenge := url.Values{"code_challenge": {challenge}, "code_challenge_method": {"S256"}}

	// The login page keeps the challenge, for the form and the SSO button.
	page := newBrowser(t).do("GET", e.app.URL+"/login?mobile=1&redirect_uri="+url.QueryEscape("docflow://cb")+"&"+withChallenge.Encode(), nil)
	if page.Status != 200 || !strings.Contains(page.Body, `name="code_challenge" value="`+challenge+`"`) ||
		!strings.Contains(page.Body, "code_challenge="+challenge) {
		t.Fatalf("login page: %d %s", page.Status, page.Body)
	}
	tokens := e.count(`SELECT count(*) FROM api_tokens`)
	code := codeOf(t, e.passwordHandOff(withChallenge))
	if n := e.count(`SELECT count(*) FROM api_tokens`); n != tokens {
		t.Fatal("a token was minted before the exchange")
	}
	other, _ := pkce(t)
	if p := e.exchange(code, other); p.Status != 400 || !strings.Contains(p.Body, "Invalid or expired code") {
		t.Fatalf("wrong verifier: %d %s", p.Status, p.Body)
	}
	if p := e.exchange(code, verifier); p.Status != 400 {
		t.Fatalf("a code spent by a wrong verifier: %d %s", p.Status, p.Body)
	}

	code = codeOf(t, e.passwordHandOff(withChallenge))
	if p := e.exchange(code, verifier, "redirect_uri", "docflow://elsewhere"); p.Status != 400 {
		t.Fatalf("another redirect_uri: %d %s", p.Status, p.Body)
	}
	code = codeOf(t, e.passwordHandOff(withChallenge))
	p := e.exchange(code, verifier, "device_name", "Pixel 9", "redirect_uri", "docflow://cb")
	var tok struct {
		Token string `json:"token"`
		Name  string `json:"name"`
	}
	json.Unmarshal([]byte(p.Body), &tok) //nolint:errcheck
	if p.Status != 201 || !strings.HasPrefix(tok.Token, "dfl_") || tok.Name != "Mobile App – Pixel 9" {
		t.Fatalf("exchange: %d %s", p.Status, p.Body)
	}
	if st := bearerGet(t, e.app.URL+"/api/admin/audit-log", tok.Token); st != 200 {
		t.Fatalf("the admin's token: %d", st)
	}
	if n := e.count(`SELECT count(*) FROM audit_log WHERE action = 'api_token.create' AND detail LIKE '%Mobile App – Pixel 9%'`); n != 1 {
		t.Fatalf("the exchange's token in the audit log %d times, want once", n)
	}
	if p := e.exchange(code, verifier); p.Status != 400 {
		t.Fatalf("a code used twice: %d %s", p.Status, p.Body)
	}

	// 60 seconds.
	code = codeOf(t, e.passwordHandOff(withChallenge))
	skew.Store(int64(61 * time.Second))
	if p := e.exchange(code, verifier); p.Status != 400 {
		t.Fatalf("a code after 61 s: %d %s", p.Status, p.Body)
	}
	skew.Store(0)

	// Malformed or plain challenges.
	for _, bad := range []url.Values{{"code_challenge": {challenge}}, {"code_challenge": {challenge}, "code_challenge_method": {"plain"}},
		{"code_challenge": {"short"}, "code_challenge_method": {"S256"}}} {
		if p := e.passwordHandOff(bad); p.Status != 400 || p.Location != "" {
			t.Fatalf("challenge %v: %d %q", bad, p.Status, p.Location)
		}
	}

	// Through SSO.
	b := newBrowser(t)
	path := "/oauth-login?mobile=1&redirect_uri=" + url.QueryEscape("docflow://callback") + "&" + withChallenge.Encode()
	code = codeOf(t, e.signIn(b, path, "bob"))
	p = e.exchange(code, verifier)
	json.Unmarshal([]byte(p.Body), &tok) //nolint:errcheck
	if p.Status != 201 || bearerGet(t, e.app.URL+"/api/files", tok.Token) != 200 {
		t.Fatalf("SSO exchange: %d %s", p.Status, p.Body)
	}
	if n := e.count(`SELECT count(*) FROM api_tokens WHERE owner_id='bob@example.com'`); n != 1 {
		t.Fatalf("bob's tokens: %d", n)
	}
}

// TestMobileTokenInRedirectOff: MOBILE_TOKEN_IN_REDIRECT=false refuses
// the token-in-URL flow (password and SSO) before anyone signs in, and
// mints nothing; the code flow goes on.
func TestMobileTokenInRedirectOff(t *testing.T) {
	e := newSSOEnvWith(t, ssoOpts{env: map[string]string{"MOBILE_TOKEN_IN_REDIRECT": "false"}})
	b := newBrowser(t)
	for _, p := range []string{"/login", "/oauth-login"} {
		got := b.do("GET", e.app.URL+p+"?mobile=1&redirect_uri="+url.QueryEscape("docflow://cb"), nil)
		if got.Status != 400 || !strings.Contains(got.Body, "code_challenge") {
			t.Fatalf("%s: %d %s", p, got.Status, got.Body)
		}
	}
	if p := e.passwordHandOff(nil); p.Status != 400 || p.Location != "" {
		t.Fatalf("password hand-off: %d %q", p.Status, p.Location)
	}
	if n := e.count(`SELECT count(*) FROM api_tokens`); n != 0 {
		t.Fatalf("%d tokens minted", n)
	}
	verifier, challenge := pkce(t)
	code := codeOf(t, e.passwordHandOff(url.Values{"code_challenge": {challenge}, "code_challenge_method": {"S256"}}))
	if p := e.exchange(code, verifier); p.Status != 201 {
		t.Fatalf("code flow: %d %s", p.Status, p.Body)
	}
}
