package postgres

import (
	"context"
	"strings"
	"testing"
)

// The engine's hottest statements reach their rows by key whatever the
// statistics say: here they were taken when every run had finished and
// every outbox row was sent, and then a backlog arrives (claimsSQL's note).
func TestClaimPlanIgnoresStaleStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	// rows inserts n files, their runs of two steps and an outbox row
	// each, in status st (the steps' and rows' following it).
	rows := func(prefix string, n int, st, stepSt, sent string) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, `
			WITH f AS (
				INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, task_id, status)
				SELECT $1 || g, 'a.pdf', 's.pdf', 1, 'application/pdf', $1 || g, $3 FROM generate_series(1, $2) g
				RETURNING id, task_id),
			r AS (INSERT INTO runs (id, file_id, status) SELECT task_id, id, $3 FROM f RETURNING id)
			INSERT INTO run_steps (run_id, position, step_type, status) SELECT r.id, p, 'test', $4 FROM r, generate_series(0, 1) p`,
			prefix, n, st, stepSt); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO outbox (topic, payload, sent_at) SELECT 't', '\x00', `+sent+` FROM generate_series(1, $1)`, n); err != nil {
			t.Fatal(err)
		}
	}
	rows("done-", 20000, "completed", "succeeded", "now()")
	if _, err := db.Pool.Exec(ctx, `ANALYZE runs; ANALYZE files; ANALYZE run_steps; ANALYZE outbox`); err != nil {
		t.Fatal(err)
	}
	rows("backlog-", 2000, "pending", "queued", "NULL")
	plan := func(name, sql, args string) string {
		t.Helper()
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		// The plan a connection keeps once it has run the statement a few
		// times.
		if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan; PREPARE `+name+` AS `+sql); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, `EXPLAIN EXECUTE `+name+args)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			b.WriteString(line + "\n")
		}
		return b.String()
	}
	claim := plan("claim", claimsSQL, `(array['backlog-1'], array[0], array[1], array['w'], array[60000::bigint], array[10000::bigint])`)
	for _, bad := range []string{"runs_unfinished", "files_status_created", "Seq Scan on runs", "Seq Scan on files", "Seq Scan on run_steps"} {
		if strings.Contains(claim, bad) {
			t.Errorf("the claim's plan uses %s:\n%s", bad, claim)
		}
	}
	mark := plan("mark", markSentSQL, `(array[1::bigint, 2])`)
	if strings.Contains(mark, "outbox_unsent") || strings.Contains(mark, "Seq Scan on outbox") {
		t.Errorf("marking rows sent scans the unsent ones:\n%s", mark)
	}
}
