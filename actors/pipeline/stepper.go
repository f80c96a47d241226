package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"docflow"
	"docflow/actors"
	"docflow/storage/postgres"
	"docflow/streams"
)

// stepConsumer handles the tasks of one step type: a consumer group feeds
// it, a pool of supervised actors runs the step.
//
// Per task: wait for a free actor, lease the step in Postgres (which also
// tells a redelivered, already recorded task to be acknowledged without
// running), run the step on an actor under STEP_TIMEOUT, then record the
// outcome (result, log, file fields and the next outbox row in one
// transaction) and only then acknowledge the offset. Claims and successful
// results of concurrent tasks share statements and commits (see batcher).
type stepConsumer struct {
	e        *Engine
	stepType string
	step     docflow.Step // nil: not available in this build
	pool     *actors.Pool[*docflow.StepInput, *docflow.StepResult]
	slots    chan struct{}
	run      runFunc
}

func newStepConsumer(e *Engine, stepType string) (*stepConsumer, error) {
	sc := &stepConsumer{e: e, stepType: stepType}
	sc.step, _ = e.cfg.Registry.Lookup(stepType)
	size := e.poolSize(stepType)
	pool, err := actors.NewPool(e.cfg.Actors, actors.PoolConfig{
		Kind: "step-" + stepType, Size: size, JobTimeout: e.stepTimeout, Log: e.log,
	}, sc.work)
	if err != nil {
		return nil, fmt.Errorf("start pipeline engine: %w", err)
	}
	sc.pool = pool
	sc.slots = make(chan struct{}, size)
	sc.run = withMetrics(e.cfg.Recorder, e.now)(sc.runOnPool)
	return sc, nil
}

// work is what a pool actor does: run the step (panics and the timeout are
// the pool's business).
func (sc *stepConsumer) work(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	if sc.step == nil {
		return &docflow.StepResult{Skipped: true, Message: fmt.Sprintf("%s is not available in this build", sc.stepType)}, nil
	}
	res, err := sc.step.Run(ctx, in)
	if err == nil && res == nil {
		res = &docflow.StepResult{}
	}
	return res, err
}

