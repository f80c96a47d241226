package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
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

var _ docflow.RunService = (*RunStore)(nil)

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

// Written is what a recording method wrote.
type Written struct {
	// Recorded is false when the write was refused by its guard (the step
	// is no longer the caller's, the run was routed already…): nothing was
	// written.
	Recorded bool
	// OutboxIDs are the outbox rows written (write-through stores only).
	OutboxIDs []int64
}

// enqueue writes msgs as outbox rows in tx: for write-through quiet and
// held back for the grace, returning their ids.
func (s *RunStore) enqueue(ctx context.Context, tx pgx.Tx, msgs []docflow.OutboxMessage) ([]int64, error) {
	if s.direct <= 0 || len(msgs) == 0 {
		return nil, Enqueue(ctx, tx, msgs...)
	}
	return enqueueQuiet(ctx, tx, msgs, s.direct)
}

// MarkSent marks write-through rows published (Outbox.MarkSent).
func (s *RunStore) MarkSent(ctx context.Context, ids []int64) error {
	return markSent(ctx, s.db, ids)
}

// DB returns the database the store writes to.
func (s *RunStore) DB() *DB { return s.db }

// Claim outcomes.
const (
	// ClaimOK: the step is leased to the caller; run it.
	ClaimOK = iota
	// ClaimDone: nothing to do (recorded already, stale attempt, run
	// finished, superseded or gone); acknowledge the task.
	ClaimDone
	// ClaimBusy: another worker holds a live lease on the step; try later.
	ClaimBusy
)

// ClaimRequest asks for the lease of one step attempt.
type ClaimRequest struct {
	RunID    string
	Position int
	Attempt  int
	Worker   string
	TTL      time.Duration
	// DeadAfter: a lease holder without a heartbeat for this long is dead
	// (default 10 s).
	DeadAfter time.Duration
}

// Claim is the answer to a ClaimRequest.
type Claim struct {
	Outcome int
	Reason  string // why ClaimDone or ClaimBusy
	Step    docflow.RunStep
	File    *docflow.File
	Options map[string]any
	// Next is the step after this one (nil for the last step).
	Next *docflow.RunStep
	// Total is the number of steps of the run.
	Total int
}

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
func (s *RunStore) ClaimStep(ctx context.Context, req ClaimRequest) (*Claim, error) {
	r := s.ClaimSteps(ctx, []ClaimRequest{req})[0]
	return r.Claim, r.Err
}

// ClaimResult is the answer to one request of ClaimSteps.
type ClaimResult struct {
	Claim *Claim
	Err   error
}

