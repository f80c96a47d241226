package http

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"docflow"
)

// startSession signs user in on this browser: a server-side session for
// SESSION_LIFETIME_DAYS, bound to the password stamp of the account (none
// for SSO users), and its signed cookie. Every way of signing in (password
// or SSO) ends here.
func (s *Server) startSession(c *fasthttp.RequestCtx, user *docflow.User) (*docflow.Session, error) {
	days := docflow.SessionLifetimeDays.Get(s.cfg.Settings)
	b := make([]byte, 32)
	rand.Read(b) //nolint:errcheck
	now := s.cfg.Now()
	stamp, err := s.auth.passwordStamp(RequestContext(c), user.ID)
	if err != nil {
		return nil, err
	}
	sess := &docflow.Session{ID: base64.RawURLEncoding.EncodeToString(b), UserID: user.ID, IsAdmin: user.IsAdmin,
		CreatedAt: now, ExpiresAt: now.Add(time.Duration(days) * 24 * time.Hour), PasswordStamp: stamp}
	if err := s.cfg.Sessions.CreateSession(RequestContext(c), sess); err != nil {
		return nil, err
	}
	s.setSessionCookie(c, s.auth.cookieValue(sess.ID), days*86400)
	return sess, nil
}

// The mobile hand-off. The app opens /login?mobile=1&redirect_uri=… (or
// the SSO button's /oauth-login with the same parameters) in a system
// browser; once the user signed in, the browser is sent to redirect_uri
// with either
//   - ?code=…, when the app sent a PKCE code_challenge (S256): a one-time
//     code, valid mobileCodeTTL, that the app exchanges with its verifier
//     at POST /api/mobile/token, so an app that only owns the scheme gets
//     nothing it can use; or
//   - ?token=…, the original mobile flow, an API token in the URL, unless
//     MOBILE_TOKEN_IN_REDIRECT is false.

// mobileCodeTTL is how long a hand-off code may wait for its exchange.
const mobileCodeTTL = 60 * time.Second

// MobileCodeStore is what the mobile hand-off asks of storage.
type MobileCodeStore interface {
	// SaveMobileCode stores a one-time code (known by its hash).
	SaveMobileCode(ctx context.Context, m docflow.MobileCode) error
	// TakeMobileCode removes and returns a code; ENOTFOUND when unknown
	// or already taken.
	TakeMobileCode(ctx context.Context, codeHash string) (*docflow.MobileCode, error)
}

// MobileHandOffDeps are what the code flow of the mobile hand-off needs.
type MobileHandOffDeps struct {
	Codes MobileCodeStore
}

// MountMobileHandOff enables the code flow of the mobile hand-off and
// mounts POST /api/mobile/token. Without it, a login that sends a
// code_challenge is refused (400).
func (s *Server) MountMobileHandOff(d MobileHandOffDeps) {
	if d.Codes == nil {
		panic("http: MountMobileHandOff needs Codes")
	}
	s.handoff = &d
	s.Handle("POST", "/api/mobile/token", Route{Auth: AuthNone, Limit: LimitAuth}, s.handleMobileToken, docMobileToken)
}

// mobileReq is the mobile app's part of a sign-in: where the hand-off goes
// and, for the code flow, the app's S256 code challenge.
type mobileReq struct{ RedirectURI, Challenge string }

// readMobile reads mobile=1, redirect_uri, code_challenge and
// code_challenge_method from args (a query or a form): nil when the
// sign-in is not the mobile app's; an error when the app's request cannot
// be served (a redirect_uri that is not the app's, a malformed or
// unsupported challenge, no challenge while MOBILE_TOKEN_IN_REDIRECT is
// false).
func (s *Server) readMobile(args *fasthttp.Args) (*mobileReq, error) {
	if string(args.Peek("mobile")) != "1" {
		return nil, nil
	}
	m := &mobileReq{RedirectURI: string(args.Peek("redirect_uri")), Challenge: string(args.Peek("code_challenge"))}
	if !mobileRedirectAllowed(m.RedirectURI, s.devClientEnabled()) {
		return nil, s.mobileRedirectError()
	}
	method := string(args.Peek("code_challenge_method"))
	if m.Challenge == "" && method == "" {
		if !s.tokenInRedirect() {
			return nil, errTokenInRedirectOff
		}
		return m, nil
	}
	if method != "S256" {
		return nil, docflow.Errorf(docflow.EBADREQUEST, "code_challenge_method must be S256")
	}
	if !validChallenge(m.Challenge) {
		return nil, docflow.Errorf(docflow.EBADREQUEST, "code_challenge must be the base64url SHA-256 of the verifier (43 characters)")
	}
	if s.handoff == nil {
		return nil, docflow.Errorf(docflow.EBADREQUEST, "This server does not support the mobile code exchange")
	}
	return m, nil
}

