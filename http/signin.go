package http

import (
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// startSession signs user in on this browser: a server-side session for
// SESSION_LIFETIME_DAYS, bound to the password stamp of the account (none
// for SSO users), and its signed cookie. Every way of signing in (password
// or SSO) ends here.
func (s *Server) startSession(c *fasthttp.RequestCtx, user *docflow.User) (*docflow.Session, error) {
	days := docflow.SettingInt(s.cfg.Settings, "SESSION_LIFETIME_DAYS", 30)
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

// mobileHandOff ends the mobile login (/login?mobile=1&redirect_uri=…):
// it mints an API token for userID, valid MOBILE_TOKEN_LIFETIME_DAYS, and
// sends the browser to redirectURI?token=…, an address the caller checked
// with mobileRedirectAllowed.
func (s *Server) mobileHandOff(c *fasthttp.RequestCtx, userID, redirectURI string) error {
	exp := s.mobileTokenExpiry()
	t, err := IssueToken(c, s.cfg.Tokens, userID, "Mobile App – Browser login", &exp)
	if err != nil {
		return err
	}
	sep := "?"
	if strings.Contains(redirectURI, "?") {
		sep = "&"
	}
	// NOTE: not c.Redirect, which normalises the URI of a custom scheme.
	c.Response.Header.Set("Location", redirectURI+sep+"token="+url.QueryEscape(t.Token))
	c.SetStatusCode(fasthttp.StatusSeeOther)
	return nil
}
