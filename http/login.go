package http

import (
	"crypto/subtle"
	"errors"
	"html/template"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in · docflow</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/docflow.css"></head>
<body class="auth"><form method="post" action="/login">
<h1>docflow</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<label for="username">Username</label><input id="username" name="username" autocomplete="username" required value="{{.Username}}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<input type="hidden" name="next" value="{{.Next}}">
{{if .Mobile}}<input type="hidden" name="mobile" value="1"><input type="hidden" name="redirect_uri" value="{{.RedirectURI}}">{{end}}
{{if .CodeChallenge}}<input type="hidden" name="code_challenge" value="{{.CodeChallenge}}"><input type="hidden" name="code_challenge_method" value="S256">{{end}}
<button type="submit">Sign in</button>
{{if .SSOURL}}<p class="sso"><a href="{{.SSOURL}}">Sign in with SSO</a></p>{{end}}
{{if .Forgot}}<p class="forgot"><a href="/forgot-password">Forgot your password or user name?</a></p>{{end}}
</form></body></html>`))

type loginView struct {
	Error, Username, Next, RedirectURI string
	Mobile                             bool
	// CodeChallenge is the mobile app's PKCE challenge (signin.go).
	CodeChallenge string
	// SSOURL starts single sign-on (oauth.go); empty when not configured.
	SSOURL string
	// Forgot links the self-service page (local accounts mounted).
	Forgot bool
}

// setMobile makes the page the mobile app's sign-in m (nil: a browser's).
func (v *loginView) setMobile(m *mobileReq) {
	if m != nil {
		v.Mobile, v.RedirectURI, v.CodeChallenge = true, m.RedirectURI, m.Challenge
	}
}

// mobile is the mobile app's sign-in the page serves (nil: a browser's).
func (v *loginView) mobile() *mobileReq {
	if !v.Mobile {
		return nil
	}
	return &mobileReq{RedirectURI: v.RedirectURI, Challenge: v.CodeChallenge}
}

// mobileRedirectAllowed says whether the mobile login may hand a token to
// u (open-redirect protection): the app's own docflow:// scheme always;
// exp://, the development client's, only when devClient is on and then
// only for a loopback or private-network host, where a developer's phone
// reaches the bundler. Anything with user info, a fragment (the token would
// land in it) or an opaque form is refused.
func mobileRedirectAllowed(u string, devClient bool) bool {
	if len(u) > 2048 {
		return false
	}
	p, err := url.Parse(u)
	if err != nil || p.Opaque != "" || p.User != nil || p.Fragment != "" || strings.Contains(u, "#") {
		return false
	}
	switch p.Scheme {
	case "docflow":
		return strings.HasPrefix(strings.ToLower(u), "docflow://")
	case "exp":
		return devClient && localNetworkHost(p.Hostname())
	}
	return false
}

// localNetworkHost accepts localhost and loopback or private addresses
// (RFC 1918, RFC 4193); names other than localhost are refused, since
// where they point is up to whoever owns them.
func localNetworkHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate())
}

// mobileRedirectError explains what redirect_uri may be.
func (s *Server) mobileRedirectError() error {
	if s.devClientEnabled() {
		return docflow.Errorf(docflow.EBADREQUEST, "redirect_uri must use the docflow:// scheme, or exp:// with a loopback or private-network host")
	}
	return docflow.Errorf(docflow.EBADREQUEST, "redirect_uri must use the docflow:// scheme (exp:// needs MOBILE_DEV_CLIENT_ENABLED)")
}

func (s *Server) devClientEnabled() bool {
	return docflow.MobileDevClientEnabled.Get(s.cfg.Settings)
}

// mobileTokenExpiry is when a token handed to the app expires
// (MOBILE_TOKEN_LIFETIME_DAYS, 1 to 3650, default 365).
func (s *Server) mobileTokenExpiry() time.Time {
	days := docflow.MobileTokenLifetimeDays.Get(s.cfg.Settings)
	if days < 1 || days > 3650 {
		days = 365
	}
	return s.cfg.Now().Add(time.Duration(days) * 24 * time.Hour)
}

func (s *Server) renderLogin(c *fasthttp.RequestCtx, status int, v loginView) error {
	c.Response.Header.SetContentType("text/html; charset=utf-8")
	c.SetStatusCode(status)
	v.SSOURL = s.ssoLoginURL(v.Next, v.mobile())
	v.Forgot = s.mail != nil && !v.Mobile
	return loginPage.Execute(c, v)
}

func (s *Server) mountLogin() {
	s.Handle("GET", "/login", Route{Auth: AuthNone}, s.handleLoginPage, docLoginPage)
	s.Handle("POST", "/login", Route{Auth: AuthNone, Limit: LimitAuth}, s.handleLogin, docLogin)
	s.Handle("POST", "/logout", Route{Auth: AuthNone}, s.handleLogout, docLogout)
}

func (s *Server) handleLoginPage(c *fasthttp.RequestCtx) error {
	q := c.QueryArgs()
	v := loginView{Next: safeNext(string(q.Peek("next")))}
	m, err := s.readMobile(q)
	if err != nil {
		return err
	}
	v.setMobile(m)
	return s.renderLogin(c, fasthttp.StatusOK, v)
}

func (s *Server) handleLogout(c *fasthttp.RequestCtx) error {
	if sid := s.auth.sessionID(c); sid != "" {
		if err := s.cfg.Sessions.DeleteSession(RequestContext(c), sid); err != nil {
			return err
		}
	}
	s.setSessionCookie(c, "", -1)
	if strings.Contains(string(c.Request.Header.Peek("Accept")), "text/html") {
		s.redirect(c, "/login", fasthttp.StatusSeeOther)
		return nil
	}
	writeJSON(c, fasthttp.StatusOK, Detail{Detail: "Logged out"})
	return nil
}

func (s *Server) handleLogin(c *fasthttp.RequestCtx) error {
	var username, password, next string
	var mobile *mobileReq
	isJSON := strings.HasPrefix(string(c.Request.Header.ContentType()), "application/json")
	if isJSON {
		var req struct {
			Username string `json:"username"`
			Password string `json:"password"`
		}
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
		username, password = req.Username, req.Password
	} else {
		args := c.PostArgs()
		username, password = string(args.Peek("username")), string(args.Peek("password"))
		next = safeNext(string(args.Peek("next")))
		var err error
		if mobile, err = s.readMobile(args); err != nil {
			return err
		}
	}
	username = strings.TrimSpace(username)
	tooMany := func(err error) error {
		if isJSON {
			return err
		}
		var e *docflow.Error
		if errors.As(err, &e) {
			c.Response.Header.Set("Retry-After", strconv.Itoa(e.RetryAfter))
		}
		v := loginView{Error: docflow.ErrorMessage(err) + ".", Username: username, Next: next}
		v.setMobile(mobile)
		return s.renderLogin(c, fasthttp.StatusTooManyRequests, v)
	}
	if err := s.loginDelayed(c, username); err != nil {
		s.auditLoginFailed(c, username, "throttled after failed sign-ins")
		return tooMany(err)
	}
	user, ok, err := s.checkPassword(c, username, password)
	if docflow.ErrorCode(err) == docflow.ERATELIMIT {
		// Too many passwords being checked: nothing was, so this is no
		// failure of the name.
		return tooMany(err)
	}
	if err != nil {
		return err
	}
	if !ok {
		if username != "" {
			s.loginFailed(c, username)
		}
		s.auditLoginFailed(c, username, "invalid username or password")
		if isJSON {
			return docflow.Errorf(docflow.EUNAUTHORIZED, "Invalid username or password")
		}
		v := loginView{Error: "Invalid username or password.", Username: username, Next: next}
		v.setMobile(mobile)
		return s.renderLogin(c, fasthttp.StatusUnauthorized, v)
	}
	s.loginSucceeded(c, username)
	how := "password"
	if mobile != nil {
		how = "password, mobile app"
	}
	s.audit(c, docflow.AuditEntry{Actor: user.ID, Action: docflow.AuditLoginSucceeded, Target: "user:" + user.ID, Detail: how})
	sess, err := s.startSession(c, user)
	if err != nil {
		return err
	}
	if mobile != nil {
		return s.mobileHandOff(c, user.ID, mobile)
	}
	if isJSON {
		writeJSON(c, fasthttp.StatusOK, map[string]any{"user_id": user.ID, "is_admin": user.IsAdmin, "expires_at": sess.ExpiresAt})
		return nil
	}
	s.redirect(c, next, fasthttp.StatusSeeOther)
	return nil
}

// checkPassword verifies the local admin (ADMIN_USERNAME/ADMIN_PASSWORD) in
// constant time, then local accounts when a checker is configured. An
// error is ERATELIMIT from a busy hasher (nothing was checked) or a
// failure of the store; a wrong name or password is only !ok.
func (s *Server) checkPassword(c *fasthttp.RequestCtx, username, password string) (*docflow.User, bool, error) {
	adminUser := docflow.AdminUsername.Get(s.cfg.Settings)
	adminPass := docflow.AdminPassword.Get(s.cfg.Settings)
	if adminPass != "" && username != "" {
		uOK := subtle.ConstantTimeCompare([]byte(username), []byte(adminUser))
		pOK := subtle.ConstantTimeCompare([]byte(password), []byte(adminPass))
		if uOK&pOK == 1 {
			return &docflow.User{ID: adminUser, DisplayName: adminUser, IsAdmin: true}, true, nil
		}
	}
	if s.cfg.LocalLogin != nil && username != "" && password != "" {
		u, err := s.cfg.LocalLogin(RequestContext(c), username, password)
		switch code := docflow.ErrorCode(err); {
		case err == nil && u != nil:
			return u, true, nil
		case code == docflow.ERATELIMIT || code == docflow.EUNAVAILABLE || code == docflow.EINTERNAL:
			return nil, false, err
		}
	}
	return nil, false, nil
}

// setSessionCookie sets the session cookie for maxAge seconds, or
// deletes it when maxAge is negative.
func (s *Server) setSessionCookie(c *fasthttp.RequestCtx, value string, maxAge int) {
	s.setCookie(c, SessionCookie, value, maxAge)
}

// cookieSecure says whether the server's cookies (session and SSO) are
// Secure: SESSION_COOKIE_SECURE, default true unless BASE_URL is http.
func (s *Server) cookieSecure() bool {
	if v, ok := docflow.SessionCookieSecure.Lookup(s.cfg.Settings); ok {
		return v
	}
	return !strings.HasPrefix(s.BaseURL(), "http://")
}

// setCookie sets one of the server's cookies for maxAge seconds, or
// deletes it when maxAge is negative. Every cookie is the whole site's
// (Path /, no Domain, as a __Host- cookie must be), HttpOnly, Secure per
// cookieSecure, and SameSite Lax.
//
// NOTE: Lax, not Strict: the SSO callback is a top-level navigation from
// the provider's site, which must carry the SSO cookie, and a link into
// docflow from elsewhere must find the user signed in.
func (s *Server) setCookie(c *fasthttp.RequestCtx, name, value string, maxAge int) {
	ck := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(ck)
	ck.SetKey(name)
	ck.SetValue(value)
	ck.SetPath("/")
	ck.SetHTTPOnly(true)
	ck.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	ck.SetSecure(s.cookieSecure())
	if maxAge < 0 {
		ck.SetExpire(fasthttp.CookieExpireDelete)
		ck.SetMaxAge(-1)
	} else {
		ck.SetMaxAge(maxAge)
	}
	c.Response.Header.SetCookie(ck)
}
