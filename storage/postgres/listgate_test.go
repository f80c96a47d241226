package postgres

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"docflow"
)

// Listings beyond the list concurrency wait their turn, and give up when
// their request does.
func TestFindFilesWaitsItsTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	s := NewFileStore(db)
	if got := cap(*s.gate.Load()); got != runtime.GOMAXPROCS(0) {
		t.Fatalf("default concurrency %d", got)
	}
	s.SetListConcurrency(1)
	gate := *s.gate.Load()
	gate <- struct{}{} // a listing in progress
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, _, err := s.FindFiles(wctx, docflow.FileFilter{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("while the only slot is taken: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := s.FindFiles(ctx, docflow.FileFilter{})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("ran before its turn: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	<-gate // the listing in progress ends
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(gate) != 0 {
		t.Fatalf("%d slots still taken", len(gate))
	}
}
