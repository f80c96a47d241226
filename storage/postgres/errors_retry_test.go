package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestRetryConflicts: a deadlock's or serialization failure's victim is
// run again, at most attempts times; any other error is returned at once.
func TestRetryConflicts(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := retryConflicts(ctx, 5, func() error {
		calls++
		if calls < 3 {
			return &pgconn.PgError{Code: []string{"40P01", "40001"}[calls-1]}
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("after two conflicts: %v, %d calls", err, calls)
	}
	calls = 0
	err = retryConflicts(ctx, 2, func() error { calls++; return &pgconn.PgError{Code: "40P01"} })
	if err == nil || calls != 2 {
		t.Fatalf("always a deadlock: %v, %d calls, want 2", err, calls)
	}
	calls = 0
	other := errors.New("syntax")
	if err := retryConflicts(ctx, 5, func() error { calls++; return other }); err != other || calls != 1 {
		t.Fatalf("another error: %v, %d calls", err, calls)
	}
}
