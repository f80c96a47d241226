package docflow

import "time"

// The records below are what the pipeline engine and its run store
// (actors/pipeline.Store, implemented by storage/postgres.RunStore) hand
// each other. They live here so that storage can produce them without
// importing the engine.

// Outcomes of a step claim (StepClaim.Outcome).
const (
	// StepClaimOK: the step is leased to the caller; run it.
	StepClaimOK = iota
	// StepClaimDone: nothing to do (recorded already, stale attempt, run
	// finished, superseded or gone); acknowledge the task.
	StepClaimDone
	// StepClaimBusy: another worker holds a live lease on the step; try
	// later.
	StepClaimBusy
)

// StepClaimRequest asks for the lease of one step attempt.
type StepClaimRequest struct {
	RunID    string
	Position int
	Attempt  int
	Worker   string
	TTL      time.Duration
	// DeadAfter: a lease holder without a heartbeat for this long is dead
	// (default 10 s).
	DeadAfter time.Duration
}

// StepClaim is the answer to a StepClaimRequest.
type StepClaim struct {
	Outcome int
	Reason  string // why StepClaimDone or StepClaimBusy
	Step    RunStep
	File    *File
	Options map[string]any
	// Next is the step after this one (nil for the last step).
	Next *RunStep
	// Total is the number of steps of the run.
	Total int
}

// StepClaimResult is the answer to one request of a batch of claims.
type StepClaimResult struct {
	Claim *StepClaim
	Err   error
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
	Before, After  *File
	Embedding      []float32
	EmbeddingModel string
	Deliveries     []Delivery
	// FinishRun ends the run with this status (completed, duplicate) after
	// the step; "" when more steps follow.
	FinishRun string
}

// StepCompletion is one successful attempt of a batch of results.
type StepCompletion struct {
	Record StepRecord
	Msgs   []OutboxMessage
}

// RunWrite is what a recording method of the run store wrote.
type RunWrite struct {
	// Recorded is false when the write was refused by its guard (the step
	// is no longer the caller's, the run was routed already…): nothing was
	// written.
	Recorded bool
	// OutboxIDs are the outbox rows written (write-through stores only),
	// in message order.
	OutboxIDs []int64
}

// RoutingState is what the router needs to know about a pending run.
type RoutingState struct {
	RunID      string
	Status     string
	Routed     bool // run steps exist already
	PipelineID *int64
	Options    map[string]any
	File       *File
}

// StalledRun is an unfinished run without progress.
type StalledRun struct {
	RunID    string
	FileID   int64
	OwnerID  *string
	Filename string
	Status   string
	// Step is the first step not completed or skipped (nil when none).
	Step *RunStep
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
	Step      *RunStep
	LeaseLive bool
	// Pending is true when an unsent outbox row about the file exists (the
	// relay will publish it).
	Pending bool
}

// WorkerBeat is one worker process's heartbeat.
type WorkerBeat struct {
	ID        string
	Host      string
	PID       int
	StepTypes []string
	InFlight  int
}
