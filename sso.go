package docflow

import (
	"strings"
	"time"
)

// This file holds the records of single sign-on with OpenID Connect: the
// sign-in attempt kept between the redirect to the provider and its
// callback, the SSO identities docflow keeps, the links an administrator
// makes between a local account and an SSO identity, and the one rule
// that says which docflow user an SSO sign-in is (ResolveSSOSignIn).

// Audit actions of single sign-on beside AuditSSOSucceeded and
// AuditSSOFailed.
const (
	// AuditSSOSubjectChanged: a sign-in brought a known address with
	// another subject than the one bound to it, and was refused.
	AuditSSOSubjectChanged = "sso.subject_changed"
	// AuditSSOLink and AuditSSOUnlink: an administrator linked a local
	// account to an SSO identity, or removed the link.
	AuditSSOLink   = "sso.link"
	AuditSSOUnlink = "sso.unlink"
	// AuditSSOForget: an administrator released the SSO identity bound to
	// a user id, so that the next verified sign-in binds afresh.
	AuditSSOForget = "sso.forget"
)

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
	// receives the hand-off instead of a browser session; CodeChallenge
	// the app's PKCE challenge (S256) when it asked for a one-time code.
	RedirectURI   string
	CodeChallenge string
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

// SSOSignIn is what one successful SSO sign-in says of its user.
type SSOSignIn struct {
	// Issuer and Subject are the identity: the provider's subject is the
	// person, whatever address it carries today.
	Issuer, Subject string
	// Email is the address the provider verified, lower-cased ("" when it
	// sent none or did not verify it).
	Email string
	// IsAdmin: the groups claim holds ADMIN_GROUP_NAME.
	IsAdmin bool
	// RefreshToken, when the provider issued one, lets docflow ask the
	// provider again later (kept sealed).
	RefreshToken string
	// Picture is the provider's picture claim when CheckPictureURL
	// accepts it ("" otherwise): the phone app's avatar.
	Picture string
	At      time.Time
}

// UserID is the docflow user id a first sign-in of this identity gets:
// the verified address, else the subject.
func (in SSOSignIn) UserID() string {
	if in.Email != "" {
		return in.Email
	}
	return in.Subject
}

