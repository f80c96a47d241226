package http

import (
	"context"
	"testing"
	"time"

	"docflow"
	"docflow/storage/postgres"
)

// queueFromStore answers the queue endpoints from the run store, with fixed
// lags standing in for the broker.
type queueFromStore struct{ s *postgres.RunStore }

func (q queueFromStore) QueueStats(ctx context.Context) (*docflow.QueueStats, error) {
	st, err := q.s.QueueSummary(ctx, 10*time.Second)
	if err != nil {
		return nil, err
	}
	st.Queues = map[string]int64{"docflow.steps.ocr": 3, "docflow.steps.classify": 1}
	st.TotalQueued = 4
	return st, nil
}

func (q queueFromStore) PendingCount(ctx context.Context) (int, error) { return q.s.PendingCount(ctx) }

func TestQueueStatsAndPendingCount(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"}, func(e *testEnv) {
		e.Server.MountQueue(QueueDeps{Queue: queueFromStore{postgres.NewRunStore(e.DB)}})
	})
	ctx := context.Background()
	for i, st := range []string{"pending", "processing", "processing", "completed", "failed"} {
		var id int64
		if err := e.DB.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, task_id)
			VALUES ($1, $2, 's', 1, 'application/pdf', $3, $4) RETURNING id`, "h"+st+string(rune('0'+i)), "f"+string(rune('0'+i))+".pdf", st, "run"+string(rune('0'+i))).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := e.DB.Pool.Exec(ctx, `INSERT INTO runs (id, file_id, status) VALUES ($1, $2, $3)`, "run"+string(rune('0'+i)), id, st); err != nil {
			t.Fatal(err)
		}
		if st == "processing" {
			if _, err := e.DB.Pool.Exec(ctx, `INSERT INTO run_steps (run_id, position, step_type, status, attempts, started_at, lease_owner, lease_until)
				VALUES ($1, 0, 'ocr', 'running', 1, now(), 'w1', now() + interval '1 minute')`, "run"+string(rune('0'+i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := postgres.NewRunStore(e.DB).Heartbeat(ctx, docflow.WorkerBeat{ID: "w1", Host: "h", PID: 1, InFlight: 5}); err != nil {
		t.Fatal(err)
	}
	tok := e.token("alice")
	resp, body := e.do("GET", "/api/queue/stats", "", nil)
	e.expect(resp, body, 401)
	resp, body = e.do("GET", "/api/queue/stats", tok, nil)
	e.expect(resp, body, 200)
	m := e.json(body)
	if m["total_queued"] != 4.0 || m["queues"].(map[string]any)["docflow.steps.ocr"] != 3.0 {
		t.Fatalf("queues %s", body)
	}
	w := m["workers"].(map[string]any)
	if w["workers_online"] != 1.0 || len(w["active"].([]any)) != 2 || w["reserved"] != 3.0 || w["scheduled"] != 0.0 {
		t.Fatalf("workers %s", body)
	}
	act := w["active"].([]any)[0].(map[string]any)
	if act["name"] != "ocr" || act["id"] == "" || act["started"] == nil || len(act["args"].([]any)) != 2 {
		t.Fatalf("active %v", act)
	}
	d := m["db_summary"].(map[string]any)
	if d["total_files"] != 5.0 || d["processing"] != 2.0 || d["pending"] != 1.0 || d["completed"] != 1.0 || d["failed"] != 1.0 {
		t.Fatalf("db summary %s", body)
	}
	rp := d["recent_processing"].([]any)
	if len(rp) != 2 || rp[0].(map[string]any)["current_step"] != "ocr" {
		t.Fatalf("recent %v", rp)
	}
	resp, body = e.do("GET", "/api/queue/pending-count", tok, nil)
	e.expect(resp, body, 200)
	if e.json(body)["total_pending"] != 3.0 {
		t.Fatalf("pending %s", body)
	}
}
