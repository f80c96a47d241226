package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// MobileCodeStore keeps the one-time codes of the mobile hand-off with
// PKCE (migration 0570), known by their SHA-256 only.
type MobileCodeStore struct{ db *DB }

// NewMobileCodeStore returns the mobile code store on db.
func NewMobileCodeStore(db *DB) *MobileCodeStore {
	if db == nil {
		panic("postgres: NewMobileCodeStore needs a DB")
	}
	return &MobileCodeStore{db: db}
}

// SaveMobileCode stores a code, and removes the expired ones on the way.
func (s *MobileCodeStore) SaveMobileCode(ctx context.Context, m docflow.MobileCode) error {
	if m.CodeHash == "" || m.UserID == "" || m.Challenge == "" {
		return docflow.Errorf(docflow.EINVALID, "a mobile code needs a hash, a user and a challenge")
	}
	_, err := s.db.Pool.Exec(ctx, `WITH gone AS (DELETE FROM mobile_codes WHERE expires_at < $1)
		INSERT INTO mobile_codes (code_hash, user_id, challenge, redirect_uri, created_at, expires_at)
		VALUES ($2, $3, $4, $5, $6, $7)`,
		m.CreatedAt, m.CodeHash, m.UserID, m.Challenge, m.RedirectURI, m.CreatedAt, m.ExpiresAt)
	if err != nil {
		return fmt.Errorf("save mobile code: %w", dbErr(err))
	}
	return nil
}

// TakeMobileCode removes and returns the code with hash codeHash
// (ENOTFOUND when unknown or already taken): a code serves once, even when
// two exchanges race. The caller checks its expiry.
func (s *MobileCodeStore) TakeMobileCode(ctx context.Context, codeHash string) (*docflow.MobileCode, error) {
	m := docflow.MobileCode{CodeHash: codeHash}
	err := s.db.Pool.QueryRow(ctx, `DELETE FROM mobile_codes WHERE code_hash = $1
		RETURNING user_id, challenge, redirect_uri, created_at, expires_at`, codeHash).
		Scan(&m.UserID, &m.Challenge, &m.RedirectURI, &m.CreatedAt, &m.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Unknown or used code")
	}
	if err != nil {
		return nil, fmt.Errorf("take mobile code: %w", dbErr(err))
	}
	return &m, nil
}
