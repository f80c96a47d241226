package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"docflow"
	"docflow/storage/postgres"
)

// TestSharedListingFixture: every user of the sharing benchmark's data
// owns n/users files and receives perUser shares from other users, and the
// listing shows exactly those to them.
func TestSharedListingFixture(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "sharedlist")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	const n, users, per = 2000, 10, 50
	if err := db.SeedSharedListing(ctx, n, users, per); err != nil {
		t.Fatal(err)
	}
	var bad int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM (
		SELECT u, (SELECT count(*) FROM files WHERE owner_id = u) AS own,
		       (SELECT count(*) FROM shares WHERE shared_with_user_id = u) AS got,
		       (SELECT count(*) FROM shares WHERE shared_with_user_id = u AND owner_id = u) AS self
		FROM (SELECT DISTINCT owner_id AS u FROM files) x) c WHERE own <> $1 OR got <> $2 OR self <> 0`, n/users, per).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Fatalf("%d users without %d own files and %d shares", bad, n/users, per)
	}
	files := postgres.NewFileStore(db)
	who := postgres.SharedListingUser(3)
	page, total, err := files.FindFiles(ctx, docflow.FileFilter{VisibleTo: &docflow.Visibility{UserID: who}, PerPage: 25})
	if err != nil || total != n/users+per || len(page) != 25 {
		t.Fatalf("listing: %d rows of %d, %v", len(page), total, err)
	}
	for i := 1; i < len(page); i++ {
		if page[i].CreatedAt.After(page[i-1].CreatedAt) {
			t.Fatalf("not newest first at %d", i)
		}
	}

	// A file the user owns and is shared with them too counts once.
	if _, err := db.Pool.Exec(ctx, `INSERT INTO shares (file_id, owner_id, shared_with_user_id, role)
		SELECT id, owner_id, owner_id, 'viewer' FROM files WHERE owner_id = $1 ORDER BY id LIMIT 1`, who); err != nil {
		t.Fatal(err)
	}
	// A file shared with the user becomes theirs, another one's date
	// changes: the shares follow their files.
	if _, err := db.Pool.Exec(ctx, `UPDATE files SET owner_id = $1 WHERE id = (SELECT min(file_id) FROM shares WHERE shared_with_user_id = $1 AND owner_id <> $1)`, who); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE files SET created_at = now() WHERE id = (SELECT max(file_id) FROM shares WHERE shared_with_user_id = $1)`, who); err != nil {
		t.Fatal(err)
	}
	for _, order := range []string{"desc", "asc"} {
		rows, err := db.Pool.Query(ctx, `SELECT id FROM files f WHERE owner_id = $1 OR id IN (SELECT file_id FROM shares WHERE shared_with_user_id = $1)
			ORDER BY created_at `+order+`, id `+order, who)
		if err != nil {
			t.Fatal(err)
		}
		want, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for p := 1; ; p++ {
			page, total, err := files.ListFiles(ctx, docflow.FileFilter{VisibleTo: &docflow.Visibility{UserID: who}, PerPage: 40, Page: p, SortBy: "created_at", SortOrder: order}, nil)
			if err != nil || total != len(want) {
				t.Fatalf("%s page %d: total %d (want %d) %v", order, p, total, len(want), err)
			}
			if len(page) == 0 {
				break
			}
			for _, f := range page {
				got = append(got, f.ID)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %d ids, want %d; first %v want %v", order, len(got), len(want), got[:3], want[:3])
		}
		// The generic plan (another filter) agrees on what is visible.
		_, total, err := files.FindFiles(ctx, docflow.FileFilter{VisibleTo: &docflow.Visibility{UserID: who}, Status: "failed", PerPage: 5, SortOrder: order})
		var failed int
		db.Pool.QueryRow(ctx, `SELECT count(*) FROM files WHERE status = 'failed' AND id = ANY($1)`, want).Scan(&failed) //nolint:errcheck
		if err != nil || total != failed {
			t.Fatalf("status filter: %d, want %d, %v", total, failed, err)
		}
	}
}
