package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// SessionStore implements docflow.SessionStore.
type SessionStore struct{ db *DB }

var _ docflow.SessionStore = (*SessionStore)(nil)

// NewSessionStore returns a SessionStore on db.
func NewSessionStore(db *DB) *SessionStore {
	if db == nil {
		panic("postgres: NewSessionStore needs a DB")
	}
	return &SessionStore{db: db}
}

// CreateSession stores s.
func (s *SessionStore) CreateSession(ctx context.Context, sess *docflow.Session) error {
	if sess.Data == nil {
		sess.Data = map[string]string{}
	}
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO sessions (id, user_id, is_admin, data, created_at, expires_at, password_stamp)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, sess.ID, sess.UserID, sess.IsAdmin, sess.Data, sess.CreatedAt, sess.ExpiresAt, sess.PasswordStamp)
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// FindSession returns ENOTFOUND for unknown or expired sessions.
func (s *SessionStore) FindSession(ctx context.Context, id string) (*docflow.Session, error) {
	var sess docflow.Session
	err := s.db.Pool.QueryRow(ctx, `SELECT id, user_id, is_admin, data, created_at, expires_at, password_stamp
		FROM sessions WHERE id=$1 AND expires_at > $2`, id, s.db.Now()).
		Scan(&sess.ID, &sess.UserID, &sess.IsAdmin, &sess.Data, &sess.CreatedAt, &sess.ExpiresAt, &sess.PasswordStamp)
	if err != nil {
		return nil, notFound(err, "Session not found")
	}
	return &sess, nil
}

// DeleteSession removes a session; unknown ids are not an error.
func (s *SessionStore) DeleteSession(ctx context.Context, id string) error {
	_, err := s.db.Pool.Exec(ctx, `DELETE FROM sessions WHERE id=$1`, id)
	return err
}

// LocalPasswordStamp fingerprints the local account userID (by e-mail or
// user name): its password hash, which changes with the password (a new
// salt each time), and whether it is active. "" when there is no such
// account. Sessions signed in with an older stamp are over.
func (s *SessionStore) LocalPasswordStamp(ctx context.Context, userID string) (string, error) {
	var stamp string
	err := s.db.Pool.QueryRow(ctx, `SELECT encode(sha256(convert_to(password_hash || CASE WHEN is_active THEN '' ELSE ':inactive' END, 'UTF8')), 'hex')
		FROM local_users WHERE lower(email)=lower($1) OR lower(username)=lower($1) ORDER BY id LIMIT 1`, userID).Scan(&stamp)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("local password stamp: %w", err)
	}
	return "local:" + stamp[:32], nil
}

// DeleteExpiredSessions removes sessions past their expiry.
func (s *SessionStore) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM sessions WHERE expires_at <= $1`, s.db.Now())
	return tag.RowsAffected(), err
}
