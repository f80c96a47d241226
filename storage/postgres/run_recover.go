package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// runProgress is the SQL time of run alias's last progress: its own
// updated_at (start, retries, the end) or the last start or end of one of
// its steps (a completed step does not rewrite the run).
func runProgress(alias string) string {
	return `GREATEST(` + alias + `.updated_at, (SELECT max(GREATEST(p.started_at, p.finished_at)) FROM run_steps p WHERE p.run_id = ` + alias + `.id))`
}

// clock, no step under a live lease, and not waiting in the queue of a
// busy step type ($2: the step types whose workers were seen busy within
// the stall timeout).
//
// NOTE: every time here is the database's: progress and leases are
// written with now(), and comparing them with a cut-off read from the
// worker's clock would shift the verdict by the clocks' difference.
var stalledSQL = `r.status IN ('pending', 'processing') AND r.updated_at < now() - $1 * interval '1 millisecond'
	AND ` + progressBefore + `
	AND NOT EXISTS (SELECT 1 FROM run_steps l WHERE l.run_id = r.id AND l.status = 'running' AND l.lease_until > now())
	AND NOT EXISTS (SELECT 1 FROM run_steps q WHERE q.run_id = r.id AND q.status = 'queued' AND q.step_type = ANY($2::text[])
		AND q.position = (SELECT min(position) FROM run_steps c WHERE c.run_id = r.id AND c.status NOT IN ('completed', 'skipped')))`

// progressBefore: run r's last progress is older than the cut-off.
var progressBefore = runProgress("r") + ` < now() - $1 * interval '1 millisecond'`

// StalledRuns returns up to limit unfinished runs that made no progress
// for timeout (by the database's clock), with no step under a live lease,
// whose current step is not queued behind one of busy: step types whose
// workers are working through a backlog, which reaches the run's task in
// its turn (see BusyStepTypes).
func (s *RunStore) StalledRuns(ctx context.Context, timeout time.Duration, busy []string, limit int) (_ []docflow.StalledRun, err error) {
	defer mapDBError(&err)
	if busy == nil {
		busy = []string{}
	}
	rows, err := s.db.Pool.Query(ctx, `
		SELECT r.id, r.file_id, f.owner_id, f.original_filename, r.status, cur.position, cur.step_type, cur.status, cur.attempts
		FROM runs r JOIN files f ON f.id = r.file_id
		LEFT JOIN LATERAL (
			SELECT position, step_type, status, attempts FROM run_steps
			WHERE run_id = r.id AND status NOT IN ('completed', 'skipped') ORDER BY position LIMIT 1) cur ON TRUE
		WHERE `+stalledSQL+`
		ORDER BY r.updated_at LIMIT $3`, timeout.Milliseconds(), busy, limit)
	if err != nil {
		return nil, fmt.Errorf("stalled runs: %w", err)
	}
	defer rows.Close()
	var out []docflow.StalledRun
	for rows.Next() {
		var r docflow.StalledRun
		var pos, attempts *int
		var typ, status *string
		if err := rows.Scan(&r.RunID, &r.FileID, &r.OwnerID, &r.Filename, &r.Status, &pos, &typ, &status, &attempts); err != nil {
			return nil, fmt.Errorf("stalled runs: %w", err)
		}
		if pos != nil {
			r.Step = &docflow.RunStep{RunID: r.RunID, Position: *pos, StepType: *typ, Status: *status, Attempts: *attempts}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// BusyStepTypes returns the step types of which some step runs under a
// live lease now: their workers are taking tasks from their queues.
func (s *RunStore) BusyStepTypes(ctx context.Context) (_ []string, err error) {
	defer mapDBError(&err)
	rows, err := s.db.Pool.Query(ctx, `SELECT DISTINCT step_type FROM run_steps WHERE status = 'running' AND lease_until > now()`)
	if err != nil {
		return nil, fmt.Errorf("busy step types: %w", err)
	}
	types, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("busy step types: %w", err)
	}
	return types, nil
}

// FailRun fails an unfinished run that is still stalled (StalledRuns'
// condition, checked again under the run's lock): its unfinished steps,
// the run and the file become failed, with a log row and msgs. False when
// the run moved on meanwhile.
func (s *RunStore) FailRun(ctx context.Context, runID string, timeout time.Duration, busy []string, message string, msgs ...docflow.OutboxMessage) (_ bool, err error) {
	defer mapDBError(&err)
	if busy == nil {
		busy = []string{}
	}
	failed := false
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		failed = false
		var fileID int64
		err := tx.QueryRow(ctx, `SELECT r.file_id FROM runs r WHERE r.id=$3 AND `+stalledSQL+`
			FOR UPDATE SKIP LOCKED`, timeout.Milliseconds(), busy, runID).Scan(&fileID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		failed = true
		var step string
		err = tx.QueryRow(ctx, `SELECT COALESCE(min(step_type) FILTER (WHERE position = (SELECT min(position) FROM run_steps
			WHERE run_id=$1 AND status NOT IN ('completed', 'skipped'))), 'pipeline') FROM run_steps WHERE run_id=$1`, runID).Scan(&step)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE run_steps SET status='failed', message=$2, finished_at=now(), lease_owner='', lease_until=NULL
			WHERE run_id=$1 AND status NOT IN ('completed', 'skipped', 'failed')`, runID, message); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO processing_logs (file_id, task_id, step_name, status, message)
			VALUES ($1, $2, $3, 'failed', $4)`, fileID, runID, step, message); err != nil {
			return err
		}
		if err := finishRun(ctx, tx, runID, fileID, docflow.RunFailed, message); err != nil {
			return err
		}
		return Enqueue(ctx, tx, msgs...)
	})
	if err != nil {
		return false, fmt.Errorf("fail run %s: %w", runID, err)
	}
	return failed, nil
}