// ClaimSteps makes several claims (as ClaimStep each) in one statement,
// committed asynchronously like a single claim.
func (s *RunStore) ClaimSteps(ctx context.Context, reqs []ClaimRequest) []ClaimResult {
	out := make([]ClaimResult, len(reqs))
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
	rows, err := s.db.Pool.Query(ctx, claimsSQL, runIDs, positions, attempts, workers, ttls, deads)
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

func failAll(out []ClaimResult, err error) []ClaimResult {
	for i := range out {
		out[i] = ClaimResult{Err: err}
	}
	return out
}

// claimsSQL leases steps (see ClaimStep), many in one statement; each
// answer row ends with the ordinal (from 1) of its request.
const claimsSQL = `
		WITH i AS (
			SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::bigint[], $6::bigint[]) WITH ORDINALITY
				AS i(run_id, pos, attempt, worker, ttl, dead, n)
		), c AS (
			UPDATE run_steps rs SET status='running', attempts=i.attempt, started_at=now(), finished_at=NULL,
				lease_owner=i.worker, lease_until=now() + i.ttl * interval '1 millisecond'
			FROM i, runs r, files f
			WHERE rs.run_id=i.run_id AND rs.position=i.pos AND r.id=rs.run_id AND f.id=r.file_id
			  AND r.status IN ('pending', 'processing') AND (f.task_id = '' OR f.task_id = r.id)
			  AND (rs.status='queued'
			       OR (rs.status='retrying' AND i.attempt > rs.attempts)
			       OR (rs.status='running' AND i.attempt >= rs.attempts
			           AND (rs.lease_until IS NULL OR rs.lease_until < now() OR rs.lease_owner = i.worker
			                OR NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = rs.lease_owner
			                               AND w.last_seen > now() - i.dead * interval '1 millisecond'))))
			RETURNING ` + fileColsText + `, rs.run_id, rs.position, rs.step_type, rs.label, rs.config, r.options, i.n
		), r AS (
			UPDATE runs SET status='processing', started_at=COALESCE(started_at, now()), updated_at=now()
			FROM c WHERE runs.id = c.run_id AND runs.status = 'pending'
		), fs AS (
			UPDATE files SET status='processing', updated_at=now()
			FROM c WHERE files.id = c.id AND files.status = 'pending'
		)
		SELECT c.*,
			(SELECT n.step_type FROM run_steps n WHERE n.run_id=c.run_id AND n.position=c.position+1),
			(SELECT count(*) FROM run_steps t WHERE t.run_id=c.run_id),
			set_config('synchronous_commit', 'off', true)
		FROM c`

func claimArgs(req ClaimRequest) []any {
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
func scanClaim(row pgx.Row, afterOptions ...any) (*Claim, error) {
	c := &Claim{}
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
	c.Outcome = ClaimOK
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
func (s *RunStore) whyNotClaimed(ctx context.Context, req ClaimRequest) (*Claim, error) {
	var runStatus, taskID string
	var stepStatus *string
	var attempts *int
	var leaseLive *bool
	err := s.db.Pool.QueryRow(ctx, `SELECT r.status, f.task_id, rs.status, rs.attempts, rs.lease_until > now()
		FROM runs r JOIN files f ON f.id = r.file_id
		LEFT JOIN run_steps rs ON rs.run_id = r.id AND rs.position = $2
		WHERE r.id = $1`, req.RunID, req.Position).Scan(&runStatus, &taskID, &stepStatus, &attempts, &leaseLive)
	if errors.Is(err, pgx.ErrNoRows) {
		return &Claim{Outcome: ClaimDone, Reason: "run not found"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim step %s/%d: %w", req.RunID, req.Position, err)
	}
	switch {
	case runStatus != docflow.RunPending && runStatus != docflow.RunProcessing:
		return &Claim{Outcome: ClaimDone, Reason: "run " + runStatus}, nil
	case taskID != "" && taskID != req.RunID:
		if err := s.SupersedeRun(ctx, req.RunID); err != nil {
			return nil, err
		}
		return &Claim{Outcome: ClaimDone, Reason: "run superseded"}, nil
	case stepStatus == nil:
		return &Claim{Outcome: ClaimDone, Reason: "step not found"}, nil
	case *stepStatus == docflow.StepRunning && *attempts <= req.Attempt && leaseLive != nil && *leaseLive:
		return &Claim{Outcome: ClaimBusy, Reason: "leased by another worker"}, nil
	}
	return &Claim{Outcome: ClaimDone, Reason: fmt.Sprintf("step %s at attempt %d", *stepStatus, *attempts)}, nil
}

// RenewLease extends the caller's lease to ttl from now; false when it
// lost the lease. A lease that lapsed is renewed all the same while no
// other worker took the step over.
//
// NOTE: the renewal commits asynchronously (synchronous_commit off, as a
// claim does): it waits for no WAL flush, so a disk busy with other
// writes (a checkpoint) cannot hold it past the lease's end, and losing
// it in a server crash only shortens a lease that the crash ended anyway.
func (s *RunStore) RenewLease(ctx context.Context, runID string, position int, worker string, ttl time.Duration) (bool, error) {
	var n int
	err := s.db.Pool.QueryRow(ctx, `WITH u AS (
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

// StepRecord is the outcome of one step attempt to record.
type StepRecord struct {
	RunID    string
	Position int
	Attempt  int
	Worker   string
	FileID   int64
	StepType string
	// Status is completed or skipped (CompleteStep), retrying (RetryStep)
	// or failed (FailStep).
	Status  string
	Message string
	// Before and After are the file as the step got it and as it left it;
	// the changed step-writable fields are saved (nil: no change).
	Before, After  *docflow.File
	Embedding      []float32
	EmbeddingModel string
	Deliveries     []docflow.Delivery
	// FinishRun ends the run with this status (completed, duplicate) after
	// the step; "" when more steps follow.
	FinishRun string
}

// CompleteStep records a successful attempt: the step result, the log row,
// the file's changed fields, the embedding and deliveries, the end of the
// run when FinishRun is set, and msgs (the next task or the completion
// event). Nothing is written (Recorded false) when the caller no longer
// holds the step (recorded already, or its lease was taken over).
func (s *RunStore) CompleteStep(ctx context.Context, rec StepRecord, msgs ...docflow.OutboxMessage) (*Written, error) {
	return s.recordStep(ctx, rec, msgs)
}

// RetryStep records a failed attempt that will be retried: the step waits
// in status retrying; msgs carries the delayed task.
func (s *RunStore) RetryStep(ctx context.Context, rec StepRecord, msgs ...docflow.OutboxMessage) (*Written, error) {
	rec.Status, rec.FinishRun, rec.After = docflow.StepRetrying, "", nil
	return s.recordStep(ctx, rec, msgs)
}

// FailStep records the last failed attempt: the step, the run and the file
// become failed; msgs carries the dead letter and the failure event.
func (s *RunStore) FailStep(ctx context.Context, rec StepRecord, msgs ...docflow.OutboxMessage) (*Written, error) {
	rec.Status, rec.FinishRun, rec.After = docflow.StepFailed, docflow.RunFailed, nil
	return s.recordStep(ctx, rec, msgs)
}

// fastEligible: the result changes nothing but the run (recordStepFast).
func fastEligible(rec StepRecord) bool {
	return rec.Embedding == nil && len(rec.Deliveries) == 0 && !fileChanged(rec)
}

func (s *RunStore) recordStep(ctx context.Context, rec StepRecord, msgs []docflow.OutboxMessage) (*Written, error) {
	if fastEligible(rec) {
		return s.recordStepFast(ctx, rec, msgs)
	}
	var w *Written
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var err error
		w, err = s.recordInTx(ctx, tx, rec, msgs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record step %s/%d: %w", rec.RunID, rec.Position, err)
	}
	return w, nil
}

// recordInTx writes one attempt's outcome in tx; Recorded is false (and
// nothing is written) when the caller no longer holds the step.
func (s *RunStore) recordInTx(ctx context.Context, tx pgx.Tx, rec StepRecord, msgs []docflow.OutboxMessage) (*Written, error) {
	if fastEligible(rec) {
		q, args, err := s.fastRecord(rec, msgs)
		if err != nil {
			return nil, err
		}
		return s.scanFastRecord(tx.QueryRow(ctx, q, args...))
	}
	w := &Written{}
	err := func() error {
		finished := "finished_at = now()"
		if rec.Status == docflow.StepRetrying {
			finished = "finished_at = NULL"
		}
		var fileStatus string
		err := tx.QueryRow(ctx, `
			WITH s AS (
				UPDATE run_steps SET status=$5, message=$6, `+finished+`, lease_owner='', lease_until=NULL
				WHERE run_id=$1 AND position=$2 AND attempts=$3 AND lease_owner=$4 AND status='running'
				RETURNING run_id
			), l AS (
				INSERT INTO processing_logs (file_id, task_id, step_name, status, message)
				SELECT $7, $1, $8, $5, $6 FROM s
			)
			SELECT f.status FROM s, files f WHERE f.id = $7`,
			rec.RunID, rec.Position, rec.Attempt, rec.Worker, rec.Status, rec.Message, rec.FileID, rec.StepType).Scan(&fileStatus)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // not ours (any more): change nothing
		}
		if err != nil {
			return err
		}
		w.Recorded = true
		if err := saveFileChanges(ctx, tx, rec); err != nil {
			return err
		}
		if rec.Embedding != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO file_embeddings (file_id, dimensions, model, vector, updated_at)
				VALUES ($1, $2, $3, $4, now()) ON CONFLICT (file_id) DO UPDATE
				SET dimensions=EXCLUDED.dimensions, model=EXCLUDED.model, vector=EXCLUDED.vector, updated_at=now()`,
				rec.FileID, len(rec.Embedding), rec.EmbeddingModel, rec.Embedding); err != nil {
				return fmt.Errorf("save embedding: %w", err)
			}
		}
		for _, d := range rec.Deliveries {
			if _, err := tx.Exec(ctx, `INSERT INTO deliveries (file_id, run_id, destination, status, remote_path, message)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id, destination) DO UPDATE
				SET status=EXCLUDED.status, remote_path=EXCLUDED.remote_path, message=EXCLUDED.message`,
				rec.FileID, rec.RunID, d.Destination, d.Status, d.RemotePath, d.Message); err != nil {
				return fmt.Errorf("save delivery: %w", err)
			}
		}
		if rec.FinishRun != "" || (rec.Status != docflow.StepSucceeded && rec.Status != docflow.StepSkipped) {
			if err := finishRun(ctx, tx, rec.RunID, rec.FileID, rec.FinishRun, rec.Message); err != nil {
				return err
			}
		}
		w.OutboxIDs, err = s.enqueue(ctx, tx, msgs)
		return err
	}()
	if err != nil {
		return nil, err
	}
	return w, nil
}

// recordStepFast is recordStep for a result that changes nothing but the
// run: one statement (an implicit transaction), one round trip.
func (s *RunStore) recordStepFast(ctx context.Context, rec StepRecord, msgs []docflow.OutboxMessage) (*Written, error) {
	q, args, err := s.fastRecord(rec, msgs)
	if err != nil {
		return nil, fmt.Errorf("record step %s/%d: %w", rec.RunID, rec.Position, err)
	}
	w, err := s.scanFastRecord(s.db.Pool.QueryRow(ctx, q, args...))
	if err != nil {
		return nil, fmt.Errorf("record step %s/%d: %w", rec.RunID, rec.Position, err)
	}
	return w, nil
}

// fastRecordSQL records a step result that changes nothing but the run.
//
// NOTE: the runs row is rewritten only when the run ends or a step fails
// (retrying): a completed or skipped step's progress is its own
// finished_at, which stall detection reads (runProgress). Rewriting the run
// on every step moved its updated_at index entry each time.
var fastRecordSQL = `
		WITH s AS (
			UPDATE run_steps SET status=$5, message=$6, finished_at=CASE WHEN $5 = 'retrying' THEN NULL ELSE now() END,
				lease_owner='', lease_until=NULL
			WHERE run_id=$1 AND position=$2 AND attempts=$3 AND lease_owner=$4 AND status='running'
			RETURNING run_id
		), l AS (
			INSERT INTO processing_logs (file_id, task_id, step_name, status, message)
			SELECT $7, $1, $8, $5, $6 FROM s
		), r AS (
			UPDATE runs SET updated_at=now(),
				status = CASE WHEN $9 = '' THEN status ELSE $9 END,
				message = CASE WHEN $9 = '' THEN message ELSE $10 END,
				finished_at = CASE WHEN $9 = '' THEN finished_at ELSE now() END
			WHERE id=$1 AND ($9 <> '' OR $5 NOT IN ('completed', 'skipped')) AND EXISTS (SELECT 1 FROM s)
		), f AS (
			UPDATE files SET status=$9, updated_at=now()
			WHERE $9 <> '' AND id=$7 AND (task_id=$1 OR task_id='') AND EXISTS (SELECT 1 FROM s)
		), o AS (
			` + outboxInsert{at: 11, grace: 17, where: "EXISTS (SELECT 1 FROM s)", returning: true}.sql() + `
		)
		-- NOTE: set_config runs while the statement executes, before the
		-- outbox trigger fires at its end.
		SELECT (SELECT count(*) FROM s), (SELECT COALESCE(array_agg(id ORDER BY id), '{}') FROM o),
			set_config('docflow.outbox_quiet', $16, true)`

// fastRecord returns the statement and arguments of recordStepFast.
func (s *RunStore) fastRecord(rec StepRecord, msgs []docflow.OutboxMessage) (string, []any, error) {
	a, err := outboxArrays(msgs)
	if err != nil {
		return "", nil, err
	}
	runMessage := rec.Message
	if rec.FinishRun == docflow.RunCompleted || rec.FinishRun == docflow.RunDuplicate {
		runMessage = ""
	}
	quiet := "off"
	if s.direct > 0 {
		quiet = "on"
	}
	return fastRecordSQL, []any{rec.RunID, rec.Position, rec.Attempt, rec.Worker, rec.Status, rec.Message, rec.FileID, rec.StepType,
		rec.FinishRun, runMessage, a.topics, a.keys, a.payloads, a.headers, a.avail, quiet, max(0, s.direct.Milliseconds())}, nil
}

func (s *RunStore) scanFastRecord(row pgx.Row) (*Written, error) {
	var n int
	var ids []int64
	if err := row.Scan(&n, &ids, new(string)); err != nil {
		return nil, err
	}
	w := &Written{Recorded: n == 1}
	if s.direct > 0 {
		w.OutboxIDs = ids
	}
	return w, nil
}

// StepCompletion is one successful attempt for CompleteSteps.
type StepCompletion struct {
	Record StepRecord
	Msgs   []docflow.OutboxMessage
}

// CompleteSteps records several successful attempts (as CompleteStep
// each) in one transaction: one commit, and for results that change
// nothing but the run, one round trip for all of them. The answer holds one
// Written per item, in order. On error nothing was written.
func (s *RunStore) CompleteSteps(ctx context.Context, items []StepCompletion) ([]*Written, error) {
	out := make([]*Written, len(items))
	if len(items) == 0 {
		return out, nil
	}
	fast := true
	for _, it := range items {
		if !fastEligible(it.Record) {
			fast = false
			break
		}
	}
	// NOTE: rows are locked in (run, position) order, whatever order the
	// results came in, so that two batches cannot wait for each other.
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		ra, rb := items[order[a]].Record, items[order[b]].Record
		if ra.RunID != rb.RunID {
			return ra.RunID < rb.RunID
		}
		return ra.Position < rb.Position
	})
	if !fast {
		err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
			for _, i := range order {
				w, err := s.recordInTx(ctx, tx, items[i].Record, items[i].Msgs)
				if err != nil {
					return err
				}
				out[i] = w
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("record %d steps: %w", len(items), err)
		}
		return out, nil
	}
	// One statement for every result: one round trip, one executor start,
	// one outbox trigger, committed (synchronously) once.
	recs := make([]StepRecord, len(order))
	msgs := make([][]docflow.OutboxMessage, len(order))
	for k, i := range order {
		recs[k], msgs[k] = items[i].Record, items[i].Msgs
	}
	q, args, err := s.fastRecords(recs, msgs)
	if err != nil {
		return nil, fmt.Errorf("record %d steps: %w", len(items), err)
	}
	var recorded []int32
	var ids []int64
	if err := s.db.Pool.QueryRow(ctx, q, args...).Scan(&recorded, &ids, new(string)); err != nil {
		return nil, fmt.Errorf("record %d steps: %w", len(items), err)
	}
	// recorded holds the ordinals (from 1, in order) of the results
	// written; the outbox ids were drawn in message order, results in
	// order, so they split back by count.
	for k, i := range order {
		w := &Written{}
		if len(recorded) > 0 && int(recorded[0]) == k+1 {
			recorded = recorded[1:]
			w.Recorded = true
			if s.direct > 0 {
				n := min(len(msgs[k]), len(ids))
				w.OutboxIDs, ids = ids[:n:n], ids[n:]
			}
		}
		out[i] = w
	}
	return out, nil
}

