package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// UserStateStore reads what the local accounts say about a user id now,
// for the one check of who may sign in and who is an administrator
// (internal/app; the SSO side is SSOStore's). It changes nothing.
type UserStateStore struct{ db *DB }

// NewUserStateStore returns the store on db.
func NewUserStateStore(db *DB) *UserStateStore {
	if db == nil {
		panic("postgres: NewUserStateStore needs a DB")
	}
	return &UserStateStore{db: db}
}

// LocalUserState reports whether userID is a local account's e-mail
// (case-insensitive, as sign-in matches it), whether that account is
// active, and whether it has is_admin.
func (s *UserStateStore) LocalUserState(ctx context.Context, userID string) (found, active, admin bool, err error) {
	if userID == "" {
		return false, false, false, nil
	}
	err = s.db.Pool.QueryRow(ctx, `SELECT is_active, is_admin FROM local_users WHERE lower(email) = lower($1)`, userID).Scan(&active, &admin)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, false, nil
	}
	if err != nil {
		return false, false, false, fmt.Errorf("local user state: %w", dbErr(err))
	}
	return true, active, admin, nil
}
