package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// SSOStore owns the tables of single sign-on (migration 0420): the
// sign-ins in progress and the latest SSO sign-in of each user.
type SSOStore struct{ db *DB }

// NewSSOStore returns the SSO store on db.
func NewSSOStore(db *DB) *SSOStore {
	if db == nil {
		panic("postgres: NewSSOStore needs a DB")
	}
	return &SSOStore{db: db}
}

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
		INSERT INTO sso_attempts (state_hash, binding_hash, nonce, verifier, issuer, next, redirect_uri, created_at, expires_at)
		VALUES ($2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		now, a.StateHash, a.BindingHash, a.Nonce, a.Verifier, a.Issuer, a.Next, a.RedirectURI, a.CreatedAt, a.ExpiresAt)
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
		RETURNING binding_hash, nonce, verifier, issuer, next, redirect_uri, created_at, expires_at`, stateHash).
		Scan(&a.BindingHash, &a.Nonce, &a.Verifier, &a.Issuer, &a.Next, &a.RedirectURI, &a.CreatedAt, &a.ExpiresAt)
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

// RecordSSOSignIn keeps in as the user's latest SSO sign-in: its admin
// status replaces the previous one.
func (s *SSOStore) RecordSSOSignIn(ctx context.Context, in docflow.SSOSignIn) error {
	if in.UserID == "" {
		return docflow.Errorf(docflow.EINVALID, "user id is required")
	}
	at := in.At
	if at.IsZero() {
		at = s.db.Now()
	}
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO sso_users (user_id, issuer, subject, is_admin, first_sign_in_at, last_sign_in_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (user_id) DO UPDATE SET issuer = EXCLUDED.issuer, subject = EXCLUDED.subject,
			is_admin = EXCLUDED.is_admin, last_sign_in_at = EXCLUDED.last_sign_in_at`,
		in.UserID, in.Issuer, in.Subject, in.IsAdmin, at)
	if err != nil {
		return fmt.Errorf("record sso sign-in: %w", dbErr(err))
	}
	return nil
}

// IsSSOAdmin reports whether userID's latest SSO sign-in made it an
// administrator (false for users who never signed in through SSO).
func (s *SSOStore) IsSSOAdmin(ctx context.Context, userID string) (bool, error) {
	var admin bool
	err := s.db.Pool.QueryRow(ctx, `SELECT is_admin FROM sso_users WHERE user_id = $1`, userID).Scan(&admin)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sso admin: %w", dbErr(err))
	}
	return admin, nil
}