// fastRecordsSQL is fastRecordSQL for many results at once; the outbox
// messages carry the ordinal of their result.
var fastRecordsSQL = `
		WITH i AS (
			SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[],
				$9::text[], $10::text[]) WITH ORDINALITY
				AS i(run_id, pos, attempt, worker, status, message, file_id, step_type, finish, run_message, n)
		), s AS (
			UPDATE run_steps rs SET status=i.status, message=i.message,
				finished_at=CASE WHEN i.status = 'retrying' THEN NULL ELSE now() END, lease_owner='', lease_until=NULL
			FROM i
			WHERE rs.run_id=i.run_id AND rs.position=i.pos AND rs.attempts=i.attempt AND rs.lease_owner=i.worker AND rs.status='running'
			RETURNING i.n, i.run_id, i.status, i.message, i.file_id, i.step_type, i.finish, i.run_message
		), l AS (
			INSERT INTO processing_logs (file_id, task_id, step_name, status, message)
			SELECT file_id, run_id, step_type, status, message FROM s ORDER BY n
		), r AS (
			UPDATE runs SET updated_at=now(),
				status = CASE WHEN s.finish = '' THEN runs.status ELSE s.finish END,
				message = CASE WHEN s.finish = '' THEN runs.message ELSE s.run_message END,
				finished_at = CASE WHEN s.finish = '' THEN runs.finished_at ELSE now() END
			FROM s WHERE runs.id = s.run_id AND (s.finish <> '' OR s.status NOT IN ('completed', 'skipped'))
		), f AS (
			UPDATE files SET status=s.finish, updated_at=now()
			FROM s WHERE s.finish <> '' AND files.id = s.file_id AND (files.task_id = s.run_id OR files.task_id = '')
		), o AS (
			` + outboxInsert{at: 12, item: 11, grace: 18, where: "m.item IN (SELECT n FROM s)", returning: true}.sql() + `
		)
		SELECT (SELECT COALESCE(array_agg(n::int ORDER BY n), '{}') FROM s), (SELECT COALESCE(array_agg(id ORDER BY id), '{}') FROM o),
			set_config('docflow.outbox_quiet', $17, true)`

