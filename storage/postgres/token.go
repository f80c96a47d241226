package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// TokenStore implements docflow.TokenStore.
type TokenStore struct{ db *DB }

var _ docflow.TokenStore = (*TokenStore)(nil)

// NewTokenStore returns a TokenStore on db.
func NewTokenStore(db *DB) *TokenStore {
	if db == nil {
		panic("postgres: NewTokenStore needs a DB")
	}
	return &TokenStore{db: db}
}

const tokenCols = `id, owner_id, name, token_prefix, token_hash, is_active, last_used_at, last_used_ip, created_at, revoked_at, expires_at, last_revoked_at`

func scanToken(row pgx.Row) (*docflow.APIToken, error) {
	var t docflow.APIToken
	err := row.Scan(&t.ID, &t.OwnerID, &t.Name, &t.TokenPrefix, &t.TokenHash, &t.IsActive,
		&t.LastUsedAt, &t.LastUsedIP, &t.CreatedAt, &t.RevokedAt, &t.ExpiresAt, &t.LastRevokedAt)
	return &t, err
}

// CreateToken inserts t and fills its id and created_at.
func (s *TokenStore) CreateToken(ctx context.Context, t *docflow.APIToken) error {
	err := s.db.Pool.QueryRow(ctx, `INSERT INTO api_tokens (owner_id, name, token_prefix, token_hash, is_active, expires_at, created_at)
		VALUES ($1, $2, $3, $4, TRUE, $5, $6) RETURNING id, created_at`,
		t.OwnerID, t.Name, t.TokenPrefix, t.TokenHash, t.ExpiresAt, s.db.Now()).Scan(&t.ID, &t.CreatedAt)
	if err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	t.IsActive = true
	return nil
}

// FindTokenByHash returns ENOTFOUND for unknown hashes.
func (s *TokenStore) FindTokenByHash(ctx context.Context, hash string) (*docflow.APIToken, error) {
	t, err := scanToken(s.db.Pool.QueryRow(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE token_hash=$1`, hash))
	if err != nil {
		return nil, notFound(err, "Token not found")
	}
	return t, nil
}

// FindTokenByID returns the owner's token or ENOTFOUND.
func (s *TokenStore) FindTokenByID(ctx context.Context, ownerID string, id int64) (*docflow.APIToken, error) {
	t, err := scanToken(s.db.Pool.QueryRow(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE id=$1 AND owner_id=$2`, id, ownerID))
	if err != nil {
		return nil, notFound(err, "Token not found")
	}
	return t, nil
}

// FindToken returns any owner's token by id, or ENOTFOUND.
func (s *TokenStore) FindToken(ctx context.Context, id int64) (*docflow.APIToken, error) {
	t, err := scanToken(s.db.Pool.QueryRow(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE id=$1`, id))
	if err != nil {
		return nil, notFound(err, "Token not found")
	}
	return t, nil
}

// AdoptOwnerlessTokens gives tokens without an owner (made without
// authentication by versions before tokens belonged to the admin) to owner,
// the admin account, and returns how many it changed.
func (s *TokenStore) AdoptOwnerlessTokens(ctx context.Context, owner string) (int64, error) {
	if owner == "" {
		return 0, fmt.Errorf("adopt ownerless tokens: no owner")
	}
	tag, err := s.db.Pool.Exec(ctx, `UPDATE api_tokens SET owner_id=$1 WHERE owner_id=''`, owner)
	if err != nil {
		return 0, fmt.Errorf("adopt ownerless tokens: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ListTokens returns the owner's tokens, newest first.
func (s *TokenStore) ListTokens(ctx context.Context, ownerID string) ([]*docflow.APIToken, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE owner_id=$1 ORDER BY id DESC`, ownerID)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	out := []*docflow.APIToken{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// RevokeToken revokes an active token or deletes a revoked one.
func (s *TokenStore) RevokeToken(ctx context.Context, ownerID string, id int64) (string, error) {
	var result string
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var active bool
		err := tx.QueryRow(ctx, `SELECT is_active FROM api_tokens WHERE id=$1 AND owner_id=$2 FOR UPDATE`, id, ownerID).Scan(&active)
		if err != nil {
			return notFound(err, "Token not found")
		}
		if active {
			result = "revoked"
			_, err = tx.Exec(ctx, `UPDATE api_tokens SET is_active=FALSE, revoked_at=$2, last_revoked_at=$2 WHERE id=$1`, id, s.db.Now())
		} else {
			result = "deleted"
			_, err = tx.Exec(ctx, `DELETE FROM api_tokens WHERE id=$1`, id)
		}
		return err
	})
	return result, err
}

// ReactivateToken makes a revoked token active again: EBADREQUEST if it is
// already active, ENOTFOUND if it is not the owner's.
func (s *TokenStore) ReactivateToken(ctx context.Context, ownerID string, id int64) (*docflow.APIToken, error) {
	t, err := scanToken(s.db.Pool.QueryRow(ctx, `UPDATE api_tokens SET is_active=TRUE, revoked_at=NULL
		WHERE id=$1 AND owner_id=$2 AND NOT is_active RETURNING `+tokenCols, id, ownerID))
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("reactivate token: %w", err)
	}
	if _, err := s.FindTokenByID(ctx, ownerID, id); err != nil {
		return nil, err
	}
	return nil, docflow.Errorf(docflow.EBADREQUEST, "Token is already active")
}

// TouchTokens records the last use of several tokens in one statement.
func (s *TokenStore) TouchTokens(ctx context.Context, uses map[int64]docflow.TokenUse) error {
	if len(uses) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(uses))
	ats := make([]time.Time, 0, len(uses))
	ips := make([]string, 0, len(uses))
	for id, u := range uses {
		ids = append(ids, id)
		ats = append(ats, u.At)
		ips = append(ips, u.IP)
	}
	_, err := s.db.Pool.Exec(ctx, `UPDATE api_tokens t SET last_used_at=u.at, last_used_ip=u.ip
		FROM unnest($1::bigint[], $2::timestamptz[], $3::text[]) AS u(id, at, ip)
		WHERE t.id=u.id AND (t.last_used_at IS NULL OR t.last_used_at < u.at)`, ids, ats, ips)
	if err != nil {
		return fmt.Errorf("touch tokens: %w", err)
	}
	return nil
}
