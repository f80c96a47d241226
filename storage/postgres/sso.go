package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// SSOStore owns the tables of single sign-on (migrations 0420, 0570): the
// sign-ins in progress, the SSO identities (one per user id, bound to the
// provider's issuer and subject) and the administrators' links of local
// accounts to SSO identities (sso_links.go). Refresh tokens are sealed
// with the settings' cipher.
type SSOStore struct {
	db     *DB
	cipher *Cipher
}

// NewSSOStore returns the SSO store on db, sealing refresh tokens with c.
func NewSSOStore(db *DB, c *Cipher) *SSOStore {
	if db == nil || c == nil {
		panic("postgres: NewSSOStore needs a DB and a Cipher")
	}
	return &SSOStore{db: db, cipher: c}
}

// ssoBindLock serialises the transactions that bind SSO identities, so
// that two first sign-ins of one identity or one address cannot both bind.
const ssoBindLock = 7_245_570

// SaveSSOAttempt stores a sign-in in progress, and removes the expired
// ones on the way so that abandoned attempts do not pile up.
func (s *SSOStore) SaveSSOAttempt(ctx context.Context, a docflow.SSOAttempt) error {
	if a.StateHash == "" || a.BindingHash == "" {
		return docflow.Errorf(docflow.EINVALID, "an SSO attempt needs a state and a browser binding")
	}
	now := s.db.Now()
	if a.CreatedAt.IsZero() {
		a.CreatedAt = now
	}
	_, err := s.db.Pool.Exec(ctx, `WITH gone AS (DELETE FROM sso_attempts WHERE expires_at < $1)
		INSERT INTO sso_attempts (state_hash, binding_hash, nonce, verifier, issuer, next, redirect_uri, code_challenge, created_at, expires_at)
		VALUES ($2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		now, a.StateHash, a.BindingHash, a.Nonce, a.Verifier, a.Issuer, a.Next, a.RedirectURI, a.CodeChallenge, a.CreatedAt, a.ExpiresAt)
	if err != nil {
		return fmt.Errorf("save sso attempt: %w", dbErr(err))
	}
	return nil
}

// TakeSSOAttempt removes and returns the attempt whose state has the hash
// stateHash. An unknown, already taken or expired attempt is ENOTFOUND:
// each state serves once, even when two callbacks race.
func (s *SSOStore) TakeSSOAttempt(ctx context.Context, stateHash string) (*docflow.SSOAttempt, error) {
	a := docflow.SSOAttempt{StateHash: stateHash}
	err := s.db.Pool.QueryRow(ctx, `DELETE FROM sso_attempts WHERE state_hash = $1
		RETURNING binding_hash, nonce, verifier, issuer, next, redirect_uri, code_challenge, created_at, expires_at`, stateHash).
		Scan(&a.BindingHash, &a.Nonce, &a.Verifier, &a.Issuer, &a.Next, &a.RedirectURI, &a.CodeChallenge, &a.CreatedAt, &a.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Unknown sign-in attempt")
	}
	if err != nil {
		return nil, fmt.Errorf("take sso attempt: %w", dbErr(err))
	}
	if !s.db.Now().Before(a.ExpiresAt) {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Expired sign-in attempt")
	}
	return &a, nil
}

const ssoUserCols = `user_id, issuer, subject, email, bound_at IS NOT NULL, linked, is_admin, verified_at, refresh_token,
	disabled_at, disabled_reason, first_sign_in_at, last_sign_in_at`

// scanSSOUser reads ssoUserCols; the refresh token stays sealed.
func scanSSOUser(row pgx.Row) (*docflow.SSOUser, *string, error) {
	var u docflow.SSOUser
	var sealed *string
	err := row.Scan(&u.UserID, &u.Issuer, &u.Subject, &u.Email, &u.Bound, &u.Linked, &u.IsAdmin, &u.VerifiedAt, &sealed,
		&u.DisabledAt, &u.DisabledReason, &u.FirstSignInAt, &u.LastSignInAt)
	if err != nil {
		return nil, nil, err
	}
	return &u, sealed, nil
}

// FindSSOUser returns the SSO identity of userID, its refresh token
// unsealed (ENOTFOUND for a user who never signed in through SSO). A
// refresh token that no longer opens (SESSION_SECRET changed) reads as
// none.
func (s *SSOStore) FindSSOUser(ctx context.Context, userID string) (*docflow.SSOUser, error) {
	u, sealed, err := scanSSOUser(s.db.Pool.QueryRow(ctx, `SELECT `+ssoUserCols+` FROM sso_users WHERE user_id = $1`, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Not an SSO user")
	}
	if err != nil {
		return nil, fmt.Errorf("find sso user: %w", dbErr(err))
	}
	if sealed != nil {
		if rt, err := s.cipher.Decrypt(*sealed); err == nil {
			u.RefreshToken = rt
		}
	}
	return u, nil
}

// SignInSSO records a successful SSO sign-in and returns the user it is
// (docflow.ResolveSSOSignIn over what the tables hold, in one transaction
// under ssoBindLock): the identity is bound to the user id, a link
// waiting for its first sign-in is bound, and the provider's admin status,
// the refresh token (a sign-in without one keeps the previous) and the
// time of verification are stored; a user the provider had refused is
// enabled again; the picture is the sign-in's. A refusal is a
// *docflow.SSORefusal and changes nothing.
func (s *SSOStore) SignInSSO(ctx context.Context, in docflow.SSOSignIn, adminUserID string) (*docflow.SSOResolution, error) {
	if in.Issuer == "" || in.Subject == "" {
		return nil, docflow.Errorf(docflow.EINVALID, "an SSO sign-in needs an issuer and a subject")
	}
	if in.At.IsZero() {
		in.At = s.db.Now()
	}
	var sealed *string
	if in.RefreshToken != "" {
		v, err := s.cipher.Encrypt(in.RefreshToken)
		if err != nil {
			return nil, fmt.Errorf("seal refresh token: %w", err)
		}
		sealed = &v
	}
	var res docflow.SSOResolution
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, ssoBindLock); err != nil {
			return err
		}
		f, err := s.facts(ctx, tx, in, adminUserID)
		if err != nil {
			return err
		}
		if res, err = docflow.ResolveSSOSignIn(in, f); err != nil {
			return err
		}
		if res.BindLink != 0 {
			if _, err := tx.Exec(ctx, `UPDATE sso_links SET subject = $2, bound_at = $3 WHERE local_user_id = $1`,
				res.BindLink, in.Subject, in.At); err != nil {
				return err
			}
		}
		// The identity moves to its user id (a linked account's e-mail
		// changed, or an administrator linked it to an account).
		if _, err := tx.Exec(ctx, `DELETE FROM sso_users WHERE issuer = $1 AND subject = $2 AND bound_at IS NOT NULL AND user_id <> $3`,
			in.Issuer, in.Subject, res.UserID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO sso_users (user_id, issuer, subject, email, bound_at, linked, is_admin, verified_at, refresh_token,
				disabled_at, disabled_reason, first_sign_in_at, last_sign_in_at, picture)
			VALUES ($1, $2, $3, $4, $5, $8, $6, $5, $7, NULL, '', $5, $5, $9)
			ON CONFLICT (user_id) DO UPDATE SET issuer = EXCLUDED.issuer, subject = EXCLUDED.subject, email = EXCLUDED.email,
				bound_at = COALESCE(sso_users.bound_at, EXCLUDED.bound_at), linked = EXCLUDED.linked, is_admin = EXCLUDED.is_admin,
				verified_at = EXCLUDED.verified_at, refresh_token = COALESCE(EXCLUDED.refresh_token, sso_users.refresh_token),
				disabled_at = NULL, disabled_reason = '', last_sign_in_at = EXCLUDED.last_sign_in_at, picture = EXCLUDED.picture`,
			res.UserID, in.Issuer, in.Subject, in.Email, in.At, in.IsAdmin, sealed, res.Linked, in.Picture)
		return err
	})
	if err != nil {
		var r *docflow.SSORefusal
		if errors.As(err, &r) {
			return nil, r
		}
		return nil, fmt.Errorf("sso sign-in: %w", dbErr(err))
	}
	return &res, nil
}

