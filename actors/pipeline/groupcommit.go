package pipeline

import (
	"context"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/internal/groupcommit"
)

// The engine's writes of step claims and results go through group
// commits (internal/groupcommit): the writes of concurrent tasks share
// transactions, with no waiting added.

// resultCommit records successful step results in shared transactions: a
// synchronous commit (a WAL flush) per batch instead of per result. The
// acknowledgement contract is unchanged: a caller gets its answer only
// after the transaction holding its result committed, and acknowledges
// the delivery after that.
func resultCommit(store Results, log zerolog.Logger, flushers, max int) *groupcommit.Committer[docflow.StepCompletion, *docflow.RunWrite] {
	return groupcommit.New(groupcommit.Config[docflow.StepCompletion, *docflow.RunWrite]{Flushers: flushers, Max: max, Flush: func(ctx context.Context, items []docflow.StepCompletion) []groupcommit.Answer[*docflow.RunWrite] {
		out := make([]groupcommit.Answer[*docflow.RunWrite], len(items))
		one := func(i int) {
			out[i].V, out[i].Err = store.CompleteStep(ctx, items[i].Record, items[i].Msgs...)
		}
		if len(items) == 1 {
			one(0)
			return out
		}
		ws, err := store.CompleteSteps(ctx, items)
		switch {
		case err == nil:
			for i := range out {
				out[i].V = ws[i]
			}
		case transientDB(err) || ctx.Err() != nil:
			// Each caller retries (withDB) and lands in a later batch.
			for i := range out {
				out[i].Err = err
			}
		default:
			// A result the database refuses must not fail the others:
			// record them one by one, so the error reaches only its own
			// task.
			log.Debug().Err(err).Int("results", len(items)).Msg("group commit refused; recording one by one")
			for i := range items {
				one(i)
			}
		}
		return out
	}})
}

// claimCommit leases steps for many tasks in one round trip. Claims may
// commit asynchronously (see Claims), so what a batch saves is round trips
// and transactions.
func claimCommit(store Claims, flushers, max int) *groupcommit.Committer[docflow.StepClaimRequest, *docflow.StepClaim] {
	return groupcommit.New(groupcommit.Config[docflow.StepClaimRequest, *docflow.StepClaim]{Flushers: flushers, Max: max, Flush: func(ctx context.Context, reqs []docflow.StepClaimRequest) []groupcommit.Answer[*docflow.StepClaim] {
		out := make([]groupcommit.Answer[*docflow.StepClaim], len(reqs))
		for i, r := range store.ClaimSteps(ctx, reqs) {
			out[i] = groupcommit.Answer[*docflow.StepClaim]{V: r.Claim, Err: r.Err}
		}
		return out
	}})
}

// completion pairs a result with its outbox messages for resultCommit.
func completion(rec docflow.StepRecord, msgs []docflow.OutboxMessage) docflow.StepCompletion {
	return docflow.StepCompletion{Record: rec, Msgs: msgs}
}
