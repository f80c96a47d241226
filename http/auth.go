package http

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
	"docflow/internal/ttlcache"
)

// SessionCookie is the name of the browser session cookie.
const SessionCookie = "session"

// tokenCacheTTL bounds how long a token lookup is reused. Revocation through
// this process drops the entry at once; other processes see it within the TTL.
const tokenCacheTTL = 2 * time.Second

// tokenCacheSize bounds the tokens whose lookup is kept; beyond it the
// least recently used one is read again when next sent.
const tokenCacheSize = 100_000

// authenticator resolves the user of a request.
type authenticator struct {
	cfg Config

	// cache holds token lookups by hash.
	cache *ttlcache.Cache[string, *docflow.APIToken]

	mu   sync.Mutex
	uses map[int64]docflow.TokenUse

	stopc chan struct{}
	done  chan struct{}

	// failures counts failed bearer tokens per client address; logins the
	// failed sign-ins per user name (authfail.go).
	failures *rateLimiter
	logins   *loginThrottle

	// proxies is TRUSTED_PROXIES parsed (trustedProxies).
	proxies atomic.Pointer[proxyList]
}

func newAuthenticator(cfg Config) *authenticator {
	return &authenticator{cfg: cfg, cache: ttlcache.New[string, *docflow.APIToken](tokenCacheSize, tokenCacheTTL, cfg.Now),
		uses:     map[int64]docflow.TokenUse{},
		failures: newRateLimiter(cfg.Now), logins: newLoginThrottle(cfg.Now, cfg.LoginThrottleRuns)}
}

// HashToken returns the hex SHA-256 stored for a token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

var errNotAuthenticated = docflow.Errorf(docflow.EUNAUTHORIZED, "Not authenticated")
var errInvalidToken = docflow.Errorf(docflow.EUNAUTHORIZED, "Invalid or expired token")
var errAdminRequired = docflow.Errorf(docflow.EFORBIDDEN, "Admin access required")

func (a *authenticator) authEnabled() bool {
	return docflow.AuthEnabled.Get(a.cfg.Settings)
}

// authenticate returns the user for the route's auth level, or an error.
func (a *authenticator) authenticate(c *fasthttp.RequestCtx, level Auth) (*docflow.User, error) {
	ctx := RequestContext(c)
	bearer := bearerToken(c)
	if level == AuthMetrics {
		// Checked before the token look-up, so a scraper's token is never
		// counted as a failed API token.
		if tok := docflow.MetricsToken.Get(a.cfg.Settings); tok != "" && bearer != "" &&
			subtle.ConstantTimeCompare([]byte(bearer), []byte(tok)) == 1 {
			return nil, nil
		}
		level = AuthAdmin
	}
	var user *docflow.User
	var tokenErr error
	if bearer != "" {
		user, tokenErr = a.userFromToken(ctx, c, bearer)
	}
	if level == AuthToken {
		if bearer == "" {
			return nil, errNotAuthenticated
		}
		if tokenErr != nil {
			return nil, tokenErr
		}
		return user, nil
	}
	if user == nil && bearer == "" {
		if sid := a.sessionID(c); sid != "" {
			user = a.userFromSession(ctx, sid)
		}
	}
	if level == AuthSession {
		if user == nil || user.SessionID == "" {
			return nil, errNotAuthenticated
		}
		return user, nil
	}
	if !a.authEnabled() {
		if user == nil {
			// Single-user mode: everyone is the anonymous administrator.
			user = &docflow.User{ID: "", DisplayName: "Local user", IsAdmin: true, Anonymous: true}
		}
		return user, nil
	}
	switch level {
	case AuthNone:
		return user, nil
	case AuthUser, AuthAdmin:
		if user == nil {
			if tokenErr != nil {
				return nil, tokenErr
			}
			return nil, errNotAuthenticated
		}
		if level == AuthAdmin && !user.IsAdmin {
			return nil, errAdminRequired
		}
	}
	return user, nil
}

