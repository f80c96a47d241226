package http

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// audit records an entry of the audit log for the request c: the actor
// (the current user unless e names one, as a failed sign-in does) and the
// client address are filled in. A failure to record is logged, not
// returned: the action it describes has already happened.
func (s *Server) audit(c *fasthttp.RequestCtx, e docflow.AuditEntry) {
	if s.cfg.Audit == nil {
		return
	}
	if e.Actor == "" {
		if u := CurrentUser(c); u != nil {
			e.Actor = u.ID
		}
	}
	if e.ClientIP == "" {
		e.ClientIP = s.auth.clientIP(c)
	}
	if err := s.cfg.Audit.RecordAudit(RequestContext(c), e); err != nil {
		s.log.Error().Err(err).Str("action", e.Action).Str("request_id", RequestID(c)).Msg("audit entry not recorded")
	}
}

// mountAudit mounts GET /api/admin/audit-log.
func (s *Server) mountAudit() {
	if s.cfg.Audit == nil {
		return
	}
	s.Handle("GET", "/api/admin/audit-log", Route{Auth: AuthAdmin}, s.handleAuditLog, docAuditLog)
}

func (s *Server) handleAuditLog(c *fasthttp.RequestCtx) error {
	args := c.QueryArgs()
	f := docflow.AuditFilter{Page: 1, PerPage: 50,
		Actor: strings.TrimSpace(string(args.Peek("actor"))), Action: strings.TrimSpace(string(args.Peek("action")))}
	var errs []docflow.FieldError
	intArg := func(name string, hi int, dst *int) {
		if !args.Has(name) {
			return
		}
		v, err := strconv.Atoi(string(args.Peek(name)))
		if err != nil || v < 1 || v > hi {
			errs = append(errs, docflow.FieldError{Field: name, Message: name + " must be an integer from 1 to " + strconv.Itoa(hi)})
			return
		}
		*dst = v
	}
	intArg("page", math.MaxInt32, &f.Page)
	intArg("per_page", 200, &f.PerPage)
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
			f.From = &t
		} else {
			f.To = &t
		}
	}
	if f.From != nil && f.To != nil && f.From.After(*f.To) {
		errs = append(errs, docflow.FieldError{Field: "from", Message: "from must not be after to"})
	}
	if len(errs) > 0 {
		e := docflow.Errorf(docflow.EINVALID, "%s", errs[0].Message)
		e.Fields = errs
		return e
	}
	entries, total, err := s.cfg.Audit.ListAudit(RequestContext(c), f)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, auditPage{Entries: entries, Total: total, Page: f.Page,
		PerPage: f.PerPage, Pages: (total + f.PerPage - 1) / f.PerPage})
	return nil
}

// parseTimestamp accepts an ISO 8601 timestamp (with or without offset;
// UTC when none) or a date, which means its midnight UTC.
func parseTimestamp(v string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
