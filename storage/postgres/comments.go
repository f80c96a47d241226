package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// CommentService keeps the comments of files (docflow.CommentStore).
type CommentService struct{ db *DB }

// NewCommentService returns the comment store.
func NewCommentService(db *DB) *CommentService { return &CommentService{db: db} }

const commentCols = `id, file_id, user_id, parent_id, body, mentions, is_resolved, created_at, updated_at`

func scanComment(row pgx.Row) (*docflow.Comment, error) {
	var c docflow.Comment
	if err := row.Scan(&c.ID, &c.FileID, &c.UserID, &c.ParentID, &c.Body, &c.Mentions, &c.IsResolved, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return nil, err
	}
	if c.Mentions == nil {
		c.Mentions = []string{}
	}
	return &c, nil
}

func commentNotFound() error { return docflow.Errorf(docflow.ENOTFOUND, "Comment not found") }

// ListComments returns the file's comments in creation order.
func (s *CommentService) ListComments(ctx context.Context, fileID int64) ([]*docflow.Comment, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+commentCols+` FROM comments WHERE file_id=$1 ORDER BY created_at, id`, fileID)
	if err != nil {
		return nil, fmt.Errorf("list comments: %w", dbErr(err))
	}
	defer rows.Close()
	out := []*docflow.Comment{}
	for rows.Next() {
		c, err := scanComment(rows)
		if err != nil {
			return nil, fmt.Errorf("list comments: %w", dbErr(err))
		}
		out = append(out, c)
	}
	return out, dbErr(rows.Err())
}

