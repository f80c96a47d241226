package http

import (
	"errors"
	"html/template"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// selfServiceAnswer is the one body of request-password-reset and
// forgot-username, whatever the address.
var selfServiceAnswer = Detail{Detail: "If an account has this e-mail address, a message is on its way."}

// mountSelfService mounts /api/auth/request-password-reset,
// /api/auth/forgot-username, /api/auth/reset-password and the
// /reset-password page (no authentication; RATE_LIMIT_AUTH per address).
func (h *localUserHandlers) mountSelfService() {
	s := h.s
	r := Route{Auth: AuthNone, Limit: LimitAuth}
	s.Handle("POST", "/api/auth/request-password-reset", r, h.requestPasswordReset, docRequestPasswordReset)
	s.Handle("POST", "/api/auth/forgot-username", r, h.forgotUsername, docForgotUsername)
	s.Handle("POST", "/api/auth/reset-password", r, h.apiResetPassword, docResetPassword)
	s.Handle("GET", "/forgot-password", Route{Auth: AuthNone}, h.forgotPage, docForgotPage)
	s.Handle("POST", "/forgot-password", r, h.forgotForm, docForgotForm)
	s.Handle("GET", "/reset-password", Route{Auth: AuthNone}, h.resetPage, docResetPage)
	s.Handle("POST", "/reset-password", r, h.resetForm, docResetForm)
}

func (h *localUserHandlers) requestPasswordReset(c *fasthttp.RequestCtx) error {
	return h.queueMail(c, docflow.AuditPasswordResetRequested)
}

func (h *localUserHandlers) forgotUsername(c *fasthttp.RequestCtx) error {
	return h.queueMail(c, docflow.AuditUsernameRequested)
}

// queueMail queues a self-service mail of kind to the body's address and
// answers the same whatever the address.
func (h *localUserHandlers) queueMail(c *fasthttp.RequestCtx, kind string) error {
	var req selfServiceRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	email := strings.TrimSpace(req.Email)
	if err := docflow.CheckEmail(email); err != nil {
		return invalid("email", "%s", docflow.ErrorMessage(err))
	}
	h.s.mail.enqueue(mailJob{kind: kind, email: email, clientIP: h.s.auth.clientIP(c)})
	writeJSON(c, fasthttp.StatusOK, selfServiceAnswer)
	return nil
}

func (h *localUserHandlers) apiResetPassword(c *fasthttp.RequestCtx) error {
	var req passwordReset
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := h.s.resetPassword(c, h.d, req.Token, req.NewPassword, req.Confirm); err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, Detail{Detail: "Password changed; sign in with the new password"})
	return nil
}

func (h *localUserHandlers) forgotPage(c *fasthttp.RequestCtx) error {
	return h.s.renderForgot(c, fasthttp.StatusOK, forgotView{})
}

func (h *localUserHandlers) forgotForm(c *fasthttp.RequestCtx) error {
	args := c.PostArgs()
	email := strings.TrimSpace(string(args.Peek("email")))
	if err := docflow.CheckEmail(email); err != nil {
		return h.s.renderForgot(c, fasthttp.StatusUnprocessableEntity, forgotView{Email: email, Error: docflow.ErrorMessage(err) + "."})
	}
	kind := docflow.AuditPasswordResetRequested
	if string(args.Peek("what")) == "username" {
		kind = docflow.AuditUsernameRequested
	}
	h.s.mail.enqueue(mailJob{kind: kind, email: email, clientIP: h.s.auth.clientIP(c)})
	return h.s.renderForgot(c, fasthttp.StatusOK, forgotView{Sent: true})
}

func (h *localUserHandlers) resetPage(c *fasthttp.RequestCtx) error {
	return h.s.renderReset(c, fasthttp.StatusOK, resetView{Token: string(c.QueryArgs().Peek("token"))})
}

func (h *localUserHandlers) resetForm(c *fasthttp.RequestCtx) error {
	args := c.PostArgs()
	token := string(args.Peek("token"))
	err := h.s.resetPassword(c, h.d, token, string(args.Peek("new_password")), string(args.Peek("new_password_confirm")))
	if err != nil {
		status := ErrorStatusCode(docflow.ErrorCode(err))
		if status >= 500 {
			return err
		}
		var e *docflow.Error
		if errors.As(err, &e) && e.RetryAfter > 0 {
			c.Response.Header.Set("Retry-After", strconv.Itoa(e.RetryAfter))
		}
		return h.s.renderReset(c, status, resetView{Token: token, Error: docflow.ErrorMessage(err) + "."})
	}
	return h.s.renderReset(c, fasthttp.StatusOK, resetView{Done: true})
}

