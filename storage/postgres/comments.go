package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// CommentStore keeps the comments of files (docflow.CommentStore).
type CommentStore struct{ db *DB }

// NewCommentStore returns the comment store.
func NewCommentStore(db *DB) *CommentStore { return &CommentStore{db: db} }

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
func (s *CommentStore) ListComments(ctx context.Context, fileID int64) ([]*docflow.Comment, error) {
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
func (s *CommentStore) FindComment(ctx context.Context, fileID, id int64) (*docflow.Comment, error) {
	c, err := scanComment(s.db.Pool.QueryRow(ctx, `SELECT `+commentCols+` FROM comments WHERE id=$1 AND file_id=$2`, id, fileID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, commentNotFound()
	} else if err != nil {
		return nil, fmt.Errorf("find comment: %w", dbErr(err))
	}
	return c, nil
}

// CreateComment stores c with its mentions and the grants of grant.
func (s *CommentStore) CreateComment(ctx context.Context, c *docflow.Comment, grant []string) ([]*docflow.Share, error) {
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
		if c.Mentions == nil {
			c.Mentions = []string{}
		}
		now := s.db.Now()
		c.IsResolved = false
		if err := tx.QueryRow(ctx, `INSERT INTO comments (file_id, user_id, parent_id, body, mentions, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id, created_at, updated_at`,
			c.FileID, c.UserID, c.ParentID, c.Body, c.Mentions, now).Scan(&c.ID, &c.CreatedAt, &c.UpdatedAt); err != nil {
			return err
		}
		var err error
		grants, err = grantViewers(ctx, tx, c.FileID, c.ID, grant, c.UpdatedAt)
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

// UpdateComment replaces a comment's body and mentions, grants as
// CreateComment, and ends the comment's grants to users it no longer
// mentions.
func (s *CommentStore) UpdateComment(ctx context.Context, fileID, id int64, body string, mentions, grant []string) (*docflow.Comment, docflow.MentionGrants, error) {
	var c *docflow.Comment
	var g docflow.MentionGrants
	if mentions == nil {
		mentions = []string{}
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var err error
		c, err = scanComment(tx.QueryRow(ctx, `UPDATE comments SET body=$3, mentions=$4, updated_at=$5
			WHERE id=$1 AND file_id=$2 RETURNING `+commentCols, id, fileID, body, mentions, s.db.Now()))
		if errors.Is(err, pgx.ErrNoRows) {
			return commentNotFound()
		} else if err != nil {
			return err
		}
		if g.Granted, err = grantViewers(ctx, tx, fileID, id, grant, c.UpdatedAt); err != nil {
			return err
		}
		g.Ended, err = endMentionGrants(ctx, tx, fileID, []int64{id}, mentions)
		return err
	})
	if err != nil {
		return nil, g, commentErr("update comment", err)
	}
	c.Replies = []*docflow.Comment{}
	return c, g, nil
}

// ResolveComment sets is_resolved.
func (s *CommentStore) ResolveComment(ctx context.Context, fileID, id int64, resolved bool) (*docflow.Comment, error) {
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

// DeleteComment removes a comment of the file and, by cascade, its
// replies, and ends the access their mentions alone gave.
func (s *CommentStore) DeleteComment(ctx context.Context, fileID, id int64) ([]*docflow.Share, error) {
	var ended []*docflow.Share
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		// The comment and its replies, at any depth.
		rows, err := tx.Query(ctx, `WITH RECURSIVE thread AS (
				SELECT id FROM comments WHERE id=$1 AND file_id=$2
				UNION ALL
				SELECT c.id FROM comments c JOIN thread t ON c.parent_id = t.id)
			SELECT id FROM thread`, id, fileID)
		if err != nil {
			return err
		}
		thread, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(thread) == 0 {
			return commentNotFound()
		}
		if ended, err = endMentionGrants(ctx, tx, fileID, thread, nil); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM comments WHERE id=$1 AND file_id=$2`, id, fileID)
		return err
	})
	if err != nil {
		if docflow.ErrorCode(err) == docflow.ENOTFOUND {
			return nil, err
		}
		return nil, fmt.Errorf("delete comment: %w", dbErr(err))
	}
	return ended, nil
}
