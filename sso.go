package docflow

import "time"

// This file holds the records of single sign-on with OpenID Connect: the
// sign-in attempt kept between the redirect to the provider and its
// callback, and what a successful sign-in tells about the user.

// SSOAttempt is one browser's sign-in in progress. The state sent to the
// provider is known only by its SHA-256 (StateHash); the attempt is bound
// to the browser that started it by BindingHash, the SHA-256 of a random
// value in an HttpOnly cookie. It is taken (and so removed) once.
type SSOAttempt struct {
	StateHash   string
	BindingHash string
	// Nonce is sent in the authorization request and must come back in
	// the ID token; Verifier is the PKCE code verifier.
	Nonce    string
	Verifier string
	// Issuer is the OIDC_ISSUER the attempt started against.
	Issuer string
	// Next is the path on this site to land on after signing in.
	Next string
	// RedirectURI, when not empty, is the mobile app's address that
	// receives an API token instead of a browser session.
	RedirectURI string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// SSOSignIn is what one successful SSO sign-in says of its user; the
// latest one is kept per user. IsAdmin is whether the provider's groups
// claim held ADMIN_GROUP_NAME, which the user's API tokens inherit.
type SSOSignIn struct {
	UserID  string
	Issuer  string
	Subject string
	IsAdmin bool
	At      time.Time
}
