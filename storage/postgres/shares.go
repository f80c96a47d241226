package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// ShareStore keeps the shares of files (docflow.ShareStore). Adding or
// removing a share re-announces a completed file (trigger shares_changed,
// migration 0003), so the search index learns who may now find it.
type ShareStore struct{ db *DB }

// NewShareStore returns the share store.
func NewShareStore(db *DB) *ShareStore { return &ShareStore{db: db} }

const shareCols = `id, file_id, owner_id, shared_with_user_id, role, created_at, updated_at`

func scanShare(row pgx.Row) (*docflow.Share, error) {
	var s docflow.Share
	if err := row.Scan(&s.ID, &s.FileID, &s.OwnerID, &s.SharedWithUserID, &s.Role, &s.CreatedAt, &s.UpdatedAt); err != nil {
		return nil, err
	}
	return &s, nil
}

func shareNotFound() error { return docflow.Errorf(docflow.ENOTFOUND, "Share not found") }

// ListShares returns the file's shares, oldest first.
func (s *ShareStore) ListShares(ctx context.Context, fileID int64) ([]*docflow.Share, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+shareCols+` FROM shares WHERE file_id=$1 ORDER BY created_at, id`, fileID)
	if err != nil {
		return nil, fmt.Errorf("list shares: %w", dbErr(err))
	}
	defer rows.Close()
	out := []*docflow.Share{}
	for rows.Next() {
		sh, err := scanShare(rows)
		if err != nil {
			return nil, fmt.Errorf("list shares: %w", dbErr(err))
		}
		out = append(out, sh)
	}
	return out, dbErr(rows.Err())
}

// SharedWith returns whom the file is shared with, with the display names
// of their profiles (the user id when there is none).
func (s *ShareStore) SharedWith(ctx context.Context, fileID int64) ([]docflow.SharedWith, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT sh.id, sh.shared_with_user_id,
			COALESCE(NULLIF(btrim(up.display_name), ''), sh.shared_with_user_id), sh.role
		FROM shares sh LEFT JOIN user_profiles up ON up.user_id = sh.shared_with_user_id
		WHERE sh.file_id=$1 ORDER BY sh.created_at, sh.id`, fileID)
	if err != nil {
		return nil, fmt.Errorf("shared with: %w", dbErr(err))
	}
	defer rows.Close()
	out := []docflow.SharedWith{}
	for rows.Next() {
		var w docflow.SharedWith
		if err := rows.Scan(&w.ShareID, &w.UserID, &w.DisplayName, &w.Role); err != nil {
			return nil, fmt.Errorf("shared with: %w", dbErr(err))
		}
		out = append(out, w)
	}
	return out, dbErr(rows.Err())
}

// PutShare creates the share or sets the role of the one the user has; a
// share a mention gave becomes the owner's (it no longer ends with the
// comments that mention the user).
func (s *ShareStore) PutShare(ctx context.Context, fileID int64, ownerID, userID, role string) (*docflow.Share, bool, error) {
	var sh docflow.Share
	var created bool
	err := s.db.Pool.QueryRow(ctx, `WITH sh AS (
			INSERT INTO shares (file_id, owner_id, shared_with_user_id, role, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $5)
			ON CONFLICT (file_id, shared_with_user_id) DO UPDATE SET role = EXCLUDED.role, owner_id = EXCLUDED.owner_id,
				updated_at = EXCLUDED.updated_at
			RETURNING `+shareCols+`, xmax = 0 AS created),
		owned AS (DELETE FROM share_mentions WHERE share_id IN (SELECT id FROM sh))
		SELECT * FROM sh`, fileID, ownerID, userID, role, s.db.Now()).
		Scan(&sh.ID, &sh.FileID, &sh.OwnerID, &sh.SharedWithUserID, &sh.Role, &sh.CreatedAt, &sh.UpdatedAt, &created)
	if err != nil {
		err = dbErr(err)
		if docflow.ErrorCode(err) == docflow.ENOTFOUND {
			return nil, false, docflow.Errorf(docflow.ENOTFOUND, "File not found")
		}
		return nil, false, fmt.Errorf("put share: %w", err)
	}
	return &sh, created, nil
}

// UpdateShare sets the role of a share of the file; a share a mention
// gave becomes the owner's, as with PutShare.
func (s *ShareStore) UpdateShare(ctx context.Context, fileID, shareID int64, role string) (*docflow.Share, error) {
	sh, err := scanShare(s.db.Pool.QueryRow(ctx, `WITH sh AS (
			UPDATE shares SET role=$3, updated_at=$4 WHERE id=$1 AND file_id=$2 RETURNING `+shareCols+`),
		owned AS (DELETE FROM share_mentions WHERE share_id IN (SELECT id FROM sh))
		SELECT * FROM sh`, shareID, fileID, role, s.db.Now()))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, shareNotFound()
	} else if err != nil {
		return nil, fmt.Errorf("update share: %w", dbErr(err))
	}
	return sh, nil
}

// DeleteShare removes a share of the file.
func (s *ShareStore) DeleteShare(ctx context.Context, fileID, shareID int64) (*docflow.Share, error) {
	sh, err := scanShare(s.db.Pool.QueryRow(ctx, `DELETE FROM shares WHERE id=$1 AND file_id=$2 RETURNING `+shareCols, shareID, fileID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, shareNotFound()
	} else if err != nil {
		return nil, fmt.Errorf("delete share: %w", dbErr(err))
	}
	return sh, nil
}