// fastRecords returns the statement and arguments recording recs (each
// fastEligible) with their messages.
func (s *RunStore) fastRecords(recs []StepRecord, msgs [][]docflow.OutboxMessage) (string, []any, error) {
	n := len(recs)
	runIDs, workers, statuses, messages, types, finishes, runMessages :=
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	positions, attempts := make([]int32, n), make([]int32, n)
	fileIDs := make([]int64, n)
	var all []docflow.OutboxMessage
	var items []int32
	for k, rec := range recs {
		runIDs[k], positions[k], attempts[k], workers[k] = rec.RunID, int32(rec.Position), int32(rec.Attempt), rec.Worker
		statuses[k], messages[k], fileIDs[k], types[k], finishes[k] = rec.Status, rec.Message, rec.FileID, rec.StepType, rec.FinishRun
		runMessages[k] = rec.Message
		if rec.FinishRun == docflow.RunCompleted || rec.FinishRun == docflow.RunDuplicate {
			runMessages[k] = ""
		}
		for _, m := range msgs[k] {
			all = append(all, m)
			items = append(items, int32(k+1))
		}
	}
	a, err := outboxArrays(all)
	if err != nil {
		return "", nil, err
	}
	if items == nil {
		items = []int32{}
	}
	quiet := "off"
	if s.direct > 0 {
		quiet = "on"
	}
	return fastRecordsSQL, []any{runIDs, positions, attempts, workers, statuses, messages, fileIDs, types, finishes, runMessages,
		items, a.topics, a.keys, a.payloads, a.headers, a.avail, quiet, max(0, s.direct.Milliseconds())}, nil
}