// FindComment returns one comment of the file.
func (s *CommentService) FindComment(ctx context.Context, fileID, id int64) (*docflow.Comment, error) {
	c, err := scanComment(s.db.Pool.QueryRow(ctx, `SELECT `+commentCols+` FROM comments WHERE id=$1 AND file_id=$2`, id, fileID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, commentNotFound()
	} else if err != nil {
		return nil, fmt.Errorf("find comment: %w", dbErr(err))
	}
	return c, nil
}

// resolveMentions turns @mentioned names into user ids, in the order of
// names, each once: a local account's username or e-mail gives its
// e-mail, else a profile's user id matches as it is written. Unknown
// names and blocked users are no mentions.
func resolveMentions(ctx context.Context, tx pgx.Tx, names []string) ([]string, error) {
	out := []string{}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT ON (m.ord) m.uid FROM (
			SELECT n.ord, lu.email AS uid, 1 AS pref
			FROM unnest($1::text[]) WITH ORDINALITY AS n(name, ord)
			JOIN local_users lu ON lower(lu.username) = lower(n.name) OR lower(lu.email) = lower(n.name)
			UNION ALL
			SELECT n.ord, up.user_id, 2
			FROM unnest($1::text[]) WITH ORDINALITY AS n(name, ord)
			JOIN user_profiles up ON up.user_id = n.name
		) m
		WHERE NOT EXISTS (SELECT 1 FROM user_profiles b WHERE b.user_id = m.uid AND b.is_blocked)
		ORDER BY m.ord, m.pref`, names)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var uid string
		if err := rows.Scan(&uid); err != nil {
			return nil, err
		}
		if !seen[uid] {
			seen[uid] = true
			out = append(out, uid)
		}
	}
	return out, rows.Err()
}

// mentionGrants grants viewer shares to the mentioned users other than
// the author, when grant is set.
func (s *CommentService) mentionGrants(ctx context.Context, tx pgx.Tx, c *docflow.Comment, grant bool) ([]*docflow.Share, error) {
	if !grant {
		return []*docflow.Share{}, nil
	}
	var users []string
	for _, u := range c.Mentions {
		if u != c.UserID {
			users = append(users, u)
		}
	}
	return grantViewers(ctx, tx, c.FileID, users, c.UpdatedAt)
}

// CreateComment stores c with its resolved mentions and their grants.
func (s *CommentService) CreateComment(ctx context.Context, c *docflow.Comment, names []string, grant bool) ([]*docflow.Share, error) {
	var grants []*docflow.Share
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if c.ParentID != nil {
			var fid int64
			err := tx.QueryRow(ctx, `SELECT file_id FROM comments WHERE id=$1`, *c.ParentID).Scan(&fid)
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && fid != c.FileID) {
				e := docflow.Errorf(docflow.EINVALID, "parent_id must be a comment of this file")
				e.Fields = []docflow.FieldError{{Field: "parent_id", Message: e.Message}}
				return e
			} else if err != nil {
				return err
			}
		}
		var err error
		if c.Mentions, err = resolveMentions(ctx, tx, names); err != nil {
			return err
		}
		now := s.db.Now()
		c.IsResolved = false
		if err := tx.QueryRow(ctx, `INSERT INTO comments (file_id, user_id, parent_id, body, mentions, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id, created_at, updated_at`,
			c.FileID, c.UserID, c.ParentID, c.Body, c.Mentions, now).Scan(&c.ID, &c.CreatedAt, &c.UpdatedAt); err != nil {
			return err
		}
		grants, err = s.mentionGrants(ctx, tx, c, grant)
		return err
	})
	if err != nil {
		return nil, commentErr("create comment", err)
	}
	c.Replies = []*docflow.Comment{}
	return grants, nil
}

// commentErr maps a vanished file (foreign key) to File not found.
func commentErr(op string, err error) error {
	err = dbErr(err)
	switch docflow.ErrorCode(err) {
	case docflow.ENOTFOUND:
		var de *docflow.Error
		if errors.As(err, &de) && de.Message == "Referenced record not found" {
			return docflow.Errorf(docflow.ENOTFOUND, "File not found")
		}
		return err
	case docflow.EINVALID:
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

// UpdateComment replaces a comment's body and mentions.
func (s *CommentService) UpdateComment(ctx context.Context, fileID, id int64, body string, names []string, grant bool) (*docflow.Comment, []*docflow.Share, error) {
	var c *docflow.Comment
	var grants []*docflow.Share
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		mentions, err := resolveMentions(ctx, tx, names)
		if err != nil {
			return err
		}
		c, err = scanComment(tx.QueryRow(ctx, `UPDATE comments SET body=$3, mentions=$4, updated_at=$5
			WHERE id=$1 AND file_id=$2 RETURNING `+commentCols, id, fileID, body, mentions, s.db.Now()))
		if errors.Is(err, pgx.ErrNoRows) {
			return commentNotFound()
		} else if err != nil {
			return err
		}
		grants, err = s.mentionGrants(ctx, tx, c, grant)
		return err
	})
	if err != nil {
		return nil, nil, commentErr("update comment", err)
	}
	c.Replies = []*docflow.Comment{}
	return c, grants, nil
}

// ResolveComment sets is_resolved.
func (s *CommentService) ResolveComment(ctx context.Context, fileID, id int64, resolved bool) (*docflow.Comment, error) {
	c, err := scanComment(s.db.Pool.QueryRow(ctx, `UPDATE comments SET is_resolved=$3, updated_at=$4
		WHERE id=$1 AND file_id=$2 RETURNING `+commentCols, id, fileID, resolved, s.db.Now()))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, commentNotFound()
	} else if err != nil {
		return nil, fmt.Errorf("resolve comment: %w", dbErr(err))
	}
	c.Replies = []*docflow.Comment{}
	return c, nil
}

// DeleteComment removes a comment of the file and, by cascade, its replies.
func (s *CommentService) DeleteComment(ctx context.Context, fileID, id int64) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM comments WHERE id=$1 AND file_id=$2`, id, fileID)
	if err != nil {
		return fmt.Errorf("delete comment: %w", dbErr(err))
	}
	if tag.RowsAffected() == 0 {
		return commentNotFound()
	}
	return nil
}
