package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"docflow"
	"docflow/actors"
	"docflow/streams"
)

// stepConsumer is one step type: a consumer group feeds its tasks to a
// kind of recovered actors ("step-<type>/0" … "step-<type>/<n-1>", n =
// the pool size), each running one task at a time.
//
// A task's path: the consumer's fetch goroutine decodes the delivery and
// sends it to the kind (Submit: an idle actor, else the kind's queue,
// whose length the consumer's in-flight budget bounds). The actor leases
// the step in Postgres (which also tells a redelivered, already recorded
// task to be acknowledged without running), runs the step under
// STEP_TIMEOUT (actors.RunTimed: a step that overruns is a timeout failure
// and its context is cancelled) and hands the outcome to a recording
// goroutine, which writes it (result, log, file fields and the next outbox
// row in one transaction), publishes what comes next and only then
// acknowledges the offset. The actor takes its next task meanwhile: the
// pool size bounds leasing and running, and nothing else does. Claims and
// successful results of concurrent tasks share statements and commits
// (groupcommit.go).
type stepConsumer struct {
	e        *Engine
	stepType string
	step     docflow.Step // nil: not available in this build
	actors   *actors.Pool[*stepTask, struct{}]
	run      runFunc
}

// stepTask is the message a step actor receives: one delivery and its
// decoded task.
type stepTask struct {
	d    *streams.Delivery
	task streams.StepTask
	// queued is when the task was enqueued (its envelope's time).
	queued time.Time
}

func newStepConsumer(e *Engine, stepType string) (*stepConsumer, error) {
	sc := &stepConsumer{e: e, stepType: stepType}
	sc.step, _ = e.cfg.Registry.Lookup(stepType)
	pool, err := actors.NewPool(e.cfg.Actors, actors.PoolConfig{
		Kind: "step-" + stepType, Size: e.poolSize(stepType), Log: e.log,
	}, sc.receive)
	if err != nil {
		return nil, fmt.Errorf("start pipeline engine: %w", err)
	}
	sc.actors = pool
	sc.run = withMetrics(e.cfg.Recorder, e.now)(sc.runTimed)
	return sc, nil
}

// runTimed runs one attempt of the step under STEP_TIMEOUT on the calling
// actor's behalf (a panic is a *actors.PanicError, an overrun
// actors.ErrTimeout).
func (sc *stepConsumer) runTimed(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	t := actors.RunTimed(ctx, sc.e.stepTimeout, func(ctx context.Context) (*docflow.StepResult, error) {
		if sc.step == nil {
			return &docflow.StepResult{Skipped: true, Message: fmt.Sprintf("%s is not available in this build", sc.stepType)}, nil
		}
		res, err := sc.step.Run(ctx, in)
		if err == nil && res == nil {
			res = &docflow.StepResult{}
		}
		return res, err
	})
	var perr *actors.PanicError
	if errors.As(t.Err, &perr) {
		sc.e.log.Error().Str("run", in.RunID).Int("position", in.Position).Str("panic", fmt.Sprint(perr.Value)).
			Str("stack", string(perr.Stack)).Msg("step panicked")
	}
	if t.Abandoned {
		sc.e.log.Warn().Str("run", in.RunID).Int("position", in.Position).Err(t.Err).Msg("step ignored its context; abandoned")
	}
	return t.Value, t.Err
}

// handle is the consumer's Handler: decode and send to the kind.
func (sc *stepConsumer) handle(d *streams.Delivery) {
	env, task, err := streams.Decode[streams.StepTask](d.Message.Value)
	if err != nil {
		d.Nack(err) // poison: dead-lettered, the consumer goes on
		return
	}
	if task.StepType != sc.stepType {
		d.Nack(streams.Poison(fmt.Errorf("task of step type %q on the %s topic", task.StepType, sc.stepType)))
		return
	}
	sc.submit(&stepTask{d: d, task: task, queued: env.TS})
}

// submit sends t to an actor of the kind. A closed kind (the engine
// stopping) leaves the delivery unresolved: it is redelivered.
func (sc *stepConsumer) submit(t *stepTask) {
	_ = sc.actors.Submit(actors.Job[*stepTask, struct{}]{ID: t.task.RunID, Msg: t, Done: func(r actors.Result[struct{}]) {
		// receive resolves its delivery itself; what reaches here is a
		// panic outside the step (a bug): dead-letter the task.
		if r.Err != nil && !errors.Is(r.Err, actors.ErrPoolClosed) {
			sc.giveUp(t.d, t.task, r.Err)
		}
	}})
}

