package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"docflow"
	"docflow/storage/postgres"
)

// TestVisibleListingFollowsEveryWrite: the multi-user listing of a user
// (its page, read from file_access, and its total, from
// visible_file_counts) reflects each write at once: an upload, a share
// with them and by them, a share of their own file with themselves, an
// unshare, a change of owner, of status and of name, and a deletion,
// their own or another's.
func TestVisibleListingFollowsEveryWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "visiblecount")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	files, shares := postgres.NewFileStore(db), postgres.NewShareStore(db)
	const alice, bob, carol = "alice", "bob", "carol"
	n := 0
	upload := func(owner string) int64 {
		t.Helper()
		n++
		f := newFile(fmt.Sprintf("vis%03d", n), owner)
		if _, err := files.Ingest(ctx, docflow.IngestRecord{File: f, Dedup: true}); err != nil {
			t.Fatal(err)
		}
		return f.ID
	}
	share := func(id int64, owner, with string) int64 {
		t.Helper()
		sh, _, err := shares.PutShare(ctx, id, owner, with, "viewer")
		if err != nil {
			t.Fatal(err)
		}
		return sh.ID
	}
	check := func(step string) {
		t.Helper()
		for _, who := range []string{alice, bob, carol} {
			rows, err := db.Pool.Query(ctx, `SELECT id || ' ' || original_filename || ' ' || status || ' ' || COALESCE(owner_id, '-') FROM files
				WHERE owner_id = $1 OR id IN (SELECT file_id FROM shares WHERE shared_with_user_id = $1)
				ORDER BY created_at DESC, id DESC`, who)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			page, total, err := files.ListFiles(ctx, docflow.FileFilter{VisibleTo: &docflow.Visibility{UserID: who}, PerPage: 100}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range page {
				owner := "-"
				if f.OwnerID != nil {
					owner = *f.OwnerID
				}
				got = append(got, fmt.Sprintf("%d %s %s %s", f.ID, f.OriginalFilename, f.Processing.Status, owner))
			}
			if len(want) > 0 && (total != len(want) || !slices.Equal(got, want)) {
				t.Fatalf("%s: %s sees %v (total %d), want %v", step, who, got, total, want)
			}
			if len(want) == 0 && len(got) != 0 {
				t.Fatalf("%s: %s sees %v, want nothing", step, who, got)
			}
		}
	}

	a1, a2 := upload(alice), upload(alice)
	b1, b2 := upload(bob), upload(bob)
	c1 := upload(carol)
	upload("") // unowned: counted for nobody
	check("uploads")
	sb1 := share(b1, bob, alice)
	share(b2, bob, alice)
	check("shared with alice")
	share(b1, bob, alice) // the same share again (role update)
	check("share repeated")
	share(a1, alice, bob)
	share(a1, alice, alice) // with oneself: counts once
	check("shared by alice")
	if _, err := shares.DeleteShare(ctx, b1, sb1); err != nil {
		t.Fatal(err)
	}
	check("unshared")
	// b2 (shared with alice) becomes hers, c1 becomes bob's.
	if _, err := files.AssignOwner(ctx, alice, []int64{b2}); err != nil {
		t.Fatal(err)
	}
	if _, err := files.AssignOwner(ctx, bob, []int64{c1}); err != nil {
		t.Fatal(err)
	}
	check("owners changed")
	// A shared file's listed columns change: its owner and the user it is
	// shared with see the change.
	if _, err := db.Pool.Exec(ctx, `UPDATE files SET status = 'completed', original_filename = 'renamed.pdf' WHERE id = $1`, a1); err != nil {
		t.Fatal(err)
	}
	check("status and name changed")
	share(c1, bob, alice)
	if _, err := files.DeleteFile(ctx, c1); err != nil { // another's file shared with alice
		t.Fatal(err)
	}
	if _, err := files.DeleteFile(ctx, a2); err != nil {
		t.Fatal(err)
	}
	check("deleted")
	if _, _, err := files.DeleteFiles(ctx, []int64{a1, b1, b2}); err != nil {
		t.Fatal(err)
	}
	check("bulk deleted")
	// Folded or not, the counts sum to what the tables hold.
	var bad int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT u FROM (SELECT DISTINCT owner_id AS u FROM files UNION SELECT user_id FROM visible_file_counts) us
		WHERE u IS NOT NULL AND (SELECT COALESCE(sum(n), 0) FROM visible_file_counts WHERE user_id = u) <>
			(SELECT count(*) FROM files WHERE owner_id = u) + (SELECT count(*) FROM shares WHERE shared_with_user_id = u AND owner_id <> u)) x`).Scan(&bad); err != nil || bad != 0 {
		t.Fatalf("%d users counted wrong (%v)", bad, err)
	}
}

// TestVisibleCountsUnderConcurrentWrites: concurrent uploads and shares
// (which fold delta rows concurrently) leave every count exact, and
// file_access holds exactly the files each user sees, with their columns.
func TestVisibleCountsUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "visiblecountc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	files, shares := postgres.NewFileStore(db), postgres.NewShareStore(db)
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		go func() {
			var err error
			for i := 0; i < 40 && err == nil; i++ {
				owner := []string{"u0", "u1", "u2"}[(w+i)%3]
				f := newFile(fmt.Sprintf("c%d-%d", w, i), owner)
				if _, err = files.Ingest(ctx, docflow.IngestRecord{File: f, Dedup: true}); err != nil {
					break
				}
				_, _, err = shares.PutShare(ctx, f.ID, owner, []string{"u0", "u1", "u2"}[(w+i+1)%3], "viewer")
				if err == nil && i%4 == 0 {
					_, err = files.DeleteFile(ctx, f.ID)
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, who := range []string{"u0", "u1", "u2"} {
		var want int
		db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM files WHERE owner_id = $1) + (SELECT count(*) FROM shares WHERE shared_with_user_id = $1 AND owner_id <> $1)`, who).Scan(&want) //nolint:errcheck
		_, total, err := files.ListFiles(ctx, docflow.FileFilter{VisibleTo: &docflow.Visibility{UserID: who}, PerPage: 25}, nil)
		if err != nil || total != want {
			t.Fatalf("%s: total %d, want %d (%v)", who, total, want, err)
		}
	}
	var bad int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM (
		(SELECT user_id, id, created_at, original_filename, status, owner_id FROM file_access
		 EXCEPT SELECT v.u, f.id, f.created_at, f.original_filename, f.status, f.owner_id FROM files f JOIN (
			SELECT owner_id AS u, id AS fid FROM files WHERE owner_id IS NOT NULL
			UNION SELECT shared_with_user_id, file_id FROM shares WHERE owner_id <> shared_with_user_id) v ON v.fid = f.id)
		UNION ALL
		(SELECT v.u, f.id, f.created_at, f.original_filename, f.status, f.owner_id FROM files f JOIN (
			SELECT owner_id AS u, id AS fid FROM files WHERE owner_id IS NOT NULL
			UNION SELECT shared_with_user_id, file_id FROM shares WHERE owner_id <> shared_with_user_id) v ON v.fid = f.id
		 EXCEPT SELECT user_id, id, created_at, original_filename, status, owner_id FROM file_access)) d`).Scan(&bad); err != nil || bad != 0 {
		t.Fatalf("file_access: %d rows differ from what the files and shares give (%v)", bad, err)
	}
}
