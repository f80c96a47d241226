package http

import (
	"encoding/json"
	"math"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"docflow"
)

// This file mounts the profile routes of the admin user management
// (/api/admin/users/…) and the users look-ups (/api/users/search,
// /api/users/mentionable).

// UsersDeps are the dependencies of the profile and users routes.
type UsersDeps struct {
	Profiles docflow.ProfileStore
}

// Caps of what a profile keeps of an admin's text.
const (
	userIDMax      = 320
	displayNameMax = 200
	notesMax       = 10_000
)

// MountUsers registers the profile routes and the users look-ups.
//
// NOTE: /api/admin/users/{user_id} shares its prefix with the local
// accounts' static /api/admin/users/local…: the router prefers a static
// segment, so a profile whose user id is "local" cannot be reached by
// these routes (users_test.go checks the two coexist).
func (s *Server) MountUsers(d UsersDeps) {
	if d.Profiles == nil {
		panic("http: MountUsers needs Profiles")
	}
	a := Route{Auth: AuthAdmin, Limit: LimitDefault}
	b := Route{Auth: AuthUser, Limit: LimitDefault}
	h := usersHandlers{s: s, d: d}
	s.Handle("GET", "/api/admin/users", a, h.list, docListProfiles)
	s.Handle("GET", "/api/admin/users/{user_id}", a, h.detail, docProfileDetail)
	s.Handle("PUT", "/api/admin/users/{user_id}", a, h.put, docPutProfile)
	s.Handle("DELETE", "/api/admin/users/{user_id}", a, h.delete, docDeleteProfile)
	s.Handle("POST", "/api/admin/users/{user_id}/payment-issue", a, h.paymentIssue, docPaymentIssue)
	s.Handle("GET", "/api/users/search", b, h.search, docSearchUsers)
	s.Handle("GET", "/api/users/mentionable", b, h.mentionable, docMentionable)
}

type usersHandlers struct {
	s *Server
	d UsersDeps
}

// profilePathUserID is the {user_id} of the path, URL-decoded (the router
// matches the path as sent: "a%40b.com" is "a@b.com").
func profilePathUserID(c *fasthttp.RequestCtx) (string, error) {
	raw, _ := c.UserValue("user_id").(string)
	id, err := url.PathUnescape(raw)
	if err != nil {
		return "", invalid("user_id", "user_id is not a valid URL path segment")
	}
	id = strings.TrimSpace(id)
	if id == "" || utf8.RuneCountInString(id) > userIDMax || !utf8.ValidString(id) {
		return "", invalid("user_id", "user_id must be 1 to %d characters", userIDMax)
	}
	return id, nil
}

// usersQueryInt reads an integer query argument in [lo, hi], def when absent.
func usersQueryInt(c *fasthttp.RequestCtx, name string, def, lo, hi int) (int, error) {
	args := c.QueryArgs()
	if !args.Has(name) {
		return def, nil
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(args.Peek(name))))
	if err != nil || v < lo || v > hi {
		return 0, invalid(name, "%s must be an integer from %d to %d", name, lo, hi)
	}
	return v, nil
}

func (h usersHandlers) list(c *fasthttp.RequestCtx) error {
	page, err := usersQueryInt(c, "page", 1, 1, math.MaxInt32)
	if err != nil {
		return err
	}
	per, err := usersQueryInt(c, "per_page", docflow.ProfilesPerPageDefault, 1, docflow.ProfilesPerPageMax)
	if err != nil {
		return err
	}
	q := string(c.QueryArgs().Peek("q"))
	if utf8.RuneCountInString(q) > userIDMax {
		return invalid("q", "q must be at most %d characters", userIDMax)
	}
	users, total, err := h.d.Profiles.ListProfiles(RequestContext(c), docflow.ProfileFilter{Query: q, Page: page, PerPage: per})
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, profileList{Users: users, Total: total, Page: page,
		PerPage: per, Pages: (total + per - 1) / per})
	return nil
}

func (h usersHandlers) detail(c *fasthttp.RequestCtx) error {
	id, err := profilePathUserID(c)
	if err != nil {
		return err
	}
	d, err := h.d.Profiles.ProfileDetail(RequestContext(c), id)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, d)
	return nil
}

