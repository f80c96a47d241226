package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// This file is what @mentions do to shares: the users names name, the
// viewer shares a mention gives (docflow.MentionReach.Grant), and their
// end with the comments that hold them (table share_mentions, migration
// 0550).

// ResolveMentions turns @mentioned names into users, in the order of
// names, each once: a local account's username or e-mail gives its
// e-mail, else a profile's user id matches as it is written. Unknown
// names and blocked users are no mentions. Each comes with the role a
// share gives them on the file.
func (s *CommentStore) ResolveMentions(ctx context.Context, fileID int64, names []string) ([]docflow.Mentioned, error) {
	out := []docflow.Mentioned{}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT m.uid, COALESCE(sh.role, '') FROM (
			SELECT DISTINCT ON (m.ord) m.ord, m.uid FROM (
				SELECT n.ord, lu.email AS uid, 1 AS pref
				FROM unnest($1::text[]) WITH ORDINALITY AS n(name, ord)
				JOIN local_users lu ON lower(lu.username) = lower(n.name) OR lower(lu.email) = lower(n.name)
				UNION ALL
				SELECT n.ord, up.user_id, 2
				FROM unnest($1::text[]) WITH ORDINALITY AS n(name, ord)
				JOIN user_profiles up ON up.user_id = n.name
			) m
			WHERE NOT EXISTS (SELECT 1 FROM user_profiles b WHERE b.user_id = m.uid AND b.is_blocked)
			ORDER BY m.ord, m.pref
		) m
		LEFT JOIN shares sh ON sh.file_id = $2 AND sh.shared_with_user_id = m.uid
		ORDER BY m.ord`, names, fileID)
	if err != nil {
		return nil, fmt.Errorf("resolve mentions: %w", dbErr(err))
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var m docflow.Mentioned
		if err := rows.Scan(&m.ID, &m.ShareRole); err != nil {
			return nil, fmt.Errorf("resolve mentions: %w", dbErr(err))
		}
		if !seen[m.ID] {
			seen[m.ID] = true
			out = append(out, m)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("resolve mentions: %w", dbErr(err))
	}
	return out, nil
}

// lockShares locks the shares of the file with users, in id order, so
// that a grant and the end of another comment's grant on the same share
// follow one another.
func lockShares(ctx context.Context, tx pgx.Tx, fileID int64, users []string) error {
	_, err := tx.Exec(ctx, `SELECT id FROM shares WHERE file_id=$1 AND shared_with_user_id = ANY($2) ORDER BY id FOR UPDATE`, fileID, users)
	return err
}

// grantViewers gives each of users without a share of the owned file a
// viewer share, for the file's owner, held by comment commentID; a share
// an earlier mention gave is held by this comment too, so that it lasts
// while either does. Users who own the file or hold a share the owner
// made are left as they are. It returns the shares it created.
func grantViewers(ctx context.Context, tx pgx.Tx, fileID, commentID int64, users []string, now any) ([]*docflow.Share, error) {
	out := []*docflow.Share{}
	if len(users) == 0 {
		return out, nil
	}
	if err := lockShares(ctx, tx, fileID, users); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `INSERT INTO shares (file_id, owner_id, shared_with_user_id, role, created_at, updated_at)
		SELECT f.id, f.owner_id, u, 'viewer', $3, $3
		FROM files f, unnest($2::text[]) AS u
		WHERE f.id = $1 AND f.owner_id IS NOT NULL AND f.owner_id <> u
		ON CONFLICT (file_id, shared_with_user_id) DO NOTHING
		RETURNING `+shareCols, fileID, users, now)
	if err != nil {
		return nil, err
	}
	out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*docflow.Share, error) { return scanShare(r) })
	if err != nil {
		return nil, err
	}
	created := make([]int64, len(out))
	for i, sh := range out {
		created[i] = sh.ID
	}
	_, err = tx.Exec(ctx, `INSERT INTO share_mentions (share_id, comment_id)
		SELECT s.id, $3 FROM shares s
		WHERE s.file_id = $1 AND s.shared_with_user_id = ANY($2)
			AND (s.id = ANY($4) OR EXISTS (SELECT 1 FROM share_mentions m WHERE m.share_id = s.id))
		ON CONFLICT DO NOTHING`, fileID, users, commentID, created)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// endMentionGrants releases the hold the comments among comments have on
// the shares their mentions gave, but for the users of keep (those an
// edited comment still mentions), and removes the shares no comment holds
// any more. It returns the shares removed.
func endMentionGrants(ctx context.Context, tx pgx.Tx, fileID int64, comments []int64, keep []string) ([]*docflow.Share, error) {
	if keep == nil {
		keep = []string{}
	}
	// The shares concerned, locked before their holds are counted.
	rows, err := tx.Query(ctx, `SELECT s.id FROM shares s
		WHERE s.file_id = $1 AND NOT (s.shared_with_user_id = ANY($3))
			AND EXISTS (SELECT 1 FROM share_mentions m WHERE m.share_id = s.id AND m.comment_id = ANY($2))
		ORDER BY s.id FOR UPDATE`, fileID, comments, keep)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return []*docflow.Share{}, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM share_mentions WHERE share_id = ANY($1) AND comment_id = ANY($2)`, ids, comments); err != nil {
		return nil, err
	}
	rows, err = tx.Query(ctx, `DELETE FROM shares s WHERE s.id = ANY($1)
			AND NOT EXISTS (SELECT 1 FROM share_mentions m WHERE m.share_id = s.id)
		RETURNING `+shareCols, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*docflow.Share, error) { return scanShare(r) })
}
