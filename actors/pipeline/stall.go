package pipeline

import (
	"context"
	"fmt"
	"sync"
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

// busyTypes remembers when each step type was last seen at work (a step
// of it running under a live lease). A run whose next step waits in the
// queue of a type seen at work within the stall timeout is not stalled:
// its task comes in its turn. A backlog longer than the stall timeout
// failed the documents at its end, which were only waiting.
//
// NOTE: the time of the last sighting, not the sighting itself, decides:
// between two steps of a busy type none may be running at the instant
// the check looks.
type busyTypes struct {
	mu   sync.Mutex
	seen map[string]time.Time // monotonic: compared only with each other
}

// within records types as at work now and returns every type seen at work
// less than d ago.
func (b *busyTypes) within(now time.Time, types []string, d time.Duration) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen == nil {
		b.seen = map[string]time.Time{}
	}
	for _, t := range types {
		b.seen[t] = now
	}
	out := []string{}
	for t, at := range b.seen {
		if now.Sub(at) < d {
			out = append(out, t)
		} else {
			delete(b.seen, t)
		}
	}
	return out
}

// FailStalled fails the stalled runs and returns how many it failed.
func (e *Engine) FailStalled(ctx context.Context) (int, error) {
	at, err := e.store.BusyStepTypes(ctx)
	if err != nil {
		return 0, err
	}
	busy := e.busy.within(time.Now(), at, e.stallTimeout)
	failed := 0
	for {
		runs, err := e.store.StalledRuns(ctx, e.stallTimeout, busy, 100)
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
			ok, err := e.store.FailRun(ctx, r.RunID, e.stallTimeout, busy, msg, msgs...)
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