// parseProfileUpdate reads a PUT body: every field optional; an explicit
// null clears display_name, daily_upload_limit, notes and
// preferred_language.
func parseProfileUpdate(c *fasthttp.RequestCtx) (docflow.ProfileUpdate, error) {
	var u docflow.ProfileUpdate
	var raw map[string]json.RawMessage
	if err := decodeJSON(c, &raw); err != nil {
		return u, err
	}
	if raw == nil {
		return u, docflow.Errorf(docflow.EINVALID, "Request body must be a JSON object")
	}
	null := func(k string) bool { return strings.TrimSpace(string(raw[k])) == "null" }
	str := func(k string, max int, dst **string, set *bool) error {
		v, ok := raw[k]
		if !ok {
			return nil
		}
		if set != nil {
			*set = true
		}
		if null(k) {
			if set == nil {
				return invalid(k, "%s must not be null", k)
			}
			return nil
		}
		var s string
		if jsonUnmarshal(v, &s) != nil {
			return invalid(k, "%s must be a string", k)
		}
		if utf8.RuneCountInString(s) > max {
			return invalid(k, "%s must be at most %d characters", k, max)
		}
		if strings.ContainsRune(s, 0) {
			return invalid(k, "%s must not contain the NUL character", k)
		}
		*dst = &s
		return nil
	}
	if err := str("display_name", displayNameMax, &u.DisplayName, &u.SetDisplayName); err != nil {
		return u, err
	}
	if err := str("notes", notesMax, &u.Notes, &u.SetNotes); err != nil {
		return u, err
	}
	if err := str("subscription_tier", 32, &u.SubscriptionTier, nil); err != nil {
		return u, err
	}
	if u.SubscriptionTier != nil && !docflow.ValidTier(*u.SubscriptionTier) {
		return u, invalid("subscription_tier", "subscription_tier must be one of %s", strings.Join(docflow.SubscriptionTiers, ", "))
	}
	if err := str("preferred_language", 8, &u.PreferredLanguage, &u.SetPreferredLanguage); err != nil {
		return u, err
	}
	if u.PreferredLanguage != nil && !docflow.ValidLanguage(*u.PreferredLanguage) {
		return u, invalid("preferred_language", "preferred_language must be one of %s", strings.Join(docflow.ProfileLanguages, ", "))
	}
	if v, ok := raw["daily_upload_limit"]; ok {
		u.SetDailyUploadLimit = true
		if !null("daily_upload_limit") {
			var n json.Number
			// NOTE: a json.Number also takes a string holding a number.
			if strings.HasPrefix(strings.TrimSpace(string(v)), `"`) || jsonUnmarshal(v, &n) != nil {
				return u, invalid("daily_upload_limit", "daily_upload_limit must be an integer or null")
			}
			i, err := strconv.ParseInt(n.String(), 10, 32)
			if err != nil || i < 0 {
				return u, invalid("daily_upload_limit", "daily_upload_limit must be null (the global default), 0 (unlimited) or a positive integer")
			}
			l := int(i)
			u.DailyUploadLimit = &l
		}
	}
	if v, ok := raw["is_blocked"]; ok {
		var b bool
		if null("is_blocked") || jsonUnmarshal(v, &b) != nil {
			return u, invalid("is_blocked", "is_blocked must be a boolean")
		}
		u.IsBlocked = &b
	}
	return u, nil
}

func (h usersHandlers) put(c *fasthttp.RequestCtx) error {
	id, err := profilePathUserID(c)
	if err != nil {
		return err
	}
	u, err := parseProfileUpdate(c)
	if err != nil {
		return err
	}
	p, created, err := h.d.Profiles.PutProfile(RequestContext(c), id, u)
	if err != nil {
		return err
	}
	detail := "updated " + strings.Join(updatedFields(u), ", ")
	if created {
		detail = "created; " + detail
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditProfileUpdate, Target: "user:" + id, Detail: detail})
	writeJSON(c, fasthttp.StatusOK, p)
	return nil
}

// updatedFields names the fields a PUT sets, for the audit log (values
// are left out: notes may hold anything).
func updatedFields(u docflow.ProfileUpdate) []string {
	var f []string
	add := func(name string, set bool) {
		if set {
			f = append(f, name)
		}
	}
	add("display_name", u.SetDisplayName)
	add("daily_upload_limit", u.SetDailyUploadLimit)
	add("notes", u.SetNotes)
	add("is_blocked", u.IsBlocked != nil)
	if u.SubscriptionTier != nil {
		f = append(f, "subscription_tier="+*u.SubscriptionTier)
	}
	add("preferred_language", u.SetPreferredLanguage)
	if len(f) == 0 {
		return []string{"nothing"}
	}
	return f
}

func (h usersHandlers) delete(c *fasthttp.RequestCtx) error {
	id, err := profilePathUserID(c)
	if err != nil {
		return err
	}
	if err := h.d.Profiles.DeleteProfile(RequestContext(c), id); err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditProfileDelete, Target: "user:" + id, Detail: "profile removed; documents kept"})
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func (h usersHandlers) paymentIssue(c *fasthttp.RequestCtx) error {
	id, err := profilePathUserID(c)
	if err != nil {
		return err
	}
	var in paymentIssue
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if in.Issue == nil || strings.TrimSpace(*in.Issue) == "" {
		return invalid("issue", "issue is required (1 to %d characters)", docflow.PaymentIssueMax)
	}
	if utf8.RuneCountInString(*in.Issue) > docflow.PaymentIssueMax {
		return invalid("issue", "issue must be at most %d characters", docflow.PaymentIssueMax)
	}
	p, err := h.d.Profiles.ReportPaymentIssue(RequestContext(c), id, *in.Issue)
	if err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditPaymentIssue, Target: "user:" + id, Detail: *in.Issue})
	writeJSON(c, fasthttp.StatusOK, paymentIssueAck{Acknowledged: true, UserID: id, Profile: p})
	return nil
}

func (h usersHandlers) search(c *fasthttp.RequestCtx) error {
	limit, err := usersQueryInt(c, "limit", docflow.UserSearchDefault, 1, docflow.UserSearchMax)
	if err != nil {
		return err
	}
	q := string(c.QueryArgs().Peek("q"))
	if utf8.RuneCountInString(q) > userIDMax {
		return invalid("q", "q must be at most %d characters", userIDMax)
	}
	ids, err := h.d.Profiles.SearchUsers(RequestContext(c), q, limit)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, userIDs{Users: ids})
	return nil
}

func (h usersHandlers) mentionable(c *fasthttp.RequestCtx) error {
	m, err := h.d.Profiles.Mentionable(RequestContext(c))
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, m)
	return nil
}
