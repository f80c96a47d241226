package http

import (
	"context"
	"strconv"
	"strings"
	"time"

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
	b := Route{Auth: AuthAdmin}
	r := d.Reports
	mount := func(name string, run func(ctx context.Context, q docflow.AnalyticsQuery) (any, error)) {
		s.Handle("GET", "/api/analytics/"+name, b, func(c *fasthttp.RequestCtx) error {
			q, err := s.analyticsQuery(c)
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
		})
	}
	mount("overview", func(ctx context.Context, q docflow.AnalyticsQuery) (any, error) {
		rep, err := r.Overview(ctx, q)
		if err == nil && d.RecorderStats != nil {
			st := d.RecorderStats()
			rep.Totals.Recorder = &st
		}
		return rep, err
	})
	mount("steps", func(ctx context.Context, q docflow.AnalyticsQuery) (any, error) { return r.Steps(ctx, q) })
	mount("intake", func(ctx context.Context, q docflow.AnalyticsQuery) (any, error) { return r.Intake(ctx, q) })
	mount("errors", func(ctx context.Context, q docflow.AnalyticsQuery) (any, error) { return r.Errors(ctx, q) })
	mount("lag", func(ctx context.Context, q docflow.AnalyticsQuery) (any, error) { return r.Lag(ctx, q) })
	mount("requests", func(ctx context.Context, q docflow.AnalyticsQuery) (any, error) { return r.Requests(ctx, q) })
	mount("integrations", func(ctx context.Context, q docflow.AnalyticsQuery) (any, error) { return r.Integrations(ctx, q) })
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
		if len(v) > maxFilterLen || strings.ContainsRune(v, 0) {
			errs = append(errs, docflow.FieldError{Field: name, Message: name + " is too long or holds a NUL"})
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
