package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"docflow"
	"docflow/storage/postgres"
	"docflow/streams"
)

// EmbeddingRuns starts runs made of the compute_embedding step alone, for
// POST /api/files/{id}/compute-embedding and
// /api/diagnostic/compute-all-embeddings: they go through the engine like
// every run (status, log, retries, dead letters).
type EmbeddingRuns struct {
	files *postgres.FileService
	runs  *postgres.RunStore
	now   func() time.Time
}

// NewEmbeddingRuns returns an EmbeddingRuns over the file and run stores.
func NewEmbeddingRuns(files *postgres.FileService, runs *postgres.RunStore) *EmbeddingRuns {
	if files == nil || runs == nil {
		panic("steps: NewEmbeddingRuns needs the file and run stores")
	}
	return &EmbeddingRuns{files: files, runs: runs, now: time.Now}
}

// EmbeddingOnlyOption is the run option that marks a run of
// compute_embedding alone.
const EmbeddingOnlyOption = "steps"

// QueueEmbeddings starts one run per file and returns the run ids by file
// id; files that do not exist are left out.
//
// NOTE: the run is recorded pending (as reprocessing does) and then started
// with its single step in a second transaction. Should the process die in
// between, recovery routes the pending run like any other: the file is
// processed by its whole pipeline, which computes the embedding too.
func (q *EmbeddingRuns) QueueEmbeddings(ctx context.Context, ids []int64) (map[int64]string, error) {
	items := make([]docflow.Requeue, 0, len(ids))
	seen := map[int64]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		items = append(items, docflow.Requeue{FileID: id, RunID: uuid.NewString(),
			Options: map[string]any{EmbeddingOnlyOption: []string{docflow.StepComputeEmbedding}}})
	}
	if len(items) == 0 {
		return map[int64]string{}, nil
	}
	done, _, err := q.files.RequeueFiles(ctx, items)
	if err != nil {
		return nil, fmt.Errorf("queue embeddings: %w", err)
	}
	runOf := make(map[int64]string, len(items))
	for _, it := range items {
		runOf[it.FileID] = it.RunID
	}
	steps := []*docflow.PipelineStep{{StepType: docflow.StepComputeEmbedding,
		Label: docflow.StepCatalogue()[docflow.StepComputeEmbedding].Label, Enabled: true, Config: map[string]any{}}}
	out := make(map[int64]string, len(done))
	var errs []error
	for _, f := range done {
		runID := runOf[f.ID]
		msg, err := streams.StepTaskMessage(streams.StepTask{RunID: runID, FileID: f.ID, Position: 0,
			StepType: docflow.StepComputeEmbedding, Attempt: 1}, q.now())
		if err != nil {
			return nil, err
		}
		if _, err := q.runs.StartRun(ctx, runID, f.ID, nil, steps, "Compute embedding only (requested through the API)", msg); err != nil {
			errs = append(errs, fmt.Errorf("start embedding run of file %d: %w", f.ID, err))
			continue
		}
		out[f.ID] = runID
	}
	return out, errors.Join(errs...)
}

// FilesMissingEmbedding returns the ids of the files that have OCR text but
// no embedding, oldest first; a non-nil ownerID keeps that owner's files.
func (q *EmbeddingRuns) FilesMissingEmbedding(ctx context.Context, ownerID *string) ([]int64, error) {
	rows, err := q.runs.DB().Pool.Query(ctx, `SELECT f.id FROM files f
		WHERE f.ocr_text <> '' AND f.status <> 'duplicate'
		  AND NOT EXISTS (SELECT 1 FROM file_embeddings e WHERE e.file_id = f.id)
		  AND ($1::text IS NULL OR f.owner_id = $1)
		ORDER BY f.id`, ownerID)
	if err != nil {
		return nil, fmt.Errorf("files missing embedding: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
