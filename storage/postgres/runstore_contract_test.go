package postgres_test

import (
	"context"
	"testing"
	"time"

	"docflow"
	"docflow/actors/pipeline"
	"docflow/actors/pipeline/storetest"
	"docflow/storage/postgres"
)

// runBackend is a write-through RunStore on a throwaway database, with the
// fixtures and reads of the pipeline store contract.
type runBackend struct {
	*postgres.RunStore
	db    *postgres.DB
	files *postgres.FileStore
}

var _ pipeline.Store = (*postgres.RunStore)(nil)

func TestRunStoreContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		db, cleanup, err := postgres.OpenTestDB(context.Background(), "runs")
		if err != nil {
			t.Fatalf("open test db: %v", err)
		}
		t.Cleanup(cleanup)
		return &runBackend{RunStore: postgres.NewRunStore(db).WithDirectOutbox(time.Minute), db: db, files: postgres.NewFileStore(db)}
	})
}

func (b *runBackend) NewRun(t *testing.T, runID string) int64 {
	t.Helper()
	ctx := context.Background()
	var fileID int64
	if err := b.db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, task_id)
		VALUES ($1, 'a.pdf', 's.pdf', 1, 'application/pdf', $1) RETURNING id`, runID).Scan(&fileID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Pool.Exec(ctx, `INSERT INTO runs (id, file_id) VALUES ($1, $2)`, runID, fileID); err != nil {
		t.Fatal(err)
	}
	return fileID
}

func (b *runBackend) Reprocess(t *testing.T, fileID int64, runID string) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.db.Pool.Exec(ctx, `UPDATE files SET task_id=$2, status='pending' WHERE id=$1`, fileID, runID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Pool.Exec(ctx, `INSERT INTO runs (id, file_id) VALUES ($1, $2)`, runID, fileID); err != nil {
		t.Fatal(err)
	}
}

func (b *runBackend) File(t *testing.T, id int64) *docflow.File {
	t.Helper()
	f, err := b.files.FindFileByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (b *runBackend) Logs(t *testing.T, fileID int64) []*docflow.ProcessingLog {
	t.Helper()
	logs, err := b.files.FindProcessingLogs(context.Background(), fileID)
	if err != nil {
		t.Fatal(err)
	}
	return logs
}

func (b *runBackend) Outbox(t *testing.T) []docflow.OutboxRow {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `SELECT id, topic, key, payload FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []docflow.OutboxRow
	for rows.Next() {
		var r docflow.OutboxRow
		if err := rows.Scan(&r.ID, &r.Topic, &r.Key, &r.Payload); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (b *runBackend) Age(t *testing.T, runID string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	ms := d.Milliseconds()
	if _, err := b.db.Pool.Exec(ctx, `UPDATE runs SET updated_at = updated_at - $2 * interval '1 millisecond',
		created_at = created_at - $2 * interval '1 millisecond' WHERE id=$1`, runID, ms); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Pool.Exec(ctx, `UPDATE run_steps SET started_at = started_at - $2 * interval '1 millisecond',
		finished_at = finished_at - $2 * interval '1 millisecond' WHERE run_id=$1`, runID, ms); err != nil {
		t.Fatal(err)
	}
}