// fileChanged reports whether the step changed a step-writable field.
func fileChanged(rec StepRecord) bool {
	if rec.Before == nil || rec.After == nil {
		return false
	}
	b, a := rec.Before, rec.After
	return a.ProcessedBlob != b.ProcessedBlob || !reflect.DeepEqual(a.DocumentTitle, b.DocumentTitle) ||
		a.OCRText != b.OCRText || !reflect.DeepEqual(a.OCRQualityScore, b.OCRQualityScore) ||
		!reflect.DeepEqual(a.AIMetadata, b.AIMetadata) || a.Language != b.Language ||
		!slices.Equal(a.StorageProviders, b.StorageProviders) || !reflect.DeepEqual(a.DuplicateOf, b.DuplicateOf)
}

// finishRun ends the run with status (nothing when ""), or just notes its
// progress, and gives the file the run's final status while the run is the
// file's current one.
func finishRun(ctx context.Context, tx pgx.Tx, runID string, fileID int64, status, message string) error {
	if status == "" {
		_, err := tx.Exec(ctx, `UPDATE runs SET updated_at=now() WHERE id=$1`, runID)
		return err
	}
	if status == docflow.RunCompleted {
		message = ""
	}
	if _, err := tx.Exec(ctx, `UPDATE runs SET status=$2, message=$3, finished_at=now(), updated_at=now() WHERE id=$1`,
		runID, status, message); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE files SET status=$3, updated_at=now() WHERE id=$1 AND (task_id=$2 OR task_id='')`,
		fileID, runID, status)
	return err
}

// saveFileChanges writes the step-writable fields that differ between
// rec.Before and rec.After.
func saveFileChanges(ctx context.Context, tx pgx.Tx, rec StepRecord) error {
	if rec.Before == nil || rec.After == nil {
		return nil
	}
	b, a := rec.Before, rec.After
	sets := ""
	args := []any{rec.FileID}
	set := func(col string, v any) {
		if sets != "" {
			sets += ", "
		}
		args = append(args, v)
		sets += col + "=$" + strconv.Itoa(len(args))
	}
	if a.ProcessedBlob != b.ProcessedBlob {
		set("processed_blob", a.ProcessedBlob)
	}
	if !reflect.DeepEqual(a.DocumentTitle, b.DocumentTitle) {
		set("document_title", a.DocumentTitle)
	}
	if a.OCRText != b.OCRText {
		set("ocr_text", a.OCRText)
	}
	if !reflect.DeepEqual(a.OCRQualityScore, b.OCRQualityScore) {
		set("ocr_quality_score", a.OCRQualityScore)
	}
	if !reflect.DeepEqual(a.AIMetadata, b.AIMetadata) {
		meta, err := json.Marshal(a.AIMetadata)
		if err != nil {
			return fmt.Errorf("ai_metadata: %w", err)
		}
		set("ai_metadata", meta) // the tags column follows by trigger
	}
	if a.Language != b.Language {
		set("language", a.Language)
	}
	if !slices.Equal(a.StorageProviders, b.StorageProviders) {
		set("storage_providers", providers(a.StorageProviders))
	}
	if !reflect.DeepEqual(a.DuplicateOf, b.DuplicateOf) {
		set("duplicate_of", a.DuplicateOf)
	}
	if sets == "" {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE files SET `+sets+`, updated_at=now() WHERE id=$1`, args...)
	if err != nil {
		return fmt.Errorf("save file %d: %w", rec.FileID, err)
	}
	return nil
}

