package http

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"io"
	nethttp "net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
	"golang.org/x/oauth2"

	"docflow"
)

// Single sign-on with OpenID Connect: GET /oauth-login starts the
// authorization code flow (PKCE S256, a random state and nonce per
// attempt) and GET /oauth-callback ends it. The attempt is kept
// server-side under the state's hash (SSOStore), bound to the browser by
// an HttpOnly cookie, taken once and valid ssoAttemptTTL. The claims that
// make the user are read in oauth_claims.go.

// SSOStore is what single sign-on asks of storage.
type SSOStore interface {
	// SaveSSOAttempt stores a sign-in in progress.
	SaveSSOAttempt(ctx context.Context, a docflow.SSOAttempt) error
	// TakeSSOAttempt removes and returns the attempt of a state hash;
	// ENOTFOUND when unknown, already taken or expired.
	TakeSSOAttempt(ctx context.Context, stateHash string) (*docflow.SSOAttempt, error)
	// RecordSSOSignIn keeps a user's latest SSO sign-in (its admin
	// status included, which the user's API tokens inherit).
	RecordSSOSignIn(ctx context.Context, in docflow.SSOSignIn) error
}

// SSODeps are the dependencies of the SSO routes.
type SSODeps struct {
	Store SSOStore
	// Signups creates the profile of a user seen for the first time.
	Signups docflow.Signups
	// HTTPClient talks to the provider (default: ssoTimeout per request,
	// bodies capped at ssoMaxBody).
	HTTPClient *nethttp.Client
	// Timeout bounds each exchange with the provider: discovery, token,
	// user info (default ssoTimeout).
	Timeout time.Duration
}

const (
	// ssoAttemptTTL is how long a sign-in may take at the provider.
	ssoAttemptTTL = 10 * time.Minute
	ssoTimeout    = 10 * time.Second
	// ssoMaxBody caps what the provider's answers may weigh.
	ssoMaxBody = 1 << 20
	// ssoDiscoveryTTL is how long discovery is trusted before it is read
	// again; ssoRetryAfter how long a failed discovery is remembered, so
	// that a provider that is down does not hold every sign-in for a
	// whole timeout.
	ssoDiscoveryTTL = time.Hour
	ssoRetryAfter   = 5 * time.Second
	// ssoCookie binds an attempt to the browser that started it.
	ssoCookie = "docflow_sso"
)

// ssoClient is the SSO part of a Server.
type ssoClient struct {
	deps SSODeps
	log  zerolog.Logger

	mu       sync.Mutex
	issuer   string
	provider *oidc.Provider
	fetched  time.Time
	failed   error
	failedAt time.Time
}

// MountSSO mounts GET /oauth-login and GET /oauth-callback. They answer
// 404 while OIDC_ISSUER or OIDC_CLIENT_ID is unset; /login shows its
// "Sign in with SSO" button once both are.
func (s *Server) MountSSO(d SSODeps) {
	if d.Store == nil || d.Signups == nil {
		panic("http: MountSSO needs a Store and Signups")
	}
	if d.Timeout <= 0 {
		d.Timeout = ssoTimeout
	}
	if d.HTTPClient == nil {
		d.HTTPClient = &nethttp.Client{Timeout: d.Timeout, Transport: cappedTransport{nethttp.DefaultTransport}}
	}
	s.sso = &ssoClient{deps: d, log: s.log}
	// Discovery, the token exchange and the user info each have their
	// own timeout; the route's covers all three.
	opts := Route{Auth: AuthNone, Limit: LimitAuth, Timeout: 3*d.Timeout + 5*time.Second}
	s.Handle("GET", "/oauth-login", opts, s.handleSSOLogin)
	s.Handle("GET", "/oauth-callback", opts, s.handleSSOCallback)
}

// ssoSettings are the provider settings in force.
type ssoSettings struct{ issuer, clientID, secret string }

