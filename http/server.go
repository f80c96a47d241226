package http

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/router"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"docflow"
)

// Handler is the signature of every docflow handler.
type Handler func(c *fasthttp.RequestCtx) error

// Auth levels of a route.
type Auth int

const (
	// AuthNone: no credentials needed (a valid one is still recognised).
	AuthNone Auth = iota
	// AuthUser: session or bearer token, unless AUTH_ENABLED is false.
	AuthUser
	// AuthAdmin: an administrator (everyone in single-user mode).
	AuthAdmin
	// AuthToken: a bearer API token, even in single-user mode.
	AuthToken
	// AuthSession: a browser session cookie specifically.
	AuthSession
	// AuthMetrics (GET /metrics): the METRICS_TOKEN as a bearer token when
	// that setting is set, else as AuthAdmin.
	AuthMetrics
)

// Rate-limit classes: RATE_LIMIT_DEFAULT, RATE_LIMIT_UPLOAD, RATE_LIMIT_AUTH,
// or none.
type Limit int

const (
	LimitDefault Limit = iota
	LimitUpload
	LimitAuth
	LimitNone
)

// Route options.
type Route struct {
	Auth  Auth
	Limit Limit
	// Stream leaves the request body unread for the handler, which reads
	// it through s.progressBody (its read deadline moves with progress);
	// otherwise the body is read up to MAX_REQUEST_BODY_SIZE and 413
	// answers anything larger.
	Stream bool
	// Timeout of the request context (default 30 s).
	Timeout time.Duration
}

// Config is what the server needs from outside.
type Config struct {
	Log      zerolog.Logger
	Settings docflow.SettingsStore
	Tokens   docflow.TokenStore
	Sessions docflow.SessionStore
	Recorder docflow.Recorder // optional
	Version  string
	// SessionSecret signs session cookies.
	SessionSecret string
	// UserState reports what a user id may do now, asked for every
	// request of a token or a session: a token or session of a user who
	// may not sign in is refused, and its admin rights are the user's
	// now, never those it had at sign-in. An error fails the request.
	// nil (tests of this package alone): everyone may sign in, and only
	// ADMIN_USERNAME (or a session signed in as an administrator) is one.
	// The anonymous single user is an administrator whatever it says.
	UserState func(ctx context.Context, userID string) (docflow.UserState, error)
	// LocalLogin verifies a local account's password (nil = admin only).
	LocalLogin func(ctx context.Context, username, password string) (*docflow.User, error)
	// LoginOwner returns the user id of the local account whose user name
	// or e-mail is login, or ENOTFOUND: a failed sign-in is audited under
	// the account, never under a typed name that is none (nil = none).
	LoginOwner func(ctx context.Context, login string) (string, error)
	// LocalPasswordStamp fingerprints a local account's current password
	// ("" for none); a session signed in under another stamp is over
	// (nil = no local accounts).
	LocalPasswordStamp func(ctx context.Context, userID string) (string, error)
	// Audit records the audit log (sign-ins, admin actions on users,
	// share changes) and serves GET /api/admin/audit-log; nil = none.
	Audit docflow.AuditLog
	// Now is the clock (tests replace it).
	Now func() time.Time
	// AdminNotices lists what an administrator should review (unsafe
	// settings, leftovers of single-user mode); the home page shows them
	// to administrators only. nil = none.
	AdminNotices func(ctx context.Context) []string
	// SharedLimits holds the rate limits (RATE_LIMIT_DEFAULT, _UPLOAD,
	// _AUTH) across every api process sharing the database; nil: each
	// process limits alone (ratelimit.go).
	SharedLimits SharedLimiter
	// LoginThrottleRuns bounds the runs of failed sign-ins the sign-in
	// throttle remembers (authfail.go); 0 = 100,000. Tests set a small
	// bound to reach it with few requests.
	LoginThrottleRuns int
}

// Server is the HTTP front end.
type Server struct {
	cfg     Config
	log     zerolog.Logger
	router  *router.Router
	srv     *fasthttp.Server
	ln      net.Listener
	limiter *rateLimiter
	auth    *authenticator
	health  []HealthCheck
	checks  checkLog
	// conns are the slow-client settings, read once in NewServer (conns.go).
	conns connSettings
	// mail sends the self-service mails (MountLocalUsers); nil until then.
	mail *mailSender
	// sso is single sign-on, once MountSSO mounted it (oauth.go).
	sso *ssoClient
	// handoff is the mobile hand-off's code flow, once
	// MountMobileHandOff mounted it (signin.go).
	handoff *MobileHandOffDeps
	// files and collab are the files and collaboration routes' handlers,
	// once mounted: GraphQLWrites runs their code.
	files  *filesHandlers
	collab *collabHandlers
	// life guards srv, ln, closed and the authenticator's start and stop:
	// Serve runs on its own goroutine and Shutdown may come at any time,
	// even before Serve.
	life   sync.Mutex
	closed bool
	// routes are the registered routes with their documentation, what
	// /openapi.json is built from (openapi.go).
	routes []route
}

