package docflow

import (
	"context"
	"strings"
	"time"
)

// User is the identity making a request. In single-user mode (AUTH_ENABLED
// false) requests carry the anonymous admin user, whose ID is "".
type User struct {
	ID          string // owner id: the local user's email, SSO subject, or admin username
	DisplayName string
	Email       string
	IsAdmin     bool
	// TokenID is set when the request authenticated with an API token.
	TokenID *int64
	// SessionID is set when the request authenticated with a session cookie.
	SessionID string
	Anonymous bool
}

// UserState is what a user id may do now. It is read when a token or a
// session is used, never frozen at sign-in: a token or a session works
// only while its user may sign in (SignIn), and carries administrator
// rights only while the user is an administrator (Admin). Admin is never
// true without SignIn.
type UserState struct {
	// SignIn: the user is the local admin account (ADMIN_USERNAME), an
	// active local account, or an SSO user who may sign in.
	SignIn bool
	// Admin: ADMIN_USERNAME, an active local account with is_admin, or an
	// SSO user who is an administrator.
	Admin bool
}

// AdminUserID is the local admin account's user id: ADMIN_USERNAME, or
// "admin" when it is empty. Tokens made in single-user mode are its.
func AdminUserID(s SettingsReader) string {
	if id := strings.TrimSpace(AdminUsername.Get(s)); id != "" {
		return id
	}
	return "admin"
}

// UserProfile is the per-user record admins manage.
type UserProfile struct {
	ProfileID         int64      `json:"profile_id"`
	UserID            string     `json:"user_id"`
	DisplayName       *string    `json:"display_name"`
	DailyUploadLimit  *int       `json:"daily_upload_limit"`
	Notes             *string    `json:"notes"`
	IsBlocked         bool       `json:"is_blocked"`
	SubscriptionTier  string     `json:"subscription_tier"`
	PreferredLanguage *string    `json:"preferred_language"`
	DocumentCount     int        `json:"document_count"`
	LastUpload        *time.Time `json:"last_upload"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
}

// LocalUser is an account with a password stored in the database.
type LocalUser struct {
	ID           int64     `json:"id"`
	Email        string    `json:"email"`
	Username     string    `json:"username"`
	DisplayName  string    `json:"display_name"`
	PasswordHash string    `json:"-"`
	IsAdmin      bool      `json:"is_admin"`
	IsActive     bool      `json:"is_active"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// APIToken is a bearer token record. Only the SHA-256 of the token is stored.
type APIToken struct {
	ID          int64      `json:"id"`
	OwnerID     string     `json:"-"`
	Name        string     `json:"name"`
	TokenPrefix string     `json:"token_prefix"`
	Token       string     `json:"token,omitempty"` // creation response only
	TokenHash   string     `json:"-"`
	IsActive    bool       `json:"is_active"`
	LastUsedAt  *time.Time `json:"last_used_at"`
	LastUsedIP  *string    `json:"last_used_ip"`
	CreatedAt   time.Time  `json:"created_at"`
	RevokedAt   *time.Time `json:"revoked_at"`
	ExpiresAt   *time.Time `json:"expires_at"`
	// LastRevokedAt is when the token was last revoked; unlike RevokedAt
	// it survives reactivation.
	LastRevokedAt *time.Time `json:"-"`
}

// Audit actions of API tokens (target "api_token:<id>").
const (
	AuditTokenCreate     = "api_token.create"
	AuditTokenRevoke     = "api_token.revoke"
	AuditTokenDelete     = "api_token.delete"
	AuditTokenReactivate = "api_token.reactivate"
)

// TokenPrefix starts every API token.
const TokenPrefix = "dfl_"

// LegacyTokenPrefix starts the API tokens the original service issued;
// an import keeps their hashes (the same hex SHA-256), so they go on
// working here.
const LegacyTokenPrefix = "de_"

// TokenShaped reports whether token may be an API token of docflow's or
// of the original service's, before any lookup.
func TokenShaped(token string) bool {
	return len(token) <= 200 && (strings.HasPrefix(token, TokenPrefix) || strings.HasPrefix(token, LegacyTokenPrefix))
}

// Session is a browser session kept server-side.
type Session struct {
	ID      string
	UserID  string
	IsAdmin bool
	// PasswordStamp fingerprints the password the session was signed in
	// with; once the account's differs (the password changed) the session
	// is over. Empty for accounts without a password here (SSO).
	PasswordStamp string
	Data          map[string]string
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

// TokenStore manages API tokens.
type TokenStore interface {
	// CreateToken stores t (TokenHash and TokenPrefix set by the caller).
	CreateToken(ctx context.Context, t *APIToken) error
	// FindTokenByHash returns ENOTFOUND for unknown hashes.
	FindTokenByHash(ctx context.Context, hash string) (*APIToken, error)
	FindTokenByID(ctx context.Context, ownerID string, id int64) (*APIToken, error)
	// FindToken returns a token of any owner (for administrators), or ENOTFOUND.
	FindToken(ctx context.Context, id int64) (*APIToken, error)
	ListTokens(ctx context.Context, ownerID string) ([]*APIToken, error)
	// RevokeToken revokes an active token, or deletes a revoked one. It
	// returns "revoked" or "deleted". ENOTFOUND if not the owner's.
	RevokeToken(ctx context.Context, ownerID string, id int64) (string, error)
	// ReactivateToken makes a revoked token active again. EBADREQUEST if
	// it is already active, ENOTFOUND if not the owner's.
	ReactivateToken(ctx context.Context, ownerID string, id int64) (*APIToken, error)
	// TouchTokens records last use for a batch of tokens.
	TouchTokens(ctx context.Context, uses map[int64]TokenUse) error
}

// TokenUse is the last use of a token, flushed in batches.
type TokenUse struct {
	At time.Time
	IP string
}

// SessionStore stores browser sessions.
type SessionStore interface {
	CreateSession(ctx context.Context, s *Session) error
	// FindSession returns ENOTFOUND for unknown or expired sessions.
	FindSession(ctx context.Context, id string) (*Session, error)
	DeleteSession(ctx context.Context, id string) error
}
