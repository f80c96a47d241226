package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"docflow"
	"docflow/streams"
)

// EmbeddingStore is what EmbeddingRuns asks storage
// (storage/postgres.EmbeddingStore).
type EmbeddingStore interface {
	// RequeueFiles points each item's file at a new pending run, as
	// reprocessing does, in one transaction; done are the files that
	// exist, missing the ids of those that do not.
	RequeueFiles(ctx context.Context, items []docflow.Requeue) (done []*docflow.File, missing []int64, err error)
	// StartRun records the run's steps, a log row and msgs, as the
	// pipeline engine's store does when it routes a run.
	StartRun(ctx context.Context, runID string, fileID int64, pipelineID *int64, steps []*docflow.PipelineStep,
		logMessage string, msgs ...docflow.OutboxMessage) (*docflow.RunWrite, error)
	// FilesMissingEmbedding returns the ids of the files that have OCR
	// text but no embedding and are no duplicates, oldest first; a non-nil
	// ownerID keeps that owner's files.
	FilesMissingEmbedding(ctx context.Context, ownerID *string) ([]int64, error)
}

// EmbeddingRuns starts runs made of the compute_embedding step alone, for
// POST /api/files/{id}/compute-embedding and
// /api/diagnostic/compute-all-embeddings: they go through the engine like
// every run (status, log, retries, dead letters).
type EmbeddingRuns struct {
	store EmbeddingStore
	now   func() time.Time
}

// NewEmbeddingRuns returns an EmbeddingRuns over store.
func NewEmbeddingRuns(store EmbeddingStore) *EmbeddingRuns {
	if store == nil {
		panic("steps: NewEmbeddingRuns needs an EmbeddingStore")
	}
	return &EmbeddingRuns{store: store, now: time.Now}
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
	done, _, err := q.store.RequeueFiles(ctx, items)
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
		if _, err := q.store.StartRun(ctx, runID, f.ID, nil, steps, "Compute embedding only (requested through the API)", msg); err != nil {
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
	return q.store.FilesMissingEmbedding(ctx, ownerID)
}