// SupersedeRun ends a run whose file started a newer run.
func (s *RunStore) SupersedeRun(ctx context.Context, runID string) error {
	_, err := s.db.Pool.Exec(ctx, `
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

// RoutingState is what the router needs to know about a pending run.
type RoutingState struct {
	RunID      string
	Status     string
	Routed     bool // run steps exist already
	PipelineID *int64
	Options    map[string]any
	File       *docflow.File
}

// RunForRouting returns the run and its file; ENOTFOUND when either is gone.
func (s *RunStore) RunForRouting(ctx context.Context, runID string) (*RoutingState, error) {
	st := &RoutingState{RunID: runID}
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
	logMessage string, msgs ...docflow.OutboxMessage) (*Written, error) {
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
	if err != nil {
		return nil, fmt.Errorf("start run %s: %w", runID, err)
	}
	w := &Written{Recorded: n == 1}
	if s.direct > 0 && w.Recorded {
		w.OutboxIDs = ids
	}
	return w, nil
}

// runProgress is the SQL time of run alias's last progress: its own
// updated_at (start, retries, the end) or the last start or end of one of
// its steps (a completed step does not rewrite the run).
func runProgress(alias string) string {
	return `GREATEST(` + alias + `.updated_at, (SELECT max(GREATEST(p.started_at, p.finished_at)) FROM run_steps p WHERE p.run_id = ` + alias + `.id))`
}

// StalledRun is an unfinished run without progress.
type StalledRun struct {
	RunID    string
	FileID   int64
	OwnerID  *string
	Filename string
	Status   string
	// Step is the first step not completed or skipped (nil when none).
	Step *docflow.RunStep
}

// stalledSQL is the condition on run r (its table named r) of a stalled
// run: unfinished, no progress for $1 milliseconds by the database's
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
func (s *RunStore) StalledRuns(ctx context.Context, timeout time.Duration, busy []string, limit int) ([]StalledRun, error) {
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
	var out []StalledRun
	for rows.Next() {
		var r StalledRun
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
func (s *RunStore) BusyStepTypes(ctx context.Context) ([]string, error) {
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
func (s *RunStore) FailRun(ctx context.Context, runID string, timeout time.Duration, busy []string, message string, msgs ...docflow.OutboxMessage) (bool, error) {
	if busy == nil {
		busy = []string{}
	}
	failed := false
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
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

// UnfinishedRun is a run recovery may have to re-publish.
type UnfinishedRun struct {
	RunID      string
	FileID     int64
	OwnerID    *string
	PipelineID *int64
	Options    map[string]any
	Routed     bool
	// Step is the first step not completed or skipped (nil when routed and
	// none is left).
	Step      *docflow.RunStep
	LeaseLive bool
	// Pending is true when an unsent outbox row about the file exists (the
	// relay will publish it).
	Pending bool
}

// UnfinishedRuns pages through pending and processing runs by id after
// afterID.
func (s *RunStore) UnfinishedRuns(ctx context.Context, afterID string, limit int) ([]UnfinishedRun, error) {
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
	var out []UnfinishedRun
	for rows.Next() {
		var u UnfinishedRun
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
func (s *RunStore) Republish(ctx context.Context, msgs ...docflow.OutboxMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error { return Enqueue(ctx, tx, msgs...) })
}

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
func (s *RunStore) PendingCount(ctx context.Context) (int, error) {
	var n int
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM runs WHERE status IN ('pending', 'processing')`).Scan(&n); err != nil {
		return 0, fmt.Errorf("pending count: %w", err)
	}
	return n, nil
}

