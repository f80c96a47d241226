package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// AnnotationStore keeps the annotations of files
// (docflow.AnnotationStore).
type AnnotationStore struct{ db *DB }

// NewAnnotationStore returns the annotation store.
func NewAnnotationStore(db *DB) *AnnotationStore { return &AnnotationStore{db: db} }

const annotationCols = `id, file_id, user_id, page, x, y, width, height, content, annotation_type, color, created_at, updated_at`

func scanAnnotation(row pgx.Row) (*docflow.Annotation, error) {
	var a docflow.Annotation
	if err := row.Scan(&a.ID, &a.FileID, &a.UserID, &a.Page, &a.X, &a.Y, &a.Width, &a.Height, &a.Content,
		&a.AnnotationType, &a.Color, &a.CreatedAt, &a.UpdatedAt); err != nil {
		return nil, err
	}
	return &a, nil
}

func annotationNotFound() error { return docflow.Errorf(docflow.ENOTFOUND, "Annotation not found") }

// ListAnnotations returns the file's annotations by page, then creation.
func (s *AnnotationStore) ListAnnotations(ctx context.Context, fileID int64) ([]*docflow.Annotation, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+annotationCols+` FROM annotations WHERE file_id=$1
		ORDER BY page, created_at, id`, fileID)
	if err != nil {
		return nil, fmt.Errorf("list annotations: %w", dbErr(err))
	}
	defer rows.Close()
	out := []*docflow.Annotation{}
	for rows.Next() {
		a, err := scanAnnotation(rows)
		if err != nil {
			return nil, fmt.Errorf("list annotations: %w", dbErr(err))
		}
		out = append(out, a)
	}
	return out, dbErr(rows.Err())
}

// FindAnnotation returns one annotation of the file.
func (s *AnnotationStore) FindAnnotation(ctx context.Context, fileID, id int64) (*docflow.Annotation, error) {
	a, err := scanAnnotation(s.db.Pool.QueryRow(ctx, `SELECT `+annotationCols+` FROM annotations WHERE id=$1 AND file_id=$2`, id, fileID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, annotationNotFound()
	} else if err != nil {
		return nil, fmt.Errorf("find annotation: %w", dbErr(err))
	}
	return a, nil
}

// CreateAnnotation stores a.
func (s *AnnotationStore) CreateAnnotation(ctx context.Context, a *docflow.Annotation) error {
	now := s.db.Now()
	err := s.db.Pool.QueryRow(ctx, `INSERT INTO annotations
		(file_id, user_id, page, x, y, width, height, content, annotation_type, color, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11) RETURNING id, created_at, updated_at`,
		a.FileID, a.UserID, a.Page, a.X, a.Y, a.Width, a.Height, a.Content, a.AnnotationType, a.Color, now).
		Scan(&a.ID, &a.CreatedAt, &a.UpdatedAt)
	if err != nil {
		if err = dbErr(err); docflow.ErrorCode(err) == docflow.ENOTFOUND {
			return docflow.Errorf(docflow.ENOTFOUND, "File not found")
		}
		return fmt.Errorf("create annotation: %w", err)
	}
	return nil
}

// UpdateAnnotation writes a's editable fields.
func (s *AnnotationStore) UpdateAnnotation(ctx context.Context, a *docflow.Annotation) error {
	err := s.db.Pool.QueryRow(ctx, `UPDATE annotations SET page=$3, x=$4, y=$5, width=$6, height=$7, content=$8,
			annotation_type=$9, color=$10, updated_at=$11
		WHERE id=$1 AND file_id=$2 RETURNING updated_at`,
		a.ID, a.FileID, a.Page, a.X, a.Y, a.Width, a.Height, a.Content, a.AnnotationType, a.Color, s.db.Now()).Scan(&a.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return annotationNotFound()
	} else if err != nil {
		return fmt.Errorf("update annotation: %w", dbErr(err))
	}
	return nil
}

// DeleteAnnotation removes one annotation of the file.
func (s *AnnotationStore) DeleteAnnotation(ctx context.Context, fileID, id int64) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM annotations WHERE id=$1 AND file_id=$2`, id, fileID)
	if err != nil {
		return fmt.Errorf("delete annotation: %w", dbErr(err))
	}
	if tag.RowsAffected() == 0 {
		return annotationNotFound()
	}
	return nil
}
