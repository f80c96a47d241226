package postgres_test

import (
	"context"
	"testing"

	"docflow"
	"docflow/storage/postgres"
)

// A share of a file that does not exist (deleted between the route's
// lookup and the insert) is "File not found", not a server error.
func TestPutShareOfAMissingFileIsNotFound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "sharegone")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	_, _, err = postgres.NewShareStore(db).PutShare(ctx, 424242, "alice", "bob", docflow.RoleViewer)
	if docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("share of a missing file: %v", err)
	}
}
