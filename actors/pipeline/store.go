package pipeline

import (
	"context"
	"time"

	"docflow"
)

// Store is what the engine asks of storage: the runs and steps it leases,
// records, routes, recovers and fails, and the workers' heartbeats
// (storage/postgres.RunStore). Every write that moves a run forward writes
// the processing log, the file's fields and the outbox messages for what
// comes next in one transaction, and is guarded so that a repeated write (a
// redelivered task, a retried commit) changes nothing.
//
// Errors carry docflow codes: EUNAVAILABLE while the database is
// unreachable or a transaction lost a conflict (the engine waits and tries
// again), ENOTFOUND when a row referred to is gone. Anything else is a
// refused statement, which no retry cures.
//
// The contract is tested by actors/pipeline/storetest.
type Store interface {
	Claims
	Results
	Routing
	Recovery
	Workers
	QueueStore
}

// Claims leases step attempts to workers.
type Claims interface {
	// ClaimSteps leases each step attempt to its worker for its TTL when
	// the task may run: the step is queued, waiting for this retry
	// attempt, or running under an expired lease (or one of the worker's
	// own, or one of a worker whose heartbeat is older than DeadAfter);
	// the run is unfinished and is its file's current run. The run and the
	// file become processing. A run whose file moved on to a newer run is
	// superseded. One answer per request, in order.
	//
	// A claim may commit asynchronously: losing it in a server crash only
	// puts the step back to where it was, and the step's result,
	// committed durably later, makes the claim durable with it.
	ClaimSteps(ctx context.Context, reqs []docflow.StepClaimRequest) []docflow.StepClaimResult
	// RenewLease extends the worker's lease to ttl from now; false when it
	// lost the lease. A lapsed lease is renewed while no other worker took
	// the step over.
	RenewLease(ctx context.Context, runID string, position int, worker string, ttl time.Duration) (bool, error)
}

// Results records the outcomes of step attempts. Nothing is written
// (Recorded false) when the caller no longer holds the step: it was
// recorded already or its lease was taken over.
type Results interface {
	// CompleteStep records a successful attempt: the step result, the log
	// row, the file's changed fields, the embedding and deliveries, the end
	// of the run when FinishRun is set, and msgs (the next task or the
	// completion event).
	CompleteStep(ctx context.Context, rec docflow.StepRecord, msgs ...docflow.OutboxMessage) (*docflow.RunWrite, error)
	// CompleteSteps records several successful attempts (as CompleteStep
	// each) in one transaction; one answer per item, in order. On error
	// nothing was written.
	CompleteSteps(ctx context.Context, items []docflow.StepCompletion) ([]*docflow.RunWrite, error)
	// RetryStep records a failed attempt that will be retried: the step
	// waits in status retrying; msgs carries the delayed task.
	RetryStep(ctx context.Context, rec docflow.StepRecord, msgs ...docflow.OutboxMessage) (*docflow.RunWrite, error)
	// FailStep records the last failed attempt: the step, the run and the
	// file become failed; msgs carries the dead letter and the failure
	// event.
	FailStep(ctx context.Context, rec docflow.StepRecord, msgs ...docflow.OutboxMessage) (*docflow.RunWrite, error)
	// MarkSent marks outbox rows published by write-through (the ids of a
	// RunWrite).
	MarkSent(ctx context.Context, ids []int64) error
}

// Routing starts routed runs.
type Routing interface {
	// RunForRouting returns the run and its file; ENOTFOUND when either is
	// gone.
	RunForRouting(ctx context.Context, runID string) (*docflow.RoutingState, error)
	// SupersedeRun ends an unfinished run whose file started a newer run.
	SupersedeRun(ctx context.Context, runID string) error
	// StartRun records the run's steps (queued, positions from 0) as
	// copies of steps, the routing log row and msgs (the first task, or the
	// completion event when steps is empty, in which case the run completes
	// at once). Nothing is written (Recorded false) when the run was routed
	// already or is no longer pending. ENOTFOUND when the pipeline is gone.
	StartRun(ctx context.Context, runID string, fileID int64, pipelineID *int64, steps []*docflow.PipelineStep,
		logMessage string, msgs ...docflow.OutboxMessage) (*docflow.RunWrite, error)
}

// Recovery finds unfinished and stalled runs.
type Recovery interface {
	// UnfinishedRuns pages through pending and processing runs by id
	// after afterID.
	UnfinishedRuns(ctx context.Context, afterID string, limit int) ([]docflow.UnfinishedRun, error)
	// Republish enqueues msgs in a transaction of their own.
	Republish(ctx context.Context, msgs ...docflow.OutboxMessage) error
	// BusyStepTypes returns the step types of which some step runs under
	// a live lease now.
	BusyStepTypes(ctx context.Context) ([]string, error)
	// StalledRuns returns up to limit unfinished runs that made no
	// progress for timeout (by the database's clock), with no step under a
	// live lease, whose current step is not queued behind one of busy.
	StalledRuns(ctx context.Context, timeout time.Duration, busy []string, limit int) ([]docflow.StalledRun, error)
	// FailRun fails a run that is still stalled (StalledRuns' condition,
	// checked again under the run's lock): its unfinished steps, the run
	// and the file become failed, with a log row and msgs. False when the
	// run moved on meanwhile or another worker holds it.
	FailRun(ctx context.Context, runID string, timeout time.Duration, busy []string, message string, msgs ...docflow.OutboxMessage) (bool, error)
}

// Workers records the worker processes' heartbeats.
type Workers interface {
	// Heartbeat records that the worker is alive (and what it is doing).
	Heartbeat(ctx context.Context, w docflow.WorkerBeat) error
	// RemoveWorker deletes a stopping worker's heartbeat.
	RemoveWorker(ctx context.Context, id string) error
}

// QueueStore answers the database half of the queue endpoints.
type QueueStore interface {
	// QueueSummary reports the workers seen within alive, the steps
	// running and waiting for a retry, and the files by status.
	QueueSummary(ctx context.Context, alive time.Duration) (*docflow.QueueStats, error)
	// PendingCount counts runs queued or in progress.
	PendingCount(ctx context.Context) (int, error)
}

// Pipelines finds the pipelines and routing rules the router picks from
// (storage/postgres.PipelineStore and RoutingStore). Errors carry
// docflow codes as Store's do.
type Pipelines interface {
	// FindPipelineByID returns the pipeline with its steps, or ENOTFOUND.
	FindPipelineByID(ctx context.Context, id int64) (*docflow.Pipeline, error)
	// DefaultPipeline returns the owner's active default pipeline, else
	// the active system default, else ENOTFOUND.
	DefaultPipeline(ctx context.Context, ownerID *string) (*docflow.Pipeline, error)
}

// Rules finds routing rules.
type Rules interface {
	// ActiveRules returns the active rules that apply to the owner, whose
	// target pipeline is active: the owner's first, then the system's, each
	// by position.
	ActiveRules(ctx context.Context, ownerID *string) ([]*docflow.RoutingRule, error)
}
