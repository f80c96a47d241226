package http

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"docflow"
)

// AnalyticsDeps is what the analytics endpoints need.
type AnalyticsDeps struct {
	// Reports answers them (analytics/clickhouse or analytics/postgres).
	Reports docflow.Analytics
	// RecorderStats returns this process's recorder counters, shown in the
	// overview's totals.recorder (nil = left out).
	RecorderStats func() docflow.RecorderStats
}

// analyticsTimeout bounds one analytics query.
const analyticsTimeout = 20 * time.Second

// MountAnalytics registers GET /api/analytics/{overview, steps, intake,
// errors, lag, requests, integrations} (admin). Each takes from, to (ISO
// 8601; default the last hour), interval (seconds, a multiple of 60;
// default chosen for at most 150 buckets), step_type and channel.
func (s *Server) MountAnalytics(d AnalyticsDeps) {
	if d.Reports == nil {
		panic("http: MountAnalytics needs Reports")
	}
	h := &analyticsHandlers{s: s, d: d}
	b := Route{Auth: AuthAdmin}
	s.Handle("GET", "/api/analytics/overview", b, h.overview, docAnalyticsOverview)
	s.Handle("GET", "/api/analytics/steps", b, h.steps, docAnalyticsSteps)
	s.Handle("GET", "/api/analytics/intake", b, h.intake, docAnalyticsIntake)
	s.Handle("GET", "/api/analytics/errors", b, h.errors, docAnalyticsErrors)
	s.Handle("GET", "/api/analytics/lag", b, h.lag, docAnalyticsLag)
	s.Handle("GET", "/api/analytics/requests", b, h.requests, docAnalyticsRequests)
	s.Handle("GET", "/api/analytics/integrations", b, h.integrations, docAnalyticsIntegrations)
}

type analyticsHandlers struct {
	s *Server
	d AnalyticsDeps
}

// answer reads the report's query, runs it within analyticsTimeout and
// writes what it returns.
func answer[R any](h *analyticsHandlers, c *fasthttp.RequestCtx, run func(context.Context, docflow.AnalyticsQuery) (R, error)) error {
	q, err := h.s.analyticsQuery(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(RequestContext(c), analyticsTimeout)
	defer cancel()
	out, err := run(ctx, q)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, out)
	return nil
}

func (h *analyticsHandlers) overview(c *fasthttp.RequestCtx) error {
	return answer(h, c, func(ctx context.Context, q docflow.AnalyticsQuery) (*docflow.OverviewReport, error) {
		rep, err := h.d.Reports.Overview(ctx, q)
		if err == nil && h.d.RecorderStats != nil {
			st := h.d.RecorderStats()
			rep.Totals.Recorder = &st
		}
		return rep, err
	})
}

func (h *analyticsHandlers) steps(c *fasthttp.RequestCtx) error {
	return answer(h, c, h.d.Reports.Steps)
}

func (h *analyticsHandlers) intake(c *fasthttp.RequestCtx) error {
	return answer(h, c, h.d.Reports.Intake)
}

func (h *analyticsHandlers) errors(c *fasthttp.RequestCtx) error {
	return answer(h, c, h.d.Reports.Errors)
}

func (h *analyticsHandlers) lag(c *fasthttp.RequestCtx) error { return answer(h, c, h.d.Reports.Lag) }

func (h *analyticsHandlers) requests(c *fasthttp.RequestCtx) error {
	return answer(h, c, h.d.Reports.Requests)
}

func (h *analyticsHandlers) integrations(c *fasthttp.RequestCtx) error {
	return answer(h, c, h.d.Reports.Integrations)
}

// maxFilterLen bounds the step_type and channel filters.
const maxFilterLen = 200

// analyticsQuery reads and checks the query parameters (422 naming the
// field on bad input).
func (s *Server) analyticsQuery(c *fasthttp.RequestCtx) (docflow.AnalyticsQuery, error) {
	args := c.QueryArgs()
	var errs []docflow.FieldError
	var from, to time.Time
	for _, name := range []string{"from", "to"} {
		v := strings.TrimSpace(string(args.Peek(name)))
		if v == "" {
			continue
		}
		t, ok := parseTimestamp(v)
		if !ok {
			errs = append(errs, docflow.FieldError{Field: name, Message: name + " must be an ISO 8601 date or timestamp"})
			continue
		}
		if name == "from" {
			from = t
		} else {
			to = t
		}
	}
	var interval time.Duration
	if v := strings.TrimSpace(string(args.Peek("interval"))); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > int64(400*24*time.Hour/time.Second) {
			errs = append(errs, docflow.FieldError{Field: "interval", Message: "interval must be a positive number of seconds"})
		} else {
			interval = time.Duration(n) * time.Second
		}
	}
	filters := map[string]string{}
	for _, name := range []string{"step_type", "channel"} {
		v := strings.TrimSpace(string(args.Peek(name)))
		// NOTE: PostgreSQL refuses a text parameter that is not UTF-8: a
		// 500 from the report, were it not refused here.
		if len(v) > maxFilterLen || strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
			errs = append(errs, docflow.FieldError{Field: name, Message: name + " is too long, holds a NUL or is not UTF-8"})
		}
		filters[name] = v
	}
	if len(errs) > 0 {
		e := docflow.Errorf(docflow.EINVALID, "%s", errs[0].Message)
		e.Fields = errs
		return docflow.AnalyticsQuery{}, e
	}
	q, err := docflow.NewAnalyticsQuery(from, to, interval, s.cfg.Now())
	if err != nil {
		return q, err
	}
	q.StepType, q.Channel = filters["step_type"], filters["channel"]
	return q, nil
}