var errTokenInRedirectOff = docflow.Errorf(docflow.EBADREQUEST,
	"This server gives the app a one-time code only: the app must send a PKCE code_challenge (S256); update the app")

// tokenInRedirect is MOBILE_TOKEN_IN_REDIRECT: whether the hand-off may
// put an API token in the redirect (the original mobile flow, for apps
// that send no PKCE challenge).
func (s *Server) tokenInRedirect() bool {
	return docflow.MobileTokenInRedirect.Get(s.cfg.Settings)
}

// validChallenge: 43 characters of base64url, the length of a SHA-256.
func validChallenge(ch string) bool {
	if len(ch) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(ch)
	return err == nil
}

// validVerifier: RFC 7636 4.1, 43 to 128 unreserved characters.
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		b := v[i]
		if !(b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '.' || b == '_' || b == '~') {
			return false
		}
	}
	return true
}

// mobileHandOff ends the mobile app's sign-in of userID: a one-time code
// for an app that sent a challenge, else an API token valid
// MOBILE_TOKEN_LIFETIME_DAYS (when MOBILE_TOKEN_IN_REDIRECT allows it),
// in the redirect to m.RedirectURI, an address the caller checked with
// mobileRedirectAllowed.
func (s *Server) mobileHandOff(c *fasthttp.RequestCtx, userID string, m *mobileReq) error {
	var param string
	if m.Challenge != "" {
		if s.handoff == nil {
			return docflow.Errorf(docflow.EBADREQUEST, "This server does not support the mobile code exchange")
		}
		code := randomToken()
		now := s.cfg.Now()
		err := s.handoff.Codes.SaveMobileCode(RequestContext(c), docflow.MobileCode{CodeHash: sha256Hex(code), UserID: userID,
			Challenge: m.Challenge, RedirectURI: m.RedirectURI, CreatedAt: now, ExpiresAt: now.Add(mobileCodeTTL)})
		if err != nil {
			return err
		}
		param = "code=" + code
	} else {
		// Checked when the sign-in started; checked again in case the
		// setting changed meanwhile.
		if !s.tokenInRedirect() {
			return errTokenInRedirectOff
		}
		exp := s.mobileTokenExpiry()
		t, err := IssueToken(c, s.cfg.Tokens, userID, "Mobile App – Browser login", &exp)
		if err != nil {
			return err
		}
		s.auditTokenCreate(c, t, userID)
		param = "token=" + url.QueryEscape(t.Token)
	}
	sep := "?"
	if strings.Contains(m.RedirectURI, "?") {
		sep = "&"
	}
	// NOTE: not c.Redirect, which normalises the URI of a custom scheme.
	c.Response.Header.Set("Location", m.RedirectURI+sep+param)
	c.SetStatusCode(fasthttp.StatusSeeOther)
	return nil
}

var errBadMobileCode = docflow.Errorf(docflow.EBADREQUEST, "Invalid or expired code")

// handleMobileToken is POST /api/mobile/token {code, code_verifier,
// redirect_uri, device_name}: the app exchanges the hand-off's code for an
// API token (201 {token, token_id, name, created_at, expires_at}). The
// code serves once, whatever the outcome, within mobileCodeTTL, and only
// with the verifier of its challenge (and the redirect_uri it was sent
// to, when given); anything else is 400 "Invalid or expired code".
func (s *Server) handleMobileToken(c *fasthttp.RequestCtx) error {
	var req mobileTokenRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Code == "" || len(req.Code) > 128 || !validVerifier(req.CodeVerifier) {
		return errBadMobileCode
	}
	m, err := s.handoff.Codes.TakeMobileCode(RequestContext(c), sha256Hex(req.Code))
	if docflow.ErrorCode(err) == docflow.ENOTFOUND {
		return errBadMobileCode
	}
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(req.CodeVerifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	if !s.cfg.Now().Before(m.ExpiresAt) || subtle.ConstantTimeCompare([]byte(challenge), []byte(m.Challenge)) != 1 ||
		(req.RedirectURI != "" && req.RedirectURI != m.RedirectURI) {
		return errBadMobileCode
	}
	name := "Browser login"
	if d := strings.TrimSpace(req.DeviceName); d != "" && utf8.ValidString(d) {
		name = clipText(d, 100)
	}
	exp := s.mobileTokenExpiry()
	t, err := IssueToken(c, s.cfg.Tokens, m.UserID, "Mobile App – "+name, &exp)
	if err != nil {
		return err
	}
	s.auditTokenCreate(c, t, m.UserID)
	writeJSON(c, fasthttp.StatusCreated, mobileToken{Token: t.Token, TokenID: t.ID, Name: t.Name,
		CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt})
	return nil
}
