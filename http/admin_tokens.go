package http

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"docflow"
)

// mountAdminTokens mounts the administrators' view of any user's API
// tokens, the user named by its user id (the e-mail of a local or SSO
// user, ADMIN_USERNAME for the local admin account):
// GET /api/admin/users/{user_id}/tokens lists them as GET /api/api-tokens/
// lists one's own; DELETE /api/admin/users/{user_id}/tokens/{token_id}
// revokes an active token or deletes a revoked one, as the owner's DELETE
// does (404 when the token is not that user's). Both are audited.
func (h *tokenHandlers) mountAdminTokens() {
	s := h.s
	a := Route{Auth: AuthAdmin}
	s.Handle("GET", "/api/admin/users/{user_id}/tokens", a, h.adminList, docAdminListTokens)
	s.Handle("DELETE", "/api/admin/users/{user_id}/tokens/{token_id}", a, h.adminDelete, docAdminDeleteToken)
}

func (h *tokenHandlers) adminList(c *fasthttp.RequestCtx) error {
	owner, _ := c.UserValue("user_id").(string)
	ts, err := h.s.cfg.Tokens.ListTokens(RequestContext(c), owner)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, ts)
	return nil
}

func (h *tokenHandlers) adminDelete(c *fasthttp.RequestCtx) error {
	owner, _ := c.UserValue("user_id").(string)
	id, err := pathID(c, "token_id")
	if err != nil {
		return err
	}
	return h.s.revokeToken(c, owner, id)
}

// revokeToken revokes owner's token id, or deletes it when it is revoked
// already, drops it from the cache and audits it; ENOTFOUND when the token
// is not owner's.
func (s *Server) revokeToken(c *fasthttp.RequestCtx, owner string, id int64) error {
	ctx := RequestContext(c)
	t, err := s.cfg.Tokens.FindTokenByID(ctx, owner, id)
	if err != nil {
		return err
	}
	res, err := s.cfg.Tokens.RevokeToken(ctx, owner, id)
	if err != nil {
		return err
	}
	s.auth.forget(t.TokenHash)
	action, msg := docflow.AuditTokenRevoke, "Token revoked"
	if res == "deleted" {
		action, msg = docflow.AuditTokenDelete, "Token deleted"
	}
	s.audit(c, docflow.AuditEntry{Action: action, Target: tokenTarget(id), Detail: tokenDetail(t)})
	writeJSON(c, fasthttp.StatusOK, Detail{Detail: msg})
	return nil
}

func tokenTarget(id int64) string { return "api_token:" + strconv.FormatInt(id, 10) }

// tokenDetail names a token for the audit log: its owner, name and
// prefix, never the token.
func tokenDetail(t *docflow.APIToken) string {
	return "owner=" + t.OwnerID + " name=" + strconv.Quote(t.Name) + " prefix=" + t.TokenPrefix
}
