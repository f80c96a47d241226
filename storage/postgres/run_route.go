package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
)

// SupersedeRun ends a run whose file started a newer run.
func (s *RunStore) SupersedeRun(ctx context.Context, runID string) (err error) {
	defer mapDBError(&err)
	_, err = s.db.Pool.Exec(ctx, `
		WITH r AS (
			UPDATE runs SET status='superseded', message='superseded by a newer run', finished_at=now(), updated_at=now()
			WHERE id=$1 AND status IN ('pending', 'processing') RETURNING id
		)
		UPDATE run_steps SET status='skipped', message='superseded by a newer run', lease_owner='', lease_until=NULL
		WHERE run_id IN (SELECT id FROM r) AND status IN ('queued', 'retrying')`, runID)
	if err != nil {
		return fmt.Errorf("supersede run %s: %w", runID, err)
	}
	return nil
}

// RunForRouting returns the run and its file; ENOTFOUND when either is gone.
func (s *RunStore) RunForRouting(ctx context.Context, runID string) (_ *docflow.RoutingState, err error) {
	defer mapDBError(&err)
	st := &docflow.RoutingState{RunID: runID}
	var opts []byte
	f, err := scanFile(extraRow{s.db.Pool.QueryRow(ctx, `SELECT `+fileCols+`, r.status, r.pipeline_id, r.options,
		EXISTS (SELECT 1 FROM run_steps WHERE run_id = r.id)
		FROM runs r JOIN files f ON f.id = r.file_id WHERE r.id=$1`, runID),
		[]any{&st.Status, &st.PipelineID, &opts, &st.Routed}}, false)
	if err != nil {
		return nil, notFound(err, "Run not found")
	}
	if err := unmarshalObject(opts, &st.Options); err != nil {
		return nil, err
	}
	st.File = f
	return st, nil
}

// StartRun records the run's steps (queued, positions from 0) as copies of
// the pipeline's, the routing log row and msgs (the first task, or the
// completion event when steps is empty, in which case the run completes at
// once). It returns false, writing nothing, when the run was routed
// already or is no longer pending.
func (s *RunStore) StartRun(ctx context.Context, runID string, fileID int64, pipelineID *int64, steps []*docflow.PipelineStep,
	logMessage string, msgs ...docflow.OutboxMessage) (_ *docflow.RunWrite, err error) {
	defer mapDBError(&err)
	types := make([]string, len(steps))
	labels := make([]string, len(steps))
	configs := make([]string, len(steps))
	for i, st := range steps {
		types[i], labels[i] = st.StepType, st.Label
		cfg := st.Config
		if cfg == nil {
			cfg = map[string]any{}
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, fmt.Errorf("start run %s: step config: %w", runID, err)
		}
		configs[i] = string(b)
	}
	a, err := outboxArrays(msgs)
	if err != nil {
		return nil, fmt.Errorf("start run %s: %w", runID, err)
	}
	quiet := "off"
	if s.direct > 0 {
		quiet = "on"
	}
	// An empty pipeline completes the run at once.
	final := ""
	if len(steps) == 0 {
		final = docflow.RunCompleted
	}
	var n int
	var ids []int64
	err = s.db.Pool.QueryRow(ctx, `
		WITH r AS (
			UPDATE runs SET pipeline_id=$2, updated_at=now(),
				status = CASE WHEN $9 = '' THEN status ELSE $9 END,
				finished_at = CASE WHEN $9 = '' THEN NULL ELSE now() END
			WHERE id=$1 AND status='pending' AND NOT EXISTS (SELECT 1 FROM run_steps WHERE run_id=$1)
			RETURNING id
		), st AS (
			INSERT INTO run_steps (run_id, position, step_type, label, config, status)
			SELECT r.id, u.n - 1, u.t, u.l, u.c::jsonb, 'queued'
			FROM r, unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS u(t, l, c, n)
		), l AS (
			INSERT INTO processing_logs (file_id, task_id, step_name, status, message)
			SELECT $6, r.id, 'pipeline', 'queued', $7 FROM r
		), f AS (
			UPDATE files SET status=$9, updated_at=now()
			WHERE $9 <> '' AND id=$6 AND (task_id=$1 OR task_id='') AND EXISTS (SELECT 1 FROM r)
		), o AS (
			`+outboxInsert{at: 10, grace: 15, where: "EXISTS (SELECT 1 FROM r)", returning: true}.sql()+`
		)
		SELECT (SELECT count(*) FROM r), (SELECT COALESCE(array_agg(id ORDER BY id), '{}') FROM o),
			set_config('docflow.outbox_quiet', $8, true)`,
		runID, pipelineID, types, labels, configs, fileID, logMessage, quiet, final,
		a.topics, a.keys, a.payloads, a.headers, a.avail, max(0, s.direct.Milliseconds())).Scan(&n, &ids, new(string))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "run_steps_pkey" {
		// NOTE: two routers of one run (a copy of its "ingested" message)
		// both pass the NOT EXISTS, evaluated before the other committed;
		// the later one's steps collide with the earlier's, and the
		// statement, failing as a whole, wrote nothing: routed already.
		return &docflow.RunWrite{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("start run %s: %w", runID, err)
	}
	w := &docflow.RunWrite{Recorded: n == 1}
	if s.direct > 0 && w.Recorded {
		w.OutboxIDs = ids
	}
	return w, nil
}
