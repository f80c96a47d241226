package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// This file reads what belongs to many files at once — their comments,
// shares and processing logs — one statement for any number of files:
// what a client asking for a list of documents with their comments
// (GraphQL) needs so that the statements do not grow with the list.

// CommentsOfFiles returns the comments of the files among fileIDs, flat
// and in creation order, by file id; files without comments are absent.
func (s *CommentStore) CommentsOfFiles(ctx context.Context, fileIDs []int64) (map[int64][]*docflow.Comment, error) {
	return groupRows(ctx, s.db, `SELECT `+commentCols+` FROM comments WHERE file_id = ANY($1) ORDER BY created_at, id`,
		fileIDs, "comments of files", scanComment, func(c *docflow.Comment) int64 { return c.FileID })
}

// SharesOfFiles returns the shares of the files among fileIDs, oldest
// first, by file id; files without shares are absent.
func (s *ShareStore) SharesOfFiles(ctx context.Context, fileIDs []int64) (map[int64][]*docflow.Share, error) {
	return groupRows(ctx, s.db, `SELECT `+shareCols+` FROM shares WHERE file_id = ANY($1) ORDER BY created_at, id`,
		fileIDs, "shares of files", scanShare, func(sh *docflow.Share) int64 { return sh.FileID })
}

// ProcessingLogsOfFiles returns the processing logs of the files among
// fileIDs, each in chronological order, by file id; files without log
// entries are absent.
func (s *FileStore) ProcessingLogsOfFiles(ctx context.Context, fileIDs []int64) (map[int64][]*docflow.ProcessingLog, error) {
	return groupRows(ctx, s.db, `SELECT id, file_id, task_id, step_name, status, message, timestamp
		FROM processing_logs WHERE file_id = ANY($1) ORDER BY timestamp, id`, fileIDs, "processing logs of files",
		func(row pgx.Row) (*docflow.ProcessingLog, error) {
			var l docflow.ProcessingLog
			if err := row.Scan(&l.ID, &l.FileID, &l.TaskID, &l.StepName, &l.Status, &l.Message, &l.Timestamp); err != nil {
				return nil, err
			}
			return &l, nil
		}, func(l *docflow.ProcessingLog) int64 { return l.FileID })
}

// groupRows runs q with fileIDs as its one parameter and groups the rows
// scan reads by the file id key gives, keeping their order.
func groupRows[T any](ctx context.Context, db *DB, q string, fileIDs []int64, what string,
	scan func(pgx.Row) (T, error), key func(T) int64) (map[int64][]T, error) {
	out := map[int64][]T{}
	if len(fileIDs) == 0 {
		return out, nil
	}
	rows, err := db.Pool.Query(ctx, q, fileIDs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, dbErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, dbErr(err))
		}
		out[key(v)] = append(out[key(v)], v)
	}
	return out, dbErr(rows.Err())
}
