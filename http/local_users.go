package http

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// LocalUsersDeps are what the local account routes need.
type LocalUsersDeps struct {
	Accounts docflow.AccountStore
	// Mailer sends reset links and user name reminders; nil means no mail
	// (send-password-reset answers {sent: false, reason}).
	Mailer docflow.Mailer
}

// MountLocalUsers mounts the admin routes of local accounts
// (/api/admin/users/local…), the self-service routes (/api/auth/…) and the
// /reset-password page. The self-service mails go through a bounded
// background sender that Shutdown stops.
func (s *Server) MountLocalUsers(d LocalUsersDeps) {
	if d.Accounts == nil {
		panic("http: MountLocalUsers needs Accounts")
	}
	s.mail = newMailSender(s, d)
	h := &localUserHandlers{s: s, d: d}
	a := Route{Auth: AuthAdmin}
	s.Handle("GET", "/api/admin/users/local", a, h.list, docListLocalUsers)
	s.Handle("POST", "/api/admin/users/local", a, h.create, docCreateLocalUser)
	s.Handle("PATCH", "/api/admin/users/local/{local_user_id}", a, h.update, docUpdateLocalUser)
	s.Handle("DELETE", "/api/admin/users/local/{local_user_id}", a, h.delete, docDeleteLocalUser)
	s.Handle("POST", "/api/admin/users/local/{local_user_id}/set-password", a, h.setPassword, docSetPassword)
	s.Handle("POST", "/api/admin/users/local/{local_user_id}/send-password-reset", a, h.sendPasswordReset, docSendPasswordReset)
	h.mountSelfService()
}

type localUserHandlers struct {
	s *Server
	d LocalUsersDeps
}

func (h *localUserHandlers) list(c *fasthttp.RequestCtx) error {
	users, err := h.d.Accounts.ListLocalUsers(RequestContext(c))
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, users)
	return nil
}

func (h *localUserHandlers) create(c *fasthttp.RequestCtx) error {
	var in docflow.LocalUserInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.Validate(); err != nil {
		return err
	}
	u, err := h.d.Accounts.CreateLocalUser(RequestContext(c), in)
	if err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditLocalUserCreate, Target: localTarget(u.ID),
		Detail: fmt.Sprintf("email=%s username=%s is_admin=%t", u.Email, u.Username, u.IsAdmin)})
	writeJSON(c, fasthttp.StatusCreated, u)
	return nil
}

func (h *localUserHandlers) update(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "local_user_id")
	if err != nil {
		return err
	}
	var p docflow.LocalUserPatch
	if err := decodeJSON(c, &p); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	before, err := h.d.Accounts.FindLocalUser(RequestContext(c), id)
	if err != nil {
		return err
	}
	u, err := h.d.Accounts.UpdateLocalUser(RequestContext(c), id, p)
	if err != nil {
		return err
	}
	// Deactivation revoked the account's tokens in the store.
	h.s.auth.forgetAll()
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditLocalUserUpdate, Target: localTarget(id), Detail: patchDetail(before, p)})
	writeJSON(c, fasthttp.StatusOK, u)
	return nil
}

func (h *localUserHandlers) delete(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "local_user_id")
	if err != nil {
		return err
	}
	u, err := h.d.Accounts.FindLocalUser(RequestContext(c), id)
	if err != nil {
		return err
	}
	if err := h.d.Accounts.DeleteLocalUser(RequestContext(c), id); err != nil {
		return err
	}
	h.s.auth.forgetAll()
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditLocalUserDelete, Target: localTarget(id), Detail: "email=" + u.Email})
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func (h *localUserHandlers) setPassword(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "local_user_id")
	if err != nil {
		return err
	}
	var req passwordSet
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := docflow.CheckPassword("password", req.Password); err != nil {
		return err
	}
	if err := h.d.Accounts.SetLocalPassword(RequestContext(c), id, req.Password); err != nil {
		return err
	}
	// The store revoked the account's tokens with the new password.
	h.s.auth.forgetAll()
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditLocalUserSetPass, Target: localTarget(id)})
	writeJSON(c, fasthttp.StatusOK, Detail{Detail: "Password set"})
	return nil
}

