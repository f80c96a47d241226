package docflow

import (
	"context"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"
)

// Local accounts: users with a password stored in docflow, managed by an
// administrator (/api/admin/users/local…) and signing in at /login by user
// name or e-mail. A local user's id (User.ID, the owner id of what it owns)
// is its e-mail address.

// MinPasswordLength is the shortest password a local account takes.
const MinPasswordLength = 8

// ResetTokenTTL is how long a password-reset token stays valid.
const ResetTokenTTL = time.Hour

// LocalUserInput creates a local account (POST /api/admin/users/local).
type LocalUserInput struct {
	Email       string `json:"email"`
	Username    string `json:"username"`
	DisplayName string `json:"display_name"`
	Password    string `json:"password"`
	IsAdmin     bool   `json:"is_admin"`
}

// LocalUserPatch changes a local account; nil fields are left as they are.
type LocalUserPatch struct {
	Email       *string `json:"email"`
	DisplayName *string `json:"display_name"`
	IsAdmin     *bool   `json:"is_admin"`
	IsActive    *bool   `json:"is_active"`
}

// Validate normalises in (trimmed e-mail, user name and display name) and
// checks it: a well-formed e-mail, a user name, a long enough password.
func (in *LocalUserInput) Validate() error {
	in.Email = strings.TrimSpace(in.Email)
	in.Username = strings.TrimSpace(in.Username)
	in.DisplayName = strings.TrimSpace(in.DisplayName)
	var errs []FieldError
	if err := CheckEmail(in.Email); err != nil {
		errs = append(errs, FieldError{Field: "email", Message: err.Error()})
	}
	switch {
	case in.Username == "":
		errs = append(errs, FieldError{Field: "username", Message: "username is required"})
	case utf8.RuneCountInString(in.Username) > 150 || strings.ContainsAny(in.Username, "\x00\r\n\t"):
		errs = append(errs, FieldError{Field: "username", Message: "username must be at most 150 characters, without control characters"})
	}
	if utf8.RuneCountInString(in.DisplayName) > 200 {
		errs = append(errs, FieldError{Field: "display_name", Message: "display_name must be at most 200 characters"})
	}
	if err := CheckPassword("password", in.Password); err != nil {
		errs = append(errs, err.Fields...)
	}
	return invalidFields(errs)
}

// Validate normalises and checks the fields p sets.
func (p *LocalUserPatch) Validate() error {
	var errs []FieldError
	if p.Email != nil {
		e := strings.TrimSpace(*p.Email)
		p.Email = &e
		if err := CheckEmail(e); err != nil {
			errs = append(errs, FieldError{Field: "email", Message: err.Error()})
		}
	}
	if p.DisplayName != nil {
		d := strings.TrimSpace(*p.DisplayName)
		p.DisplayName = &d
		if utf8.RuneCountInString(d) > 200 {
			errs = append(errs, FieldError{Field: "display_name", Message: "display_name must be at most 200 characters"})
		}
	}
	return invalidFields(errs)
}