// runOnPool hands the attempt to an actor and waits for its result.
func (sc *stepConsumer) runOnPool(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	done := make(chan actors.Result[*docflow.StepResult], 1)
	err := sc.pool.Submit(actors.Job[*docflow.StepInput, *docflow.StepResult]{
		ID:  streams.TaskID(streams.StepTask{RunID: in.RunID, Position: in.Position, Attempt: in.Attempt}),
		Msg: in, Timeout: sc.e.stepTimeout,
		Done: func(r actors.Result[*docflow.StepResult]) { done <- r },
	})
	if err != nil {
		return nil, err
	}
	select {
	case r := <-done:
		return r.Value, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (sc *stepConsumer) handle(d *streams.Delivery) {
	_, task, err := streams.Decode[streams.StepTask](d.Message.Value)
	if err != nil {
		d.Nack(err) // poison: dead-lettered, the consumer goes on
		return
	}
	if task.StepType != sc.stepType {
		d.Nack(streams.Poison(fmt.Errorf("task of step type %q on the %s topic", task.StepType, sc.stepType)))
		return
	}
	sc.e.wg.Add(1)
	go func() {
		defer sc.e.wg.Done()
		sc.process(d, task)
	}()
}

// process runs one task to its acknowledgement. When the engine stops
// midway the delivery is left unresolved: it is redelivered.
func (sc *stepConsumer) process(d *streams.Delivery, task streams.StepTask) {
	e := sc.e
	var claim *postgres.Claim
	var claimed time.Time
	for {
		select {
		case sc.slots <- struct{}{}:
		case <-e.ctx.Done():
			return
		}
		// The lease runs from no earlier than now, by any clock.
		claimed = time.Now()
		err := e.withDB("claim step", func(ctx context.Context) error {
			var err error
			claim, err = e.claims.do(ctx, postgres.ClaimRequest{RunID: task.RunID, Position: task.Position,
				Attempt: task.Attempt, Worker: e.cfg.WorkerID, TTL: e.leaseTTL, DeadAfter: 5 * e.cfg.Heartbeat})
			return err
		})
		if err != nil {
			<-sc.slots
			sc.giveUp(d, task, err)
			return
		}
		if claim.Outcome == postgres.ClaimOK {
			break
		}
		<-sc.slots
		if claim.Outcome == postgres.ClaimDone {
			e.log.Debug().Str("run", task.RunID).Int("position", task.Position).Str("reason", claim.Reason).Msg("task acknowledged without running")
			d.Ack()
			return
		}
		// Busy: another worker runs this step; wait for it to finish or
		// for its lease to lapse.
		select {
		case <-time.After(e.leaseTTL / 3):
		case <-e.ctx.Done():
			return
		}
	}

	in := &docflow.StepInput{RunID: task.RunID, Position: task.Position, StepType: sc.stepType, Label: claim.Step.Label,
		Attempt: task.Attempt, Config: claim.Step.Config, Options: claim.Options, File: cloneFile(claim.File), Blobs: e.cfg.Blobs}
	stopRenew := sc.renewLease(task, claimed)
	res, runErr := sc.run(e.ctx, in)
	stopRenew()
	<-sc.slots
	if e.ctx.Err() != nil && errors.Is(runErr, context.Canceled) {
		return // stopping: the task is redelivered
	}
	if errors.Is(runErr, actors.ErrPoolClosed) {
		return
	}

	rec := postgres.StepRecord{RunID: task.RunID, Position: task.Position, Attempt: task.Attempt, Worker: e.cfg.WorkerID,
		FileID: task.FileID, StepType: sc.stepType}
	var err error
	if runErr == nil {
		err = sc.recordSuccess(rec, claim, in.File, res)
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
	done := make(chan struct{})
	ttl := sc.e.leaseTTL
	go func() {
		defer close(done)
		expires := granted.Add(ttl)
		t := time.NewTimer(time.Until(granted.Add(ttl / 3)))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			sent := time.Now()
			rctx, rcancel := context.WithTimeout(ctx, max(time.Until(expires), ttl/3))
			ok, err := sc.e.store.RenewLease(rctx, task.RunID, task.Position, sc.e.cfg.WorkerID, ttl)
			rcancel()
			next := sent.Add(ttl / 3)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				sc.e.log.Warn().Err(err).Str("run", task.RunID).Int("position", task.Position).
					Dur("lease_left", time.Until(expires)).Msg("renew lease: trying again")
				next = time.Now().Add(ttl / 10)
			case !ok:
				sc.e.log.Info().Str("run", task.RunID).Int("position", task.Position).
					Msg("lease lost: the step was taken over or ended; its result will not be recorded")
				return
			default:
				expires = sent.Add(ttl)
			}
			t.Reset(time.Until(next))
		}
	}()
	return func() { cancel(); <-done }
}

func (sc *stepConsumer) recordSuccess(rec postgres.StepRecord, claim *postgres.Claim, after *docflow.File, res *docflow.StepResult) error {
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
	var w *postgres.Written
	err := e.withDB("record step", func(ctx context.Context) error {
		var err error
		w, err = e.results.do(ctx, completion(rec, msgs))
		return err
	})
	if err != nil {
		return err
	}
	if !w.Recorded {
		e.log.Info().Str("run", rec.RunID).Int("position", rec.Position).Msg("step result not recorded: the step was taken over or recorded already")
	}
	e.direct.Send(e.ctx, msgs, w.OutboxIDs)
	return nil
}

func (sc *stepConsumer) recordFailure(rec postgres.StepRecord, task streams.StepTask, f *docflow.File, runErr error) error {
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
		var w *postgres.Written
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
	var w *postgres.Written
	err = e.withDB("record failure", func(ctx context.Context) error {
		var err error
		w, err = e.store.FailStep(ctx, rec, dl, ev)
		return err
	})
	if err == nil {
		e.direct.Send(e.ctx, []docflow.OutboxMessage{dl, ev}, w.OutboxIDs)
	}
	return err
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
