package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// ClaimStep leases step Position of the run to Worker for TTL when the task
// may run: the step is queued, waiting for this retry attempt, or running
// under an expired lease (or one of Worker's own: a claim whose answer was
// lost with the connection, or one of a worker whose heartbeat is older
// than DeadAfter); the run is unfinished and is its file's current run. The
// run and file become processing. One statement, one round trip.
//
// NOTE: the claim commits asynchronously (synchronous_commit off for its
// transaction): losing it in a server crash only puts the step back to
// where it was, and the step's result, committed synchronously later,
// flushes the WAL up to and including the claim anyway.
func (s *RunStore) ClaimStep(ctx context.Context, req docflow.StepClaimRequest) (*docflow.StepClaim, error) {
	r := s.ClaimSteps(ctx, []docflow.StepClaimRequest{req})[0]
	return r.Claim, r.Err
}

// ClaimSteps makes several claims (as ClaimStep each) in one statement,
// committed asynchronously like a single claim.
func (s *RunStore) ClaimSteps(ctx context.Context, reqs []docflow.StepClaimRequest) []docflow.StepClaimResult {
	out := s.claimSteps(ctx, reqs)
	for i := range out {
		out[i].Err = dbErr(out[i].Err)
	}
	return out
}

func (s *RunStore) claimSteps(ctx context.Context, reqs []docflow.StepClaimRequest) []docflow.StepClaimResult {
	out := make([]docflow.StepClaimResult, len(reqs))
	if len(reqs) == 0 {
		return out
	}
	// NOTE: rows are locked in (run, position) order, so that two batches
	// cannot wait for each other.
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		ra, rb := reqs[order[a]], reqs[order[b]]
		if ra.RunID != rb.RunID {
			return ra.RunID < rb.RunID
		}
		return ra.Position < rb.Position
	})
	n := len(order)
	runIDs, workers := make([]string, n), make([]string, n)
	positions, attempts := make([]int32, n), make([]int32, n)
	ttls, deads := make([]int64, n), make([]int64, n)
	for k, i := range order {
		args := claimArgs(reqs[i])
		runIDs[k], positions[k], attempts[k], workers[k] = reqs[i].RunID, int32(reqs[i].Position), int32(reqs[i].Attempt), reqs[i].Worker
		ttls[k], deads[k] = args[4].(int64), args[5].(int64)
	}
	claimed := make([]bool, len(reqs))
	// NOTE: planned for each call (an unnamed statement), never from a
	// cached generic plan: see claimsSQL.
	rows, err := s.db.Pool.Query(ctx, claimsSQL, pgx.QueryExecModeExec, runIDs, positions, attempts, workers, ttls, deads)
	if err != nil {
		return failAll(out, fmt.Errorf("claim %d steps: %w", len(reqs), err))
	}
	for rows.Next() {
		var ord int64
		c, err := scanClaim(rows, &ord)
		if err == nil && (ord < 1 || int(ord) > n) {
			err = fmt.Errorf("claim answer for request %d of %d", ord, n)
		}
		var de claimDecodeError
		if errors.As(err, &de) && ord >= 1 && int(ord) <= n {
			i := order[ord-1]
			out[i].Err, claimed[i] = err, true // claimed, but unusable: this task's error only
			continue
		}
		if err != nil {
			rows.Close()
			return failAll(out, fmt.Errorf("claim %d steps: %w", len(reqs), err))
		}
		i := order[ord-1]
		c.Step.Attempts = reqs[i].Attempt
		out[i].Claim, claimed[i] = c, true
	}
	if err := rows.Err(); err != nil {
		// The statement failed as a whole: no claim holds.
		return failAll(out, fmt.Errorf("claim %d steps: %w", len(reqs), err))
	}
	var missed []int
	for i := range reqs {
		if !claimed[i] {
			missed = append(missed, i)
		}
	}
	for _, i := range missed {
		out[i].Claim, out[i].Err = s.whyNotClaimed(ctx, reqs[i])
	}
	return out
}

func failAll(out []docflow.StepClaimResult, err error) []docflow.StepClaimResult {
	for i := range out {
		out[i] = docflow.StepClaimResult{Err: err}
	}
	return out
}

