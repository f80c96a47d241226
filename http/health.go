package http

import (
	"context"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// HealthCheck is one dependency check of the health endpoints. Critical
// checks (the database) make the service not ready; others degrade it.
type HealthCheck struct {
	Name     string
	Critical bool
	Check    func(ctx context.Context) error
}

// AddHealthCheck registers a check (before Serve).
func (s *Server) AddHealthCheck(h HealthCheck) { s.health = append(s.health, h) }

// publicCheckDetail stands for a failed check's detail on the public
// readiness probe.
const publicCheckDetail = "check failed; see /api/diagnostic/health"

// userCheckDetail stands for a failed check's detail for a user who is no
// administrator: a driver's message names the database user, host and
// database, and the services' addresses.
const userCheckDetail = "check failed; the details are shown to administrators"

// hideDetails replaces each failed check's detail with text.
func hideDetails(checks map[string]checkResult, text string) {
	for name, r := range checks {
		if r.Status != "ok" {
			checks[name] = checkResult{Status: r.Status, Detail: text}
		}
	}
}

type checkResult struct {
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// runChecks runs every check concurrently with a short timeout.
func (s *Server) runChecks(ctx context.Context) (map[string]checkResult, bool, bool) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	results := make(map[string]checkResult, len(s.health))
	criticalOK, allOK := true, true
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, h := range s.health {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := checkResult{Status: "ok"}
			err := h.Check(ctx)
			if err != nil {
				r = checkResult{Status: "error", Detail: err.Error()}
			}
			s.logCheck(h.Name, err)
			mu.Lock()
			defer mu.Unlock()
			results[h.Name] = r
			if r.Status != "ok" {
				allOK = false
				if h.Critical {
					criticalOK = false
				}
			}
		}()
	}
	wg.Wait()
	return results, criticalOK, allOK
}

func (s *Server) mountHealth() {
	none := Route{Auth: AuthNone, Limit: LimitNone}
	s.Handle("GET", LivePath, none, s.handleLive, docLive)
	s.Handle("GET", ReadyPath, none, s.handleReady, docReady)
	s.Handle("GET", "/api/diagnostic/health", Route{Auth: AuthUser, Limit: LimitNone}, s.handleHealth, docHealth)
}

// liveBody is the liveness probe's answer; jsonType its content type.
var (
	liveBody = []byte(`{"status":"ok"}` + "\n")
	jsonType = []byte("application/json")
)

// handleLive is GET LivePath's handler as the router knows it (for its
// documentation); answerLive answers it before the router.
func (s *Server) handleLive(c *fasthttp.RequestCtx) error {
	c.Response.Header.SetContentTypeBytes(jsonType)
	c.Response.SetBodyRaw(liveBody)
	return nil
}

// answerLive answers GET LivePath (a trailing slash is not significant)
// ahead of the router and the middleware, and reports whether it did.
// Orchestrators and load balancers send the probe every few seconds, and
// it says only that the process serves: it needs no credentials (a
// token or cookie it carries is not looked up, so it is no oracle for
// them either), reads no body, changes nothing (no cross-site check), is
// not rate limited, and is neither logged nor recorded as a request
// metric. It keeps the security headers, and allocates nothing.
// Other methods go through the router (405, as on every route).
func (s *Server) answerLive(c *fasthttp.RequestCtx) bool {
	if !c.IsGet() {
		return false
	}
	p := c.Path()
	if len(p) > 1 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	if string(p) != LivePath {
		return false
	}
	s.setSecurityHeaders(c)
	s.handleLive(c) //nolint:errcheck // never fails
	return true
}

func (s *Server) handleReady(c *fasthttp.RequestCtx) error {
	checks, critOK, _ := s.runChecks(RequestContext(c))
	// Anyone may ask: the answer says ok or error per check and nothing
	// of what failed (a driver's message names the database user, host
	// and database). The details are in the log and for administrators.
	hideDetails(checks, publicCheckDetail)
	if !critOK {
		writeJSON(c, fasthttp.StatusServiceUnavailable, readiness{Status: "not_ready", Checks: checks})
		return nil
	}
	writeJSON(c, fasthttp.StatusOK, readiness{Status: "ready", Checks: checks})
	return nil
}

func (s *Server) handleHealth(c *fasthttp.RequestCtx) error {
	checks, critOK, allOK := s.runChecks(RequestContext(c))
	if u := CurrentUser(c); u == nil || !u.IsAdmin {
		hideDetails(checks, userCheckDetail)
	}
	status, code := healthStatus(critOK, allOK)
	writeJSON(c, code, healthReport{Status: status, Version: s.cfg.Version,
		Timestamp: s.cfg.Now().UTC().Format(time.RFC3339Nano), Checks: checks})
	return nil
}

// healthStatus is the overall status of /api/diagnostic/health and its
// HTTP status: unhealthy when a critical check failed, degraded when
// another did.
func healthStatus(criticalOK, allOK bool) (string, int) {
	switch {
	case !criticalOK:
		return "unhealthy", fasthttp.StatusServiceUnavailable
	case !allOK:
		return "degraded", fasthttp.StatusOK
	}
	return "healthy", fasthttp.StatusOK
}

// checkLog remembers each check's last outcome, so a failure and a
// recovery are logged once per change: the probes run every few seconds.
type checkLog struct {
	mu   sync.Mutex
	last map[string]string // check name → last error ("" = ok)
}

// logCheck logs a check's outcome when it differs from the last one.
func (s *Server) logCheck(name string, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	l := &s.checks
	l.mu.Lock()
	prev, seen := l.last[name]
	if l.last == nil {
		l.last = map[string]string{}
	}
	l.last[name] = msg
	l.mu.Unlock()
	switch {
	case err != nil && prev != msg:
		s.log.Warn().Str("check", name).Err(err).Msg("health check failed")
	case err == nil && seen && prev != "":
		s.log.Info().Str("check", name).Msg("health check ok again")
	}
}