func bearerToken(c *fasthttp.RequestCtx) string {
	h := string(c.Request.Header.Peek("Authorization"))
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// userFromToken resolves a bearer token. Failed tokens are counted per
// client address (an IPv6 /64 as one), and an address that reached TOKEN_FAILURE_LIMIT is
// refused before its token is looked up.
func (a *authenticator) userFromToken(ctx context.Context, c *fasthttp.RequestCtx, token string) (*docflow.User, error) {
	key := a.clientKey(c)
	if err := a.tokenFailuresBlocked(key); err != nil {
		return nil, err
	}
	u, err := a.tokenUser(ctx, c, token)
	if err == errInvalidToken {
		a.tokenFailed(key)
	}
	return u, err
}

func (a *authenticator) tokenUser(ctx context.Context, c *fasthttp.RequestCtx, token string) (*docflow.User, error) {
	if !docflow.TokenShaped(token) {
		return nil, errInvalidToken
	}
	hash := HashToken(token)
	now := a.cfg.Now()
	tok, ok := a.cache.Get(hash)
	if !ok {
		t, err := a.cfg.Tokens.FindTokenByHash(ctx, hash)
		if err != nil {
			if docflow.ErrorCode(err) == docflow.ENOTFOUND {
				return nil, errInvalidToken
			}
			return nil, err
		}
		tok = t
		a.cache.AddAt(hash, t, now)
	}
	// The lookup was by hash; compare again in constant time.
	if subtle.ConstantTimeCompare([]byte(tok.TokenHash), []byte(hash)) != 1 {
		return nil, errInvalidToken
	}
	if !tok.IsActive || tok.RevokedAt != nil || (tok.ExpiresAt != nil && !now.Before(*tok.ExpiresAt)) {
		return nil, errInvalidToken
	}
	// A token works only while its owner may sign in, with the owner's
	// rights of now.
	st, err := a.userState(ctx, tok.OwnerID)
	if err != nil {
		return nil, err
	}
	if !st.SignIn {
		return nil, errInvalidToken
	}
	a.mu.Lock()
	a.uses[tok.ID] = docflow.TokenUse{At: now, IP: a.clientIP(c)}
	a.mu.Unlock()
	id := tok.ID
	return &docflow.User{ID: tok.OwnerID, IsAdmin: st.Admin, TokenID: &id}, nil
}

// forget drops a token from the cache (after revoke or reactivate).
func (a *authenticator) forget(hash string) { a.cache.Remove(hash) }

// DropCaches forgets every token it cached: after a system reset a token
// that is gone must not be taken for the rest of its cache time.
func (s *Server) DropCaches() { s.auth.cache.Purge() }

// forgetAll drops every cached token (an account's tokens were revoked
// together), so the next request of each reads it again.
func (a *authenticator) forgetAll() { a.cache.Purge() }

// isAdmin reports whether userID is an administrator now; a failed check
// is no right (logged).
func (a *authenticator) isAdmin(ctx context.Context, userID string) bool {
	st, err := a.userState(ctx, userID)
	if err != nil {
		a.cfg.Log.Warn().Err(err).Msg("admin check")
		return false
	}
	return st.Admin
}

// userState is Config.UserState, or without it: everyone may sign in and
// only ADMIN_USERNAME is an administrator.
func (a *authenticator) userState(ctx context.Context, userID string) (docflow.UserState, error) {
	if a.cfg.UserState != nil {
		return a.cfg.UserState(ctx, userID)
	}
	// NOTE: an empty id is nobody's: tokens made without authentication
	// belong to the admin account by name.
	admin := userID != "" && userID == docflow.AdminUserID(a.cfg.Settings)
	return docflow.UserState{SignIn: true, Admin: admin}, nil
}

// sessionID returns the verified id of the session cookie, or "".
func (a *authenticator) sessionID(c *fasthttp.RequestCtx) string {
	v := string(c.Request.Header.Cookie(SessionCookie))
	i := strings.LastIndexByte(v, '.')
	if i <= 0 {
		return ""
	}
	id, sig := v[:i], v[i+1:]
	if !hmac.Equal([]byte(sig), []byte(a.sign(id))) {
		return ""
	}
	return id
}

func (a *authenticator) sign(id string) string {
	m := hmac.New(sha256.New, []byte(a.cfg.SessionSecret))
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// cookieValue returns the signed cookie value for a session id.
func (a *authenticator) cookieValue(id string) string { return id + "." + a.sign(id) }

func (a *authenticator) userFromSession(ctx context.Context, sid string) *docflow.User {
	sess, err := a.cfg.Sessions.FindSession(ctx, sid)
	if err != nil {
		return nil
	}
	stamp, err := a.passwordStamp(ctx, sess.UserID)
	if err != nil {
		a.cfg.Log.Warn().Err(err).Msg("check session password")
		return nil
	}
	if !hmac.Equal([]byte(stamp), []byte(sess.PasswordStamp)) {
		// The password changed since this session signed in: it is over.
		if err := a.cfg.Sessions.DeleteSession(ctx, sid); err != nil {
			a.cfg.Log.Warn().Err(err).Msg("end session of a changed password")
		}
		return nil
	}
	st, err := a.userState(ctx, sess.UserID)
	if err != nil {
		a.cfg.Log.Warn().Err(err).Msg("check session user")
		return nil
	}
	if !st.SignIn {
		return nil
	}
	// The rights are the user's now, not those the session signed in
	// with (sess.IsAdmin), except for tests without Config.UserState.
	admin := st.Admin
	if a.cfg.UserState == nil {
		admin = admin || sess.IsAdmin
	}
	return &docflow.User{ID: sess.UserID, DisplayName: sess.UserID, IsAdmin: admin, SessionID: sess.ID}
}

// passwordStamp fingerprints the password userID signs in with now: the
// local admin's ADMIN_PASSWORD (an HMAC under the session secret, so the
// stored stamp tells nothing about it), else a local account's password
// (Config.LocalPasswordStamp); "" for accounts without one here. A session
// keeps the stamp it signed in under, so changing the password ends it.
func (a *authenticator) passwordStamp(ctx context.Context, userID string) (string, error) {
	if userID == docflow.AdminUserID(a.cfg.Settings) {
		if pw := docflow.AdminPassword.Get(a.cfg.Settings); pw != "" {
			m := hmac.New(sha256.New, []byte(a.cfg.SessionSecret))
			m.Write([]byte("ADMIN_PASSWORD\x00" + pw))
			return "admin:" + hex.EncodeToString(m.Sum(nil))[:32], nil
		}
	}
	if a.cfg.LocalPasswordStamp != nil {
		return a.cfg.LocalPasswordStamp(ctx, userID)
	}
	return "", nil
}

// clientIP is the client's address as the audit log and the request log
// record it (clientAddr).
func (a *authenticator) clientIP(c *fasthttp.RequestCtx) string { return a.clientAddr(c).String() }

// clientKey is what per-address limits count the client against: its
// address, or its IPv6 /64 (addrKey).
func (a *authenticator) clientKey(c *fasthttp.RequestCtx) string { return addrKey(a.clientAddr(c)) }

// clientAddr is the peer address, or the X-Forwarded-For client when the
// peer is a trusted proxy.
func (a *authenticator) clientAddr(c *fasthttp.RequestCtx) net.IP {
	ip := c.RemoteIP()
	proxies := a.trustedProxies()
	if !proxies.contains(ip) {
		return ip
	}
	xff := string(c.Request.Header.Peek("X-Forwarded-For"))
	parts := strings.Split(xff, ",")
	// Walk from the right: the first address that is not a trusted proxy is the client.
	for i := len(parts) - 1; i >= 0; i-- {
		p := net.ParseIP(strings.TrimSpace(parts[i]))
		if p == nil {
			break
		}
		if !proxies.contains(p) {
			return p
		}
	}
	return ip
}

// proxyList is TRUSTED_PROXIES parsed, kept while the setting's text is
// the same: the client's address is asked for on every request of a
// token and of a rate-limited route.
type proxyList struct {
	raw  string
	nets []*net.IPNet // an address alone is a network of one
}

// trustedProxies returns TRUSTED_PROXIES parsed.
func (a *authenticator) trustedProxies() *proxyList {
	raw := a.cfg.Settings.Get(docflow.TrustedProxies.Key())
	if p := a.proxies.Load(); p != nil && p.raw == raw {
		return p
	}
	p := &proxyList{raw: raw}
	for _, item := range docflow.TrustedProxies.Get(rawSetting(raw)) {
		if _, n, err := net.ParseCIDR(item); err == nil {
			p.nets = append(p.nets, n)
		} else if ip := net.ParseIP(item); ip != nil {
			if ip4 := ip.To4(); ip4 != nil {
				ip = ip4
			}
			p.nets = append(p.nets, &net.IPNet{IP: ip, Mask: net.CIDRMask(len(ip)*8, len(ip)*8)})
		}
	}
	a.proxies.Store(p)
	return p
}

// contains reports whether ip is one of the proxies.
func (p *proxyList) contains(ip net.IP) bool {
	for _, n := range p.nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// rawSetting reads every key as one text (a setting's effective value,
// parsed by its handle).
type rawSetting string

func (r rawSetting) Get(string) string { return string(r) }

func ipIn(ip net.IP, list []string) bool {
	for _, p := range list {
		if strings.Contains(p, "/") {
			if _, n, err := net.ParseCIDR(p); err == nil && n.Contains(ip) {
				return true
			}
		} else if q := net.ParseIP(p); q != nil && q.Equal(ip) {
			return true
		}
	}
	return false
}

// start runs the batched last-use writer.
func (a *authenticator) start() {
	a.stopc, a.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(a.done)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-a.stopc:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				a.flush(ctx)
				cancel()
			}
		}
	}()
}

func (a *authenticator) stop(ctx context.Context) {
	if a.stopc != nil {
		close(a.stopc)
		<-a.done
		a.stopc = nil
	}
	a.flush(ctx)
}

// flush writes the recorded last uses in one statement.
func (a *authenticator) flush(ctx context.Context) {
	a.mu.Lock()
	uses := a.uses
	a.uses = map[int64]docflow.TokenUse{}
	a.mu.Unlock()
	if len(uses) == 0 {
		return
	}
	if err := a.cfg.Tokens.TouchTokens(ctx, uses); err != nil {
		a.cfg.Log.Warn().Err(err).Msg("record token last use")
	}
}