// CheckEmail accepts one bare e-mail address (no display name, no
// control characters), at most 254 characters.
func CheckEmail(email string) error {
	if email == "" {
		return Errorf(EINVALID, "email is required")
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || a.Name != "" || len(email) > 254 ||
		strings.ContainsAny(email, " \x00\r\n\t<>") || !strings.Contains(email[strings.LastIndexByte(email, '@')+1:], ".") {
		return Errorf(EINVALID, "email is not a valid e-mail address")
	}
	return nil
}

// CheckPassword refuses a password shorter than MinPasswordLength
// characters (or longer than 1,024 bytes), as a 422 naming field.
func CheckPassword(field, pw string) *Error {
	msg := ""
	switch {
	case utf8.RuneCountInString(pw) < MinPasswordLength:
		msg = field + " must be at least 8 characters"
	case len(pw) > 1024:
		msg = field + " must be at most 1024 bytes"
	default:
		return nil
	}
	e := Errorf(EINVALID, "%s", msg)
	e.Fields = []FieldError{{Field: field, Message: msg}}
	return e
}

func invalidFields(errs []FieldError) error {
	if len(errs) == 0 {
		return nil
	}
	e := Errorf(EINVALID, "%s", errs[0].Message)
	e.Fields = errs
	return e
}

// PasswordHasher hashes and verifies passwords (internal/passwd:
// argon2id). Verify compares in constant time; NeedsRehash says a hash
// was made with older parameters and should be replaced. Hash and Verify
// may refuse with ERATELIMIT (RetryAfter set) when too many run at once:
// the caller passes that on, it says nothing of the password.
type PasswordHasher interface {
	Hash(password string) (string, error)
	Verify(password, hash string) (bool, error)
	NeedsRehash(hash string) bool
}

// AccountStore keeps local accounts and their password-reset tokens.
type AccountStore interface {
	// CreateLocalUser creates an active account from a validated in,
	// hashing its password, and in the same transaction its profile and
	// the user.signup event (source "local"). ECONFLICT when the e-mail or
	// the user name is taken.
	CreateLocalUser(ctx context.Context, in LocalUserInput) (*LocalUser, error)
	// ListLocalUsers returns every local account, oldest first.
	ListLocalUsers(ctx context.Context) ([]*LocalUser, error)
	// FindLocalUser returns the account id, or ENOTFOUND.
	FindLocalUser(ctx context.Context, id int64) (*LocalUser, error)
	// FindLocalUserByLogin returns the account whose user name or e-mail
	// is login (case-insensitive), or ENOTFOUND.
	FindLocalUserByLogin(ctx context.Context, login string) (*LocalUser, error)
	// UpdateLocalUser applies the non-nil fields of a validated p. A new
	// e-mail (the user id) moves everything the old id owned — profile,
	// files, shares both ways, comments, annotations, tokens, saved
	// searches, pipelines, rules, integrations, hooks, devices — in one
	// transaction, ends its sessions and spends its reset links;
	// ECONFLICT "email taken" when another account or profile has it.
	// Deactivating (is_active false) revokes the account's API tokens,
	// spends its reset links and deletes its sessions in the same
	// transaction. ENOTFOUND for an unknown id.
	UpdateLocalUser(ctx context.Context, id int64, p LocalUserPatch) (*LocalUser, error)
	// SetLocalPassword stores the hash of password (checked by the
	// caller) and, in the same transaction, revokes the account's API
	// tokens, spends its reset links and deletes its sessions. ENOTFOUND
	// for an unknown id.
	SetLocalPassword(ctx context.Context, id int64, password string) error
	// DeleteLocalUser removes the account, its profile, its sessions and
	// its API tokens; what else it owns is kept. ENOTFOUND for an
	// unknown id.
	DeleteLocalUser(ctx context.Context, id int64) error
	// Authenticate returns the active account whose user name or e-mail
	// is login when password is its password; EUNAUTHORIZED otherwise
	// (unknown, wrong password or inactive alike). It costs one hash
	// verification either way, and upgrades a hash made with older
	// parameters. ERATELIMIT when the hasher is busy (nothing was checked).
	Authenticate(ctx context.Context, login, password string) (*LocalUser, error)
	// CreateResetToken makes a single-use password-reset token for the
	// account, valid ResetTokenTTL; only its hash is stored. ENOTFOUND for
	// an unknown id.
	CreateResetToken(ctx context.Context, id int64) (token string, expires time.Time, err error)
	// ResetPassword consumes token and sets password (checked by the
	// caller) in one transaction, which also spends the account's other
	// reset links, revokes its API tokens and deletes its sessions;
	// EBADREQUEST "Invalid or expired reset token" for an unknown, used
	// or expired token, found before the password is hashed (a guessed
	// token costs no hashing). ERATELIMIT when the hasher is busy; the
	// token is then not spent.
	ResetPassword(ctx context.Context, token, password string) (*LocalUser, error)
	// IsLocalAdmin reports whether userID (an e-mail) is an active local
	// account with is_admin.
	IsLocalAdmin(ctx context.Context, userID string) (bool, error)
}

// Audit actions of the self-service endpoints (the others are in people.go).
const (
	AuditPasswordResetRequested = "password.reset_requested"
	AuditUsernameRequested      = "username.reminder_requested"
)
