package postgres

import (
	"context"
	"slices"
	"testing"

	"docflow"
)

// TestResetWipesContentKeepsSchemaAndAdmins fills content tables, the
// settings and two local accounts, wipes, and checks: the counts of what
// each table held, every content table empty but for the seed and the
// local administrator, the settings kept and written, the announcement and
// the destination's "changed" message in the outbox, and the file id
// sequence going on.
func TestResetWipesContentKeepsSchemaAndAdmins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`INSERT INTO settings (key, value) VALUES ('MAX_UPLOAD_SIZE', '2048')`)
	exec(`INSERT INTO local_users (email, username, password_hash, is_admin) VALUES ('root@x', 'root', 'h', TRUE), ('u@x', 'u', 'h', FALSE)`)
	exec(`INSERT INTO api_tokens (owner_id, name, token_prefix, token_hash) VALUES ('u@x', 't', 'dfl_', 'hash1')`)
	exec(`INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, original_blob)
		VALUES ('h1', 'a.pdf', 's1.pdf', 3, 'application/pdf', 'blob1'), ('h2', 'b.pdf', 's2.pdf', 3, 'application/pdf', 'blob2')`)
	exec(`INSERT INTO comments (file_id, user_id, body) SELECT id, 'u@x', 'hi' FROM files`)
	exec(`INSERT INTO pipelines (owner_id, name) VALUES ('u@x', 'mine')`)
	exec(`INSERT INTO integrations (owner_id, direction, integration_type, name) VALUES ('u@x', 'DESTINATION', 'LOCAL', 'd')`)
	var maxBefore int64
	if err := db.Pool.QueryRow(ctx, `SELECT max(id) FROM files`).Scan(&maxBefore); err != nil {
		t.Fatal(err)
	}

	rs := NewResetStore(db, func(id int64) (docflow.OutboxMessage, error) {
		return docflow.OutboxMessage{Topic: "docflow.destinations", Key: "changed", Payload: []byte(`{}`)}, nil
	})
	originals, err := rs.Originals(ctx)
	if err != nil || len(originals) != 2 || originals[0].Name != "a.pdf" || originals[1].Blob != "blob2" {
		t.Fatalf("originals %+v %v", originals, err)
	}
	tables, err := rs.WipedTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, kept := range []string{"schema_migrations", "settings"} {
		if slices.Contains(tables, kept) {
			t.Fatalf("%s would be wiped: %v", kept, tables)
		}
	}
	for _, wiped := range []string{"files", "comments", "api_tokens", "sessions", "outbox", "audit_log", "local_users"} {
		if !slices.Contains(tables, wiped) {
			t.Fatalf("%s not wiped: %v", wiped, tables)
		}
	}

	counts, err := rs.Wipe(ctx, docflow.ResetWipe{
		Settings: map[string]string{"WATCH_FOLDERS": "/tmp/reimport"},
		Messages: []docflow.OutboxMessage{{Topic: "docflow.control", Key: "control", Payload: []byte(`{"reset":1}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"files": 2, "comments": 2, "api_tokens": 1, "local_users": 1, "integrations": 1, "pipelines": 2}
	for table, n := range want {
		if counts[table] != n {
			t.Errorf("count of %s = %d, want %d (%v)", table, counts[table], n, counts)
		}
	}
	if len(counts) != len(tables) {
		t.Errorf("counts for %d tables, %d wiped", len(counts), len(tables))
	}

	count := func(sql string) int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	for _, table := range tables {
		n := count(`SELECT count(*) FROM ` + table)
		switch table {
		case "local_users", "pipelines", "outbox":
		case "pipeline_steps":
			if n != len(docflow.StandardSteps) {
				t.Errorf("pipeline_steps: %d rows after the seed", n)
			}
		default:
			if n != 0 {
				t.Errorf("%s still holds %d rows", table, n)
			}
		}
	}
	if n := count(`SELECT count(*) FROM local_users WHERE username = 'root'`); n != 1 || count(`SELECT count(*) FROM local_users`) != 1 {
		t.Error("the local administrator alone should be kept")
	}
	if n := count(`SELECT count(*) FROM pipelines WHERE owner_id IS NULL AND is_default AND name = '` + docflow.StandardPipelineName + `'`); n != 1 {
		t.Error("the standard pipeline was not seeded again")
	}
	if n := count(`SELECT count(*) FROM settings WHERE key IN ('MAX_UPLOAD_SIZE', 'WATCH_FOLDERS')`); n != 2 {
		t.Error("settings not kept or not written")
	}
	if n := count(`SELECT count(*) FROM outbox`); n != 2 {
		t.Errorf("outbox: %d rows, want the announcement and one destination change", n)
	}
	if n := count(`SELECT count(*) FROM schema_migrations`); n == 0 {
		t.Error("schema_migrations emptied")
	}
	exec(`INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type) VALUES ('h3', 'c.pdf', 's3.pdf', 3, 'application/pdf')`)
	var next int64
	if err := db.Pool.QueryRow(ctx, `SELECT max(id) FROM files`).Scan(&next); err != nil || next <= maxBefore {
		t.Fatalf("file ids restarted: %d after %d (%v)", next, maxBefore, err)
	}

	if _, err := rs.Wipe(ctx, docflow.ResetWipe{Settings: map[string]string{"SESSION_SECRET": "x"}}); err == nil {
		t.Error("a sensitive setting written by a reset")
	}
}

// TestResetLockIsExclusive: a second reset does not start while one runs.
func TestResetLockIsExclusive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := NewResetStore(openTest(t), func(int64) (docflow.OutboxMessage, error) { return docflow.OutboxMessage{}, nil })
	unlock, ok, err := rs.TryLockReset(ctx)
	if err != nil || !ok {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if _, ok, err := rs.TryLockReset(ctx); err != nil || ok {
		t.Fatalf("second lock taken: %v %v", ok, err)
	}
	unlock()
	unlock2, ok, err := rs.TryLockReset(ctx)
	if err != nil || !ok {
		t.Fatalf("lock after unlock: %v %v", ok, err)
	}
	unlock2()
}
