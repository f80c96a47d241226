package http

import (
	"context"
	"testing"
	"time"

	"docflow"
)

// After Shutdown stopped the sender, a late request neither panics nor
// blocks.
func TestMailSenderStopsAndRefusesLateJobs(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	m := newMailSender(e.Server, LocalUsersDeps{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	m.stop(ctx)
	m.stop(ctx) // twice is fine
	done := make(chan struct{})
	go func() {
		m.enqueue(mailJob{kind: docflow.AuditPasswordResetRequested, email: "a@example.com"})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("enqueue after stop blocked")
	}
}
