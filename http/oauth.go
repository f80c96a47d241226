package http

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
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
	"docflow/internal/netguard"
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
	// SignInSSO records a successful sign-in and says which user it is
	// (docflow.ResolveSSOSignIn, adminUserID being ADMIN_USERNAME); a
	// refusal is a *docflow.SSORefusal.
	SignInSSO(ctx context.Context, in docflow.SSOSignIn, adminUserID string) (*docflow.SSOResolution, error)
}

// SSODeps are the dependencies of the SSO routes.
type SSODeps struct {
	Store SSOStore
	// Admin serves the administrators' SSO routes (sso_admin.go); nil
	// mounts none.
	Admin SSOAdminStore
	// Signups creates the profile of a user seen for the first time.
	Signups docflow.Signups
	// HTTPClient talks to the provider (default: a netguard client, the
	// issuer being the operator's and so allowed on a private address,
	// with the environment's proxy, ssoTimeout per request, bodies capped
	// at ssoMaxBody).
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
	// ssoCookie binds an attempt to the browser that started it;
	// ssoSecureCookie is its name when the cookie is Secure: a __Host-
	// cookie cannot be set by a sibling subdomain or over plain HTTP.
	ssoCookie       = "docflow_sso"
	ssoSecureCookie = "__Host-docflow_sso"
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
		c := netguard.Client(netguard.ClientOptions{Dialer: netguard.Dialer{AllowPrivate: true}, Proxy: true,
			Redirects: 10, Timeout: d.Timeout})
		c.Transport = cappedTransport{c.Transport}
		d.HTTPClient = c
	}
	s.sso = &ssoClient{deps: d, log: s.log}
	// Discovery, the token exchange and the user info each have their
	// own timeout; the route's covers all three.
	opts := Route{Auth: AuthNone, Limit: LimitAuth, Timeout: 3*d.Timeout + 5*time.Second}
	s.Handle("GET", "/oauth-login", opts, s.handleSSOLogin, docSSOLogin)
	s.Handle("GET", "/oauth-callback", opts, s.handleSSOCallback, docSSOCallback)
	if d.Admin != nil {
		s.mountSSOAdmin(d.Admin)
	}
}

// ssoSettings are the provider settings in force.
type ssoSettings struct{ issuer, clientID, secret string }

func (s *Server) ssoSettings() (ssoSettings, bool) {
	st := ssoSettings{issuer: strings.TrimSpace(docflow.OIDCIssuer.Get(s.cfg.Settings)),
		clientID: strings.TrimSpace(docflow.OIDCClientID.Get(s.cfg.Settings)), secret: docflow.OIDCClientSecret.Get(s.cfg.Settings)}
	return st, s.sso != nil && st.issuer != "" && st.clientID != ""
}

// ssoLoginURL is the address of the login page's SSO button ("" when SSO
// is not configured): /oauth-login with the page's next and mobile
// parameters, which the round trip keeps.
func (s *Server) ssoLoginURL(next string, m *mobileReq) string {
	if _, ok := s.ssoSettings(); !ok {
		return ""
	}
	q := url.Values{}
	if next != "" && next != "/" {
		q.Set("next", next)
	}
	if m != nil {
		q.Set("mobile", "1")
		q.Set("redirect_uri", m.RedirectURI)
		if m.Challenge != "" {
			q.Set("code_challenge", m.Challenge)
			q.Set("code_challenge_method", "S256")
		}
	}
	if len(q) == 0 {
		return "/oauth-login"
	}
	return "/oauth-login?" + q.Encode()
}

