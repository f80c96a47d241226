package postgres

import (
	"context"
	"fmt"

	"docflow"
)

// This file is the listing of one user in multi-user mode by creation
// date (the default), with no other filter: what most requests of a team
// instance ask.
//
// NOTE: the generic plan reads every file the user may see (own and
// shared), then sorts them: many times the single-user page. Here the page
// is read in order from file_access (migration 0540), a row per user and
// file they may see with the columns a listing shows: one index-only scan
// of the rows that reach the page, as the single-user listing is one scan
// of files_created. The total is read from visible_file_counts (migration
// 0500), kept exact by triggers in the transaction of every write, since
// counting the user's index entries on each request cost more than the
// page. TestVisibleListingFollowsEveryWrite holds the rows and counts to
// every write; docs/benchmarks.md ("Sharing") has the measurements, and the
// plans tried and dropped.

// listVisible is the kind of listText of this plan.
const listVisible = listSkip + 1

// visibleOnly reports whether f lists what one user may see by creation
// date and nothing else. file_access has no rows for unclaimed files: a
// listing that shows them (UNCLAIMED_FILES_VISIBLE) takes the generic
// plan.
func visibleOnly(f docflow.FileFilter, col string) bool {
	return f.VisibleTo != nil && f.VisibleTo.UserID != "" && !f.VisibleTo.Unclaimed && col == "f.created_at" &&
		f.IDs == nil && f.OwnerID == "" && f.Search == "" && f.MimeType == "" &&
		f.Status == "" && f.DateFrom == nil && f.DateTo == nil && len(f.StorageProviders) == 0 && len(f.Tags) == 0 &&
		f.OCRQuality == "" && f.Owner == "" && f.SharedWith == ""
}

// findVisible returns one page of what user may see, newest (dir DESC) or
// oldest first, and the total; no rows when the page is past the end
// (total then unknown, 0).
func findVisible[T any](ctx context.Context, s *FileStore, r pageReader[T], user, dir string, per, offset int) ([]T, int, error) {
	order := "f.created_at " + dir + ", f.id " + dir
	q := s.texts.get(listText{kind: listVisible, order: order, cols: r.cols, status: r.status, limit: per, offset: offset}, func() string {
		total := `(SELECT COALESCE(sum(c.n), 0)::bigint FROM visible_file_counts c WHERE c.user_id = $1)`
		page := ` FROM file_access f WHERE f.user_id = $1 ORDER BY ` + order + limitClause(per, offset)
		// file_access carries summaryCols under the same names; other
		// columns are read from files for the page's ids.
		q := `SELECT ` + r.cols + `, ` + total + page
		if r.cols != summaryCols {
			q = `SELECT ` + r.cols + `, ` + total + ` FROM files f JOIN (SELECT f.id, f.created_at` + page + `) pg ON pg.id = f.id ORDER BY ` + order
		}
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