// claimsSQL leases steps (see ClaimStep), many in one statement; each
// answer row ends with the ordinal (from 1) of its request.
//
// NOTE: every row is reached from the requests by primary key, whatever
// the statistics say: the status tests are expressions (the status joined
// to an empty string), which no index answers, and runs and files are read
// in LATERAL subqueries (OFFSET 0 keeps them apart). Plain status tests let
// statistics taken while nothing was unfinished make every claim read the
// whole backlog through the status indexes. TestClaimPlanIgnoresStaleStatistics
// holds this.
//
// And the statement is planned on every call (QueryExecModeExec): a
// generic plan cached while run_steps was small hashes the whole table on
// every claim after. Planning costs far less. The measurements are in
// docs/benchmarks.md ("The step claim").
const claimsSQL = `
		WITH i AS (
			SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::bigint[], $6::bigint[]) WITH ORDINALITY
				AS i(run_id, pos, attempt, worker, ttl, dead, n)
		), c AS (
			UPDATE run_steps rs SET status='running', attempts=i.attempt, started_at=now(), finished_at=NULL,
				lease_owner=i.worker, lease_until=now() + i.ttl * interval '1 millisecond'
			FROM i
			CROSS JOIN LATERAL (SELECT * FROM runs r WHERE r.id = i.run_id AND r.status || '' IN ('pending', 'processing') OFFSET 0) r
			CROSS JOIN LATERAL (SELECT * FROM files f WHERE f.id = r.file_id AND (f.task_id = '' OR f.task_id = r.id) OFFSET 0) f
			WHERE rs.run_id=i.run_id AND rs.position=i.pos
			  AND (rs.status='queued'
			       OR (rs.status='retrying' AND i.attempt > rs.attempts)
			       OR (rs.status='running' AND i.attempt >= rs.attempts
			           AND (rs.lease_until IS NULL OR rs.lease_until < now() OR rs.lease_owner = i.worker
			                OR NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = rs.lease_owner
			                               AND w.last_seen > now() - i.dead * interval '1 millisecond'))))
			RETURNING ` + fileColsText + `, rs.run_id, rs.position, rs.step_type, rs.label, rs.config, r.options, i.n
		), r AS (
			UPDATE runs SET status='processing', started_at=COALESCE(started_at, now()), updated_at=now()
			FROM c WHERE runs.id = c.run_id AND runs.status || '' = 'pending'
		), fs AS (
			UPDATE files SET status='processing', updated_at=now()
			FROM c WHERE files.id = c.id AND files.status || '' = 'pending'
		)
		SELECT c.*,
			(SELECT n.step_type FROM run_steps n WHERE n.run_id=c.run_id AND n.position=c.position+1),
			(SELECT count(*) FROM run_steps t WHERE t.run_id=c.run_id),
			set_config('synchronous_commit', 'off', true)
		FROM c`

func claimArgs(req docflow.StepClaimRequest) []any {
	dead := req.DeadAfter
	if dead <= 0 {
		dead = 10 * time.Second
	}
	return []any{req.RunID, req.Position, req.Attempt, req.Worker, req.TTL.Milliseconds(), dead.Milliseconds()}
}

// claimDecodeError: a claimed row whose JSON could not be decoded.
type claimDecodeError struct{ error }

func (e claimDecodeError) Unwrap() error { return e.error }

// scanClaim reads one answer row of claimsSQL.
//
// The caller sets Step.Attempts. afterOptions are columns between the
// options and the next step's type (claimsSQL's ordinal).
func scanClaim(row pgx.Row, afterOptions ...any) (*docflow.StepClaim, error) {
	c := &docflow.StepClaim{}
	var cfg, opts []byte
	var nextType *string
	// c.* is the file's columns, then run_id, position, step_type, label,
	// config, options.
	extra := []any{&c.Step.RunID, &c.Step.Position, &c.Step.StepType, &c.Step.Label, &cfg, &opts}
	extra = append(extra, afterOptions...)
	extra = append(extra, &nextType, &c.Total, new(string))
	f, err := scanFile(extraRow{row, extra}, true)
	if err != nil {
		return nil, err
	}
	c.Outcome = docflow.StepClaimOK
	c.Step.Status = docflow.StepRunning
	if err := unmarshalObject(cfg, &c.Step.Config); err != nil {
		return nil, claimDecodeError{err}
	}
	if err := unmarshalObject(opts, &c.Options); err != nil {
		return nil, claimDecodeError{err}
	}
	if nextType != nil {
		c.Next = &docflow.RunStep{RunID: c.Step.RunID, Position: c.Step.Position + 1, StepType: *nextType, Status: docflow.StepQueued}
	}
	c.File = f
	c.File.Status = docflow.StatusProcessing
	return c, nil
}