// SSOUser is an SSO identity as docflow keeps it, one per user id.
type SSOUser struct {
	UserID  string `json:"user_id"`
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
	// Email is the verified address of the latest sign-in ("" none).
	Email string `json:"email"`
	// Bound: the user id belongs to this (issuer, subject). False for a
	// user kept by address only (before identities were bound), which the
	// next sign-in with that verified address binds.
	Bound bool `json:"bound"`
	// Linked: the identity signs in as a local account, through an
	// administrator's link.
	Linked bool `json:"linked"`
	// IsAdmin is the admin status the provider gave at VerifiedAt, the
	// latest sign-in or check with the provider.
	IsAdmin    bool      `json:"is_admin"`
	VerifiedAt time.Time `json:"verified_at"`
	// RefreshToken is the provider's refresh token ("" none); never
	// serialised.
	RefreshToken string `json:"-"`
	// DisabledAt is set once the provider refused the user (its refresh
	// token refused, or the user no longer allowed): the user's sessions
	// and tokens stop working until its next successful SSO sign-in.
	DisabledAt     *time.Time `json:"disabled_at"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	FirstSignInAt  time.Time  `json:"first_sign_in_at"`
	LastSignInAt   time.Time  `json:"last_sign_in_at"`
}

// SSOLink is an administrator's permission for an SSO identity to sign
// in as a local account (whose e-mail is its user id).
type SSOLink struct {
	LocalUserID int64  `json:"local_user_id"`
	Email       string `json:"email"`
	Issuer      string `json:"issuer"`
	// Subject is the identity's subject; "" until the first sign-in with
	// the account's verified address from Issuer binds it.
	Subject  string     `json:"subject"`
	LinkedBy string     `json:"linked_by"`
	LinkedAt time.Time  `json:"linked_at"`
	BoundAt  *time.Time `json:"bound_at"`
}

// SSOLocalAccount is a local account as an SSO sign-in meets it.
type SSOLocalAccount struct {
	ID     int64
	Email  string
	Active bool
	// Link is the account's SSO link (nil: none).
	Link *SSOLink
}

// SSOFacts are what storage knows about an SSO sign-in, read in the
// transaction that records it.
type SSOFacts struct {
	// Linked is the local account an administrator linked to this very
	// identity (issuer and subject), nil when none.
	Linked *SSOLocalAccount
	// Bound is the SSO user bound to this identity, nil when none.
	Bound *SSOUser
	// Local is the local account whose e-mail is the target user id
	// (SSOTargetUserID), compared case-insensitively; Holder the SSO user
	// stored under that user id. Nil when none.
	Local  *SSOLocalAccount
	Holder *SSOUser
	// AdminUserID is ADMIN_USERNAME, which signs in with its password only.
	AdminUserID string
}

// SSOTargetUserID is the user id a sign-in is about, from the facts that
// do not depend on it: the linked local account's, else the bound
// identity's, else the sign-in's own (SSOSignIn.UserID).
func SSOTargetUserID(in SSOSignIn, linked *SSOLocalAccount, bound *SSOUser) string {
	switch {
	case linked != nil:
		return linked.Email
	case bound != nil:
		return bound.UserID
	}
	return in.UserID()
}

// SSOResolution is the docflow user an SSO sign-in is.
type SSOResolution struct {
	UserID string
	// Linked: the user is a local account, through a link.
	Linked bool
	// BindLink is the local account whose link (waiting for its first
	// sign-in) this sign-in binds to its subject; 0 for none.
	BindLink int64
}

// SSORefusal is an SSO sign-in that ResolveSSOSignIn refuses. Err is what
// the user reads; Reason is for the audit log; UserID the user id the
// sign-in was refused as; SubjectChanged marks a known address that
// arrived with another subject.
type SSORefusal struct {
	Err            *Error
	Reason         string
	UserID         string
	SubjectChanged bool
}

func (r *SSORefusal) Error() string { return r.Err.Error() + " (" + r.Reason + ")" }

// Unwrap lets ErrorCode and ErrorMessage read the user's error.
func (r *SSORefusal) Unwrap() error { return r.Err }

func refuseSSO(code, msg, reason string) *SSORefusal {
	return &SSORefusal{Err: Errorf(code, "%s", msg), Reason: reason}
}

// Messages of SSO refusals (the user reads them on the login page).
const (
	ssoMsgDeactivated = "This account is deactivated"
	ssoMsgNeedsLink   = "An account with this e-mail address already exists here; an administrator must link it to your single sign-on account before you can sign in with SSO"
	ssoMsgOtherOwner  = "This e-mail address belongs to another single sign-on account here; ask an administrator"
)

// ResolveSSOSignIn says which docflow user the sign-in in is, or refuses
// it (*SSORefusal). The identity is the provider's subject:
//   - an identity an administrator linked to a local account is that
//     account, unless it is deactivated;
//   - an identity already bound keeps its user id, whatever address it
//     carries now (but one that was a local account whose link or account
//     is gone is refused);
//   - otherwise the user id is the verified address, else the subject.
//
// Whatever the way, a user id that is a local account's is that account
// only through an administrator's link (a link waiting for its first
// sign-in binds with the account's verified address), never a
// deactivated account, and never ADMIN_USERNAME; a user id bound to
// another identity is refused (SubjectChanged); one kept by address only
// (before identities were bound) is bound now.
func ResolveSSOSignIn(in SSOSignIn, f SSOFacts) (SSOResolution, error) {
	res, err := resolveSSOSignIn(in, f)
	if r, ok := err.(*SSORefusal); ok && r.UserID == "" {
		r.UserID = SSOTargetUserID(in, f.Linked, f.Bound)
	}
	return res, err
}

func resolveSSOSignIn(in SSOSignIn, f SSOFacts) (SSOResolution, error) {
	if l := f.Linked; l != nil {
		if !l.Active {
			return SSOResolution{}, refuseSSO(EFORBIDDEN, ssoMsgDeactivated, "linked local account is deactivated")
		}
		return SSOResolution{UserID: l.Email, Linked: true}, nil
	}
	uid := SSOTargetUserID(in, nil, f.Bound)
	if uid == f.AdminUserID {
		return SSOResolution{}, refuseSSO(EFORBIDDEN, "This account cannot sign in through SSO", "user id of the local admin account")
	}
	if l := f.Local; l != nil {
		if !l.Active {
			return SSOResolution{}, refuseSSO(EFORBIDDEN, ssoMsgDeactivated, "address of a deactivated local account")
		}
		link := l.Link
		if link == nil || link.Issuer != in.Issuer {
			return SSOResolution{}, refuseSSO(EFORBIDDEN, ssoMsgNeedsLink, "address of a local account not linked to this identity")
		}
		if link.Subject != "" {
			// Linked to another subject: Linked would have been this one.
			r := refuseSSO(EFORBIDDEN, ssoMsgOtherOwner, "local account linked to subject "+link.Subject+", sign-in has subject "+in.Subject)
			r.SubjectChanged, r.UserID = true, l.Email
			return SSOResolution{}, r
		}
		if in.Email == "" || !strings.EqualFold(in.Email, l.Email) {
			return SSOResolution{}, refuseSSO(EFORBIDDEN, ssoMsgNeedsLink, "the link waits for a sign-in with the account's verified address")
		}
		return SSOResolution{UserID: l.Email, Linked: true, BindLink: l.ID}, nil
	}
	if f.Bound != nil {
		if f.Bound.Linked {
			// Its local account was deleted (or its link removed).
			return SSOResolution{}, refuseSSO(EFORBIDDEN, "The account this single sign-on account was linked to no longer exists; ask an administrator",
				"identity linked to a local account that is gone")
		}
		return SSOResolution{UserID: uid}, nil
	}
	if h := f.Holder; h != nil && h.Bound && (h.Issuer != in.Issuer || h.Subject != in.Subject) {
		r := refuseSSO(EFORBIDDEN, ssoMsgOtherOwner, "address bound to subject "+h.Subject+" of "+h.Issuer+", sign-in has subject "+in.Subject+" of "+in.Issuer)
		r.SubjectChanged, r.UserID = true, h.UserID
		return SSOResolution{}, r
	}
	return SSOResolution{UserID: uid}, nil
}

// MobileCode is the one-time code the mobile hand-off gives an app that
// sent a PKCE challenge: the app exchanges it, with its verifier, for an
// API token (POST /api/mobile/token). It is known by its SHA-256 only,
// taken once, valid a minute.
type MobileCode struct {
	CodeHash string
	UserID   string
	// Challenge is the app's S256 code challenge; RedirectURI where the
	// code was sent.
	Challenge   string
	RedirectURI string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}
