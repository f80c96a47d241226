package postgres

import (
	"context"
	"fmt"
	"strconv"

	"docflow"
)

// This file is the listing of one user in multi-user mode by creation
// date (the default), with no other filter: what most requests of a team
// instance ask.
//
// NOTE: the generic plan reads every file the user may see (own and
// shared, from their indexes), then sorts them: 1,500 heap rows for a
// user with 1,000 own and 500 shared files among 100,000, over ten times
// the single-user page. Here both halves are read in order, the own files
// through files_owner_created and the shared ones through
// shares_user_created (migration 0430: shares carry their file's
// created_at), and merged: each half reads only the rows that reach the
// page (plus one). A share of one's own file is left out of the shared
// half, so the two never hold the same file and need no deduplication.
// Reading the page's ids first and the rows by id afterwards, as before,
// cost 93 buffers against 39 this way; since files_owner_created carries
// the listed columns (migration 0520), the own half is an index-only scan
// and the page costs 15. The total is read from visible_file_counts
// (migration 0500), which triggers keep exact in the transaction of every
// write: counting the 1,500 index entries on each request cost PostgreSQL
// twice the rest of the statement (0.35 of 0.66 ms).

// listVisible is the kind of listText of this plan.
const listVisible = listSkip + 1

// visibleOnly reports whether f lists what one user may see by creation
// date and nothing else.
func visibleOnly(f docflow.FileFilter, col string) bool {
	return f.VisibleTo != nil && col == "f.created_at" && f.IDs == nil && f.Search == "" && f.MimeType == "" &&
		f.Status == "" && f.DateFrom == nil && f.DateTo == nil && len(f.StorageProviders) == 0 && len(f.Tags) == 0 &&
		f.OCRQuality == ""
}

// findVisible returns one page of what user may see, newest (dir DESC) or
// oldest first, and the total; no rows when the page is past the end
// (total then unknown, 0).
func findVisible[T any](ctx context.Context, s *FileService, r pageReader[T], user, dir string, per, offset int) ([]T, int, error) {
	order := "f.created_at " + dir + ", f.id " + dir
	q := s.texts.get(listText{kind: listVisible, order: order, cols: r.cols, status: r.status, limit: per, offset: offset}, func() string {
		reach := strconv.Itoa(per + offset)
		// Each half carries its sort key (k_at, k_id) beside the columns,
		// so that the two are merged in order (a Merge Append that stops at
		// the page's end) rather than hashed and sorted.
		q := `SELECT ` + r.cols + `, (SELECT COALESCE(sum(c.n), 0)::bigint FROM visible_file_counts c WHERE c.user_id = $1)
		FROM (
			(SELECT f.created_at AS k_at, f.id AS k_id, ` + r.cols + ` FROM files f WHERE f.owner_id = $1
				ORDER BY f.created_at ` + dir + `, f.id ` + dir + ` LIMIT ` + reach + `)
			UNION ALL
			(SELECT sh.file_created_at, sh.file_id, ` + r.cols + ` FROM shares sh JOIN files f ON f.id = sh.file_id
				WHERE sh.shared_with_user_id = $1 AND sh.owner_id <> $1
				ORDER BY sh.file_created_at ` + dir + `, sh.file_id ` + dir + ` LIMIT ` + reach + `)
			) f ORDER BY f.k_at ` + dir + `, f.k_id ` + dir + limitClause(per, offset)
		if r.status {
			q = withRunStatus(q, order)
		}
		return q
	})
	rows, err := s.db.Pool.Query(ctx, q, user)
	if err != nil {
		return nil, 0, fmt.Errorf("find files: %w", err)
	}
	var total int
	out, err := r.collect(rows, r.dst, per, &total)
	if err != nil {
		return nil, 0, fmt.Errorf("find files: %w", err)
	}
	return out, total, nil
}