// UnfinishedRuns pages through pending and processing runs by id after
// afterID.
func (s *RunStore) UnfinishedRuns(ctx context.Context, afterID string, limit int) (_ []docflow.UnfinishedRun, err error) {
	defer mapDBError(&err)
	rows, err := s.db.Pool.Query(ctx, `
		SELECT r.id, r.file_id, f.owner_id, r.pipeline_id, r.options,
			EXISTS (SELECT 1 FROM run_steps WHERE run_id = r.id),
			cur.position, cur.step_type, cur.status, cur.attempts, COALESCE(cur.lease_until > now(), FALSE),
			EXISTS (SELECT 1 FROM outbox o WHERE o.sent_at IS NULL AND o.key = r.file_id::text)
		FROM runs r JOIN files f ON f.id = r.file_id
		LEFT JOIN LATERAL (
			SELECT position, step_type, status, attempts, lease_until FROM run_steps
			WHERE run_id = r.id AND status NOT IN ('completed', 'skipped') ORDER BY position LIMIT 1) cur ON TRUE
		WHERE r.status IN ('pending', 'processing') AND r.id > $1
		ORDER BY r.id LIMIT $2`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("unfinished runs: %w", err)
	}
	defer rows.Close()
	var out []docflow.UnfinishedRun
	for rows.Next() {
		var u docflow.UnfinishedRun
		var opts []byte
		var pos, attempts *int
		var typ, status *string
		if err := rows.Scan(&u.RunID, &u.FileID, &u.OwnerID, &u.PipelineID, &opts, &u.Routed,
			&pos, &typ, &status, &attempts, &u.LeaseLive, &u.Pending); err != nil {
			return nil, fmt.Errorf("unfinished runs: %w", err)
		}
		if err := unmarshalObject(opts, &u.Options); err != nil {
			return nil, err
		}
		if pos != nil {
			u.Step = &docflow.RunStep{RunID: u.RunID, Position: *pos, StepType: *typ, Status: *status, Attempts: *attempts}
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// Republish enqueues msgs (recovery) in a transaction of their own.
func (s *RunStore) Republish(ctx context.Context, msgs ...docflow.OutboxMessage) (err error) {
	defer mapDBError(&err)
	if len(msgs) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error { return Enqueue(ctx, tx, msgs...) })
}
