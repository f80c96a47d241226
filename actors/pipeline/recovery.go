package pipeline

import (
	"context"

	"docflow"
	"docflow/streams"
)

// Recover re-publishes the work Postgres says is unfinished and not in
// flight: unrouted runs get their file.ingested again, routed runs their
// current step's task. Runs with an unsent outbox row are left to the
// relay. This is what makes a
// broker that lost its messages (the in-memory embedded one) safe; with a
// broker that kept them the copies are acknowledged without running,
// because steps are idempotent per (run, position).
func (e *Engine) Recover(ctx context.Context) (int, error) {
	total := 0
	after := ""
	for {
		runs, err := e.store.UnfinishedRuns(ctx, after, 500)
		if err != nil {
			return total, err
		}
		if len(runs) == 0 {
			return total, nil
		}
		after = runs[len(runs)-1].RunID
		now := e.now()
		var msgs []docflow.OutboxMessage
		for _, r := range runs {
			// NOTE: a step under a live lease is re-published too: its
			// holder may be a process that died with the broker. The copy
			// waits for the lease and is acknowledged once the step is
			// recorded, or runs it once the lease has lapsed.
			if r.Pending {
				continue
			}
			if !r.Routed {
				m, err := streams.FileIngestedMessage(streams.FileIngested{FileID: r.FileID, RunID: r.RunID, OwnerID: r.OwnerID,
					PipelineID: r.PipelineID, Options: r.Options}, now)
				if err != nil {
					return total, err
				}
				msgs = append(msgs, m)
				continue
			}
			if r.Step == nil || r.Step.Status == docflow.StepFailed {
				continue
			}
			attempt := max(1, r.Step.Attempts)
			if r.Step.Status == docflow.StepRetrying {
				attempt = r.Step.Attempts + 1
			}
			m, err := streams.StepTaskMessage(streams.StepTask{RunID: r.RunID, FileID: r.FileID, Position: r.Step.Position,
				StepType: r.Step.StepType, Attempt: attempt}, now)
			if err != nil {
				return total, err
			}
			msgs = append(msgs, m)
		}
		if err := e.store.Republish(ctx, msgs...); err != nil {
			return total, err
		}
		total += len(msgs)
	}
}
