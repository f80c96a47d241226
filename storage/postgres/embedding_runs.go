package postgres

import (
	"context"
	"fmt"

	"docflow"
)

// EmbeddingStore is the storage of runs made of the compute_embedding step
// alone (actors/pipeline/steps.EmbeddingRuns).
type EmbeddingStore struct {
	files *FileStore
	runs  *RunStore
}

// NewEmbeddingStore returns an EmbeddingStore on db.
func NewEmbeddingStore(db *DB) *EmbeddingStore {
	return &EmbeddingStore{files: NewFileStore(db), runs: NewRunStore(db)}
}

// RequeueFiles is FileStore.RequeueFiles.
func (s *EmbeddingStore) RequeueFiles(ctx context.Context, items []docflow.Requeue) ([]*docflow.File, []int64, error) {
	return s.files.RequeueFiles(ctx, items)
}

// StartRun is RunStore.StartRun.
func (s *EmbeddingStore) StartRun(ctx context.Context, runID string, fileID int64, pipelineID *int64, steps []*docflow.PipelineStep,
	logMessage string, msgs ...docflow.OutboxMessage) (*docflow.RunWrite, error) {
	return s.runs.StartRun(ctx, runID, fileID, pipelineID, steps, logMessage, msgs...)
}

// FilesMissingEmbedding returns the ids of the files that have OCR text but
// no embedding and are no duplicates, oldest first; a non-nil ownerID keeps
// that owner's files.
func (s *EmbeddingStore) FilesMissingEmbedding(ctx context.Context, ownerID *string) ([]int64, error) {
	rows, err := s.runs.db.Pool.Query(ctx, `SELECT f.id FROM files f
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
