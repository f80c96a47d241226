package http

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"docflow"
)

// ssoUser is who an SSO sign-in is, as the provider says.
type ssoUser struct {
	Subject string
	// Email is the address the provider verified, lower-cased ("" when
	// it sent none or did not verify it).
	Email       string
	DisplayName string
	Groups      []string
	// IsAdmin: the groups claim holds ADMIN_GROUP_NAME exactly.
	IsAdmin bool
	// RefreshToken is the provider's refresh token ("" when it gave none).
	RefreshToken string
	// Picture is the picture claim when docflow.CheckPictureURL accepts
	// it ("" otherwise).
	Picture string
}

// ssoClaims are the claims docflow reads, from the ID token and, for
// those it lacks, from the user info endpoint.
type ssoClaims struct {
	Email             string          `json:"email"`
	EmailVerified     json.RawMessage `json:"email_verified"`
	Name              string          `json:"name"`
	PreferredUsername string          `json:"preferred_username"`
	Groups            json.RawMessage `json:"groups"`
	Picture           string          `json:"picture"`
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
	if c.Picture == "" {
		c.Picture = more.Picture
	}
}

// emailVerified says whether the provider vouches for the address:
// email_verified true (a boolean or the string "true"). An absent claim is
// not a yes, unless trustAbsent (OIDC_TRUST_UNVERIFIED_EMAIL, for a
// provider that never sends it); false never is.
func (c *ssoClaims) emailVerified(trustAbsent bool) bool {
	if c.Email == "" || len(c.Email) > 320 || !strings.Contains(c.Email, "@") {
		return false
	}
	v := bytes.TrimSpace(c.EmailVerified)
	if len(v) == 0 || string(v) == "null" {
		return trustAbsent
	}
	return strings.EqualFold(strings.Trim(string(v), `"`), "true")
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

// ssoPolicy is what the settings say about who may sign in and who is an
// administrator.
type ssoPolicy struct {
	// adminGroup is ADMIN_GROUP_NAME ("" none), matched exactly.
	adminGroup string
	// domains (OIDC_ALLOWED_DOMAINS, lower-cased) and groups
	// (OIDC_ALLOWED_GROUPS) restrict who may sign in; empty: anyone.
	domains, groups []string
	// trustAbsent is OIDC_TRUST_UNVERIFIED_EMAIL.
	trustAbsent bool
}

func (s *Server) ssoPolicy() ssoPolicy {
	p := ssoPolicy{adminGroup: strings.TrimSpace(docflow.AdminGroupName.Get(s.cfg.Settings)),
		groups:      docflow.OIDCAllowedGroups.Get(s.cfg.Settings),
		trustAbsent: docflow.OIDCTrustUnverifiedEmail.Get(s.cfg.Settings)}
	for _, d := range docflow.OIDCAllowedDomains.Get(s.cfg.Settings) {
		p.domains = append(p.domains, strings.ToLower(strings.TrimPrefix(d, "@")))
	}
	return p
}

// user makes the docflow user of subject with these claims.
func (c *ssoClaims) user(subject string, p ssoPolicy) ssoUser {
	u := ssoUser{Subject: subject, Groups: c.groups()}
	if p := strings.TrimSpace(c.Picture); docflow.CheckPictureURL(p) {
		u.Picture = p
	}
	if c.emailVerified(p.trustAbsent) {
		u.Email = strings.ToLower(strings.TrimSpace(c.Email))
	}
	for _, n := range []string{c.Name, c.PreferredUsername, u.Email, subject} {
		if n = strings.TrimSpace(n); n != "" {
			u.DisplayName = clipText(n, 200)
			break
		}
	}
	// NOTE: exactly the group's name: "Admins" or "/admin" are other
	// groups, which on some providers anyone may create.
	u.IsAdmin = p.adminGroup != "" && slices.Contains(u.Groups, p.adminGroup)
	return u
}

// errSSONotAllowed is what a user outside the allow-lists reads; the
// lists themselves are not shown.
var errSSONotAllowed = docflow.Errorf(docflow.EFORBIDDEN, "Your single sign-on account is not allowed to sign in here; ask an administrator")

// refusal says why u may not sign in under p ("" when it may): with
// OIDC_ALLOWED_DOMAINS, its verified address must be in one of them
// (exactly: a subdomain is listed on its own); with OIDC_ALLOWED_GROUPS,
// one of its groups must be listed (exactly). Both apply when both are set.
func (p ssoPolicy) refusal(u ssoUser) string {
	if len(p.domains) > 0 {
		at := strings.LastIndexByte(u.Email, '@')
		if at < 0 {
			return "no verified address, and OIDC_ALLOWED_DOMAINS is set"
		}
		if !slices.Contains(p.domains, u.Email[at+1:]) {
			return "address domain " + clipText(u.Email[at+1:], 100) + " not in OIDC_ALLOWED_DOMAINS"
		}
	}
	if len(p.groups) > 0 && !slices.ContainsFunc(u.Groups, func(g string) bool { return slices.Contains(p.groups, g) }) {
		return "no group in OIDC_ALLOWED_GROUPS"
	}
	return ""
}