// resetPassword checks the two passwords (422) and consumes the token
// (400 when invalid, used or expired; 429 when too many passwords are
// being hashed, the token then kept).
func (s *Server) resetPassword(c *fasthttp.RequestCtx, d LocalUsersDeps, token, pw, confirm string) error {
	if err := docflow.CheckPassword("new_password", pw); err != nil {
		return err
	}
	if pw != confirm {
		return invalid("new_password_confirm", "Passwords do not match")
	}
	u, err := d.Accounts.ResetPassword(RequestContext(c), strings.TrimSpace(token), pw)
	if err != nil {
		if docflow.ErrorCode(err) == docflow.EBADREQUEST {
			s.audit(c, docflow.AuditEntry{Action: docflow.AuditPasswordReset, Detail: "invalid or expired token"})
		}
		return err
	}
	// The store revoked the account's tokens with the new password.
	s.auth.forgetAll()
	s.loginSucceeded(c, u.Username)
	s.loginSucceeded(c, u.Email)
	s.audit(c, docflow.AuditEntry{Actor: u.Email, Action: docflow.AuditPasswordReset, Target: localTarget(u.ID), Detail: "password changed"})
	return nil
}

var resetPage = template.Must(template.New("reset").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Choose a new password · docflow</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="stylesheet" href="/static/docflow.css"></head>
<body class="auth">{{if .Done}}<main class="auth-box">
<h1>docflow</h1>
<p role="status">Your password was changed.</p>
<p><a href="/login">Sign in</a> with the new password.</p>
</main>{{else}}<form method="post" action="/reset-password">
<h1>Choose a new password</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
{{if .Token}}<input type="hidden" name="token" value="{{.Token}}">
<label for="new_password">New password</label>
<input id="new_password" name="new_password" type="password" autocomplete="new-password" minlength="8" required aria-describedby="pw-hint">
<p id="pw-hint" class="muted">At least 8 characters.</p>
<label for="new_password_confirm">New password again</label>
<input id="new_password_confirm" name="new_password_confirm" type="password" autocomplete="new-password" minlength="8" required>
<button type="submit">Change password</button>
{{else}}<p class="error" role="alert">This link has no reset token. Open the link from the e-mail again.</p>{{end}}
</form>{{end}}</body></html>`))

var forgotPage = template.Must(template.New("forgot").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Forgot your password · docflow</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/static/docflow.css"></head>
<body class="auth">{{if .Sent}}<main class="auth-box">
<h1>docflow</h1>
<p role="status">If an account has this e-mail address, a message is on its way. The link in it works for one hour.</p>
<p><a href="/login">Back to sign-in</a></p>
</main>{{else}}<form method="post" action="/forgot-password">
<h1>Forgot your password?</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<label for="email">E-mail address of your account</label>
<input id="email" name="email" type="email" autocomplete="email" inputmode="email" required value="{{.Email}}">
<button type="submit" name="what" value="password">Send a reset link</button>
<button type="submit" name="what" value="username">Send my user name</button>
<p><a href="/login">Back to sign-in</a></p>
</form>{{end}}</body></html>`))

type forgotView struct {
	Email, Error string
	Sent         bool
}

func (s *Server) renderForgot(c *fasthttp.RequestCtx, status int, v forgotView) error {
	c.Response.Header.SetContentType("text/html; charset=utf-8")
	c.Response.Header.Set("Cache-Control", "no-store")
	c.SetStatusCode(status)
	return forgotPage.Execute(c, v)
}

type resetView struct {
	Token, Error string
	Done         bool
}

// renderReset renders the reset page; the token in its URL is kept out
// of Referer headers and caches.
func (s *Server) renderReset(c *fasthttp.RequestCtx, status int, v resetView) error {
	if len(v.Token) > 256 {
		v.Token = ""
	}
	c.Response.Header.SetContentType("text/html; charset=utf-8")
	c.Response.Header.Set("Cache-Control", "no-store")
	c.Response.Header.Set("Referrer-Policy", "no-referrer")
	c.SetStatusCode(status)
	return resetPage.Execute(c, v)
}
