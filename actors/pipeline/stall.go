package pipeline

import (
	"context"
	"fmt"
	"time"

	"docflow"
	"docflow/streams"
)

// stallLoop fails runs that made no progress for STALLED_RUN_TIMEOUT and
// have no step under a live lease, so no document stays processing forever.
// Every worker runs it; a run is failed once (its row is locked, skipped
// by the others, and re-checked under the lock).
func (e *Engine) stallLoop() {
	defer e.wg.Done()
	t := time.NewTicker(e.stallInterval)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
			if n, err := e.FailStalled(e.ctx); err != nil && e.ctx.Err() == nil {
				e.log.Warn().Err(err).Msg("stall check")
			} else if n > 0 {
				e.log.Warn().Int("runs", n).Msg("failed stalled runs")
			}
		}
	}
}

// FailStalled fails the stalled runs and returns how many it failed.
func (e *Engine) FailStalled(ctx context.Context) (int, error) {
	failed := 0
	for {
		before := e.now().Add(-e.stallTimeout)
		runs, err := e.store.StalledRuns(ctx, before, 100)
		if err != nil {
			return failed, err
		}
		for _, r := range runs {
			msg := fmt.Sprintf("Stalled: no progress for %s", e.stallTimeout)
			now := e.now()
			f := &docflow.File{ID: r.FileID, OwnerID: r.OwnerID, OriginalFilename: r.Filename}
			step := "pipeline"
			if r.Step != nil {
				step = r.Step.StepType
			}
			ev, err := streams.DocumentFailed(f, r.RunID, step, msg, now)
			if err != nil {
				return failed, err
			}
			msgs := []docflow.OutboxMessage{ev}
			if r.Step != nil {
				dl, err := streams.TaskDeadLetter(streams.StepTask{RunID: r.RunID, FileID: r.FileID, Position: r.Step.Position,
					StepType: r.Step.StepType, Attempt: max(1, r.Step.Attempts)}, msg, now)
				if err != nil {
					return failed, err
				}
				msgs = append(msgs, dl)
			}
			ok, err := e.store.FailRun(ctx, r.RunID, before, msg, msgs...)
			if err != nil {
				return failed, err
			}
			if ok {
				failed++
			}
		}
		if len(runs) < 100 {
			return failed, nil
		}
	}
}
