package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

type ctxKey int

const (
	keyCtx ctxKey = iota
	keyUser
	keyRequestID
)

// userValue keys on the fasthttp ctx.
const (
	uvCtx       = "docflow.ctx"
	uvUser      = "docflow.user"
	uvRequestID = "docflow.request_id"
)

// RequestContext returns the request's own context (with its timeout).
// NOTE: the fasthttp ctx is cancelled only at server shutdown, so it is not
// a cancellation signal for a request (fasthttp issues #965, #1219).
func RequestContext(c *fasthttp.RequestCtx) context.Context {
	if v, ok := c.UserValue(uvCtx).(context.Context); ok {
		return v
	}
	return context.Background()
}

// CurrentUser returns the authenticated user (nil on AuthNone routes without credentials).
func CurrentUser(c *fasthttp.RequestCtx) *docflow.User {
	u, _ := c.UserValue(uvUser).(*docflow.User)
	return u
}

// RequestID returns the request id.
func RequestID(c *fasthttp.RequestCtx) string {
	v, _ := c.UserValue(uvRequestID).(string)
	return v
}

// wrap is the middleware chain: request id, recover, timeout context,
// cross-site refusal, NUL screening, body limit, authentication, rate
// limit, the handler, the error adapter, the access log and the request
// metric. (Security headers and CORS preflights come first, in root.)
func (s *Server) wrap(pattern string, opts Route, h Handler) fasthttp.RequestHandler {
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	return func(c *fasthttp.RequestCtx) {
		start := time.Now()
		rid := string(c.Request.Header.Peek("X-Request-ID"))
		if rid == "" || len(rid) > 64 {
			rid = newRequestID()
		}
		c.SetUserValue(uvRequestID, rid)
		c.Response.Header.Set("X-Request-ID", rid)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		c.SetUserValue(uvCtx, ctx)

		err := s.serve(c, opts, h)
		if err != nil {
			if docflow.ErrorCode(err) == docflow.EINTERNAL {
				s.log.Error().Err(err).Str("request_id", rid).Str("path", string(c.Path())).Msg("request failed")
			}
			writeError(c, err)
		}
		s.logRequest(c, pattern, start)
	}
}

func (s *Server) serve(c *fasthttp.RequestCtx, opts Route, h Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error().Str("request_id", RequestID(c)).Interface("panic", r).Bytes("stack", debug.Stack()).Msg("handler panic")
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	if err := s.checkCrossSite(c); err != nil {
		return err
	}
	if err := checkNULInURL(c); err != nil {
		return err
	}
	if !opts.Stream {
		if err := s.readBody(c); err != nil {
			return err
		}
		if err := checkNULInForm(c); err != nil {
			return err
		}
	}
	user, err := s.auth.authenticate(c, opts.Auth)
	if err != nil {
		return err
	}
	if user != nil {
		c.SetUserValue(uvUser, user)
	}
	if err := s.rateLimit(c, opts.Limit, user); err != nil {
		return err
	}
	return h(c)
}

// readBody reads a streamed body whole, refusing more than
// MAX_REQUEST_BODY_SIZE: on Content-Length before reading, else while
// reading; refuseOversized answers so that the client can read the 413.
func (s *Server) readBody(c *fasthttp.RequestCtx) error {
	limit := docflow.MaxRequestBodySize.Get(s.cfg.Settings)
	cl := c.Request.Header.ContentLength()
	if cl > 0 && int64(cl) > limit {
		return s.refuseOversized(c, limit, int64(cl), 0)
	}
	stream := c.RequestBodyStream()
	if stream == nil {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(stream, limit+1))
	if err != nil {
		return docflow.Errorf(docflow.EBADREQUEST, "Could not read the request body")
	}
	if int64(len(body)) > limit {
		return s.refuseOversized(c, limit, -1, int64(len(body)))
	}
	c.Request.SetBodyRaw(body)
	return nil
}

func (s *Server) logRequest(c *fasthttp.RequestCtx, pattern string, start time.Time) {
	d := time.Since(start)
	status := c.Response.StatusCode()
	if s.cfg.Recorder != nil {
		// NOTE: the pattern registered, never the request's path, and one
		// series for every request no route matched: both are the
		// client's to choose.
		route := pattern
		if route == "" {
			route = docflow.MetricOther
		}
		m := docflow.Metric{Kind: docflow.MetricRequest, Time: start, Method: docflow.MetricMethod(string(c.Method())), Route: route,
			HTTPStatus: status, Duration: d, Status: strconv.Itoa(status)}
		if u := CurrentUser(c); u != nil {
			m.OwnerID = u.ID
		}
		s.cfg.Recorder.Record(m)
	}
	ev := s.log.Debug()
	if status >= 500 {
		ev = s.log.Warn()
	}
	if ev.Enabled() {
		ev.Str("request_id", RequestID(c)).Str("method", string(c.Method())).Bytes("path", c.Path()).
			Int("status", status).Dur("duration", d).Str("ip", s.auth.clientIP(c)).Msg("request")
	}
}

// decodeJSON decodes the request body into v with strict checking: a body
// not sent as JSON is 415; malformed JSON, a wrong type or a NUL character
// (which PostgreSQL cannot store) is 422 with a detail naming the problem.
func decodeJSON(c *fasthttp.RequestCtx, v any) error {
	body := c.PostBody()
	if len(body) == 0 {
		return docflow.Errorf(docflow.EINVALID, "Request body is required (JSON)")
	}
	if err := requireJSON(c); err != nil {
		return err
	}
	if hasEscapedNUL(body) {
		return docflow.Errorf(docflow.EINVALID, `JSON strings must not contain the NUL character (\u0000)`)
	}
	if err := jsonUnmarshal(body, v); err != nil {
		var te *jsonTypeError
		if errors.As(err, &te) {
			return invalid(te.Field, "%s must be %s", te.Field, te.Type)
		}
		return docflow.Errorf(docflow.EINVALID, "Malformed JSON body: %s", err.Error())
	}
	return nil
}