func (s *Server) ssoSettings() (ssoSettings, bool) {
	st := ssoSettings{issuer: strings.TrimSpace(s.cfg.Settings.Get("OIDC_ISSUER")),
		clientID: strings.TrimSpace(s.cfg.Settings.Get("OIDC_CLIENT_ID")), secret: s.cfg.Settings.Get("OIDC_CLIENT_SECRET")}
	return st, s.sso != nil && st.issuer != "" && st.clientID != ""
}

// ssoLoginURL is the address of the login page's SSO button ("" when SSO
// is not configured): /oauth-login with the page's next and mobile
// parameters, which the round trip keeps.
func (s *Server) ssoLoginURL(next string, mobile bool, redirectURI string) string {
	if _, ok := s.ssoSettings(); !ok {
		return ""
	}
	q := url.Values{}
	if next != "" && next != "/" {
		q.Set("next", next)
	}
	if mobile {
		q.Set("mobile", "1")
		q.Set("redirect_uri", redirectURI)
	}
	if len(q) == 0 {
		return "/oauth-login"
	}
	return "/oauth-login?" + q.Encode()
}

// oauthConfig is the OAuth 2 client of the provider.
func (s *Server) oauthConfig(p *oidc.Provider, st ssoSettings) *oauth2.Config {
	return &oauth2.Config{ClientID: st.clientID, ClientSecret: st.secret, Endpoint: p.Endpoint(),
		RedirectURL: s.BaseURL() + "/oauth-callback", Scopes: docflow.SettingList(s.cfg.Settings, "OIDC_SCOPES")}
}

// discover returns the provider of issuer, read once and kept for
// ssoDiscoveryTTL (go-oidc refreshes its signing keys by itself). The
// issuer must be exactly the one the provider announces, trailing slash
// included.
func (o *ssoClient) discover(ctx context.Context, issuer string) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	if o.issuer == issuer && o.provider != nil && now.Sub(o.fetched) < ssoDiscoveryTTL {
		return o.provider, nil
	}
	if o.issuer == issuer && o.failed != nil && now.Sub(o.failedAt) < ssoRetryAfter {
		return nil, o.failed
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, o.deps.HTTPClient), o.deps.Timeout)
	defer cancel()
	p, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		o.log.Warn().Err(err).Str("issuer", issuer).Msg("OpenID Connect discovery failed")
		if o.issuer == issuer && o.provider != nil {
			// Read again when it was due and failed: the provider's
			// endpoints rarely move, so the last answer serves until
			// the next try.
			o.fetched = now.Add(ssoRetryAfter - ssoDiscoveryTTL)
			return o.provider, nil
		}
		o.issuer, o.provider, o.failed, o.failedAt = issuer, nil, err, now
		return nil, err
	}
	o.issuer = issuer
	o.provider, o.fetched, o.failed = p, now, nil
	return p, nil
}

// clientContext is ctx bounded by the SSO timeout, carrying the HTTP
// client that go-oidc and oauth2 use.
func (o *ssoClient) clientContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, o.deps.HTTPClient)
	return context.WithTimeout(oidc.ClientContext(ctx, o.deps.HTTPClient), o.deps.Timeout)
}

func (s *Server) handleSSOLogin(c *fasthttp.RequestCtx) error {
	st, ok := s.ssoSettings()
	if !ok {
		return docflow.Errorf(docflow.ENOTFOUND, "SSO is not configured")
	}
	q := c.QueryArgs()
	next := safeNext(string(q.Peek("next")))
	redirectURI := ""
	if string(q.Peek("mobile")) == "1" {
		redirectURI = string(q.Peek("redirect_uri"))
		if !mobileRedirectAllowed(redirectURI, s.devClientEnabled()) {
			return s.mobileRedirectError()
		}
	}
	ctx := RequestContext(c)
	p, err := s.sso.discover(ctx, st.issuer)
	if err != nil {
		return s.ssoRefuse(c, &docflow.SSOAttempt{Next: next, RedirectURI: redirectURI}, "", "discovery: "+err.Error(),
			docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider cannot be reached; try again later"))
	}
	binding := string(c.Request.Header.Cookie(ssoCookie))
	if len(binding) != 43 {
		binding = randomToken()
	}
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	now := s.cfg.Now()
	err = s.sso.deps.Store.SaveSSOAttempt(ctx, docflow.SSOAttempt{StateHash: sha256Hex(state), BindingHash: sha256Hex(binding),
		Nonce: nonce, Verifier: verifier, Issuer: st.issuer, Next: next, RedirectURI: redirectURI,
		CreatedAt: now, ExpiresAt: now.Add(ssoAttemptTTL)})
	if err != nil {
		return err
	}
	s.setSSOCookie(c, binding, int(ssoAttemptTTL/time.Second))
	to := s.oauthConfig(p, st).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))
	c.Response.Header.Set("Location", to)
	c.SetStatusCode(fasthttp.StatusFound)
	return nil
}