// oauthConfig is the OAuth 2 client of the provider.
func (s *Server) oauthConfig(p *oidc.Provider, st ssoSettings) *oauth2.Config {
	return &oauth2.Config{ClientID: st.clientID, ClientSecret: st.secret, Endpoint: p.Endpoint(),
		RedirectURL: s.BaseURL() + "/oauth-callback", Scopes: docflow.OIDCScopes.Get(s.cfg.Settings)}
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
	m, err := s.readMobile(q)
	if err != nil {
		return err
	}
	pending := &docflow.SSOAttempt{Next: next}
	if m != nil {
		pending.RedirectURI, pending.CodeChallenge = m.RedirectURI, m.Challenge
	}
	ctx := RequestContext(c)
	p, err := s.sso.discover(ctx, st.issuer)
	if err != nil {
		return s.ssoRefuse(c, pending, "", "discovery: "+err.Error(),
			docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider cannot be reached; try again later"))
	}
	// NOTE: a fresh binding for every attempt, never the cookie the
	// browser brings: a value planted by someone else (a sibling
	// subdomain can set cookies here) would bind their attempt to it.
	binding := randomToken()
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	now := s.cfg.Now()
	att := *pending
	att.StateHash, att.BindingHash, att.Nonce, att.Verifier, att.Issuer = sha256Hex(state), sha256Hex(binding), nonce, verifier, st.issuer
	att.CreatedAt, att.ExpiresAt = now, now.Add(ssoAttemptTTL)
	err = s.sso.deps.Store.SaveSSOAttempt(ctx, att)
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
	binding := string(c.Request.Header.Cookie(s.ssoCookieName()))
	bound := att != nil && binding != "" && subtle.ConstantTimeCompare([]byte(sha256Hex(binding)), []byte(att.BindingHash)) == 1
	if pe := string(q.Peek("error")); pe != "" {
		// The provider refused (the user cancelled, or is not allowed).
		// Anyone can send a link with any error text: the page shows a
		// fixed message per known code, never the provider's words.
		code, msg := providerError(pe)
		var mine *docflow.SSOAttempt
		if bound {
			mine = att
		}
		return s.ssoRefuse(c, mine, "", "provider error: "+code, docflow.Errorf(docflow.EUNAUTHORIZED, "%s", msg))
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
	who := "subject " + clipText(id.Subject, 200)
	if id.Email != "" {
		who += " (" + clipText(id.Email, 320) + ")"
	}
	if why := s.ssoPolicy().refusal(*id); why != "" {
		return s.ssoRefuse(c, att, "", who+": "+why, errSSONotAllowed)
	}
	res, err := s.sso.deps.Store.SignInSSO(ctx, docflow.SSOSignIn{Issuer: st.issuer, Subject: id.Subject, Email: id.Email,
		IsAdmin: id.IsAdmin, RefreshToken: id.RefreshToken, Picture: id.Picture, At: s.cfg.Now()}, docflow.AdminUserID(s.cfg.Settings))
	var refused *docflow.SSORefusal
	if errors.As(err, &refused) {
		if refused.SubjectChanged {
			s.audit(c, docflow.AuditEntry{Actor: "-", Action: docflow.AuditSSOSubjectChanged,
				Target: "user:" + refused.UserID, Detail: clipText(refused.Reason, 1000)})
		}
		return s.ssoRefuse(c, att, "", who+" as "+refused.UserID+": "+refused.Reason, refused.Err)
	}
	if err != nil {
		return err
	}
	if _, err := s.sso.deps.Signups.EnsureProfile(ctx, res.UserID, id.DisplayName, "sso"); err != nil {
		return err
	}
	// NOTE: the session carries no admin status of its own: an SSO
	// user's is read from its SSO identity at every request, so a
	// removal at the provider reaches it (SSO_ADMIN_RECHECK).
	user := &docflow.User{ID: res.UserID, DisplayName: id.DisplayName, Email: id.Email}
	if _, err := s.startSession(c, user); err != nil {
		return err
	}
	s.setSSOCookie(c, "", -1)
	detail := who
	if id.IsAdmin {
		detail += ", admin"
	}
	if res.BindLink != 0 {
		detail += ", bound to the linked local account"
	}
	if att.RedirectURI != "" {
		detail += ", mobile"
	}
	s.audit(c, docflow.AuditEntry{Actor: res.UserID, Action: docflow.AuditSSOSucceeded, Target: "user:" + res.UserID, Detail: detail})
	if att.RedirectURI != "" {
		// Checked when the attempt started; checked again in case the
		// development client was switched off meanwhile.
		if !mobileRedirectAllowed(att.RedirectURI, s.devClientEnabled()) {
			return s.mobileRedirectError()
		}
		return s.mobileHandOff(c, res.UserID, &mobileReq{RedirectURI: att.RedirectURI, Challenge: att.CodeChallenge})
	}
	s.redirect(c, safeNext(att.Next), fasthttp.StatusSeeOther)
	return nil
}

// providerError turns the provider's error code into the code the audit
// log records (unknown ones as "other") and the fixed message the user
// reads.
func providerError(code string) (string, string) {
	switch code {
	case "access_denied":
		return code, "The sign-in was cancelled or refused at the sign-in provider"
	case "login_required", "interaction_required", "consent_required", "account_selection_required":
		return code, "The sign-in provider needs you to sign in there first; please sign in again"
	case "temporarily_unavailable", "server_error":
		return code, "The sign-in provider cannot sign you in right now; try again later"
	case "invalid_request", "unauthorized_client", "unsupported_response_type", "invalid_scope",
		"invalid_request_uri", "invalid_request_object", "request_not_supported", "request_uri_not_supported", "registration_not_supported":
		return code, "The sign-in provider refused docflow's sign-in request; tell an administrator"
	}
	return "other", "The sign-in provider refused the sign-in"
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
			v.Mobile, v.RedirectURI, v.CodeChallenge = true, att.RedirectURI, att.CodeChallenge
		}
	}
	return s.renderLogin(c, ErrorStatusCode(docflow.ErrorCode(err)), v)
}

// ssoCookieName is the SSO cookie's name: __Host-docflow_sso when Secure.
func (s *Server) ssoCookieName() string {
	if s.cookieSecure() {
		return ssoSecureCookie
	}
	return ssoCookie
}

// setSSOCookie sets the SSO cookie (ssoCookieName) as setCookie does.
func (s *Server) setSSOCookie(c *fasthttp.RequestCtx, value string, maxAge int) {
	s.setCookie(c, s.ssoCookieName(), value, maxAge)
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
