package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
	"docflow/storage/postgres"
)

// The benchmarks' fixtures and measurements (benchdata.go) on a real
// database: what cmd/docflow-bench reads from them.

func TestBenchFixtures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "benchfix")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)

	if err := db.SeedFiles(ctx, 10); err != nil {
		t.Fatalf("seed files: %v", err)
	}
	var n, failed int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'failed') FROM files`).Scan(&n, &failed); err != nil {
		t.Fatal(err)
	}
	if n != 10 || failed != 2 {
		t.Fatalf("seeded %d files, %d failed; want 10, 2", n, failed)
	}
	if err := db.VacuumAnalyze(ctx); err != nil {
		t.Fatalf("vacuum analyze: %v", err)
	}
	db.Checkpoint(ctx) //nolint:errcheck // needs a superuser or pg_checkpoint

	if err := db.CopyBenchRows(ctx, "files", []string{"id", "filehash", "original_filename", "stored_filename", "file_size", "mime_type"},
		[][]any{{int64(1000), "copied", "copied.pdf", "copied.pdf", int64(1), "application/pdf"}}); err != nil {
		t.Fatalf("copy files: %v", err)
	}
	if err := db.SetFileIDSequence(ctx, 1000); err != nil {
		t.Fatalf("set sequence: %v", err)
	}
	id, err := db.InsertBenchFile(ctx, "blobkey", "bulk-0.pdf", "blobkey.pdf", 20<<10)
	if err != nil {
		t.Fatalf("insert bench file: %v", err)
	}
	if id != 1001 {
		t.Fatalf("file after the sequence set to 1000 got id %d, want 1001", id)
	}

	if err := db.CopyBenchRows(ctx, "similarity_pairs", []string{"file_a", "file_b", "score"},
		[][]any{{int64(1), int64(2), 0.9}, {int64(2), int64(3), 0.7}}); err != nil {
		t.Fatalf("copy pairs: %v", err)
	}
	if err := db.AnalyzeSearchTables(ctx); err != nil {
		t.Fatalf("analyze: %v", err)
	}
	if pairs, err := db.SimilarityPairCount(ctx); err != nil || pairs != 2 {
		t.Fatalf("pair count = %d, %v; want 2", pairs, err)
	}

	pids, err := db.BackendPIDs(ctx)
	if err != nil || len(pids) == 0 {
		t.Fatalf("backend pids = %v, %v; want at least this connection's", pids, err)
	}
	if err := postgres.InsertBenchToken(ctx, db.URL, "dfl_benchben", "abc123"); err != nil {
		t.Fatalf("insert token: %v", err)
	}
	var owner string
	if err := db.Pool.QueryRow(ctx, `SELECT owner_id FROM api_tokens WHERE token_hash = 'abc123'`).Scan(&owner); err != nil || owner != "bench" {
		t.Fatalf("token owner = %q, %v; want bench", owner, err)
	}
}

func TestCreateBenchDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := fmt.Sprintf("docflow_test_benchcreate_%d", time.Now().UnixNano()%1e9)
	drop, err := postgres.CreateBenchDatabase(ctx, postgres.TestServerURL(), name)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	exists := func() bool {
		var ok bool
		admin, err := pgx.Connect(ctx, postgres.TestServerURL())
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close(ctx)
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !exists() {
		drop()
		t.Fatalf("database %s not created", name)
	}
	drop()
	if exists() {
		t.Fatalf("database %s left after cleanup", name)
	}
}

func TestBenchRunMeasurements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "benchruns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	p := &docflow.Pipeline{Name: "bench", IsActive: true,
		Steps: []*docflow.PipelineStep{{StepType: docflow.StepTest, Label: "noop", Enabled: true}}}
	if err := postgres.NewPipelineStore(db).CreatePipeline(ctx, p); err != nil {
		t.Fatal(err)
	}

	start, err := db.ClockTimestamp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"run-a", "run-b", "run-c"}
	var messages []int64
	runs, err := db.SeedRuns(ctx, p.ID, ids, []string{"ha", "hb", "hc"}, func(fileID int64, runID string) (docflow.OutboxMessage, error) {
		messages = append(messages, fileID)
		return docflow.OutboxMessage{Topic: "bench", Key: fmt.Sprint(fileID), Payload: []byte(runID)}, nil
	})
	if err != nil {
		t.Fatalf("seed runs: %v", err)
	}
	if !slices.Equal(slices.Sorted(slices.Values(runs)), ids) || len(messages) != 3 {
		t.Fatalf("seeded runs %v with %d messages; want %v and 3", runs, len(messages), ids)
	}
	var outbox int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE topic = 'bench'`).Scan(&outbox); err != nil || outbox != 3 {
		t.Fatalf("outbox rows = %d, %v; want 3", outbox, err)
	}
	if open, err := postgres.NewFileStore(db).CountUnfinishedRuns(ctx); err != nil || open != 3 {
		t.Fatalf("unfinished runs = %d, %v; want 3", open, err)
	}

	// run-a completes 50 ms after its creation, run-b fails.
	if _, err := db.Pool.Exec(ctx, `UPDATE runs SET status = 'completed', finished_at = created_at + interval '50 milliseconds' WHERE id = 'run-a'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE runs SET status = 'failed', finished_at = created_at WHERE id = 'run-b'`); err != nil {
		t.Fatal(err)
	}
	done, failed, err := db.RunOutcomes(ctx, runs)
	if err != nil || done != 1 || failed != 1 {
		t.Fatalf("outcomes = %d completed, %d failed, %v; want 1, 1", done, failed, err)
	}
	if done, failed, err := db.RunCounts(ctx); err != nil || done != 1 || failed != 1 {
		t.Fatalf("run counts = %d completed, %d failed, %v; want 1, 1", done, failed, err)
	}
	if c, err := db.CompletedRuns(ctx, runs); err != nil || c != 1 {
		t.Fatalf("completed runs = %d, %v; want 1", c, err)
	}
	if ms, err := db.RunLatencyMillis(ctx, "run-a"); err != nil || ms != 50 {
		t.Fatalf("latency = %v ms, %v; want 50", ms, err)
	}
	// run-c's first step runs under a worker that has its heartbeat row,
	// its second under one that has none (it stopped).
	if _, err := db.Pool.Exec(ctx, `INSERT INTO workers (id, host, pid) VALUES ('w-live', 'h', 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO run_steps (run_id, position, step_type, status, lease_owner) VALUES
		('run-c', 0, 'test', 'running', 'w-live'), ('run-c', 1, 'test', 'running', 'w-gone'), ('run-c', 2, 'test', 'queued', '')`); err != nil {
		t.Fatal(err)
	}
	if running, held, err := db.StepsLeftRunning(ctx); err != nil || running != 2 || held != 1 {
		t.Fatalf("steps left running = %d, held %d, %v; want 2, 1", running, held, err)
	}
	elapsed, err := db.RunsFinishedSince(ctx, []string{"run-a"}, start)
	if err != nil || elapsed < 50*time.Millisecond || elapsed > time.Minute {
		t.Fatalf("elapsed since start = %v, %v; want between 50 ms and a minute", elapsed, err)
	}
}
