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

// IssueToken creates and stores a token for owner; the plaintext is in the
// returned record's Token field (shown once).
func IssueToken(c *fasthttp.RequestCtx, tokens docflow.TokenService, owner, name string, expires *time.Time) (*docflow.APIToken, error) {
	plain := NewToken()
	t := &docflow.APIToken{OwnerID: owner, Name: name, TokenPrefix: plain[:12], TokenHash: HashToken(plain), ExpiresAt: expires}
	if err := tokens.CreateToken(RequestContext(c), t); err != nil {
		return nil, err
	}
	t.Token = plain
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

func (s *Server) mountTokens() {
	b := Route{Auth: AuthUser}
	type createReq struct {
		Name          *string `json:"name"`
		ExpiresInDays *int    `json:"expires_in_days"`
	}
	create := func(c *fasthttp.RequestCtx) error {
		var req createReq
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
			t := s.cfg.Now().Add(time.Duration(d) * 24 * time.Hour)
			exp = &t
		}
		t, err := IssueToken(c, s.cfg.Tokens, CurrentUser(c).ID, name, exp)
		if err != nil {
			return err
		}
		writeJSON(c, fasthttp.StatusCreated, t)
		return nil
	}
	s.Handle("POST", "/api/api-tokens/", b, create)
	list := func(c *fasthttp.RequestCtx) error {
		ts, err := s.cfg.Tokens.ListTokens(RequestContext(c), CurrentUser(c).ID)
		if err != nil {
			return err
		}
		writeJSON(c, fasthttp.StatusOK, ts)
		return nil
	}
	s.Handle("GET", "/api/api-tokens/", b, list)
	s.Handle("DELETE", "/api/api-tokens/{token_id}", b, func(c *fasthttp.RequestCtx) error {
		id, err := pathID(c, "token_id")
		if err != nil {
			return err
		}
		u := CurrentUser(c)
		t, err := s.cfg.Tokens.FindTokenByID(RequestContext(c), u.ID, id)
		if err != nil {
			return err
		}
		res, err := s.cfg.Tokens.RevokeToken(RequestContext(c), u.ID, id)
		if err != nil {
			return err
		}
		s.auth.forget(t.TokenHash)
		msg := "Token revoked"
		if res == "deleted" {
			msg = "Token deleted"
		}
		writeJSON(c, fasthttp.StatusOK, Detail{Detail: msg})
		return nil
	})
	s.Handle("POST", "/api/api-tokens/{token_id}/reactivate", b, func(c *fasthttp.RequestCtx) error {
		id, err := pathID(c, "token_id")
		if err != nil {
			return err
		}
		t, err := s.cfg.Tokens.ReactivateToken(RequestContext(c), CurrentUser(c).ID, id)
		if err != nil {
			return err
		}
		s.auth.forget(t.TokenHash)
		writeJSON(c, fasthttp.StatusOK, t)
		return nil
	})
}