// facts reads what ResolveSSOSignIn decides on.
func (s *SSOStore) facts(ctx context.Context, tx pgx.Tx, in docflow.SSOSignIn, adminUserID string) (docflow.SSOFacts, error) {
	f := docflow.SSOFacts{AdminUserID: adminUserID}
	linked, err := localAccount(ctx, tx, `l.issuer = $1 AND l.subject = $2`, in.Issuer, in.Subject)
	if err != nil {
		return f, err
	}
	f.Linked = linked
	bound, _, err := scanSSOUser(tx.QueryRow(ctx, `SELECT `+ssoUserCols+` FROM sso_users
		WHERE issuer = $1 AND subject = $2 AND bound_at IS NOT NULL`, in.Issuer, in.Subject))
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return f, err
	}
	f.Bound = bound
	target := docflow.SSOTargetUserID(in, f.Linked, f.Bound)
	if f.Local, err = localAccount(ctx, tx, `lower(u.email) = lower($1)`, target); err != nil {
		return f, err
	}
	holder, _, err := scanSSOUser(tx.QueryRow(ctx, `SELECT `+ssoUserCols+` FROM sso_users WHERE user_id = $1 FOR UPDATE`, target))
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return f, err
	}
	f.Holder = holder
	return f, nil
}

// localAccount returns the local account matching where (over local_users
// u left-joined to its link l) with its link, or nil.
func localAccount(ctx context.Context, tx pgx.Tx, where string, args ...any) (*docflow.SSOLocalAccount, error) {
	var a docflow.SSOLocalAccount
	var issuer, subject, linkedBy *string
	var linkedAt, boundAt *time.Time
	err := tx.QueryRow(ctx, `SELECT u.id, u.email, u.is_active, l.issuer, l.subject, l.linked_by, l.linked_at, l.bound_at
		FROM local_users u LEFT JOIN sso_links l ON l.local_user_id = u.id WHERE `+where+` LIMIT 1`, args...).
		Scan(&a.ID, &a.Email, &a.Active, &issuer, &subject, &linkedBy, &linkedAt, &boundAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if issuer != nil {
		a.Link = &docflow.SSOLink{LocalUserID: a.ID, Email: a.Email, Issuer: *issuer, Subject: *subject, LinkedBy: *linkedBy,
			LinkedAt: *linkedAt, BoundAt: boundAt}
	}
	return &a, nil
}

// RecordSSOCheck stores what the provider said when asked again about
// userID with its refresh token: its admin status and the refresh token it
// returned ("" keeps the stored one). It applies only if the identity was
// last verified at since, so that of two processes checking at once the
// first answer stands; false when it did not apply.
func (s *SSOStore) RecordSSOCheck(ctx context.Context, userID string, since time.Time, isAdmin bool, refreshToken string, at time.Time) (bool, error) {
	var sealed *string
	if refreshToken != "" {
		v, err := s.cipher.Encrypt(refreshToken)
		if err != nil {
			return false, fmt.Errorf("seal refresh token: %w", err)
		}
		sealed = &v
	}
	tag, err := s.db.Pool.Exec(ctx, `UPDATE sso_users SET is_admin = $3, verified_at = $5,
			refresh_token = COALESCE($4, refresh_token), disabled_at = NULL, disabled_reason = ''
		WHERE user_id = $1 AND verified_at = $2`, userID, since, isAdmin, sealed, at)
	if err != nil {
		return false, fmt.Errorf("record sso check: %w", dbErr(err))
	}
	return tag.RowsAffected() == 1, nil
}

// DisableSSOUser records that the provider refused userID (why: for the
// administrator), if it was last verified at since: it loses its admin
// status and its refresh token, and is disabled until its next SSO
// sign-in. False when it did not apply.
func (s *SSOStore) DisableSSOUser(ctx context.Context, userID string, since time.Time, why string, at time.Time) (bool, error) {
	tag, err := s.db.Pool.Exec(ctx, `UPDATE sso_users SET is_admin = FALSE, refresh_token = NULL, disabled_at = $3, disabled_reason = $4
		WHERE user_id = $1 AND verified_at = $2`, userID, since, at, why)
	if err != nil {
		return false, fmt.Errorf("disable sso user: %w", dbErr(err))
	}
	return tag.RowsAffected() == 1, nil
}