// NewServer builds the server and mounts the foundation routes (health,
// tokens, login). Resource files add theirs with Mount* methods.
func NewServer(cfg Config) *Server {
	if cfg.Settings == nil || cfg.Tokens == nil || cfg.Sessions == nil {
		panic("http: NewServer needs Settings, Tokens and Sessions")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, log: cfg.Log, router: router.New()}
	s.limiter = newRateLimiter(cfg.Now)
	s.conns = s.connSettings()
	s.auth = newAuthenticator(cfg)
	s.router.NotFound = s.wrap("", Route{Auth: AuthNone, Limit: LimitNone}, handleNotFound)
	s.router.MethodNotAllowed = s.wrap("", Route{Auth: AuthNone, Limit: LimitNone}, handleMethodNotAllowed)
	s.router.HandleOPTIONS = false
	s.router.RedirectTrailingSlash = false
	s.mountHealth()
	s.mountTokens()
	s.mountLogin()
	s.mountAudit()
	s.mountHome()
	s.mountOpenAPI()
	return s
}

func handleNotFound(c *fasthttp.RequestCtx) error {
	return docflow.Errorf(docflow.ENOTFOUND, "Not Found")
}

func handleMethodNotAllowed(c *fasthttp.RequestCtx) error {
	c.SetStatusCode(fasthttp.StatusMethodNotAllowed)
	writeJSON(c, fasthttp.StatusMethodNotAllowed, Detail{Detail: "Method Not Allowed"})
	return nil
}

// BaseURL is BASE_URL, or http:// + LISTEN_ADDR when unset.
func (s *Server) BaseURL() string {
	if u := s.siteBase(); u != "" {
		return u
	}
	return "http://" + docflow.ListenAddr.Get(s.cfg.Settings)
}

// Handle registers a route with its documentation (openapi.go: Doc; a
// route without one fails TestEveryRouteIsDocumented). A trailing slash is
// not significant: the API names some collections with one
// ("/api/api-tokens/") and clients send both, so routes are stored without
// it and requests are matched without it.
func (s *Server) Handle(method, path string, opts Route, h Handler, doc ...Doc) {
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	r := route{Method: method, Path: path, Opts: opts}
	if len(doc) > 0 {
		r.Doc = &doc[0]
	}
	s.routes = append(s.routes, r)
	s.router.Handle(method, path, s.wrap(path, opts, h))
}

// Handler returns the root fasthttp handler.
func (s *Server) Handler() fasthttp.RequestHandler { return s.root }

func (s *Server) root(c *fasthttp.RequestCtx) {
	if s.answerLive(c) {
		return
	}
	if p := c.Path(); len(p) > 1 && p[len(p)-1] == '/' {
		c.Request.URI().SetPathBytes(p[:len(p)-1])
	}
	s.setSecurityHeaders(c)
	if s.hostRefused(c) || s.preflight(c) {
		return
	}
	s.router.Handler(c)
	s.pinRedirect(c)
}

// NewFastHTTPServer returns the configured fasthttp server.
func (s *Server) NewFastHTTPServer() *fasthttp.Server {
	srv := &fasthttp.Server{
		Handler: s.root,
		Name:    "docflow",
		// NOTE: bodies stream so uploads never sit in memory; JSON routes
		// read the stream up to MAX_REQUEST_BODY_SIZE themselves (wrap).
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		MaxRequestBodySize:           64 << 10,
		ReadBufferSize:               16 << 10,
		Logger:                       fasthttpLogger{s.log},
		NoDefaultServerHeader:        true,
		CloseOnShutdown:              true,
	}
	// Header, body and idle timeouts (conns.go).
	s.applyConnSettings(srv)
	return srv
}

// Serve serves on ln until Shutdown; it returns nil once Shutdown was
// called (also when Shutdown came first: it then closes ln at once).
func (s *Server) Serve(ln net.Listener) error {
	srv := s.NewFastHTTPServer()
	s.life.Lock()
	if s.closed {
		s.life.Unlock()
		ln.Close() //nolint:errcheck
		return nil
	}
	s.srv, s.ln = srv, ln
	s.auth.start()
	s.life.Unlock()
	err := srv.Serve(s.limitConns(ln))
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil
	}
	return err
}

// Shutdown stops accepting, waits for in-flight requests up to ctx, and
// flushes token last-use records.
func (s *Server) Shutdown(ctx context.Context) error {
	s.life.Lock()
	s.closed = true
	srv, ln := s.srv, s.ln
	s.life.Unlock()
	var err error
	if srv != nil {
		err = srv.ShutdownWithContext(ctx)
		// NOTE: a Serve that had not yet handed ln to fasthttp would wait
		// on it for good; closing it ends that Serve too.
		ln.Close() //nolint:errcheck
	}
	s.life.Lock()
	s.auth.stop(ctx)
	s.life.Unlock()
	if s.mail != nil {
		s.mail.stop(ctx)
	}
	return err
}

type fasthttpLogger struct{ log zerolog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.log.Debug().Msg(fmt.Sprintf(format, args...))
}

func newRequestID() string {
	b := make([]byte, 8)
	rand.Read(b) //nolint:errcheck
	return hex.EncodeToString(b)
}
