package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// This file holds who may see or change a file: claims, shares and
// assigned owners.

// ClaimFiles gives the files among ids that access lets claimant claim to
// claimant, deciding each by access.Authorize's claim rule under the rows'
// locks.
func (s *FileStore) ClaimFiles(ctx context.Context, claimant *docflow.User, access docflow.FileAccess, ids []int64) ([]int64, []docflow.ClaimSkip, error) {
	claimed := []int64{}
	skipped := []docflow.ClaimSkip{}
	// Whoever may claim nothing at all is refused before any row is read.
	if err := access.Authorize(claimant, &docflow.File{}, "", docflow.AccessClaim); docflow.ErrorCode(err) == docflow.EBADREQUEST ||
		docflow.ErrorCode(err) == docflow.EUNAUTHORIZED {
		return nil, nil, err
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		claimed, skipped = claimed[:0], skipped[:0]
		rows, err := tx.Query(ctx, `SELECT id, owner_id FROM files WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
		if err != nil {
			return err
		}
		owners := map[int64]*string{}
		for rows.Next() {
			var id int64
			var o *string
			if err := rows.Scan(&id, &o); err != nil {
				rows.Close()
				return err
			}
			owners[id] = o
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		seen := map[int64]bool{}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			o, ok := owners[id]
			if !ok {
				skipped = append(skipped, docflow.ClaimSkip{FileID: id, Reason: "not found"})
				continue
			}
			err := access.Authorize(claimant, &docflow.File{ID: id, OwnerID: o}, "", docflow.AccessClaim)
			switch {
			case docflow.ErrorCode(err) == docflow.EFORBIDDEN:
				skipped = append(skipped, docflow.ClaimSkip{FileID: id, Reason: "owned by another user"})
			case err != nil:
				return err
			case o != nil:
				skipped = append(skipped, docflow.ClaimSkip{FileID: id, Reason: "already owned by you"})
			default:
				claimed = append(claimed, id)
			}
		}
		if len(claimed) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE files SET owner_id=$1, updated_at=$3 WHERE id = ANY($2)`, claimant.ID, claimed, s.db.Now())
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("claim files: %w", err)
	}
	return claimed, skipped, nil
}

// AssignOwner sets owner on ids, or on every unclaimed file when ids is
// nil, and returns the files it changed with their former owners.
func (s *FileStore) AssignOwner(ctx context.Context, owner string, ids []int64) ([]docflow.OwnerChange, error) {
	// NOTE: the former owner is read from the rows locked for the update
	// (FOR UPDATE in the subquery), so a concurrent change cannot slip
	// between what is reported and what is replaced.
	pick := `SELECT id, owner_id FROM files WHERE owner_id IS NULL ORDER BY id FOR UPDATE`
	args := []any{owner, s.db.Now()}
	if ids != nil {
		pick = `SELECT id, owner_id FROM files WHERE id = ANY($3) AND owner_id IS DISTINCT FROM $1 ORDER BY id FOR UPDATE`
		args = append(args, ids)
	}
	rows, err := s.db.Pool.Query(ctx, `WITH old AS (`+pick+`)
		UPDATE files f SET owner_id=$1, updated_at=$2 FROM old WHERE f.id = old.id
		RETURNING f.id, old.owner_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("assign owner: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (docflow.OwnerChange, error) {
		var c docflow.OwnerChange
		err := r.Scan(&c.FileID, &c.From)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("assign owner: %w", err)
	}
	slices.SortFunc(out, func(a, b docflow.OwnerChange) int { return cmp.Compare(a.FileID, b.FileID) })
	return out, nil
}

// ShareRole returns the role a share gives userID on the file ("" = none).
func (s *FileStore) ShareRole(ctx context.Context, fileID int64, userID string) (string, error) {
	var role string
	err := s.db.Pool.QueryRow(ctx, `SELECT role FROM shares WHERE file_id=$1 AND shared_with_user_id=$2`, fileID, userID).Scan(&role)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("share role: %w", err)
	}
	return role, nil
}

// ShareRoles returns the roles shares give userID on the files among
// fileIDs, by file id (one query for a bulk request's files).
func (s *FileStore) ShareRoles(ctx context.Context, fileIDs []int64, userID string) (map[int64]string, error) {
	out := make(map[int64]string)
	if len(fileIDs) == 0 {
		return out, nil
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT file_id, role FROM shares WHERE shared_with_user_id=$2 AND file_id = ANY($1)`, fileIDs, userID)
	if err != nil {
		return nil, fmt.Errorf("share roles: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var role string
		if err := rows.Scan(&id, &role); err != nil {
			return nil, fmt.Errorf("share roles: %w", err)
		}
		out[id] = role
	}
	return out, rows.Err()
}
