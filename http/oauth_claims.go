package http

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"docflow"
)

// ssoUser is who an SSO sign-in is.
type ssoUser struct {
	// UserID is the verified e-mail address (lower-cased), else the
	// provider's subject (decisions.md).
	UserID, Subject, Email, DisplayName string
	// IsAdmin: the groups claim holds ADMIN_GROUP_NAME.
	IsAdmin bool
}

// ssoClaims are the claims docflow reads, from the ID token and, for
// those it lacks, from the user info endpoint.
type ssoClaims struct {
	Email             string          `json:"email"`
	EmailVerified     json.RawMessage `json:"email_verified"`
	Name              string          `json:"name"`
	PreferredUsername string          `json:"preferred_username"`
	Groups            json.RawMessage `json:"groups"`
}

// complete says whether nothing needs to be asked of the user info
// endpoint: the ID token carries the e-mail and the groups.
func (c *ssoClaims) complete() bool { return c.Email != "" && len(c.Groups) > 0 }

// fill takes from more what c lacks.
func (c *ssoClaims) fill(more ssoClaims) {
	if c.Email == "" {
		c.Email, c.EmailVerified = more.Email, more.EmailVerified
	}
	if c.Name == "" {
		c.Name = more.Name
	}
	if c.PreferredUsername == "" {
		c.PreferredUsername = more.PreferredUsername
	}
	if len(c.Groups) == 0 {
		c.Groups = more.Groups
	}
}

// emailUsable: an e-mail address is the user id unless the provider says
// it is not verified (email_verified false, as a boolean or a string);
// providers that do not send email_verified are taken at their word.
func (c *ssoClaims) emailUsable() bool {
	if c.Email == "" || len(c.Email) > 320 || !strings.Contains(c.Email, "@") {
		return false
	}
	v := strings.Trim(string(bytes.TrimSpace(c.EmailVerified)), `"`)
	return !strings.EqualFold(v, "false")
}

// groups reads the groups claim: a list of strings or one string; other
// members (some providers send objects) are ignored.
func (c *ssoClaims) groups() []string {
	if len(c.Groups) == 0 {
		return nil
	}
	var list []any
	if err := json.Unmarshal(c.Groups, &list); err != nil {
		var one string
		if json.Unmarshal(c.Groups, &one) == nil {
			return []string{one}
		}
		return nil
	}
	var out []string
	for _, g := range list {
		if s, ok := g.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// user makes the docflow user of subject with these claims.
func (c *ssoClaims) user(subject, adminGroup string) ssoUser {
	u := ssoUser{UserID: subject, Subject: subject}
	if c.emailUsable() {
		u.Email = strings.ToLower(strings.TrimSpace(c.Email))
		u.UserID = u.Email
	}
	for _, n := range []string{c.Name, c.PreferredUsername, u.Email, subject} {
		if n = strings.TrimSpace(n); n != "" {
			u.DisplayName = clipText(n, 200)
			break
		}
	}
	if adminGroup != "" {
		for _, g := range c.groups() {
			// Some providers (Keycloak's full group path) write "/admin".
			if g == adminGroup || g == "/"+adminGroup {
				u.IsAdmin = true
				break
			}
		}
	}
	return u
}

// ssoIdentity ends the code flow of att: it exchanges code (with the PKCE
// verifier) for tokens, verifies the ID token (signature, issuer,
// audience, expiry) and its nonce, completes the claims from the user
// info endpoint when the ID token lacks the e-mail or the groups, and
// says who signed in. Its errors are for the user to read.
func (s *Server) ssoIdentity(ctx context.Context, p *oidc.Provider, st ssoSettings, att *docflow.SSOAttempt, code string) (*ssoUser, error) {
	ctx, cancel := s.sso.clientContext(ctx)
	defer cancel()
	tok, err := s.oauthConfig(p, st).Exchange(ctx, code, oauth2.VerifierOption(att.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			reason := re.ErrorCode
			if reason == "" && re.Response != nil {
				reason = re.Response.Status
			}
			s.log.Warn().Str("error", reason).Msg("OpenID Connect token exchange refused")
			return nil, docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider refused to finish the sign-in: %s", clipText(reason, 64))
		}
		s.log.Warn().Err(err).Msg("OpenID Connect token exchange failed")
		return nil, docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider cannot be reached to finish the sign-in; try again later")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider sent no ID token")
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: st.clientID, Now: s.cfg.Now}).Verify(ctx, raw)
	if err != nil {
		s.log.Warn().Err(err).Msg("OpenID Connect ID token refused")
		return nil, docflow.Errorf(docflow.EUNAUTHORIZED, "The ID token is not valid: %s", clipText(strings.TrimPrefix(err.Error(), "oidc: "), 200))
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(att.Nonce)) != 1 {
		return nil, docflow.Errorf(docflow.EUNAUTHORIZED, "The ID token was not issued for this sign-in (nonce mismatch)")
	}
	if idt.Subject == "" || len(idt.Subject) > 255 {
		return nil, docflow.Errorf(docflow.EUNAUTHORIZED, "The ID token has no usable subject")
	}
	var cl ssoClaims
	if err := idt.Claims(&cl); err != nil {
		return nil, docflow.Errorf(docflow.EBADGATEWAY, "The ID token's claims cannot be read")
	}
	if !cl.complete() && p.UserInfoEndpoint() != "" {
		ui, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			s.log.Warn().Err(err).Msg("OpenID Connect user info failed")
			return nil, docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider's user info cannot be read; try again later")
		}
		// The user info must be about the user of the ID token (OpenID
		// Connect Core 5.3.2).
		if ui.Subject != idt.Subject {
			return nil, docflow.Errorf(docflow.EUNAUTHORIZED, "The sign-in provider's user info is about another user")
		}
		var more ssoClaims
		if err := ui.Claims(&more); err != nil {
			return nil, docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider's user info cannot be read")
		}
		cl.fill(more)
	}
	u := cl.user(idt.Subject, strings.TrimSpace(s.cfg.Settings.Get("ADMIN_GROUP_NAME")))
	return &u, nil
}