// receive is what a step actor does with a task: lease, run, hand the
// outcome to recording. When the engine stops midway the delivery is left
// unresolved: it is redelivered.
func (sc *stepConsumer) receive(_ context.Context, t *stepTask) (struct{}, error) {
	e, d, task := sc.e, t.d, t.task
	// The lease runs from no earlier than now, by any clock.
	claimed := time.Now()
	var claim *docflow.StepClaim
	err := e.withDB("claim step", func(ctx context.Context) error {
		var err error
		claim, err = e.claims.Do(ctx, docflow.StepClaimRequest{RunID: task.RunID, Position: task.Position,
			Attempt: task.Attempt, Worker: e.cfg.WorkerID, TTL: e.leaseTTL, DeadAfter: 5 * e.cfg.Heartbeat})
		return err
	})
	if err != nil {
		sc.giveUp(d, task, err)
		return struct{}{}, nil
	}
	switch claim.Outcome {
	case docflow.StepClaimOK:
	case docflow.StepClaimDone:
		e.log.Debug().Str("run", task.RunID).Int("position", task.Position).Str("reason", claim.Reason).Msg("task acknowledged without running")
		d.Ack()
		return struct{}{}, nil
	default:
		// Busy: another worker runs this step. Free this actor and send
		// the task again once that one has finished or its lease lapsed.
		time.AfterFunc(e.leaseTTL/3, func() {
			if e.ctx.Err() == nil {
				sc.submit(t)
			}
		})
		return struct{}{}, nil
	}

	in := &docflow.StepInput{RunID: task.RunID, Position: task.Position, StepType: sc.stepType, Label: claim.Step.Label,
		Attempt: task.Attempt, Config: claim.Step.Config, Options: claim.Options, File: cloneFile(claim.File), Blobs: e.cfg.Blobs}
	res, runErr := func() (*docflow.StepResult, error) {
		defer sc.renewLease(task, claimed)() // stopped even when the run panics
		return sc.run(withStepMeta(e.ctx, stepMeta{queueWait: claimed.Sub(t.queued), worker: e.cfg.WorkerID}), in)
	}()
	if runErr != nil && e.ctx.Err() != nil {
		return struct{}{}, nil // stopping: the task is redelivered
	}
	e.spawn("step recording", func() {
		// A panic in recording dead-letters the delivery, as a panic in
		// the actor does.
		recorded := false
		defer func() {
			if !recorded {
				sc.giveUp(d, task, errRecordPanicked)
			}
		}()
		sc.record(d, task, claim, in.File, res, runErr)
		recorded = true
	})
	return struct{}{}, nil
}

// errRecordPanicked is the dead-letter reason of a task whose recording
// panicked.
var errRecordPanicked = errors.New("recording the step's outcome panicked")

// record writes a task's outcome and acknowledges its delivery.
func (sc *stepConsumer) record(d *streams.Delivery, task streams.StepTask, claim *docflow.StepClaim, after *docflow.File, res *docflow.StepResult, runErr error) {
	rec := docflow.StepRecord{RunID: task.RunID, Position: task.Position, Attempt: task.Attempt, Worker: sc.e.cfg.WorkerID,
		FileID: task.FileID, StepType: sc.stepType}
	var err error
	if runErr == nil {
		err = sc.recordSuccess(rec, claim, after, res)
	} else {
		err = sc.recordFailure(rec, task, claim.File, runErr)
	}
	if err != nil {
		sc.giveUp(d, task, err)
		return
	}
	d.Ack()
}

// giveUp handles an error that is not the database being away: the engine
// stopping leaves the task for redelivery; anything else (a bug, a refused
// statement) dead-letters it, since retrying cannot help.
func (sc *stepConsumer) giveUp(d *streams.Delivery, task streams.StepTask, err error) {
	if sc.e.ctx.Err() != nil {
		return
	}
	sc.e.log.Error().Err(err).Str("run", task.RunID).Int("position", task.Position).Msg("step task dead-lettered")
	d.Nack(streams.Poison(err))
}

