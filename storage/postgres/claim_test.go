package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"docflow"
)

// TestClaimFilesFollowsTheClaimRule checks that claims are decided by
// docflow.Authorize: unclaimed files go to the claimant, others are skipped
// with their reason, and a claimant without an id takes nothing.
func TestClaimFilesFollowsTheClaimRule(t *testing.T) {
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
	free, free2 := insert("free", nil), insert("free2", nil)
	mine, theirs := insert("mine", &alice), insert("theirs", &bob)

	claimed, skipped, err := s.ClaimFiles(ctx, alice, []int64{free, mine, theirs, 999999, free})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(claimed) != fmt.Sprint([]int64{free}) {
		t.Fatalf("claimed %v", claimed)
	}
	want := []docflow.ClaimSkip{{FileID: mine, Reason: "already owned by you"},
		{FileID: theirs, Reason: "owned by another user"}, {FileID: 999999, Reason: "not found"}}
	if fmt.Sprint(skipped) != fmt.Sprint(want) {
		t.Fatalf("skipped %v, want %v", skipped, want)
	}

	// No identity, no owner: the file stays unclaimed.
	if _, _, err := s.ClaimFiles(ctx, "", []int64{free2}); docflow.ErrorCode(err) != docflow.EUNAUTHORIZED {
		t.Fatalf("claim without an id: %v", err)
	}
	var owner *string
	if err := db.Pool.QueryRow(ctx, `SELECT owner_id FROM files WHERE id=$1`, free2).Scan(&owner); err != nil || owner != nil {
		t.Fatalf("owner %v after a refused claim (%v)", owner, err)
	}
}
