package http

import (
	"context"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// The administrators' SSO routes:
//   - /api/admin/users/local/{local_user_id}/sso-link (GET, PUT, DELETE):
//     the link that lets an SSO identity sign in as a local account (an
//     SSO sign-in with a local account's address is refused without one);
//   - /api/admin/users/{user_id}/sso-identity (GET, DELETE): the SSO
//     identity bound to a user id, and releasing it so that the next
//     verified sign-in with that address binds afresh (a user recreated at
//     the provider, a new provider).
//
// Changes are audited (sso.link, sso.unlink, sso.forget).

// SSOAdminStore is what the administrators' SSO routes ask of storage.
type SSOAdminStore interface {
	// FindSSOLink returns a local account's link; ENOTFOUND when none.
	FindSSOLink(ctx context.Context, localUserID int64) (*docflow.SSOLink, error)
	// LinkSSO sets a local account's link (replacing any); ENOTFOUND for
	// an unknown account, ECONFLICT for an identity linked elsewhere.
	LinkSSO(ctx context.Context, l docflow.SSOLink) (*docflow.SSOLink, error)
	// UnlinkSSO removes a local account's link, forgets the SSO identity
	// under its e-mail and ends its sessions; ENOTFOUND when none.
	UnlinkSSO(ctx context.Context, localUserID int64) (*docflow.SSOLink, error)
	// FindSSOUser returns the SSO identity of a user id; ENOTFOUND when
	// none.
	FindSSOUser(ctx context.Context, userID string) (*docflow.SSOUser, error)
	// ForgetSSOUser releases the SSO identity of a user id and ends its
	// sessions; ENOTFOUND when none.
	ForgetSSOUser(ctx context.Context, userID string) (*docflow.SSOUser, error)
}

// mountSSOAdmin mounts the administrators' routes of SSO links and
// identities.
func (s *Server) mountSSOAdmin(st SSOAdminStore) {
	h := &ssoAdminHandlers{s: s, st: st}
	a := Route{Auth: AuthAdmin}
	const link = "/api/admin/users/local/{local_user_id}/sso-link"
	s.Handle("GET", link, a, h.getLink, docGetSSOLink)
	s.Handle("PUT", link, a, h.putLink, docPutSSOLink)
	s.Handle("DELETE", link, a, h.deleteLink, docDeleteSSOLink)
	const identity = "/api/admin/users/{user_id}/sso-identity"
	s.Handle("GET", identity, a, h.getIdentity, docGetSSOIdentity)
	s.Handle("DELETE", identity, a, h.forgetIdentity, docForgetSSOIdentity)
}

type ssoAdminHandlers struct {
	s  *Server
	st SSOAdminStore
}

func (h *ssoAdminHandlers) getLink(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "local_user_id")
	if err != nil {
		return err
	}
	l, err := h.st.FindSSOLink(RequestContext(c), id)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, l)
	return nil
}

func (h *ssoAdminHandlers) putLink(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "local_user_id")
	if err != nil {
		return err
	}
	var req ssoLinkRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	req.Issuer, req.Subject = strings.TrimSpace(req.Issuer), strings.TrimSpace(req.Subject)
	if req.Issuer == "" {
		req.Issuer = strings.TrimSpace(docflow.OIDCIssuer.Get(h.s.cfg.Settings))
	}
	if req.Issuer == "" || len(req.Issuer) > 2048 {
		return invalid("issuer", "issuer is required while OIDC_ISSUER is not set (at most 2048 characters)")
	}
	if len(req.Subject) > 255 {
		return invalid("subject", "subject is at most 255 characters")
	}
	by := ""
	if u := CurrentUser(c); u != nil {
		by = u.ID
	}
	l, err := h.st.LinkSSO(RequestContext(c), docflow.SSOLink{LocalUserID: id, Issuer: req.Issuer, Subject: req.Subject,
		LinkedBy: by, LinkedAt: h.s.cfg.Now()})
	if err != nil {
		return err
	}
	detail := "issuer " + l.Issuer + ", "
	if l.Subject == "" {
		detail += "subject bound by the next sign-in with " + l.Email
	} else {
		detail += "subject " + l.Subject
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditSSOLink, Target: localTarget(id), Detail: clipText(detail, 1000)})
	writeJSON(c, fasthttp.StatusOK, l)
	return nil
}

func (h *ssoAdminHandlers) deleteLink(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "local_user_id")
	if err != nil {
		return err
	}
	l, err := h.st.UnlinkSSO(RequestContext(c), id)
	if err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditSSOUnlink, Target: localTarget(id),
		Detail: clipText("issuer "+l.Issuer+", subject "+l.Subject, 1000)})
	writeJSON(c, fasthttp.StatusOK, Detail{Detail: "SSO link removed"})
	return nil
}

func (h *ssoAdminHandlers) getIdentity(c *fasthttp.RequestCtx) error {
	uid, err := profilePathUserID(c)
	if err != nil {
		return err
	}
	u, err := h.st.FindSSOUser(RequestContext(c), uid)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, u)
	return nil
}

func (h *ssoAdminHandlers) forgetIdentity(c *fasthttp.RequestCtx) error {
	uid, err := profilePathUserID(c)
	if err != nil {
		return err
	}
	u, err := h.st.ForgetSSOUser(RequestContext(c), uid)
	if err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditSSOForget, Target: "user:" + uid,
		Detail: clipText("issuer "+u.Issuer+", subject "+u.Subject, 1000)})
	writeJSON(c, fasthttp.StatusOK, Detail{Detail: "SSO identity released"})
	return nil
}