func (s *Server) handleSSOCallback(c *fasthttp.RequestCtx) error {
	st, ok := s.ssoSettings()
	if !ok {
		return docflow.Errorf(docflow.ENOTFOUND, "SSO is not configured")
	}
	q := c.QueryArgs()
	ctx := RequestContext(c)
	state := string(q.Peek("state"))
	var att *docflow.SSOAttempt
	if state != "" && len(state) <= 512 {
		a, err := s.sso.deps.Store.TakeSSOAttempt(ctx, sha256Hex(state))
		if err != nil && docflow.ErrorCode(err) != docflow.ENOTFOUND {
			return err
		}
		att = a
	}
	binding := string(c.Request.Header.Cookie(ssoCookie))
	bound := att != nil && binding != "" && subtle.ConstantTimeCompare([]byte(sha256Hex(binding)), []byte(att.BindingHash)) == 1
	if pe := string(q.Peek("error")); pe != "" {
		// The provider refused (the user cancelled, or is not allowed).
		// Its code and description are shown as text, clipped.
		msg := "The sign-in provider refused the sign-in: " + clipText(pe, 64)
		if d := strings.TrimSpace(string(q.Peek("error_description"))); d != "" {
			msg += " (" + clipText(d, 200) + ")"
		}
		var mine *docflow.SSOAttempt
		if bound {
			mine = att
		}
		return s.ssoRefuse(c, mine, "", "provider error: "+clipText(pe, 64), docflow.Errorf(docflow.EUNAUTHORIZED, "%s", msg))
	}
	if att == nil {
		return s.ssoRefuse(c, nil, "", "unknown, used or expired state",
			docflow.Errorf(docflow.EBADREQUEST, "This sign-in is unknown, expired or was already used; please sign in again"))
	}
	if !bound {
		// Another browser's attempt (login CSRF, or a link sent around):
		// it is spent, and nothing of it is shown here.
		return s.ssoRefuse(c, nil, "", "state of another browser",
			docflow.Errorf(docflow.EBADREQUEST, "This sign-in was started in another browser; please sign in again"))
	}
	if att.Issuer != st.issuer {
		return s.ssoRefuse(c, att, "", "issuer changed during the sign-in",
			docflow.Errorf(docflow.EBADREQUEST, "The SSO settings changed during this sign-in; please sign in again"))
	}
	code := string(q.Peek("code"))
	if code == "" || len(code) > 4096 {
		return s.ssoRefuse(c, att, "", "no code", docflow.Errorf(docflow.EBADREQUEST, "The sign-in provider sent no authorization code"))
	}
	p, err := s.sso.discover(ctx, st.issuer)
	if err != nil {
		return s.ssoRefuse(c, att, "", "discovery: "+err.Error(),
			docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider cannot be reached; try again later"))
	}
	id, err := s.ssoIdentity(ctx, p, st, att, code)
	if err != nil {
		return s.ssoRefuse(c, att, "", docflow.ErrorMessage(err), err)
	}
	if id.UserID == docflow.AdminUserID(s.cfg.Settings) {
		// The local admin account signs in with its password only: a
		// provider user whose e-mail or subject is its name is someone else.
		return s.ssoRefuse(c, att, id.UserID, "user id of the local admin account",
			docflow.Errorf(docflow.EFORBIDDEN, "This account cannot sign in through SSO"))
	}
	if _, err := s.sso.deps.Signups.EnsureProfile(ctx, id.UserID, id.DisplayName, "sso"); err != nil {
		return err
	}
	if err := s.sso.deps.Store.RecordSSOSignIn(ctx, docflow.SSOSignIn{UserID: id.UserID, Issuer: st.issuer,
		Subject: id.Subject, IsAdmin: id.IsAdmin, At: s.cfg.Now()}); err != nil {
		return err
	}
	user := &docflow.User{ID: id.UserID, DisplayName: id.DisplayName, Email: id.Email, IsAdmin: id.IsAdmin}
	if _, err := s.startSession(c, user); err != nil {
		return err
	}
	s.setSSOCookie(c, "", -1)
	detail := "subject " + clipText(id.Subject, 200)
	if id.IsAdmin {
		detail += ", admin"
	}
	if att.RedirectURI != "" {
		detail += ", mobile"
	}
	s.audit(c, docflow.AuditEntry{Actor: id.UserID, Action: docflow.AuditSSOSucceeded, Target: "user:" + id.UserID, Detail: detail})
	if att.RedirectURI != "" {
		// Checked when the attempt started; checked again in case the
		// development client was switched off meanwhile.
		if !mobileRedirectAllowed(att.RedirectURI, s.devClientEnabled()) {
			return s.mobileRedirectError()
		}
		return s.mobileHandOff(c, id.UserID, att.RedirectURI)
	}
	s.redirect(c, safeNext(att.Next), fasthttp.StatusSeeOther)
	return nil
}

// ssoRefuse records a failed SSO sign-in (actor: the user when known,
// detail: why, for the administrator) and answers err: the login page
// with the message for a browser, {"detail": …} for anything else.
// The page keeps the attempt's next and mobile redirect when they are
// known (att may be nil), so that trying again resumes the same sign-in.
func (s *Server) ssoRefuse(c *fasthttp.RequestCtx, att *docflow.SSOAttempt, actor, why string, err error) error {
	s.audit(c, docflow.AuditEntry{Actor: actor, Action: docflow.AuditSSOFailed, Detail: clipText(why, 1000)})
	if !strings.Contains(string(c.Request.Header.Peek("Accept")), "text/html") {
		return err
	}
	v := loginView{Error: docflow.ErrorMessage(err) + ".", Next: "/"}
	if att != nil {
		v.Next = safeNext(att.Next)
		if att.RedirectURI != "" && mobileRedirectAllowed(att.RedirectURI, s.devClientEnabled()) {
			v.Mobile, v.RedirectURI = true, att.RedirectURI
		}
	}
	return s.renderLogin(c, ErrorStatusCode(docflow.ErrorCode(err)), v)
}

func (s *Server) setSSOCookie(c *fasthttp.RequestCtx, value string, maxAge int) {
	ck := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(ck)
	ck.SetKey(ssoCookie)
	ck.SetValue(value)
	ck.SetPath("/")
	ck.SetHTTPOnly(true)
	// NOTE: Lax, not Strict: the callback is a top-level navigation from
	// the provider's site, which must carry the cookie.
	ck.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	ck.SetSecure(docflow.SettingBool(s.cfg.Settings, "SESSION_COOKIE_SECURE", !strings.HasPrefix(s.BaseURL(), "http://")))
	if maxAge < 0 {
		ck.SetExpire(fasthttp.CookieExpireDelete)
		ck.SetMaxAge(-1)
	} else {
		ck.SetMaxAge(maxAge)
	}
	c.Response.Header.SetCookie(ck)
}

// randomToken is 32 random bytes, base64url without padding (43 characters).
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) //nolint:errcheck // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// clipText keeps at most n bytes of s, cut on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// cappedTransport caps the bodies the provider sends.
type cappedTransport struct{ next nethttp.RoundTripper }

func (t cappedTransport) RoundTrip(r *nethttp.Request) (*nethttp.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = cappedBody{Reader: io.LimitReader(resp.Body, ssoMaxBody), Closer: resp.Body}
	return resp, nil
}

type cappedBody struct {
	io.Reader
	io.Closer
}