// extraRow scans a row whose leading columns are a file's, followed by
// extra ones.
type extraRow struct {
	pgx.Row
	extra []any
}

func (r extraRow) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra...)...) }

// whyNotClaimed tells a finished or stale task from a busy step, and marks
// a run whose file moved on to a newer run as superseded.
func (s *RunStore) whyNotClaimed(ctx context.Context, req docflow.StepClaimRequest) (*docflow.StepClaim, error) {
	var runStatus, taskID string
	var stepStatus *string
	var attempts *int
	var leaseLive *bool
	err := s.db.Pool.QueryRow(ctx, `SELECT r.status, f.task_id, rs.status, rs.attempts, rs.lease_until > now()
		FROM runs r JOIN files f ON f.id = r.file_id
		LEFT JOIN run_steps rs ON rs.run_id = r.id AND rs.position = $2
		WHERE r.id = $1`, req.RunID, req.Position).Scan(&runStatus, &taskID, &stepStatus, &attempts, &leaseLive)
	if errors.Is(err, pgx.ErrNoRows) {
		return &docflow.StepClaim{Outcome: docflow.StepClaimDone, Reason: "run not found"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim step %s/%d: %w", req.RunID, req.Position, err)
	}
	switch {
	case runStatus != docflow.RunPending && runStatus != docflow.RunProcessing:
		return &docflow.StepClaim{Outcome: docflow.StepClaimDone, Reason: "run " + runStatus}, nil
	case taskID != "" && taskID != req.RunID:
		if err := s.SupersedeRun(ctx, req.RunID); err != nil {
			return nil, err
		}
		return &docflow.StepClaim{Outcome: docflow.StepClaimDone, Reason: "run superseded"}, nil
	case stepStatus == nil:
		return &docflow.StepClaim{Outcome: docflow.StepClaimDone, Reason: "step not found"}, nil
	case *stepStatus == docflow.StepRunning && *attempts <= req.Attempt && leaseLive != nil && *leaseLive:
		return &docflow.StepClaim{Outcome: docflow.StepClaimBusy, Reason: "leased by another worker"}, nil
	}
	return &docflow.StepClaim{Outcome: docflow.StepClaimDone, Reason: fmt.Sprintf("step %s at attempt %d", *stepStatus, *attempts)}, nil
}

// RenewLease extends the caller's lease to ttl from now; false when it
// lost the lease. A lease that lapsed is renewed all the same while no
// other worker took the step over.
//
// NOTE: the renewal commits asynchronously (synchronous_commit off, as a
// claim does): it waits for no WAL flush, so a disk busy with other
// writes (a checkpoint) cannot hold it past the lease's end, and losing
// it in a server crash only shortens a lease that the crash ended anyway.
func (s *RunStore) RenewLease(ctx context.Context, runID string, position int, worker string, ttl time.Duration) (_ bool, err error) {
	defer mapDBError(&err)
	var n int
	err = s.db.Pool.QueryRow(ctx, `WITH u AS (
			UPDATE run_steps SET lease_until = now() + $4 * interval '1 millisecond'
			WHERE run_id=$1 AND position=$2 AND lease_owner=$3 AND status='running'
			RETURNING 1)
		SELECT (SELECT count(*) FROM u), set_config('synchronous_commit', 'off', true)`,
		runID, position, worker, ttl.Milliseconds()).Scan(&n, new(string))
	if err != nil {
		return false, fmt.Errorf("renew lease %s/%d: %w", runID, position, err)
	}
	return n == 1, nil
}