// WorkerBeat is one worker process's heartbeat.
type WorkerBeat struct {
	ID        string
	Host      string
	PID       int
	StepTypes []string
	InFlight  int
}

// Heartbeat records that the worker is alive.
func (s *RunStore) Heartbeat(ctx context.Context, w WorkerBeat) error {
	if w.StepTypes == nil {
		w.StepTypes = []string{}
	}
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO workers (id, host, pid, step_types, in_flight, started_at, last_seen)
		VALUES ($1, $2, $3, $4, $5, now(), now())
		ON CONFLICT (id) DO UPDATE SET step_types=EXCLUDED.step_types, in_flight=EXCLUDED.in_flight, last_seen=now()`,
		w.ID, w.Host, w.PID, w.StepTypes, w.InFlight)
	if err != nil {
		return fmt.Errorf("worker heartbeat: %w", err)
	}
	return nil
}

// RemoveWorker deletes a stopping worker's heartbeat (and any older than a day).
func (s *RunStore) RemoveWorker(ctx context.Context, id string) error {
	_, err := s.db.Pool.Exec(ctx, `DELETE FROM workers WHERE id=$1 OR last_seen < now() - interval '1 day'`, id)
	if err != nil {
		return fmt.Errorf("remove worker: %w", err)
	}
	return nil
}

// QueueSummary answers the database half of GET /api/queue/stats. Workers
// seen within alive count as online.
func (s *RunStore) QueueSummary(ctx context.Context, alive time.Duration) (*docflow.QueueStats, error) {
	q := &docflow.QueueStats{Queues: map[string]int64{}}
	w := &q.Workers
	w.Active = []docflow.ActiveTask{}
	err := s.db.Pool.QueryRow(ctx, `SELECT count(*), COALESCE(sum(in_flight), 0) FROM workers
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
