package postgres

import (
	"context"
	"fmt"
	"time"

	"docflow"
)

// Heartbeat records that the worker is alive.
func (s *RunStore) Heartbeat(ctx context.Context, w docflow.WorkerBeat) (err error) {
	defer mapDBError(&err)
	if w.StepTypes == nil {
		w.StepTypes = []string{}
	}
	_, err = s.db.Pool.Exec(ctx, `INSERT INTO workers (id, host, pid, step_types, in_flight, started_at, last_seen)
		VALUES ($1, $2, $3, $4, $5, now(), now())
		ON CONFLICT (id) DO UPDATE SET step_types=EXCLUDED.step_types, in_flight=EXCLUDED.in_flight, last_seen=now()`,
		w.ID, w.Host, w.PID, w.StepTypes, w.InFlight)
	if err != nil {
		return fmt.Errorf("worker heartbeat: %w", err)
	}
	return nil
}

// RemoveWorker deletes a stopping worker's heartbeat (and any older than a day).
func (s *RunStore) RemoveWorker(ctx context.Context, id string) (err error) {
	defer mapDBError(&err)
	_, err = s.db.Pool.Exec(ctx, `DELETE FROM workers WHERE id=$1 OR last_seen < now() - interval '1 day'`, id)
	if err != nil {
		return fmt.Errorf("remove worker: %w", err)
	}
	return nil
}

// QueueSummary answers the database half of GET /api/queue/stats. Workers
// seen within alive count as online.
func (s *RunStore) QueueSummary(ctx context.Context, alive time.Duration) (_ *docflow.QueueStats, err error) {
	defer mapDBError(&err)
	q := &docflow.QueueStats{Queues: map[string]int64{}}
	w := &q.Workers
	w.Active = []docflow.ActiveTask{}
	err = s.db.Pool.QueryRow(ctx, `SELECT count(*), COALESCE(sum(in_flight), 0) FROM workers
		WHERE last_seen > now() - $1 * interval '1 millisecond'`, alive.Milliseconds()).Scan(&w.WorkersOnline, &w.Reserved)
	if err != nil {
		return nil, fmt.Errorf("queue summary: %w", err)
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT rs.run_id, rs.step_type, r.file_id, rs.attempts, rs.started_at, rs.lease_owner
		FROM run_steps rs JOIN runs r ON r.id = rs.run_id
		WHERE rs.status = 'running' AND rs.lease_until > now() ORDER BY rs.started_at LIMIT 100`)
	if err != nil {
		return nil, fmt.Errorf("queue summary: %w", err)
	}
	for rows.Next() {
		var a docflow.ActiveTask
		var fileID int64
		var attempt int
		if err := rows.Scan(&a.ID, &a.Name, &fileID, &attempt, &a.Started, &a.Worker); err != nil {
			rows.Close()
			return nil, fmt.Errorf("queue summary: %w", err)
		}
		a.Args = []any{fileID, attempt}
		w.Active = append(w.Active, a)
	}
	rows.Close()
	// Reserved: tasks held by workers but not running yet.
	w.Reserved = max(0, w.Reserved-len(w.Active))
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM run_steps WHERE status='retrying'`).Scan(&w.Scheduled); err != nil {
		return nil, fmt.Errorf("queue summary: %w", err)
	}
	d := &q.DBSummary
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*),
			count(*) FILTER (WHERE status='processing'), count(*) FILTER (WHERE status='failed'),
			count(*) FILTER (WHERE status='completed'), count(*) FILTER (WHERE status='pending')
		FROM files`).Scan(&d.TotalFiles, &d.Processing, &d.Failed, &d.Completed, &d.Pending); err != nil {
		return nil, fmt.Errorf("queue summary: %w", err)
	}
	d.RecentProcessing = []docflow.RecentProcessing{}
	rows, err = s.db.Pool.Query(ctx, `SELECT f.id, f.original_filename, COALESCE(cur.step_type, '')
		FROM files f
		LEFT JOIN LATERAL (SELECT step_type FROM run_steps WHERE run_id = f.task_id AND status NOT IN ('completed', 'skipped')
			ORDER BY position LIMIT 1) cur ON TRUE
		WHERE f.status = 'processing' ORDER BY f.updated_at DESC LIMIT 10`)
	if err != nil {
		return nil, fmt.Errorf("queue summary: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r docflow.RecentProcessing
		if err := rows.Scan(&r.FileID, &r.Filename, &r.CurrentStep); err != nil {
			return nil, fmt.Errorf("queue summary: %w", err)
		}
		d.RecentProcessing = append(d.RecentProcessing, r)
	}
	return q, rows.Err()
}
