package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/storage/postgres"
)

func TestAuditLogRecordsAndFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "audit")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	log := postgres.NewAuditLog(db)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, e := range []docflow.AuditEntry{
		{Actor: "alice", Action: docflow.AuditLoginSucceeded, ClientIP: "10.0.0.1"},
		{Actor: "mallory", Action: docflow.AuditLoginFailed, ClientIP: "10.0.0.2"},
		{Actor: "admin", Action: docflow.AuditProfileUpdate, Target: "user:alice", Detail: "is_blocked=true"},
		{Actor: strings.Repeat("é", 3000), Action: docflow.AuditLoginFailed},
	} {
		e.At = base.Add(time.Duration(i) * time.Minute)
		if err := log.RecordAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	all, total, err := log.ListAudit(ctx, docflow.AuditFilter{})
	if err != nil || total != 4 || len(all) != 4 {
		t.Fatalf("all: %d %d %v", len(all), total, err)
	}
	if all[0].Action != docflow.AuditLoginFailed || len(all[0].Actor) > 1024 || !strings.HasPrefix(all[0].Actor, "éé") {
		t.Fatalf("newest first, actor clipped on a rune: %q", all[0].Actor[:10])
	}
	failed, total, _ := log.ListAudit(ctx, docflow.AuditFilter{Action: docflow.AuditLoginFailed, PerPage: 1, Page: 2})
	if total != 2 || len(failed) != 1 || failed[0].Actor != "mallory" || failed[0].ClientIP != "10.0.0.2" {
		t.Fatalf("by action, page 2: %+v total %d", failed, total)
	}
	from, to := base.Add(90*time.Second), base.Add(150*time.Second)
	win, total, _ := log.ListAudit(ctx, docflow.AuditFilter{From: &from, To: &to})
	if total != 1 || win[0].Target != "user:alice" {
		t.Fatalf("window: %+v", win)
	}
	mine, total, _ := log.ListAudit(ctx, docflow.AuditFilter{Actor: "alice"})
	if total != 1 || mine[0].Action != docflow.AuditLoginSucceeded {
		t.Fatalf("by actor: %+v", mine)
	}
}
