package postgres

import (
	"context"
	"fmt"

	"docflow"
)

// SessionService implements docflow.SessionService.
type SessionService struct{ db *DB }

var _ docflow.SessionService = (*SessionService)(nil)

// NewSessionService returns a SessionService on db.
func NewSessionService(db *DB) *SessionService {
	if db == nil {
		panic("postgres: NewSessionService needs a DB")
	}
	return &SessionService{db: db}
}

// CreateSession stores s.
func (s *SessionService) CreateSession(ctx context.Context, sess *docflow.Session) error {
	if sess.Data == nil {
		sess.Data = map[string]string{}
	}
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO sessions (id, user_id, is_admin, data, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, sess.ID, sess.UserID, sess.IsAdmin, sess.Data, sess.CreatedAt, sess.ExpiresAt)
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// FindSession returns ENOTFOUND for unknown or expired sessions.
func (s *SessionService) FindSession(ctx context.Context, id string) (*docflow.Session, error) {
	var sess docflow.Session
	err := s.db.Pool.QueryRow(ctx, `SELECT id, user_id, is_admin, data, created_at, expires_at
		FROM sessions WHERE id=$1 AND expires_at > $2`, id, s.db.Now()).
		Scan(&sess.ID, &sess.UserID, &sess.IsAdmin, &sess.Data, &sess.CreatedAt, &sess.ExpiresAt)
	if err != nil {
		return nil, notFound(err, "Session not found")
	}
	return &sess, nil
}

// DeleteSession removes a session; unknown ids are not an error.
func (s *SessionService) DeleteSession(ctx context.Context, id string) error {
	_, err := s.db.Pool.Exec(ctx, `DELETE FROM sessions WHERE id=$1`, id)
	return err
}

// DeleteExpiredSessions removes sessions past their expiry.
func (s *SessionService) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM sessions WHERE expires_at <= $1`, s.db.Now())
	return tag.RowsAffected(), err
}
