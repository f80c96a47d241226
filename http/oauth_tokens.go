package http

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"docflow"
)

// The exchanges with the provider's token endpoint: the code at the end
// of a sign-in, and the refresh token when an SSO user's admin status is
// checked again (SSO_ADMIN_RECHECK).

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
		if err := s.userInfoClaims(ctx, p, tok, idt.Subject, &cl); err != nil {
			return nil, err
		}
	}
	u := cl.user(idt.Subject, s.ssoPolicy())
	u.RefreshToken = tok.RefreshToken
	return &u, nil
}

// userInfoClaims completes cl from the user info endpoint, which must be
// about subject (OpenID Connect Core 5.3.2).
func (s *Server) userInfoClaims(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, subject string, cl *ssoClaims) error {
	ui, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		s.log.Warn().Err(err).Msg("OpenID Connect user info failed")
		return docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider's user info cannot be read; try again later")
	}
	if ui.Subject != subject {
		return docflow.Errorf(docflow.EUNAUTHORIZED, "The sign-in provider's user info is about another user")
	}
	var more ssoClaims
	if err := ui.Claims(&more); err != nil {
		return docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider's user info cannot be read")
	}
	cl.fill(more)
	return nil
}

// SSOCheck is what the provider says of an SSO user when asked again.
type SSOCheck struct {
	// IsAdmin: the groups claim holds ADMIN_GROUP_NAME now.
	IsAdmin bool
	// RefreshToken is the one the provider returned ("" when it kept the
	// one it was given).
	RefreshToken string
}

// CheckSSOUser asks the provider again about u with its refresh token:
// the token is refreshed, the claims are read again (from the refreshed ID
// token, completed by the user info, or from the user info alone), and the
// allow-lists and ADMIN_GROUP_NAME applied as at a sign-in.
//
// Errors: EFORBIDDEN when the provider refuses the refresh token
// (invalid_grant: the user, the grant or the session is gone there), when
// its answer is about another subject, or when the user is no longer
// allowed (OIDC_ALLOWED_DOMAINS, OIDC_ALLOWED_GROUPS); EUNAVAILABLE when u
// cannot be checked here (no refresh token, SSO not configured or u of
// another issuer); EBADGATEWAY when the provider cannot be reached or
// answers something unusable.
func (s *Server) CheckSSOUser(ctx context.Context, u docflow.SSOUser) (*SSOCheck, error) {
	st, ok := s.ssoSettings()
	if !ok || u.Issuer != st.issuer || u.RefreshToken == "" {
		return nil, docflow.Errorf(docflow.EUNAVAILABLE, "This SSO user cannot be checked with the provider")
	}
	p, err := s.sso.discover(ctx, st.issuer)
	if err != nil {
		return nil, docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider cannot be reached")
	}
	ctx, cancel := s.sso.clientContext(ctx)
	defer cancel()
	// An expiry in the past makes the token source refresh at once.
	tok, err := s.oauthConfig(p, st).TokenSource(ctx, &oauth2.Token{RefreshToken: u.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			return nil, docflow.Errorf(docflow.EFORBIDDEN, "the provider refused the refresh token (invalid_grant)")
		}
		s.log.Warn().Err(err).Msg("OpenID Connect refresh failed")
		return nil, docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider cannot be reached")
	}
	var cl ssoClaims
	subject := ""
	if raw, _ := tok.Extra("id_token").(string); raw != "" {
		idt, err := p.Verifier(&oidc.Config{ClientID: st.clientID, Now: s.cfg.Now}).Verify(ctx, raw)
		if err != nil {
			s.log.Warn().Err(err).Msg("OpenID Connect refreshed ID token refused")
			return nil, docflow.Errorf(docflow.EBADGATEWAY, "The refreshed ID token is not valid")
		}
		if err := idt.Claims(&cl); err != nil {
			return nil, docflow.Errorf(docflow.EBADGATEWAY, "The refreshed ID token's claims cannot be read")
		}
		subject = idt.Subject
	}
	if subject != "" && subject != u.Subject {
		return nil, docflow.Errorf(docflow.EFORBIDDEN, "the refreshed ID token is about another subject")
	}
	if subject == "" || !cl.complete() {
		if p.UserInfoEndpoint() == "" {
			return nil, docflow.Errorf(docflow.EBADGATEWAY, "The sign-in provider sent no claims to check")
		}
		if err := s.userInfoClaims(ctx, p, tok, u.Subject, &cl); err != nil {
			if docflow.ErrorCode(err) == docflow.EUNAUTHORIZED {
				return nil, docflow.Errorf(docflow.EFORBIDDEN, "the user info is about another subject")
			}
			return nil, err
		}
	}
	pol := s.ssoPolicy()
	now := cl.user(u.Subject, pol)
	if why := pol.refusal(now); why != "" {
		return nil, docflow.Errorf(docflow.EFORBIDDEN, "no longer allowed: %s", why)
	}
	out := &SSOCheck{IsAdmin: now.IsAdmin}
	if tok.RefreshToken != u.RefreshToken {
		out.RefreshToken = tok.RefreshToken
	}
	return out, nil
}
