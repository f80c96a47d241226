package http

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// NewToken returns a fresh API token: the prefix and 40 URL-safe random characters.
func NewToken() string {
	b := make([]byte, 30) // 30 bytes = 40 base64 characters
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return docflow.TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// auditTokenCreate records the creation of t (never the token itself);
// actor "" is the request's user.
func (s *Server) auditTokenCreate(c *fasthttp.RequestCtx, t *docflow.APIToken, actor string) {
	detail := tokenDetail(t)
	if t.ExpiresAt != nil {
		detail += " expires=" + t.ExpiresAt.UTC().Format(time.RFC3339)
	}
	s.audit(c, docflow.AuditEntry{Actor: actor, Action: docflow.AuditTokenCreate, Target: tokenTarget(t.ID), Detail: detail})
}

// IssueToken creates and stores a token for owner; the plaintext is in the
// returned record's Token field (shown once).
func IssueToken(c *fasthttp.RequestCtx, tokens docflow.TokenStore, owner, name string, expires *time.Time) (*docflow.APIToken, error) {
	plain := NewToken()
	t := &docflow.APIToken{OwnerID: owner, Name: name, TokenPrefix: plain[:12], TokenHash: HashToken(plain), ExpiresAt: expires}
	if err := tokens.CreateToken(RequestContext(c), t); err != nil {
		return nil, err
	}
	t.Token = plain
	return t, nil
}

// tokenOwner is the account whose tokens u manages: its own, or for the
// anonymous single user of an instance without authentication the admin
// account (ADMIN_USERNAME), so that a token made then is the admin's, and
// listed and revocable as the admin's, once authentication is on.
func (s *Server) tokenOwner(u *docflow.User) string {
	if u == nil || u.Anonymous || u.ID == "" {
		return docflow.AdminUserID(s.cfg.Settings)
	}
	return u.ID
}

// reactivationTarget returns the revoked token u may bring back: one of
// its owner's (any, for an administrator), and, when u acts through an
// API token, not one revoked before that token itself was last revoked.
// The owner revoked the later token last: it may have leaked with the
// earlier one, so it cannot undo the earlier revocation; a session, an
// older token or an administrator can.
func (s *Server) reactivationTarget(c *fasthttp.RequestCtx, u *docflow.User, id int64) (*docflow.APIToken, error) {
	ctx := RequestContext(c)
	t, err := s.cfg.Tokens.FindToken(ctx, id)
	if err != nil {
		return nil, err
	}
	if t.OwnerID != s.tokenOwner(u) && !u.IsAdmin {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Token not found")
	}
	if u.TokenID != nil && t.RevokedAt != nil {
		by, err := s.cfg.Tokens.FindToken(ctx, *u.TokenID)
		if err != nil {
			return nil, err
		}
		if by.LastRevokedAt != nil && by.LastRevokedAt.After(*t.RevokedAt) {
			return nil, docflow.Errorf(docflow.EFORBIDDEN, "This token was revoked after the one to reactivate; sign in, or use a token that was not")
		}
	}
	return t, nil
}

func pathID(c *fasthttp.RequestCtx, name string) (int64, error) {
	v, _ := c.UserValue(name).(string)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, invalid(name, "%s must be a positive integer", name)
	}
	return id, nil
}

// mountTokens mounts /api/api-tokens/…, each user's own API tokens, and
// the administrators' view of anyone's.
func (s *Server) mountTokens() {
	h := &tokenHandlers{s: s}
	b := Route{Auth: AuthUser}
	s.Handle("POST", "/api/api-tokens/", b, h.create, docCreateToken)
	s.Handle("GET", "/api/api-tokens/", b, h.list, docListTokens)
	s.Handle("DELETE", "/api/api-tokens/{token_id}", b, h.delete, docDeleteToken)
	s.Handle("POST", "/api/api-tokens/{token_id}/reactivate", b, h.reactivate, docReactivateToken)
	h.mountAdminTokens()
}

type tokenHandlers struct {
	s *Server
}

// tokenCreate is a request to create a token.
type tokenCreate struct {
	Name          *string `json:"name" openapi:"required" doc:"What the token is for (at most 200 characters)"`
	ExpiresInDays *int    `json:"expires_in_days" min:"1" max:"3650" doc:"Days until it expires (default: never)"`
}

func (h *tokenHandlers) create(c *fasthttp.RequestCtx) error {
	var req tokenCreate
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Name == nil || strings.TrimSpace(*req.Name) == "" {
		return invalid("name", "name is required")
	}
	name := strings.TrimSpace(*req.Name)
	if len(name) > 200 {
		return invalid("name", "name must be at most 200 characters")
	}
	var exp *time.Time
	if req.ExpiresInDays != nil {
		d := *req.ExpiresInDays
		if d < 1 || d > 3650 {
			return invalid("expires_in_days", "expires_in_days must be between 1 and 3650")
		}
		t := h.s.cfg.Now().Add(time.Duration(d) * 24 * time.Hour)
		exp = &t
	}
	t, err := IssueToken(c, h.s.cfg.Tokens, h.s.tokenOwner(CurrentUser(c)), name, exp)
	if err != nil {
		return err
	}
	h.s.auditTokenCreate(c, t, "")
	writeJSON(c, fasthttp.StatusCreated, t)
	return nil
}

func (h *tokenHandlers) list(c *fasthttp.RequestCtx) error {
	ts, err := h.s.cfg.Tokens.ListTokens(RequestContext(c), h.s.tokenOwner(CurrentUser(c)))
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, ts)
	return nil
}

func (h *tokenHandlers) delete(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "token_id")
	if err != nil {
		return err
	}
	return h.s.revokeToken(c, h.s.tokenOwner(CurrentUser(c)), id)
}

func (h *tokenHandlers) reactivate(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "token_id")
	if err != nil {
		return err
	}
	target, err := h.s.reactivationTarget(c, CurrentUser(c), id)
	if err != nil {
		return err
	}
	t, err := h.s.cfg.Tokens.ReactivateToken(RequestContext(c), target.OwnerID, id)
	if err != nil {
		return err
	}
	h.s.auth.forget(t.TokenHash)
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditTokenReactivate, Target: tokenTarget(id), Detail: tokenDetail(t)})
	writeJSON(c, fasthttp.StatusOK, t)
	return nil
}
