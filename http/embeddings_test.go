package http

import (
	"context"
	"fmt"
	"testing"

	"docflow/actors/pipeline/steps"
	"docflow/storage/postgres"
)

func mountEmbeddings(e *testEnv) {
	e.Server.MountEmbeddings(EmbeddingsDeps{Files: postgres.NewFileStore(e.DB),
		Queue: steps.NewEmbeddingRuns(postgres.NewEmbeddingStore(e.DB))})
}

// embFile records a file directly; text is its OCR text.
func (e *testEnv) embFile(owner *string, text string, withEmbedding bool) int64 {
	e.t.Helper()
	ctx := context.Background()
	var id int64
	err := e.DB.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, owner_id, status, ocr_text)
		VALUES (md5(random()::text), 'a.pdf', 'a.pdf', 1, 'application/pdf', $1, 'completed', $2) RETURNING id`, owner, text).Scan(&id)
	if err != nil {
		e.t.Fatal(err)
	}
	if withEmbedding {
		if _, err := e.DB.Pool.Exec(ctx, `INSERT INTO file_embeddings (file_id, dimensions, model, vector) VALUES ($1, 2, 'm', '{1,0}')`, id); err != nil {
			e.t.Fatal(err)
		}
	}
	return id
}

// singleStepRun checks that runID is a pending run of file id made of
// compute_embedding alone, with its task in the outbox.
func (e *testEnv) singleStepRun(id int64, runID string) {
	e.t.Helper()
	ctx := context.Background()
	var steps []string
	var status, task string
	if err := e.DB.Pool.QueryRow(ctx, `SELECT r.status, f.task_id, array_agg(s.step_type ORDER BY s.position)
		FROM runs r JOIN files f ON f.id = r.file_id JOIN run_steps s ON s.run_id = r.id
		WHERE r.id=$1 AND r.file_id=$2 GROUP BY r.status, f.task_id`, runID, id).Scan(&status, &task, &steps); err != nil {
		e.t.Fatalf("run %s of file %d: %v", runID, id, err)
	}
	if len(steps) != 1 || steps[0] != "compute_embedding" || task != runID {
		e.t.Fatalf("run %s: status %s steps %v file task %s", runID, status, steps, task)
	}
	var n int
	if err := e.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE topic='docflow.steps.compute_embedding' AND key=$1`, fmt.Sprint(id)).Scan(&n); err != nil || n != 1 {
		e.t.Fatalf("outbox tasks for file %d: %d %v", id, n, err)
	}
}

func TestComputeEmbedding(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, mountEmbeddings)
	noText := e.embFile(nil, "", false)
	resp, body := e.do("POST", fmt.Sprintf("/api/files/%d/compute-embedding", noText), "", nil)
	e.expect(resp, body, 400)
	resp, body = e.do("POST", "/api/files/999999/compute-embedding", "", nil)
	e.expect(resp, body, 404)

	id := e.embFile(nil, "Invoice number 42", false)
	resp, body = e.do("POST", fmt.Sprintf("/api/files/%d/compute-embedding", id), "", nil)
	e.expect(resp, body, 200)
	m := e.json(body)
	task, _ := m["task_id"].(string)
	if m["status"] != "queued" || m["file_id"] != float64(id) || task == "" {
		t.Fatalf("compute-embedding %s", body)
	}
	e.singleStepRun(id, task)
	var status string
	e.DB.Pool.QueryRow(context.Background(), `SELECT status FROM files WHERE id=$1`, id).Scan(&status)
	if status != "pending" {
		t.Fatalf("file status %s, want pending", status)
	}
}

func TestComputeAllEmbeddings(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true"}, mountEmbeddings)
	alice, bob := e.token("alice"), e.token("bob")
	a, b := "alice", "bob"
	a1 := e.embFile(&a, "text one", false)
	e.embFile(&a, "text two", true) // has one already
	e.embFile(&a, "", false)        // nothing to embed
	b1 := e.embFile(&b, "bob's text", false)

	// Bob cannot queue Alice's file.
	resp, body := e.do("POST", fmt.Sprintf("/api/files/%d/compute-embedding", a1), bob, nil)
	e.expect(resp, body, 403)

	resp, body = e.do("POST", "/api/diagnostic/compute-all-embeddings", alice, nil)
	e.expect(resp, body, 200)
	if m := e.json(body); m["status"] != "queued" || m["files_queued"] != 1.0 {
		t.Fatalf("alice's compute-all %s", body)
	}
	var task string
	e.DB.Pool.QueryRow(context.Background(), `SELECT task_id FROM files WHERE id=$1`, a1).Scan(&task)
	e.singleStepRun(a1, task)
	var bobTask string
	e.DB.Pool.QueryRow(context.Background(), `SELECT task_id FROM files WHERE id=$1`, b1).Scan(&bobTask)
	if bobTask != "" {
		t.Fatalf("alice's compute-all queued bob's file: %s", bobTask)
	}
	resp, body = e.do("POST", "/api/diagnostic/compute-all-embeddings", bob, nil)
	e.expect(resp, body, 200)
	if m := e.json(body); m["files_queued"] != 1.0 {
		t.Fatalf("bob's compute-all %s", body)
	}
}