// renewLease keeps the step's lease alive while it runs. The lease was
// granted no earlier than granted (when the claim was sent) for the lease
// TTL, and each renewal extends it to the TTL after it was sent.
//
// NOTE: renewals are timed from the grant, not from when the claim's
// answer arrived (a claim answered late left less of the lease than the
// first interval assumed); one that fails is tried again soon rather than
// a whole interval later; and an attempt may take until the lease ends
// rather than a fixed share of it, so a slow answer that still arrives in
// time keeps the lease. A lapsed lease is renewed as long as no other
// worker took the step over; renewing stops once it did.
func (sc *stepConsumer) renewLease(task streams.StepTask, granted time.Time) (stop func()) {
	ctx, cancel := context.WithCancel(sc.e.ctx)
	ttl := sc.e.leaseTTL
	expires := granted.Add(ttl)
	// NOTE: a timer, not a goroutine, waits between renewals: a renewal runs
	// on the timer's goroutine and re-arms it at its end, so one runs at a
	// time. armed counts the armed or running timer, for stop to wait on.
	var mu sync.Mutex
	var armed sync.WaitGroup
	var t *time.Timer
	renew := func() {
		sent := time.Now()
		rctx, rcancel := context.WithTimeout(ctx, max(time.Until(expires), ttl/3))
		ok, err := sc.e.store.RenewLease(rctx, task.RunID, task.Position, sc.e.cfg.WorkerID, ttl)
		rcancel()
		next := sent.Add(ttl / 3)
		again := true
		switch {
		case ctx.Err() != nil:
			again = false
		case err != nil:
			sc.e.log.Warn().Err(err).Str("run", task.RunID).Int("position", task.Position).
				Dur("lease_left", time.Until(expires)).Msg("renew lease: trying again")
			next = time.Now().Add(ttl / 10)
		case !ok:
			sc.e.log.Info().Str("run", task.RunID).Int("position", task.Position).
				Msg("lease lost: the step was taken over or ended; its result will not be recorded")
			again = false
		default:
			expires = sent.Add(ttl)
		}
		mu.Lock()
		defer mu.Unlock()
		if again && ctx.Err() == nil {
			armed.Add(1)
			t.Reset(time.Until(next))
		}
		armed.Done()
	}
	mu.Lock()
	armed.Add(1)
	t = time.AfterFunc(time.Until(granted.Add(ttl/3)), renew)
	mu.Unlock()
	return func() {
		cancel()
		mu.Lock()
		if t.Stop() {
			armed.Done() // it will not run
		}
		mu.Unlock()
		armed.Wait()
	}
}

func (sc *stepConsumer) recordSuccess(rec docflow.StepRecord, claim *docflow.StepClaim, after *docflow.File, res *docflow.StepResult) error {
	e := sc.e
	now := e.now()
	rec.Status, rec.Message = docflow.StepSucceeded, res.Message
	if res.Skipped {
		rec.Status = docflow.StepSkipped
	}
	if rec.Message == "" {
		rec.Message = "Step completed"
		if res.Skipped {
			rec.Message = "Step skipped"
		}
	}
	rec.Before, rec.After = claim.File, after
	rec.Embedding, rec.EmbeddingModel, rec.Deliveries = res.Embedding, res.EmbeddingModel, res.Deliveries
	var msgs []docflow.OutboxMessage
	if res.Stop || claim.Next == nil {
		rec.FinishRun = docflow.RunCompleted
		if after.Status == docflow.StatusDuplicate {
			rec.FinishRun = docflow.RunDuplicate
		}
		m, err := streams.DocumentProcessed(after, rec.RunID, rec.FinishRun, now)
		if err != nil {
			return err
		}
		msgs = append(msgs, m)
	} else {
		m, err := streams.StepTaskMessage(streams.StepTask{RunID: rec.RunID, FileID: rec.FileID, Position: claim.Next.Position,
			StepType: claim.Next.StepType, Attempt: 1}, now)
		if err != nil {
			return err
		}
		msgs = append(msgs, m)
	}
	var w *docflow.RunWrite
	err := e.withDB("record step", func(ctx context.Context) error {
		var err error
		w, err = e.results.Do(ctx, completion(rec, msgs))
		return err
	})
	if err != nil {
		return err
	}
	if !w.Recorded {
		e.log.Info().Str("run", rec.RunID).Int("position", rec.Position).Msg("step result not recorded: the step was taken over or recorded already")
	} else if rec.FinishRun != "" {
		sc.documentEnded(rec, after, docflow.StepSucceeded, "", now)
	}
	e.direct.Send(e.ctx, msgs, w.OutboxIDs)
	return nil
}

