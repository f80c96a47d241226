package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"docflow"
)

// TestClaimFilesFollowsTheClaimRule checks that claims are decided by the
// file access rule: unclaimed files go to an administrator, or to any
// user while unclaimed files are visible to everyone; others are skipped
// with their reason, and a claimant without an id takes nothing.
func TestClaimFilesFollowsTheClaimRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	insert := func(hash string, owner *string) int64 {
		t.Helper()
		var id int64
		if err := db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, owner_id)
			VALUES ($1, 'f.pdf', $1 || '.pdf', 1, 'application/pdf', 'completed', $2) RETURNING id`, hash, owner).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	alice, bob := "alice", "bob"
	free, free2, free3 := insert("free", nil), insert("free2", nil), insert("free3", nil)
	mine, theirs := insert("mine", &alice), insert("theirs", &bob)
	multi, open := docflow.FileAccess{MultiUser: true}, docflow.FileAccess{MultiUser: true, UnclaimedVisible: true}
	claim := func(who *docflow.User, a docflow.FileAccess, ids ...int64) (string, string) {
		t.Helper()
		claimed, skipped, err := s.ClaimFiles(ctx, who, a, ids)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(claimed), fmt.Sprint(skipped)
	}

	// Unclaimed files are administrators' by default: a user's claim is
	// refused as for another user's file.
	claimed, skipped := claim(&docflow.User{ID: alice}, multi, free, mine, theirs, 999999, free)
	want := fmt.Sprint([]docflow.ClaimSkip{{FileID: free, Reason: "owned by another user"}, {FileID: mine, Reason: "already owned by you"},
		{FileID: theirs, Reason: "owned by another user"}, {FileID: 999999, Reason: "not found"}})
	if claimed != "[]" || skipped != want {
		t.Fatalf("alice claims: %s, skipped %s, want none and %s", claimed, skipped, want)
	}
	// Visible to everyone, they may be claimed by anyone.
	if claimed, _ := claim(&docflow.User{ID: alice}, open, free, mine); claimed != fmt.Sprint([]int64{free}) {
		t.Fatalf("alice claims with unclaimed files visible: %s", claimed)
	}
	// An administrator claims them in either case, but not another's.
	if claimed, skipped := claim(&docflow.User{ID: "root", IsAdmin: true}, multi, free2, theirs); claimed != fmt.Sprint([]int64{free2}) ||
		skipped != fmt.Sprint([]docflow.ClaimSkip{{FileID: theirs, Reason: "owned by another user"}}) {
		t.Fatalf("an admin claims: %s, skipped %s", claimed, skipped)
	}

	// No identity, no owner: the file stays unclaimed; outside multi-user
	// mode nothing is claimed.
	if _, _, err := s.ClaimFiles(ctx, &docflow.User{}, open, []int64{free3}); docflow.ErrorCode(err) != docflow.EUNAUTHORIZED {
		t.Fatalf("claim without an id: %v", err)
	}
	if _, _, err := s.ClaimFiles(ctx, &docflow.User{ID: alice}, docflow.FileAccess{}, []int64{free3}); docflow.ErrorCode(err) != docflow.EBADREQUEST {
		t.Fatalf("claim in single-user mode: %v", err)
	}
	var owner *string
	if err := db.Pool.QueryRow(ctx, `SELECT owner_id FROM files WHERE id=$1`, free3).Scan(&owner); err != nil || owner != nil {
		t.Fatalf("owner %v after refused claims (%v)", owner, err)
	}
}