func (h *localUserHandlers) sendPasswordReset(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "local_user_id")
	if err != nil {
		return err
	}
	u, err := h.d.Accounts.FindLocalUser(RequestContext(c), id)
	if err != nil {
		return err
	}
	reason := h.s.sendReset(RequestContext(c), h.d, u)
	detail := "sent"
	if reason != "" {
		detail = "not sent: " + reason
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditLocalUserReset, Target: localTarget(id), Detail: detail})
	if reason != "" {
		writeJSON(c, fasthttp.StatusOK, resetMailSent{Sent: false, Reason: reason})
		return nil
	}
	writeJSON(c, fasthttp.StatusOK, resetMailSent{Sent: true})
	return nil
}

func localTarget(id int64) string { return "local_user:" + strconv.FormatInt(id, 10) }

// patchDetail names what p changes of before, for the audit log.
func patchDetail(before *docflow.LocalUser, p docflow.LocalUserPatch) string {
	var parts []string
	if p.Email != nil && *p.Email != before.Email {
		parts = append(parts, "email="+before.Email+"→"+*p.Email)
	}
	if p.DisplayName != nil {
		parts = append(parts, "display_name")
	}
	if p.IsAdmin != nil {
		parts = append(parts, "is_admin="+strconv.FormatBool(*p.IsAdmin))
	}
	if p.IsActive != nil {
		parts = append(parts, "is_active="+strconv.FormatBool(*p.IsActive))
	}
	return strings.Join(parts, " ")
}

// sendReset makes a reset token for u and mails the link; it returns why
// nothing was sent, or "" when the mail went out.
func (s *Server) sendReset(ctx context.Context, d LocalUsersDeps, u *docflow.LocalUser) string {
	if !u.IsActive {
		return "Account is inactive"
	}
	if d.Mailer == nil {
		return "E-mail is not configured (SMTP_HOST and SMTP_FROM)"
	}
	token, _, err := d.Accounts.CreateResetToken(ctx, u.ID)
	if err != nil {
		s.log.Error().Err(err).Int64("local_user_id", u.ID).Msg("create reset token")
		return "Could not create a reset token"
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := d.Mailer.Send(ctx, resetMail(s.BaseURL(), u, token)); err != nil {
		s.log.Warn().Err(err).Int64("local_user_id", u.ID).Msg("send reset mail")
		if docflow.ErrorCode(err) == docflow.EUNAVAILABLE {
			return docflow.ErrorMessage(err)
		}
		return "The mail server did not take the message"
	}
	return ""
}

func greeting(u *docflow.LocalUser) string {
	if u.DisplayName != "" {
		return u.DisplayName
	}
	return u.Username
}

// resetMail is the message carrying a reset link to BASE_URL's page.
func resetMail(base string, u *docflow.LocalUser, token string) docflow.Mail {
	link := strings.TrimSuffix(base, "/") + "/reset-password?token=" + url.QueryEscape(token)
	return docflow.Mail{To: []string{u.Email}, Subject: "Reset your docflow password", Text: fmt.Sprintf(
		"Hello %s,\n\nsomeone, hopefully you, asked to reset the password of the docflow account %q.\n"+
			"Open this link within one hour to choose a new password:\n\n%s\n\n"+
			"The link works once. If you did not ask for it, ignore this message: your password stays as it is.\n",
		greeting(u), u.Username, link)}
}

// usernameMail reminds u of its user name.
func usernameMail(base string, u *docflow.LocalUser) string {
	return fmt.Sprintf("Hello %s,\n\nyour docflow user name is: %s\n\nSign in at %s/login with it or with this e-mail address.\n"+
		"If you did not ask for this reminder, ignore this message.\n", greeting(u), u.Username, strings.TrimSuffix(base, "/"))
}