func (sc *stepConsumer) recordFailure(rec docflow.StepRecord, task streams.StepTask, f *docflow.File, runErr error) error {
	e := sc.e
	now := e.now()
	class := errorClass(runErr)
	reason := runErr.Error()
	tier, delay, retry := e.retry.Next(task.Attempt)
	if permanent(runErr) {
		retry = false
	}
	if retry {
		next := task
		next.Attempt++
		due := now.Add(delay)
		rec.Message = fmt.Sprintf("Attempt %d failed (%s): %s; retry %d of %d in %s", task.Attempt, class, reason,
			task.Attempt, e.retry.MaxAttempts()-1, delay.Round(time.Millisecond))
		m, err := streams.RetryMessage(next, tier, due, reason, now)
		if err != nil {
			return err
		}
		var w *docflow.RunWrite
		err = e.withDB("record retry", func(ctx context.Context) error {
			var err error
			w, err = e.store.RetryStep(ctx, rec, m)
			return err
		})
		if err == nil {
			e.direct.Send(e.ctx, []docflow.OutboxMessage{m}, w.OutboxIDs)
		}
		return err
	}
	rec.Message = fmt.Sprintf("Failed after %d attempt(s) (%s): %s", task.Attempt, class, reason)
	if permanent(runErr) {
		rec.Message = fmt.Sprintf("Failed (%s, not retried): %s", class, reason)
	}
	dl, err := streams.TaskDeadLetter(task, reason, now)
	if err != nil {
		return err
	}
	ev, err := streams.DocumentFailed(f, rec.RunID, sc.stepType, reason, now)
	if err != nil {
		return err
	}
	var w *docflow.RunWrite
	err = e.withDB("record failure", func(ctx context.Context) error {
		var err error
		w, err = e.store.FailStep(ctx, rec, dl, ev)
		return err
	})
	if err == nil {
		e.direct.Send(e.ctx, []docflow.OutboxMessage{dl, ev}, w.OutboxIDs)
		sc.documentEnded(rec, f, docflow.StepFailed, class, now)
	}
	return err
}

// documentEnded records the end of a run: its outcome and its end-to-end
// latency, measured from the file's intake (a reprocessed file's run counts
// from its first intake).
func (sc *stepConsumer) documentEnded(rec docflow.StepRecord, f *docflow.File, status, class string, now time.Time) {
	m := docflow.Metric{Kind: docflow.MetricDocument, Time: now, RunID: rec.RunID, FileID: rec.FileID,
		Status: status, ErrorClass: class, StepType: sc.stepType, Worker: sc.e.cfg.WorkerID}
	if f != nil {
		if !f.CreatedAt.IsZero() {
			m.Duration = max(now.Sub(f.CreatedAt), 0)
		}
		m.Pipeline = pipelineOf(f)
		if f.OwnerID != nil {
			m.OwnerID = *f.OwnerID
		}
	}
	sc.e.cfg.Recorder.Record(m)
}

// cloneFile returns a deep copy of the step-writable parts of f, so the
// step's changes can be told from the record it was given.
func cloneFile(f *docflow.File) *docflow.File {
	c := *f
	if f.DocumentTitle != nil {
		v := *f.DocumentTitle
		c.DocumentTitle = &v
	}
	if f.OCRQualityScore != nil {
		v := *f.OCRQualityScore
		c.OCRQualityScore = &v
	}
	c.StorageProviders = slices.Clone(f.StorageProviders)
	if f.DuplicateOf != nil {
		v := *f.DuplicateOf
		c.DuplicateOf = &v
	}
	if f.OwnerID != nil {
		v := *f.OwnerID
		c.OwnerID = &v
	}
	c.AIMetadata = map[string]any{}
	if len(f.AIMetadata) > 0 {
		b, err := json.Marshal(f.AIMetadata)
		if err == nil {
			_ = json.Unmarshal(b, &c.AIMetadata)
		}
	}
	return &c
}
