package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// RunStore records the pipeline engine's runs and steps. Every write that
// moves a run forward also writes the processing log, the file's fields and
// the outbox messages for what comes next, in one transaction, and is
// guarded so that a repeated write (a redelivered task, a retried commit)
// changes nothing.
type RunStore struct {
	db *DB
	// direct > 0: outbox rows are written for write-through (see
	// WithDirectOutbox).
	direct time.Duration
}

var _ docflow.RunStore = (*RunStore)(nil)

// NewRunStore returns a RunStore on db.
func NewRunStore(db *DB) *RunStore {
	if db == nil {
		panic("postgres: NewRunStore needs a DB")
	}
	return &RunStore{db: db}
}

// WithDirectOutbox returns a store whose writes prepare their outbox rows
// for write-through: the caller publishes them itself right after the
// commit and marks them sent (MarkSent). The rows wake no relay and become
// due only after grace, so the relay publishes them only when the caller
// could not (it died, the broker was down). Every recording method then
// returns the ids of the rows it wrote.
func (s *RunStore) WithDirectOutbox(grace time.Duration) *RunStore {
	return &RunStore{db: s.db, direct: grace}
}

// held back for the grace, returning their ids.
func (s *RunStore) enqueue(ctx context.Context, tx pgx.Tx, msgs []docflow.OutboxMessage) ([]int64, error) {
	if s.direct <= 0 || len(msgs) == 0 {
		return nil, Enqueue(ctx, tx, msgs...)
	}
	return enqueueQuiet(ctx, tx, msgs, s.direct)
}

// MarkSent marks write-through rows published (Outbox.MarkSent).
func (s *RunStore) MarkSent(ctx context.Context, ids []int64) (err error) {
	defer mapDBError(&err)
	return markSent(ctx, s.db, ids)
}

// DB returns the database the store writes to.
func (s *RunStore) DB() *DB { return s.db }

// FindRun returns the run with its steps, or ENOTFOUND.
func (s *RunStore) FindRun(ctx context.Context, runID string) (*docflow.Run, error) {
	r := &docflow.Run{ID: runID}
	var opts []byte
	err := s.db.Pool.QueryRow(ctx, `SELECT file_id, pipeline_id, status, options, created_at, started_at, finished_at, updated_at
		FROM runs WHERE id=$1`, runID).Scan(&r.FileID, &r.PipelineID, &r.Status, &opts, &r.CreatedAt, &r.StartedAt, &r.FinishedAt, &r.UpdatedAt)
	if err != nil {
		return nil, notFound(err, "Run not found")
	}
	if err := unmarshalObject(opts, &r.Options); err != nil {
		return nil, err
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT position, step_type, label, config, status, attempts, message, started_at, finished_at
		FROM run_steps WHERE run_id=$1 ORDER BY position`, runID)
	if err != nil {
		return nil, fmt.Errorf("find run %s: %w", runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		st := &docflow.RunStep{RunID: runID}
		var cfg []byte
		if err := rows.Scan(&st.Position, &st.StepType, &st.Label, &cfg, &st.Status, &st.Attempts, &st.Message, &st.StartedAt, &st.FinishedAt); err != nil {
			return nil, fmt.Errorf("find run %s: %w", runID, err)
		}
		if err := unmarshalObject(cfg, &st.Config); err != nil {
			return nil, err
		}
		r.Steps = append(r.Steps, st)
	}
	return r, rows.Err()
}

// PendingCount counts runs queued or in progress.
func (s *RunStore) PendingCount(ctx context.Context) (_ int, err error) {
	defer mapDBError(&err)
	var n int
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM runs WHERE status IN ('pending', 'processing')`).Scan(&n); err != nil {
		return 0, fmt.Errorf("pending count: %w", err)
	}
	return n, nil
}

// FindOriginal returns the oldest other non-duplicate file with the hash,
// or ENOTFOUND (for the check_duplicates step).
func (s *RunStore) FindOriginal(ctx context.Context, hash string, except int64) (*docflow.File, error) {
	f, err := scanFile(s.db.Pool.QueryRow(ctx, `SELECT `+fileCols+` FROM files f
		WHERE f.filehash=$1 AND f.id <> $2 AND f.status <> 'duplicate' AND f.duplicate_of IS NULL
		ORDER BY f.id LIMIT 1`, hash, except), false)
	if err != nil {
		return nil, notFound(err, "No original")
	}
	return f, nil
}

func unmarshalObject(b []byte, v *map[string]any) error {
	if len(b) > 0 {
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("decode json object: %w", err)
		}
	}
	if *v == nil {
		*v = map[string]any{}
	}
	return nil
}
